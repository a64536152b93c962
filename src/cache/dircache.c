/* cache/dircache.c - the cache's listings (looked up, edited after the mount's own
 * changes, owned when the mount made the directory) and its markers of
 * what exists, what does not, and where a walk goes (cache.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/cache_i.h"
#include "util/util.h"

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
        e->neg_until = cache_now() + c->ttl;
    if (!(e->path = strdup(path)) || listing_seal(l) < 0) {
        cache_entry_free(e);
        return -ENOMEM;
    }
    e->dir = listing_ref(l);
    e->charge = ENTRY_OVERHEAD + strlen(path) + listing_bytes(l);
    pthread_mutex_lock(&c->lock);
    cache_insert(c, e, ttl);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* A reference to a fresh listing; see cache.h. */
struct listing *cache_get_listing(struct cache *c, const char *path)
{
    struct entry *e;
    struct listing *l = NULL;

    pthread_mutex_lock(&c->lock);
    if ((e = cache_fetch(c, path, ENTRY_DIR)) != NULL)
        l = listing_ref(e->dir);
    pthread_mutex_unlock(&c->lock);
    return l;
}

/* The fresh listing of DIRPATH (bumped in the LRU: a listing in use is
 * recently used) and NAME's index in it (*idx, -1 when absent); NULL when
 * no fresh listing is cached. Lock held. */
static struct entry *find_listed(struct cache *c, const char *dirpath, const char *name, long *idx)
{
    struct entry *e;

    LOCK_HELD(&c->lock);
    e = cache_find(c, dirpath);
    if (!e || e->kind != ENTRY_DIR)
        return NULL;
    cache_lru_unlink(c, e);
    cache_lru_push_front(c, e);
    *idx = listing_find(e->dir, name);
    return e;
}

