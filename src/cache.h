/* cache.h - a bounded, thread-safe cache of rendered entities and directory listings (TTL + LRU). */
#ifndef AZTFS_CACHE_H
#define AZTFS_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "listing.h"

struct cache;

/* A cached entity file (all members malloc'd copies owned by the holder). */
struct cache_file {
    char *data;               /* rendered JSON */
    size_t len;
    char *etag;               /* may be NULL */
    struct timespec mtime;    /* entity Timestamp */
};

struct cache_stats {
    uint64_t hits, misses, evictions, expirations;
    size_t bytes, entries, max_bytes;
};

/* New cache holding at most MAX_BYTES (accounted: keys, data, overhead), each
 * entry fresh for TTL_SECONDS (0: nothing is kept). Returns NULL on ENOMEM. */
struct cache *cache_new(size_t max_bytes, double ttl_seconds);
void cache_free(struct cache *c);

/* Store (replace) the entity file at PATH; DATA and ETAG are copied.
 * Returns 0 or -ENOMEM; an entry larger than the whole cache is not kept (0). */
int cache_put_file(struct cache *c, const char *path, const char *data, size_t len,
                   const char *etag, struct timespec mtime);

/* Copy the fresh file at PATH into *out (release with cache_file_clear).
 * Returns 0, -ENOENT when absent or expired, -ENOMEM. */
int cache_get_file(struct cache *c, const char *path, struct cache_file *out);
void cache_file_clear(struct cache_file *f);

/* Size and mtime of the fresh file at PATH, without copying its data.
 * Returns 0 or -ENOENT. */
int cache_file_attr(struct cache *c, const char *path, size_t *len, struct timespec *mtime);

/* Store (replace) the listing of directory PATH. L is sealed here if it is
 * not yet, and the cache takes its own reference (the caller keeps its).
 * Returns 0 or -ENOMEM; a listing larger than the whole cache is not kept. */
int cache_put_listing(struct cache *c, const char *path, struct listing *l);

/* The fresh listing of PATH: a new reference (release with listing_unref),
 * or NULL when none is cached. */
struct listing *cache_get_listing(struct cache *c, const char *path);

/* Look NAME up in the fresh listing of DIRPATH.
 * Returns 0 (found; *key_out malloc'd copy of its key if KEY_OUT non-NULL),
 * -ENOENT (the listing is cached and NAME is not in it), -EAGAIN (no fresh
 * listing: ask the service), -ENOMEM. */
int cache_dir_lookup(struct cache *c, const char *dirpath, const char *name, char **key_out);

/* Size and mtime of file NAME as recorded in the fresh listing of DIRPATH.
 * Returns 0, -ENOENT (listed, and NAME is not there), -EAGAIN (no fresh
 * listing, or it has no attributes for NAME). */
int cache_dir_attr(struct cache *c, const char *dirpath, const char *name, size_t *len,
                   struct timespec *mtime);

/* Remember, for the TTL, that directory PATH exists (without its listing).
 * A listing already cached for PATH is kept. Returns 0 or -ENOMEM. */
int cache_put_exists(struct cache *c, const char *path);

/* Is directory PATH known to exist: a fresh marker, or a fresh listing with
 * at least one entry? Returns 1 or 0. */
int cache_exists(struct cache *c, const char *path);

/* Drop the entry at PATH (file or directory listing), if any. */
void cache_invalidate(struct cache *c, const char *path);

/* Snapshot of the counters. */
void cache_get_stats(struct cache *c, struct cache_stats *out);

#endif
