/* stats.h - the mount's request and cache counters as JSON (xattr user.aztfs.stats, SIGUSR1). */
#ifndef AZTFS_STATS_H
#define AZTFS_STATS_H

#include "storecore.h"

#define STATS_XATTR "user.aztfs.stats"

/* The counters of store S (its client's requests, its cache) as one line
 * of JSON: malloc'd, caller frees; NULL on ENOMEM. Counts are attempts
 * (retries included). */
char *stats_json(struct store *s);

#endif
