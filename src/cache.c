/* cache.c - a bounded, thread-safe cache of rendered entities and directory listings (TTL + LRU). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "hash.h"

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

struct entry {
    char *path;
    uint64_t hash;
    enum entry_kind kind;
    double expires;                 /* CLOCK_MONOTONIC seconds */
    double born;                    /* when its content was current (monotonic) */
    double neg_until;               /* ENTRY_DIR: lacking a name means absent until */
    double touched;                 /* ENTRY_DIR: last cache_dir_touch */
    unsigned flags;                 /* CACHE_LISTED (files), CACHE_OWNED (listings) */
    size_t charge;                  /* bytes accounted to this entry */
    struct cache_file file;         /* ENTRY_FILE */
    struct listing *dir;            /* ENTRY_DIR (one reference) */
    struct entry *hnext;            /* hash chain */
    struct entry *prev, *next;      /* LRU list, head = most recent */
};

struct cache {
    pthread_mutex_t lock;
    struct entry **buckets;
    size_t n_buckets, n_entries;
    size_t bytes, max_bytes;
    size_t dir_bytes;               /* charged to ENTRY_DIR entries */
    double ttl;
    double neg_ttl;                 /* the negative lifetime (cache_set_negative_ttl) */
    struct entry *head, *tail;
    uint64_t hits, misses, evictions, expirations;
};

