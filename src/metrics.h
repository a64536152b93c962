/* metrics.h - the mount's counters (stats.h) in the Prometheus text format,
 * written to a file now and then (-o metrics_file=, for node_exporter's
 * textfile collector). */
#ifndef AZTFS_METRICS_H
#define AZTFS_METRICS_H

#include "storecore.h"

struct metrics;

/* The counters of S as Prometheus text exposition (format 0.0.4): a HELP
 * and a TYPE line per metric, each sample labelled mountpoint="MOUNTPOINT"
 * (escaped). Malloc'd; NULL on ENOMEM. */
char *metrics_text(struct store *s, const char *mountpoint);

/* Write metrics_text to PATH atomically: into PATH.tmp (mode 0644 before
 * the umask), then rename(2) over PATH, so a reader sees the old file or
 * the new one, never a part. No fsync: after a power loss the file may be
 * lost or empty, and the next write (every interval) replaces it; metrics
 * are not worth a disk flush each time. Returns 0 or -errno. */
int metrics_write(struct store *s, const char *mountpoint, const char *path);

/* Start a thread that calls metrics_write every INTERVAL seconds, the
 * first time now. S, MOUNTPOINT and PATH are borrowed until metrics_stop.
 * Returns NULL (after one log line) when the thread cannot start. */
struct metrics *metrics_start(struct store *s, const char *mountpoint, const char *path,
                              unsigned interval);

/* Stop the thread, write the file once more, free M (NULL: nothing). */
void metrics_stop(struct metrics *m);

#endif
