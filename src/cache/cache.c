/* cache/cache.c - a bounded, thread-safe cache of rendered entities and directory listings (TTL + LRU): entries, eviction, files (listings and markers: cache/dircache.c). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/cache_i.h"
#include "util/util.h"

/* See cache/cache_i.h. */
double cache_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Create a cache; see cache.h. */
struct cache *cache_new(size_t max_bytes, double ttl_seconds)
{
    struct cache *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->n_buckets = 4096;
    c->buckets = calloc(c->n_buckets, sizeof(*c->buckets));
    if (!c->buckets || lock_init(&c->lock) != 0) {
        free(c->buckets);
        free(c);
        return NULL;
    }
    c->max_bytes = max_bytes;
    c->ttl = ttl_seconds;
    c->neg_ttl = ttl_seconds;
    return c;
}

void cache_file_clear(struct cache_file *f)
{
    free(f->data);
    free(f->etag);
    memset(f, 0, sizeof(*f));
}

/* See cache/cache_i.h. */
void cache_entry_free(struct entry *e)
{
    free(e->path);
    cache_file_clear(&e->file);
    listing_unref(e->dir);
    free(e);
}

/* See cache/cache_i.h. */
void cache_lru_unlink(struct cache *c, struct entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

/* See cache/cache_i.h. */
void cache_lru_push_front(struct cache *c, struct entry *e)
{
    LOCK_HELD(&c->lock);
    e->prev = NULL;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

/* Unlink E from the table and the LRU list and free it. Lock held, or C
 * shared with no one (cache_free): not asserted. */
void cache_remove_entry(struct cache *c, struct entry *e)
{
    struct entry **pp = &c->buckets[e->hash % c->n_buckets];

    while (*pp && *pp != e)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = e->hnext;
    cache_lru_unlink(c, e);
    c->bytes -= e->charge;
    c->n_entries--;
    cache_entry_free(e);
}

/* Put E (unlinked) at the tail of the LRU list: the first to be evicted.
 * Lock held. */
static void lru_push_back(struct cache *c, struct entry *e)
{
    LOCK_HELD(&c->lock);
    e->next = NULL;
    e->prev = c->tail;
    if (c->tail)
        c->tail->next = e;
    c->tail = e;
    if (!c->head)
        c->head = e;
}

/* The entry to evict: the least recently used one. A listing is used when
 * it is looked into and whenever an entity of its directory (or below) is
 * cached or read (lru_bump_dirs), so it stays while its directory is in
 * use, and a walk's listings go once the walk has left them. Lock held; the
 * cache is not empty. */
struct entry *cache_victim(struct cache *c)
{
    LOCK_HELD(&c->lock);
    return c->tail;
}

/* The listings of the directories above entity PATH ("/T/P" and "/T" of
 * "/T/P/R.json", and the root's) made the most recently used: an entity
 * cached or read is a use of the listings that name it. Lock held. */
static void lru_bump_dirs(struct cache *c, const char *path)
{
    char dir[PATH_MAX];
    size_t n = strlen(path);
    char *slash;
    struct entry *e;

    LOCK_HELD(&c->lock);
    if (n >= sizeof(dir))
        return;
    memcpy(dir, path, n + 1);
    while ((slash = strrchr(dir, '/')) != NULL) {
        slash[slash == dir] = '\0'; /* "/T/P" -> "/T", "/T" -> "/" (the root) */
        if ((e = cache_find(c, dir)) && e->kind == ENTRY_DIR) {
            cache_lru_unlink(c, e);
            cache_lru_push_front(c, e);
        }
        if (slash == dir)
            break;
    }
}

/* Owned listing E expired: keep only that the mount made its directory
 * (ENTRY_MADE, fresh for another TTL), so that the next miss in it lists it
 * again (a restore that made every directory first reaches the last one
 * long after). Lock held. */
static void made_from_owned(struct cache *c, struct entry *e)
{
    size_t charge;

    LOCK_HELD(&c->lock);
    charge = ENTRY_OVERHEAD + strlen(e->path);
    c->bytes -= e->charge - charge;
    e->charge = charge;
    listing_unref(e->dir);
    e->dir = NULL;
    e->kind = ENTRY_MADE;
    e->expires = cache_now() + c->ttl;
}

/* Find the entry for PATH; expired entries are removed (an owned listing
 * becomes ENTRY_MADE). Lock held. */
struct entry *cache_find(struct cache *c, const char *path)
{
    uint64_t h;

    LOCK_HELD(&c->lock);
    h = hash_fnv1a(path);
    for (struct entry *e = c->buckets[h % c->n_buckets]; e; e = e->hnext) {
        if (e->hash != h || strcmp(e->path, path) != 0)
            continue;
        if (e->expires <= cache_now()) {
            c->expirations++;
            if (e->kind == ENTRY_DIR && (e->flags & CACHE_OWNED))
                made_from_owned(c, e);
            else
                cache_remove_entry(c, e);
            return NULL;
        }
        return e;
    }
    return NULL;
}

/* Double the bucket array when the load passes 1. Lock held; best effort. */
static void maybe_grow(struct cache *c)
{
    size_t nb;
    struct entry **b;

    LOCK_HELD(&c->lock);
    nb = c->n_buckets * 2;
    if (c->n_entries < c->n_buckets)
        return;
    b = calloc(nb, sizeof(*b));
    if (!b)
        return;
    for (size_t i = 0; i < c->n_buckets; i++) {
        struct entry *e = c->buckets[i], *n;

        for (; e; e = n) {
            n = e->hnext;
            e->hnext = b[e->hash % nb];
            b[e->hash % nb] = e;
        }
    }
    free(c->buckets);
    c->buckets = b;
    c->n_buckets = nb;
}

/* Insert E (replacing any entry at its path), fresh for TTL seconds, then
 * evict from the LRU tail until the cache fits. Takes ownership of E. E's
 * born and neg_until, when 0, become now. Lock held. */
void cache_insert(struct cache *c, struct entry *e, double ttl)
{
    double now;
    struct entry *old;

    LOCK_HELD(&c->lock);
    now = cache_now();
    old = cache_find(c, e->path);
    if (old)
        cache_remove_entry(c, old);
    if (e->charge > c->max_bytes || c->ttl <= 0) {
        cache_entry_free(e);
        return;
    }
    if (e->kind == ENTRY_FILE) /* before making room: its listings are in use */
        lru_bump_dirs(c, e->path);
    while (c->tail && c->bytes + e->charge > c->max_bytes) {
        c->evictions++;
        cache_remove_entry(c, cache_victim(c));
    }
    e->hash = hash_fnv1a(e->path);
    e->expires = now + ttl;
    if (e->born == 0)
        e->born = now;
    if (e->neg_until == 0)
        e->neg_until = e->born + c->neg_ttl;
    e->hnext = c->buckets[e->hash % c->n_buckets];
    c->buckets[e->hash % c->n_buckets] = e;
    cache_lru_push_front(c, e);
    c->bytes += e->charge;
    c->n_entries++;
    maybe_grow(c);
}

/* The fresh entry of KIND at PATH, counted as a hit and made the most
 * recently used; NULL, counted as a miss, when there is none. Lock held. */
struct entry *cache_fetch(struct cache *c, const char *path, enum entry_kind kind)
{
    struct entry *e;

    LOCK_HELD(&c->lock);
    e = cache_find(c, path);
    if (!e || e->kind != kind) {
        c->misses++;
        return NULL;
    }
    c->hits++;
    cache_lru_unlink(c, e);
    cache_lru_push_front(c, e);
    if (kind == ENTRY_FILE)
        lru_bump_dirs(c, path);
    return e;
}

/* Store a file; see cache.h. */
int cache_put_file(struct cache *c, const char *path, const char *data, size_t len,
                   const char *etag, struct timespec mtime, unsigned flags)
{
    struct cache_file f = {
        .data = (char *)data, .len = len, .etag = (char *)etag, .mtime = mtime
    };

    return cache_put(c, path, &f, flags);
}

/* Store a file; see cache.h. */
int cache_put(struct cache *c, const char *path, const struct cache_file *f, unsigned flags)
{
    struct entry *e = calloc(1, sizeof(*e));
    const char *data = f->data, *etag = f->etag;
    size_t len = f->len;

    if (!e)
        return -ENOMEM;
    e->kind = ENTRY_FILE;
    e->flags = flags & CACHE_LISTED;
    e->path = strdup(path);
    e->file.data = malloc(len + 1);
    e->file.etag = etag ? strdup(etag) : NULL;
    if (!e->path || !e->file.data || (etag && !e->file.etag)) {
        cache_entry_free(e);
        return -ENOMEM;
    }
    memcpy(e->file.data, data, len);
    e->file.data[len] = '\0';
    e->file.len = len;
    e->file.mtime = f->mtime;
    e->file.has_digest = f->has_digest;
    memcpy(e->file.digest, f->digest, sizeof(e->file.digest));
    e->charge = ENTRY_OVERHEAD + strlen(path) + len + (etag ? strlen(etag) : 0);
    pthread_mutex_lock(&c->lock);
    cache_insert(c, e, c->ttl);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* Copy a fresh file out; see cache.h. */
int cache_get_file(struct cache *c, const char *path, struct cache_file *out)
{
    struct entry *e;
    int rc = -ENOENT;

    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&c->lock);
    if ((e = cache_fetch(c, path, ENTRY_FILE)) != NULL) {
        out->data = malloc(e->file.len + 1);
        out->etag = e->file.etag ? strdup(e->file.etag) : NULL;
        if (!out->data || (e->file.etag && !out->etag)) {
            cache_file_clear(out);
            rc = -ENOMEM;
        } else {
            memcpy(out->data, e->file.data, e->file.len + 1);
            out->len = e->file.len;
            out->mtime = e->file.mtime;
            out->age = cache_now() - e->born;
            out->listed = (e->flags & CACHE_LISTED) != 0;
            out->has_digest = e->file.has_digest;
            memcpy(out->digest, e->file.digest, sizeof(out->digest));
            rc = 0;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* Attributes of a fresh file; see cache.h. */
int cache_file_attr(struct cache *c, const char *path, size_t *len, struct timespec *mtime)
{
    struct entry *e;
    int rc = -ENOENT;

    pthread_mutex_lock(&c->lock);
    e = cache_find(c, path);
    if (e && e->kind == ENTRY_FILE) {
        c->hits++;
        *len = e->file.len;
        *mtime = e->file.mtime;
        rc = 0;
    } else {
        c->misses++;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* Set the negative lifetime; see cache.h. */
void cache_set_negative_ttl(struct cache *c, double secs)
{
    c->neg_ttl = secs;
}

/* To the cold end; see cache.h. */
void cache_used_once(struct cache *c, const char *path)
{
    struct entry *e;

    pthread_mutex_lock(&c->lock);
    if ((e = cache_find(c, path)) && e->kind == ENTRY_FILE) {
        cache_lru_unlink(c, e);
        lru_push_back(c, e);
    }
    pthread_mutex_unlock(&c->lock);
}

/* Drop PATH; see cache.h. */
void cache_invalidate(struct cache *c, const char *path)
{
    struct entry *e;

    pthread_mutex_lock(&c->lock);
    e = cache_find(c, path);
    if (e)
        cache_remove_entry(c, e);
    pthread_mutex_unlock(&c->lock);
}

void cache_get_stats(struct cache *c, struct cache_stats *out)
{
    pthread_mutex_lock(&c->lock);
    *out = (struct cache_stats){
        .hits = c->hits,
        .misses = c->misses,
        .evictions = c->evictions,
        .expirations = c->expirations,
        .bytes = c->bytes,
        .entries = c->n_entries,
        .max_bytes = c->max_bytes,
    };
    pthread_mutex_unlock(&c->lock);
}

/* Free every entry and the cache. */
void cache_free(struct cache *c)
{
    if (!c)
        return;
    while (c->head)
        cache_remove_entry(c, c->head);
    free(c->buckets);
    pthread_mutex_destroy(&c->lock);
    free(c);
}