/* May listing entry E say that a name it lacks does not exist? */
static int answers_absence(const struct entry *e)
{
    return e->neg_until > cache_now();
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
    cur = cache_find(c, path);
    if (cur && cur->kind == ENTRY_DIR) {
        pthread_mutex_unlock(&c->lock);
        cache_entry_free(e); /* a listing says more: keep it */
        return 0;
    }
    cache_insert(c, e, c->ttl);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* Known to exist? See cache.h. */
int cache_exists(struct cache *c, const char *path)
{
    struct entry *e;
    int r;

    pthread_mutex_lock(&c->lock);
    e = cache_find(c, path);
    r = e && (e->kind == ENTRY_MARK || (e->kind == ENTRY_DIR && listing_count(e->dir) > 0));
    if (r)
        c->hits++;
    pthread_mutex_unlock(&c->lock);
    return r;
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
    e = cache_find(c, dirpath);
    if (!e || e->kind != ENTRY_DIR) {
        rc = -EAGAIN;
    } else if (listing_count(e->dir) >= DIR_EDIT_MAX ||
               !(edited = listing_edit(e->dir, name, key, has_attr, size, mtime, remove))) {
        cache_remove_entry(c, e); /* too big to copy, or no memory: ask again */
        rc = -EAGAIN;
    } else {
        c->bytes -= e->charge;
        listing_unref(e->dir);
        e->dir = edited;
        e->charge = ENTRY_OVERHEAD + strlen(e->path) + listing_bytes(edited);
        c->bytes += e->charge;
        if (e->flags & CACHE_OWNED) /* the mount keeps it complete: renewed */
            e->expires = e->neg_until = cache_now() + c->ttl;
        for (struct entry *v; c->bytes > c->max_bytes && (v = cache_victim(c)) != e;) {
            c->evictions++; /* it grew: make room as insert does */
            cache_remove_entry(c, v);
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
    cache_insert(c, e, c->neg_ttl);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

/* The bit of entry kind K in a set of kinds. */
#define KIND(k) (1u << (k))

/* A fresh entry at PATH of one of KINDS (KIND bits)? Counted as a hit
 * when there is one. */
static int has_kind(struct cache *c, const char *path, unsigned kinds)
{
    struct entry *e;
    int r;

    pthread_mutex_lock(&c->lock);
    e = cache_find(c, path);
    r = e && (kinds & KIND(e->kind));
    if (r)
        c->hits++;
    pthread_mutex_unlock(&c->lock);
    return r;
}

/* Known absent? See cache.h. */
int cache_absent(struct cache *c, const char *path)
{
    return has_kind(c, path, KIND(ENTRY_ABSENT));
}

/* Known as a directory? See cache.h. */
int cache_known_dir(struct cache *c, const char *path)
{
    return has_kind(c, path, KIND(ENTRY_DIR) | KIND(ENTRY_MARK));
}

/* Made by the mount, listing expired? See cache.h. */
int cache_dir_made(struct cache *c, const char *dirpath)
{
    return has_kind(c, dirpath, KIND(ENTRY_MADE));
}

/* Own a listing; see cache.h. */
void cache_dir_own(struct cache *c, const char *dirpath)
{
    struct entry *e;

    pthread_mutex_lock(&c->lock);
    if ((e = cache_find(c, dirpath)) && e->kind == ENTRY_DIR) {
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
    e = cache_find(c, dirpath);
    r = e && e->kind == ENTRY_DIR && (e->flags & CACHE_OWNED);
    pthread_mutex_unlock(&c->lock);
    return r;
}

/* The listing or marker of DIRPATH, touched NOW; with nothing cached
 * there, a marker made to hold the note (best effort: an entity was read
 * from it, so it exists). NULL when there is none. Lock held. */
static struct entry *touch_locked(struct cache *c, const char *dirpath, double now)
{
    struct entry *e, *mark;

    LOCK_HELD(&c->lock);
    e = cache_find(c, dirpath);
    if (!e && (mark = calloc(1, sizeof(*mark)))) {
        mark->kind = ENTRY_MARK;
        if (!(mark->path = strdup(dirpath))) {
            free(mark);
        } else {
            mark->charge = ENTRY_OVERHEAD + strlen(dirpath);
            cache_insert(c, mark, c->ttl); /* may not keep it */
            e = cache_find(c, dirpath);
        }
    }
    if (!e || (e->kind != ENTRY_DIR && e->kind != ENTRY_MARK))
        return NULL;
    e->touched = now;
    return e;
}

/* Was E (NULL: nothing cached) fetched or touched within the negative
 * lifetime before NOW? Lock held. */
static int active_locked(const struct cache *c, const struct entry *e, double now)
{
    double since = 0;

    LOCK_HELD(&c->lock);
    if (e && (e->kind == ENTRY_DIR || e->kind == ENTRY_MARK))
        since = e->kind == ENTRY_DIR && e->born > e->touched ? e->born : e->touched;
    return since > 0 && now - since < c->neg_ttl;
}

/* Note a reader; see cache.h. */
void cache_dir_touch(struct cache *c, const char *dirpath)
{
    pthread_mutex_lock(&c->lock);
    (void)touch_locked(c, dirpath, cache_now());
    pthread_mutex_unlock(&c->lock);
}

/* A walk's open? See cache.h. One critical section: what was active is
 * judged before this open's own note. */
int cache_dir_walk(struct cache *c, const char *dirpath, const char *name)
{
    uint64_t h = hash_fnv1a(name) | 1; /* never 0 */
    double now = cache_now();
    struct entry *e;
    int walk;

    pthread_mutex_lock(&c->lock);
    walk = active_locked(c, cache_find(c, dirpath), now);
    if ((e = touch_locked(c, dirpath, now))) {
        walk = walk && e->last_open != h;
        e->last_open = h;
    }
    pthread_mutex_unlock(&c->lock);
    return walk;
}

/* A reader lately? See cache.h. */
int cache_dir_active(struct cache *c, const char *dirpath)
{
    int r;

    pthread_mutex_lock(&c->lock);
    r = active_locked(c, cache_find(c, dirpath), cache_now());
    pthread_mutex_unlock(&c->lock);
    return r;
}
