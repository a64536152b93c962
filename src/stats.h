/* stats.h - the mount's request and cache counters as JSON (xattr user.aztfs.stats, SIGUSR1). */
#ifndef AZTFS_STATS_H
#define AZTFS_STATS_H

#include "storecore.h"

#define STATS_XATTR "user.aztfs.stats"

/* The counters of store S (its client's requests, its cache) as one line
 * of JSON: malloc'd, caller frees; NULL on ENOMEM. Counts are attempts
 * (retries included); "failures" counts the failed operations logged
 * (failring_count), the last of which user.aztfs.errors shows. */
char *stats_json(struct store *s);

/* The same document as a jansson object (new reference; NULL on ENOMEM). */
json_t *stats_object(struct store *s);

#endif