static double mono_now(void)
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
    if (!c->buckets || pthread_mutex_init(&c->lock, NULL) != 0) {
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

static void entry_free(struct entry *e)
{
    free(e->path);
    cache_file_clear(&e->file);
    listing_unref(e->dir);
    free(e);
}

static void lru_unlink(struct cache *c, struct entry *e)
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

static void lru_push_front(struct cache *c, struct entry *e)
{
    e->prev = NULL;
    e->next = c->head;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

/* Unlink E from the table and the LRU list and free it. Lock held. */
static void remove_entry(struct cache *c, struct entry *e)
{
    struct entry **pp = &c->buckets[e->hash % c->n_buckets];

    while (*pp && *pp != e)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = e->hnext;
    lru_unlink(c, e);
    c->bytes -= e->charge;
    if (e->kind == ENTRY_DIR)
        c->dir_bytes -= e->charge;
    c->n_entries--;
    entry_free(e);
}

/* The entry to evict: the least recently used one that is not a listing,
 * while listings hold at most half the cache (a listing is small for what
 * it saves: a whole scan, and every stat of its directory); else the least
 * recently used of all. Lock held; the cache is not empty. */
static struct entry *victim(struct cache *c)
{
    if (c->dir_bytes <= c->max_bytes / 2)
        for (struct entry *e = c->tail; e; e = e->prev)
            if (e->kind != ENTRY_DIR)
                return e;
    return c->tail;
}

/* Owned listing E expired: keep only that the mount made its directory
 * (ENTRY_MADE, fresh for another TTL), so that the next miss in it lists it
 * again (a restore that made every directory first reaches the last one
 * long after). Lock held. */
static void made_from_owned(struct cache *c, struct entry *e)
{
    size_t charge = ENTRY_OVERHEAD + strlen(e->path);

    c->bytes -= e->charge - charge;
    c->dir_bytes -= e->charge;
    e->charge = charge;
    listing_unref(e->dir);
    e->dir = NULL;
    e->kind = ENTRY_MADE;
    e->expires = mono_now() + c->ttl;
}

/* Find the entry for PATH; expired entries are removed (an owned listing
 * becomes ENTRY_MADE). Lock held. */
static struct entry *find(struct cache *c, const char *path)
{
    uint64_t h = hash_fnv1a(path);

    for (struct entry *e = c->buckets[h % c->n_buckets]; e; e = e->hnext) {
        if (e->hash != h || strcmp(e->path, path) != 0)
            continue;
        if (e->expires <= mono_now()) {
            c->expirations++;
            if (e->kind == ENTRY_DIR && (e->flags & CACHE_OWNED))
                made_from_owned(c, e);
            else
                remove_entry(c, e);
            return NULL;
        }
        return e;
    }
    return NULL;
}

/* Double the bucket array when the load passes 1. Lock held; best effort. */
static void maybe_grow(struct cache *c)
{
    size_t nb = c->n_buckets * 2;
    struct entry **b;

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
static void insert(struct cache *c, struct entry *e, double ttl)
{
    double now = mono_now();

    struct entry *old = find(c, e->path);

    if (old)
        remove_entry(c, old);
    if (e->charge > c->max_bytes || c->ttl <= 0) {
        entry_free(e);
        return;
    }
    while (c->tail && c->bytes + e->charge > c->max_bytes) {
        c->evictions++;
        remove_entry(c, victim(c));
    }
    e->hash = hash_fnv1a(e->path);
    e->expires = now + ttl;
    if (e->born == 0)
        e->born = now;
    if (e->neg_until == 0)
        e->neg_until = e->born + c->neg_ttl;
    e->hnext = c->buckets[e->hash % c->n_buckets];
    c->buckets[e->hash % c->n_buckets] = e;
    lru_push_front(c, e);
    c->bytes += e->charge;
    if (e->kind == ENTRY_DIR)
        c->dir_bytes += e->charge;
    c->n_entries++;
    maybe_grow(c);
}

/* The fresh entry of KIND at PATH, counted as a hit and made the most
 * recently used; NULL, counted as a miss, when there is none. Lock held. */
static struct entry *fetch(struct cache *c, const char *path, enum entry_kind kind)
{
    struct entry *e = find(c, path);

    if (!e || e->kind != kind) {
        c->misses++;
        return NULL;
    }
    c->hits++;
    lru_unlink(c, e);
    lru_push_front(c, e);
    return e;
}

/* Store a file; see cache.h. */
int cache_put_file(struct cache *c, const char *path, const char *data, size_t len,
                   const char *etag, struct timespec mtime, unsigned flags)
{
    struct cache_file f = { .data = (char *)data, .len = len, .etag = (char *)etag,
                            .mtime = mtime };

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
        entry_free(e);
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
    insert(c, e, c->ttl);
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
    if ((e = fetch(c, path, ENTRY_FILE)) != NULL) {
        out->data = malloc(e->file.len + 1);
        out->etag = e->file.etag ? strdup(e->file.etag) : NULL;
        if (!out->data || (e->file.etag && !out->etag)) {
            cache_file_clear(out);
            rc = -ENOMEM;
        } else {
            memcpy(out->data, e->file.data, e->file.len + 1);
            out->len = e->file.len;
            out->mtime = e->file.mtime;
            out->age = mono_now() - e->born;
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
    e = find(c, path);
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

/* Store a listing; see cache.h. */
int cache_put_listing(struct cache *c, const char *path, struct listing *l, unsigned flags)
{
    struct entry *e = calloc(1, sizeof(*e));
    double ttl = flags & CACHE_SHORT ? c->neg_ttl : c->ttl;

    if (!e)
        return -ENOMEM;
    e->kind = ENTRY_DIR;
    e->flags = flags & CACHE_OWNED;
    if (flags & CACHE_OWNED)
        e->neg_until = mono_now() + c->ttl;
    if (!(e->path = strdup(path)) || listing_seal(l) < 0) {
        entry_free(e);
        return -ENOMEM;
    }
    e->dir = listing_ref(l);
    e->charge = ENTRY_OVERHEAD + strlen(path) + listing_bytes(l);
    pthread_mutex_lock(&c->lock);
    insert(c, e, ttl);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* A reference to a fresh listing; see cache.h. */
struct listing *cache_get_listing(struct cache *c, const char *path)
{
    struct entry *e;
    struct listing *l = NULL;

    pthread_mutex_lock(&c->lock);
    if ((e = fetch(c, path, ENTRY_DIR)) != NULL)
        l = listing_ref(e->dir);
    pthread_mutex_unlock(&c->lock);
    return l;
}

/* The fresh listing of DIRPATH (bumped in the LRU: a listing in use is
 * recently used) and NAME's index in it (*idx, -1 when absent); NULL when
 * no fresh listing is cached. Lock held. */
static struct entry *find_listed(struct cache *c, const char *dirpath, const char *name,
                                 long *idx)
{
    struct entry *e = find(c, dirpath);

    if (!e || e->kind != ENTRY_DIR)
        return NULL;
    lru_unlink(c, e);
    lru_push_front(c, e);
    *idx = listing_find(e->dir, name);
    return e;
}

/* May listing entry E say that a name it lacks does not exist? */
static int answers_absence(const struct entry *e)
{
    return e->neg_until > mono_now();
}

/* Find NAME in a fresh listing; see cache.h. */
int cache_dir_lookup(struct cache *c, const char *dirpath, const char *name, char **key_out)
{
    struct entry *e;
    long i;
    int rc = -EAGAIN;

    if (key_out)
        *key_out = NULL;
    pthread_mutex_lock(&c->lock);
    if ((e = find_listed(c, dirpath, name, &i)) != NULL) {
        c->hits++;
        rc = i >= 0 ? 0 : answers_absence(e) ? -ENOENT : -EAGAIN;
        if (i >= 0 && key_out && !(*key_out = listing_key_dup(e->dir, (size_t)i)))
            rc = -ENOMEM;
    } else {
        c->misses++;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* Attributes from a listing; see cache.h. */
int cache_dir_attr(struct cache *c, const char *dirpath, const char *name, size_t *len,
                   struct timespec *mtime)
{
    struct listing_ent le;
    struct entry *e;
    long i;
    int rc = -EAGAIN;

    pthread_mutex_lock(&c->lock);
    if ((e = find_listed(c, dirpath, name, &i)) != NULL) {
        rc = answers_absence(e) ? -ENOENT : -EAGAIN;
        if (i >= 0) {
            listing_get(e->dir, (size_t)i, &le);
            rc = le.has_attr ? 0 : -EAGAIN;
            *len = (size_t)le.size;
            *mtime = le.mtime;
        }
    }
    if (rc == 0)
        c->hits++;
    else
        c->misses++;
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* Store an existence marker; see cache.h. The look for a listing and the
 * insert are one critical section: an entry found is only looked at while
 * the lock is held (another thread may evict and free it the moment the
 * lock is released), and no listing can arrive in between to be replaced. */
int cache_put_exists(struct cache *c, const char *path)
{
    struct entry *e = calloc(1, sizeof(*e)), *cur;

    if (!e)
        return -ENOMEM;
    e->kind = ENTRY_MARK;
    if (!(e->path = strdup(path))) {
        free(e);
        return -ENOMEM;
    }
    e->charge = ENTRY_OVERHEAD + strlen(path);
    pthread_mutex_lock(&c->lock);
    cur = find(c, path);
    if (cur && cur->kind == ENTRY_DIR) {
        pthread_mutex_unlock(&c->lock);
        entry_free(e);          /* a listing says more: keep it */
        return 0;
    }
    insert(c, e, c->ttl);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* Known to exist? See cache.h. */
int cache_exists(struct cache *c, const char *path)
{
    struct entry *e;
    int r;

    pthread_mutex_lock(&c->lock);
    e = find(c, path);
    r = e && (e->kind == ENTRY_MARK || (e->kind == ENTRY_DIR && listing_count(e->dir) > 0));
    if (r)
        c->hits++;
    pthread_mutex_unlock(&c->lock);
    return r;
}

/* Set the negative lifetime; see cache.h. */
void cache_set_negative_ttl(struct cache *c, double secs)
{
    c->neg_ttl = secs;
}

/* Edit a cached listing; see cache.h. The edited copy replaces the entry
 * in place (same freshness), so readers holding the old one keep it. */
int cache_dir_edit(struct cache *c, const char *dirpath, const char *name, const char *key,
                   int has_attr, uint64_t size, struct timespec mtime, int remove)
{
    struct listing *edited = NULL;
    struct entry *e;
    int rc = 0;

    pthread_mutex_lock(&c->lock);
    e = find(c, dirpath);
    if (!e || e->kind != ENTRY_DIR) {
        rc = -EAGAIN;
    } else if (listing_count(e->dir) >= DIR_EDIT_MAX ||
               !(edited = listing_edit(e->dir, name, key, has_attr, size, mtime, remove))) {
        remove_entry(c, e);             /* too big to copy, or no memory: ask again */
        rc = -EAGAIN;
    } else {
        c->bytes -= e->charge;
        c->dir_bytes -= e->charge;
        listing_unref(e->dir);
        e->dir = edited;
        e->charge = ENTRY_OVERHEAD + strlen(e->path) + listing_bytes(edited);
        c->bytes += e->charge;
        c->dir_bytes += e->charge;
        if (e->flags & CACHE_OWNED)     /* the mount keeps it complete: renewed */
            e->expires = e->neg_until = mono_now() + c->ttl;
        for (struct entry *v; c->bytes > c->max_bytes && (v = victim(c)) != e;) {
            c->evictions++;             /* it grew: make room as insert does */
            remove_entry(c, v);
        }
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

/* Remember an absence; see cache.h. */
int cache_put_absent(struct cache *c, const char *path)
{
    struct entry *e = calloc(1, sizeof(*e));

    if (!e)
        return -ENOMEM;
    e->kind = ENTRY_ABSENT;
    if (!(e->path = strdup(path))) {
        free(e);
        return -ENOMEM;
    }
    e->charge = ENTRY_OVERHEAD + strlen(path);
    pthread_mutex_lock(&c->lock);
    insert(c, e, c->neg_ttl);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* Entry at PATH of KIND, fresh? Counted as a hit when there is one. */
static int has_kind(struct cache *c, const char *path, enum entry_kind kind)
{
    struct entry *e;
    int r;

    pthread_mutex_lock(&c->lock);
    e = find(c, path);
    r = e && e->kind == kind;
    if (r)
        c->hits++;
    pthread_mutex_unlock(&c->lock);
    return r;
}

/* Known absent? See cache.h. */
int cache_absent(struct cache *c, const char *path)
{
    return has_kind(c, path, ENTRY_ABSENT);
}

/* Known as a directory? See cache.h. */
int cache_known_dir(struct cache *c, const char *path)
{
    return has_kind(c, path, ENTRY_DIR) || has_kind(c, path, ENTRY_MARK);
}

/* Made by the mount, listing expired? See cache.h. */
int cache_dir_made(struct cache *c, const char *dirpath)
{
    return has_kind(c, dirpath, ENTRY_MADE);
}

/* Own a listing; see cache.h. */
void cache_dir_own(struct cache *c, const char *dirpath)
{
    struct entry *e;

    pthread_mutex_lock(&c->lock);
    if ((e = find(c, dirpath)) && e->kind == ENTRY_DIR) {
        e->flags |= CACHE_OWNED;
        e->neg_until = e->expires;
    }
    pthread_mutex_unlock(&c->lock);
}

/* Made by the mount? See cache.h. */
int cache_dir_owned(struct cache *c, const char *dirpath)
{
    struct entry *e;
    int r;

    pthread_mutex_lock(&c->lock);
    e = find(c, dirpath);
    r = e && e->kind == ENTRY_DIR && (e->flags & CACHE_OWNED);
    pthread_mutex_unlock(&c->lock);
    return r;
}

/* Note a reader; see cache.h. */
void cache_dir_touch(struct cache *c, const char *dirpath)
{
    struct entry *e, *mark;

    pthread_mutex_lock(&c->lock);
    if ((e = find(c, dirpath)) && (e->kind == ENTRY_DIR || e->kind == ENTRY_MARK)) {
        e->touched = mono_now();
    } else if (!e && (mark = calloc(1, sizeof(*mark)))) {
        /* best effort: an entity was read from it, so it exists */
        mark->kind = ENTRY_MARK;
        if (!(mark->path = strdup(dirpath))) {
            free(mark);
        } else {
            mark->charge = ENTRY_OVERHEAD + strlen(dirpath);
            mark->touched = mono_now();
            insert(c, mark, c->ttl);
        }
    }
    pthread_mutex_unlock(&c->lock);
}

/* A reader lately? See cache.h. */
int cache_dir_active(struct cache *c, const char *dirpath)
{
    struct entry *e;
    double since = 0;

    pthread_mutex_lock(&c->lock);
    if ((e = find(c, dirpath)) && (e->kind == ENTRY_DIR || e->kind == ENTRY_MARK))
        since = e->kind == ENTRY_DIR && e->born > e->touched ? e->born : e->touched;
    pthread_mutex_unlock(&c->lock);
    return since > 0 && mono_now() - since < c->neg_ttl;
}

/* Drop PATH; see cache.h. */
void cache_invalidate(struct cache *c, const char *path)
{
    struct entry *e;

    pthread_mutex_lock(&c->lock);
    e = find(c, path);
    if (e)
        remove_entry(c, e);
    pthread_mutex_unlock(&c->lock);
}

void cache_get_stats(struct cache *c, struct cache_stats *out)
{
    pthread_mutex_lock(&c->lock);
    *out = (struct cache_stats){
        .hits = c->hits, .misses = c->misses, .evictions = c->evictions,
        .expirations = c->expirations, .bytes = c->bytes, .entries = c->n_entries,
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
        remove_entry(c, c->head);
    free(c->buckets);
    pthread_mutex_destroy(&c->lock);
    free(c);
}
