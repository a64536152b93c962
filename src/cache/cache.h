/* cache.h - the public face of the cache/ folder: its parts below, each
 * with its own contract. */
#ifndef AZTFS_CACHE_CACHE_H
#define AZTFS_CACHE_CACHE_H

#include <stddef.h>
#include <time.h>
#include <stdint.h>

/* ---- cachefile: what the cache hands out and is given: a cached entity
 * file, and the flags of its puts. A leaf: cache.h and the cache's inside
 * (cache_i.h) both include it, so neither includes the other. */

#define CACHE_DIGEST_LEN 32

/* A cached entity file (all members malloc'd copies owned by the holder). */
struct cache_file {
    char *data; /* rendered JSON */
    size_t len;
    char *etag;            /* may be NULL */
    struct timespec mtime; /* entity Timestamp */
    double age;            /* cache_get_file: seconds since it was current */
    int listed;            /* cache_get_file: it came with its directory's listing */
    int has_digest;        /* DIGEST holds what the service holds (entity.h) */
    unsigned char digest[CACHE_DIGEST_LEN];
};

/* Flags of cache_put_file and cache_put_listing. */
#define CACHE_LISTED 1u /* a file that came with its directory's listing */
#define CACHE_OWNED 2u  /* a listing of a directory the mount made (below) */
#define CACHE_SHORT 4u  /* a listing kept only for the negative lifetime */

/* ---- cache/listing.c: compact, refcounted directory listings: names, keys and file attributes. */

/* A listing is built by one owner (listing_add), then sealed (listing_seal)
 * and from then on never changes, so any number of threads may read it
 * while they hold a reference. Strings live in one arena and each entry is
 * about 32 bytes plus its name, so 100,000 names cost a few MiB. */
struct listing;

/* A view of entry I (pointers borrowed from the listing; valid while the
 * caller holds a reference and, before sealing, until the next add). */
struct listing_ent {
    const char *name; /* name as shown in the directory */
    const char *key;  /* the key it stands for (NOT NUL-terminated) */
    size_t key_len;
    int has_attr; /* SIZE and MTIME are known (entity files) */
    uint64_t size;
    struct timespec mtime;
};

/* A new, empty, unsealed listing with one reference; NULL on ENOMEM. */
struct listing *listing_new(void);

/* Append an entry (strings copied). HAS_ATTR says whether SIZE/MTIME mean
 * anything. Only before sealing. Returns 0, -ENOMEM, or -EFBIG past 4 GiB. */
int listing_add(struct listing *l, const char *name, const char *key, int has_attr, uint64_t size,
                struct timespec mtime);

/* listing_add unless L holds NAME already (a service that may answer in
 * any order, or twice: each name listed once). L keeps its name index as
 * it grows from its first call on, so each costs a hash. Returns 0 (added),
 * 1 (NAME was there: nothing changes), or listing_add's -errno. */
int listing_add_once(struct listing *l, const char *name, const char *key, int has_attr,
                     uint64_t size, struct timespec mtime);

/* A new sealed listing of L's entries in key order (bytewise, then by
 * name): a listing built in the order a service gave, sorted once it is
 * complete. L is not changed. NULL on ENOMEM. */
struct listing *listing_sorted(const struct listing *l);

/* Freeze L and build its name index. Returns 0 or -ENOMEM (L stays usable
 * unsealed; listing_find then scans). Sealing twice is harmless. */
int listing_seal(struct listing *l);

size_t listing_count(const struct listing *l);

/* Fill *out with entry I (I < listing_count). */
void listing_get(const struct listing *l, size_t i, struct listing_ent *out);

/* Index of NAME, or -1 when absent. */
long listing_find(const struct listing *l, const char *name);

/* Malloc'd copy of entry I's key; NULL on ENOMEM. */
char *listing_key_dup(const struct listing *l, size_t i);

/* A new sealed listing: L without NAME and, unless REMOVE, with NAME
 * (KEY, attributes as for listing_add) placed before the first entry whose
 * key sorts after KEY (the service's order). L (sealed or not) is not
 * changed: readers holding it keep their snapshot. O(entries). Returns
 * NULL on ENOMEM or past 4 GiB. */
struct listing *listing_edit(const struct listing *l, const char *name, const char *key,
                             int has_attr, uint64_t size, struct timespec mtime, int remove);

/* Bytes of memory held (for cache accounting). */
size_t listing_bytes(const struct listing *l);

/* Take another reference (returns L); drop one (frees at zero; NULL ok). */
struct listing *listing_ref(struct listing *l);
void listing_unref(struct listing *l);

/* ---- cache/cache.c: a bounded, thread-safe cache of rendered entities and directory listings (TTL + LRU). */

struct cache;

struct cache_stats {
    uint64_t hits, misses, evictions, expirations;
    size_t bytes, entries, max_bytes;
};

/* New cache holding at most MAX_BYTES (accounted: keys, data, overhead), each
 * entry fresh for TTL_SECONDS (0: nothing is kept). Returns NULL on ENOMEM. */
struct cache *cache_new(size_t max_bytes, double ttl_seconds);
void cache_free(struct cache *c);

/* Set the negative lifetime (default: the TTL): how long a listing may say
 * that a name it lacks does not exist, and cache_put_absent lasts. Call
 * before concurrent use. */
void cache_set_negative_ttl(struct cache *c, double secs);

/* Store (replace) the entity file at PATH; DATA and ETAG are copied.
 * FLAGS: CACHE_LISTED or 0. Returns 0 or -ENOMEM; an entry larger than the
 * whole cache is not kept (0). */
int cache_put_file(struct cache *c, const char *path, const char *data, size_t len,
                   const char *etag, struct timespec mtime, unsigned flags);

