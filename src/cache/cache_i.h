/* cache_i.h - the inside of the cache, shared by its two files only:
 * cache/cache.c (entries, LRU, TTL, files) and cache/dircache.c (listings and the
 * markers of what is known to exist or not). Not for other modules. */
#ifndef AZTFS_CACHE_CACHE_I_H
#define AZTFS_CACHE_CACHE_I_H

#include <pthread.h>
#include <stdint.h>

#include "cache/cache.h"

/* Bytes charged per entry for bookkeeping: the entry itself and the malloc
 * headers and rounding of its 3-4 blocks, so that cache_size is close to
 * the memory really held (measured: RSS per cached entity). */
#define ENTRY_OVERHEAD 192

/* Listings edited in place (cache_dir_update) up to this many entries;
 * a larger one is dropped instead (an edit copies the listing). */
#define DIR_EDIT_MAX 10000

/* ENTRY_MADE: the listing of a directory the mount made expired; what is
 * left says to list it again rather than ask name by name. */
enum entry_kind { ENTRY_FILE, ENTRY_DIR, ENTRY_MARK, ENTRY_ABSENT, ENTRY_MADE };

/* An entry is its maker's alone until cache_insert; from then on it is
 * reached only through its cache, with the cache's lock held (another
 * thread may evict and free it the moment the lock is released). */
struct entry {
    char *path;                /* guarded by cache.lock */
    uint64_t hash;             /* guarded by cache.lock */
    enum entry_kind kind;      /* guarded by cache.lock */
    double expires;            /* CLOCK_MONOTONIC seconds; guarded by cache.lock */
    double born;               /* when its content was current (monotonic);
                                * guarded by cache.lock */
    double neg_until;          /* ENTRY_DIR: lacking a name means absent until;
                                * guarded by cache.lock */
    double touched;            /* ENTRY_DIR, ENTRY_MARK: last cache_dir_touch;
                                * guarded by cache.lock */
    uint64_t last_open;        /* ENTRY_DIR, ENTRY_MARK: hash of the last name
                                * cache_dir_walk saw (0: none); guarded by
                                * cache.lock */
    unsigned flags;            /* CACHE_LISTED (files), CACHE_OWNED (listings);
                                * guarded by cache.lock */
    size_t charge;             /* bytes accounted to this entry; guarded by
                                * cache.lock */
    struct cache_file file;    /* ENTRY_FILE; guarded by cache.lock */
    struct listing *dir;       /* ENTRY_DIR (one reference; the listing itself is
                                * sealed); guarded by cache.lock */
    struct entry *hnext;       /* hash chain; guarded by cache.lock */
    struct entry *prev, *next; /* LRU list, head = most recent; guarded by
                                * cache.lock */
};

struct cache {
    pthread_mutex_t lock;
    struct entry **buckets;      /* guarded by lock */
    size_t n_buckets, n_entries; /* guarded by lock */
    size_t bytes;                /* charged to all entries; guarded by lock */
    size_t max_bytes;            /* set by cache_new */
    double ttl;                  /* set by cache_new */
    /* the negative lifetime: set by cache_new and cache_set_negative_ttl,
     * before concurrent use */
    double neg_ttl;
    struct entry *head, *tail;                     /* guarded by lock */
    uint64_t hits, misses, evictions, expirations; /* guarded by lock */
};

/* CLOCK_MONOTONIC seconds. */
double cache_now(void);

/* Free E (not linked anywhere any more). */
void cache_entry_free(struct entry *e);

/* Unlink E from the table and the LRU list and free it. Lock held, or C
 * shared with no one (cache_free): not asserted. */
void cache_remove_entry(struct cache *c, struct entry *e);

/* Move E to the head of the LRU list (most recent): unlink it, then push
 * it in front. Lock held (cache_lru_unlink also from cache_remove_entry in
 * cache_free, with C shared with no one: not asserted there). */
void cache_lru_unlink(struct cache *c, struct entry *e);
void cache_lru_push_front(struct cache *c, struct entry *e);

/* The entry to evict next. Lock held; the cache is not empty. */
struct entry *cache_victim(struct cache *c);

/* The fresh entry for PATH, or NULL; expired entries are removed (an owned
 * listing becomes ENTRY_MADE). Lock held. */
struct entry *cache_find(struct cache *c, const char *path);

/* The fresh entry of KIND at PATH, counted as a hit and made the most
 * recently used; NULL, counted as a miss, when there is none. Lock held. */
struct entry *cache_fetch(struct cache *c, const char *path, enum entry_kind kind);

/* Insert E (replacing any entry at its path), fresh for TTL seconds, then
 * evict until the cache fits. Takes ownership of E. Lock held. */
void cache_insert(struct cache *c, struct entry *e, double ttl);

#endif
