/* monitor.h - the public face of the monitor/ folder: its parts below, each
 * with its own contract. */
#ifndef AZTFS_MONITOR_MONITOR_H
#define AZTFS_MONITOR_MONITOR_H

#include "util/util.h"
#include "store/store.h"

/* ---- monitor/metrics.c: the mount's counters (monitor/statsjson.c) in the Prometheus text format,
 * written to a file now and then (-o metrics_file=, for node_exporter's
 * textfile collector). */

struct metrics;

/* The counters of S as Prometheus text exposition (format 0.0.4): a HELP
 * and a TYPE line per metric, each sample labelled mountpoint="MOUNTPOINT"
 * (escaped). Malloc'd; NULL on ENOMEM. */
char *metrics_text(struct store *s, const char *mountpoint);

/* Write metrics_text to NAME in DIR atomically: into a new temporary file
 * beside it (safe_tmp: "NAME.tmp-XXXXXX", a random name created with
 * O_EXCL, mode 0644 before the umask; nothing another user planted is ever
 * opened), then renameat(2) over NAME, so a reader sees the old file or the
 * new one, never a part. No fsync: after a power loss the file may be lost
 * or empty, and the next write (every interval) replaces it; metrics are
 * not worth a disk flush each time. Returns 0 or -errno. */
int metrics_write(struct store *s, const char *mountpoint, const struct safe_dir *dir,
                  const char *name);

/* The writer of -o metrics_file=PATH, its directory checked now, before the
 * mount detaches (a relative PATH is taken from the current directory): it
 * must exist and pass safe_dir_open's checks, unless ALLOW_SHARED (-o
 * allow_shared_dirs). Returns it (not started), or NULL after printing why
 * on stderr. */
struct metrics *metrics_new(const char *path, int allow_shared);

/* Start M's thread: metrics_write every INTERVAL seconds, the first time
 * now. S and MOUNTPOINT are borrowed until metrics_stop. Returns 0, or -1
 * after one log line when the thread cannot start. */
int metrics_start(struct metrics *m, struct store *s, const char *mountpoint, unsigned interval);

/* Stop M's thread if it started, which writes the file once more, and free
 * M (NULL: nothing). */
void metrics_stop(struct metrics *m);

/* ---- monitor/statsjson.c: the mount's request and cache counters as JSON (xattr user.aztfs.stats, SIGUSR1). */

#define STATS_XATTR "user.aztfs.stats"

/* The counters of store S (its client's requests, its cache) as one line
 * of JSON: malloc'd, caller frees; NULL on ENOMEM. Counts are attempts
 * (retries included); "failures" counts the failed operations logged
 * (failring_count), the last of which user.aztfs.errors shows. */
char *stats_json(struct store *s);

/* The same document as a jansson object (new reference; NULL on ENOMEM). */
json_t *stats_object(struct store *s);

/* ---- monitor/notify.c: the mount's state told to systemd (Type=notify), by
 * the protocol sd_notify(3) documents, without libsystemd. */

/* Send the notification FMT... ("READY=1", "STATUS=...", newline-separated
 * assignments) to the socket $NOTIFY_SOCKET names (a path, or "@name" in
 * the abstract namespace), one datagram. Returns 0 (also when the variable
 * is not set: not started by systemd), -EAFNOSUPPORT for a socket of
 * another kind (vsock:), -EMSGSIZE past 511 bytes, or -errno of the send. */
int notify_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* STATUS= for MOUNTPOINT: "serving MOUNTPOINT", with write-behind's counts
 * when it is on. As notify_send. */
int notify_status(struct store *s, const char *mountpoint);

#endif