/* cache_put_file of F's data, etag, mtime and digest (copied). */
int cache_put(struct cache *c, const char *path, const struct cache_file *f, unsigned flags);

/* Copy the fresh file at PATH into *out (release with cache_file_clear),
 * with its age and origin. Returns 0, -ENOENT when absent or expired,
 * -ENOMEM. */
int cache_get_file(struct cache *c, const char *path, struct cache_file *out);
void cache_file_clear(struct cache_file *f);

/* Size and mtime of the fresh file at PATH, without copying its data.
 * Returns 0 or -ENOENT. */
int cache_file_attr(struct cache *c, const char *path, size_t *len, struct timespec *mtime);

/* Store (replace) the listing of directory PATH. L is sealed here if it is
 * not yet, and the cache takes its own reference (the caller keeps its).
 * FLAGS: CACHE_OWNED: the mount made the directory (the listing is complete
 * and kept so by cache_dir_edit: it answers for absence while it is cached,
 * and each edit renews it); CACHE_SHORT: fresh for the negative lifetime
 * only. Returns 0 or -ENOMEM; a listing larger than the whole cache is not
 * kept. */
int cache_put_listing(struct cache *c, const char *path, struct listing *l, unsigned flags);

/* The fresh listing of PATH: a new reference (release with listing_unref),
 * or NULL when none is cached. */
struct listing *cache_get_listing(struct cache *c, const char *path);

/* Look NAME up in the fresh listing of DIRPATH.
 * Returns 0 (found; *key_out malloc'd copy of its key if KEY_OUT non-NULL),
 * -ENOENT (NAME is not in it, and the listing may say so: it is owned, or
 * younger than the negative lifetime), -EAGAIN (no fresh listing, or NAME
 * is not in an older one: ask the service), -ENOMEM. */
int cache_dir_lookup(struct cache *c, const char *dirpath, const char *name, char **key_out);

/* Size and mtime of file NAME as recorded in the fresh listing of DIRPATH.
 * Returns 0, -ENOENT (NAME is not there, as cache_dir_lookup), -EAGAIN (no
 * fresh listing, NAME not in an older one, or no attributes for NAME). */
int cache_dir_attr(struct cache *c, const char *dirpath, const char *name, size_t *len,
                   struct timespec *mtime);

/* Remember, for the TTL, that directory PATH exists (without its listing).
 * A listing already cached for PATH is kept. Returns 0 or -ENOMEM. */
int cache_put_exists(struct cache *c, const char *path);

/* Is directory PATH known to exist: a fresh marker, or a fresh listing with
 * at least one entry? Returns 1 or 0. */
int cache_exists(struct cache *c, const char *path);

/* Change the cached listing of DIRPATH after a change the mount made:
 * REMOVE drops NAME; else NAME (KEY, attributes as for listing_add) is added
 * or replaced, in key order. The listing keeps its freshness (an owned one
 * is renewed). Returns 0, -EAGAIN when no listing is cached (or it was too
 * big to edit and was dropped), -ENOMEM (dropped). */
int cache_dir_edit(struct cache *c, const char *dirpath, const char *name, const char *key,
                   int has_attr, uint64_t size, struct timespec mtime, int remove);

/* Remember for the negative lifetime that nothing exists at PATH (it
 * replaces what was cached there). Returns 0 or -ENOMEM. */
int cache_put_absent(struct cache *c, const char *path);

/* Is PATH known absent (a fresh cache_put_absent)? 1 or 0. */
int cache_absent(struct cache *c, const char *path);

/* Is a fresh listing (even an empty one) or marker cached for PATH? 1 or 0. */
int cache_known_dir(struct cache *c, const char *path);

/* Is the fresh listing of DIRPATH one the mount made (CACHE_OWNED)? 1 or 0. */
int cache_dir_owned(struct cache *c, const char *dirpath);

/* Did the mount make directory DIRPATH, whose owned listing expired since
 * (nothing else cached for it)? Then a name missing from it is best found
 * by listing it again (cache_dir_own). 1 or 0. */
int cache_dir_made(struct cache *c, const char *dirpath);

/* Make the fresh listing of DIRPATH an owned one (it was just fetched
 * whole, of a directory the mount made). */
void cache_dir_own(struct cache *c, const char *dirpath);

/* Note that a reader went through directory DIRPATH now (readdir, an open
 * of a file in it, a read of its entities in order). With nothing cached
 * for DIRPATH, an existence marker is made to hold the note. */
void cache_dir_touch(struct cache *c, const char *dirpath);

/* Was the listing of DIRPATH fetched, or DIRPATH touched, within the
 * negative lifetime (a walk is going through it)? 1 or 0. */
int cache_dir_active(struct cache *c, const char *dirpath);

/* File NAME of directory DIRPATH is opened now: is this a walk's open
 * (cache_dir_active, and the last file opened in it was another one: the
 * same file read in a loop is not a walk)? 1 or 0; either way the open is
 * noted (cache_dir_touch). */
int cache_dir_walk(struct cache *c, const char *dirpath, const char *name);

/* Entity PATH was read by a walk, which reads each file once: put it at
 * the cold end of the LRU list, to be evicted before the entities a walk
 * has not reached yet (pages fetched ahead of it), which the plain LRU
 * order would evict first once the walk has filled the cache. Nothing
 * when PATH is not a cached entity. */
void cache_used_once(struct cache *c, const char *path);

/* Drop the entry at PATH (file or directory listing), if any. */
void cache_invalidate(struct cache *c, const char *path);

/* Snapshot of the counters. */
void cache_get_stats(struct cache *c, struct cache_stats *out);

#endif
