/* storedir.h - tables and partitions: whether they exist (from the
 * listings, the markers of what the mount learnt, else one query), and the
 * tables and partition directories the mount makes and removes. Part of the
 * store layer (storecore.h): no FUSE, requests through table.h.
 *
 * Every function returns 0 or -errno unless it says otherwise, and logs
 * the failures of its requests itself. */
#ifndef AZTFS_STOREDIR_H
#define AZTFS_STOREDIR_H

#include "fspath.h"
#include "storecore.h"

/* Does table TABLE exist (and, with -o tables=, is it one of them)? The
 * cached root listing when it names it, or what the mount knows of the
 * table itself; else a query (a table not in the list may be new), whose
 * "no" is believed for the negative lifetime. 0, -ENOENT, or -errno. */
int store_table_exists(struct store *s, const char *table);

/* Does partition FP->pk of FP->table hold at least one entity? 1, 0 or
 * -errno. Known when a listing names it; known absent when the table's
 * listing is one the mount made, or the service said so within the
 * negative lifetime; else a one-entity query. FRESH: always ask. */
int store_partition_exists(struct store *s, struct fspath *fp, int fresh);

/* Does entity FP's partition (keys known) hold an entity other than FP?
 * One query for one entity (with write-behind, the partition's queued
 * changes sent first). 1, 0 or -errno (logged). */
int store_partition_other(struct store *s, const struct fspath *fp);

/* Create table TABLE (-EEXIST in any case; -EINVAL: a name the service
 * refuses). PATH names it in log lines. The mount then knows it is empty:
 * names looked up in it cost nothing until cache_timeout after the last
 * change the mount makes in it. */
int store_create_table(struct store *s, const char *path, const char *table);

/* The mount made partition directory FP (mkdir; it holds no entity): like
 * a table it made, names looked up in it cost nothing. Returns 0. */
int store_partition_made(struct store *s, const struct fspath *fp);

/* Delete table TABLE if it holds no entity (-ENOTEMPTY). */
int store_remove_table(struct store *s, const char *path, const char *table);

#endif
