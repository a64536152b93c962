/* scan.h - listings fetched from the service: the account's tables, a
 * table's partitions and a partition's entities, each page cached as it
 * comes (with the entities themselves); a table too large for the cache is
 * skipped through; snapshots that readdir reads page by page; long-form
 * names resolved to their keys by listing; the root listing at mount.
 * Part of the store layer (storecore.h): no FUSE, requests through table.h. */
#ifndef AZTFS_SCAN_H
#define AZTFS_SCAN_H

#include <stddef.h>

#include "fspath.h"
#include "listing.h"
#include "storecore.h"

/* List the account's tables (or probe those of -o tables=) into the
 * cache: at mount time this is both the credentials check and the first
 * listing. Returns 0 or -errno, details in *st. */
int scan_list_root(struct store *s, struct az_status *st);

/* List partition FP->pk of FP->table (keys known) to its end into the
 * cache as directory DIR. Returns 0 or -errno (logged). */
int scan_list_partition(struct store *s, const struct fspath *fp, const char *dir);

/* Fetch partition PK of TABLE to its end into the cache as directory DIR,
 * one request in flight, for the prefetch pool (prefetch.h): before each
 * page STOP(CTX, BYTES) is asked (BYTES: what the fetch has charged to the
 * cache so far); nonzero ends it with -EINTR. The listing is cached only
 * when complete. Failures are logged at debug level only (the walker's own
 * fetch logs them). Returns 0 or -errno. */
int scan_fetch_partition(struct store *s, const char *table, const char *pk,
                         const char *dir, int (*stop)(void *ctx, size_t bytes), void *ctx);

/* Fill in FP->pk (and FP->rk for entities) when the names are long-form
 * (doc/NAMES.md), from the fresh listing of the directory, else by listing
 * it (which fills the cache). Returns 0, -ENOENT (not listed), or -errno. */
int scan_resolve_keys(struct store *s, struct fspath *fp);

/* A directory's remote names as they were when it was opened: the cached
 * listing, shared as it is, or a listing that grows page by page as it is
 * read (and is cached when complete). Not thread-safe: one reader at a
 * time. */
struct scan_view;

/* A view of directory DIR (FP parsed from it: FSP_ROOT, FSP_TABLE or
 * FSP_PARTITION). Nothing is sent unless a partition's long-form name has
 * to be resolved. Returns 0 with *out (free with scan_view_free), -ENOENT
 * (no such partition), or -errno. */
int scan_view_open(struct store *s, struct fspath *fp, const char *dir,
                   struct scan_view **out);

/* A view with no names (a directory that exists only locally); NULL on
 * ENOMEM. */
struct scan_view *scan_view_empty(void);

/* Entry I of V (borrowed: valid while V is open), fetching pages until it
 * is in. Returns 0 with *e, 1 when the listing ended before I, or -errno
 * (logged; the page may be asked for again). */
int scan_view_get(struct scan_view *v, size_t i, struct listing_ent *e);

/* How many names V holds so far (all of them once scan_view_get said 1). */
size_t scan_view_count(const struct scan_view *v);

/* Index of NAME among V's names so far, or -1. */
long scan_view_find(const struct scan_view *v, const char *name);

void scan_view_free(struct scan_view *v);

#endif
