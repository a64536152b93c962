/* cache/listing.c - compact, refcounted directory listings: names, keys and file attributes. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "cache/cache.h"

#define NO_ATTR UINT64_MAX

/* One entry: offsets into the arena (32 bytes). */
struct rec {
    uint32_t name_off;
    uint32_t key_off; /* == name_off when the name begins with the key */
    uint32_t key_len;
    uint32_t mtime_nsec;
    int64_t mtime_sec;
    uint64_t size; /* NO_ATTR: attributes unknown */
};

struct listing {
    atomic_int refs;
    int sealed;
    struct rec *recs;
    size_t n, cap;
    char *arena;
    size_t alen, acap;
    uint32_t *index;   /* open addressing: entry index + 1, 0 = empty */
    size_t index_size; /* a power of two, or 0 */
};

/* A new listing; see cache/cache.h. */
struct listing *listing_new(void)
{
    struct listing *l = calloc(1, sizeof(*l));

    if (l)
        atomic_init(&l->refs, 1);
    return l;
}

/* Grow *buf (element size SZ) to hold at least NEED elements. */
static int grow(void **buf, size_t *cap, size_t need, size_t sz, size_t first)
{
    size_t c = *cap ? *cap : first;
    void *p;

    while (c < need)
        c *= 2;
    if (c == *cap)
        return 0;
    if (!(p = realloc(*buf, c * sz)))
        return -ENOMEM;
    *buf = p;
    *cap = c;
    return 0;
}

/* Copy LEN bytes of S plus a NUL into the arena; *off receives where. */
static int arena_put(struct listing *l, const char *s, size_t len, uint32_t *off)
{
    if (l->alen + len + 1 > UINT32_MAX)
        return -EFBIG;
    if (grow((void **)&l->arena, &l->acap, l->alen + len + 1, 1, 4096) < 0)
        return -ENOMEM;
    memcpy(l->arena + l->alen, s, len);
    l->arena[l->alen + len] = '\0';
    *off = (uint32_t)l->alen;
    l->alen += len + 1;
    return 0;
}

/* Put entry I into L's name index (which has room). */
static void index_put(struct listing *l, size_t i)
{
    size_t h = (size_t)hash_fnv1a(l->arena + l->recs[i].name_off) & (l->index_size - 1);

    while (l->index[h])
        h = (h + 1) & (l->index_size - 1);
    l->index[h] = (uint32_t)(i + 1);
}

/* (Re)build L's name index with room for NEED entries at half load.
 * Returns 0 or -ENOMEM (the old index, if any, is kept). */
static int index_build(struct listing *l, size_t need)
{
    size_t size = 16;
    uint32_t *idx;

    while (size < 2 * need)
        size *= 2;
    if (!(idx = calloc(size, sizeof(*idx))))
        return -ENOMEM;
    free(l->index);
    l->index = idx;
    l->index_size = size;
    for (size_t i = 0; i < l->n; i++)
        index_put(l, i);
    return 0;
}

/* Append an entry; see cache/cache.h. */
int listing_add(struct listing *l, const char *name, const char *key, int has_attr, uint64_t size,
                struct timespec mtime)
{
    size_t nlen = strlen(name), klen = strlen(key);
    struct rec r = { 0 };
    int rc;

    if (l->sealed || klen > UINT32_MAX)
        return -EINVAL;
    if (grow((void **)&l->recs, &l->cap, l->n + 1, sizeof(*l->recs), 64) < 0)
        return -ENOMEM;
    if ((rc = arena_put(l, name, nlen, &r.name_off)) < 0)
        return rc;
    r.key_off = r.name_off;
    if (strncmp(name, key, klen) != 0 && (rc = arena_put(l, key, klen, &r.key_off)) < 0)
        return rc;
    r.key_len = (uint32_t)klen;
    r.size = has_attr && size != NO_ATTR ? size : NO_ATTR;
    r.mtime_sec = mtime.tv_sec;
    r.mtime_nsec = (uint32_t)mtime.tv_nsec;
    l->recs[l->n++] = r;
    if (l->index && l->index_size >= 2 * l->n)
        index_put(l, l->n - 1);
    else if (l->index && index_build(l, 2 * l->n) < 0) {
        free(l->index); /* listing_find scans until the seal indexes it */
        l->index = NULL;
        l->index_size = 0;
    }
    return 0;
}

/* Seal and index; see cache/cache.h. */
int listing_seal(struct listing *l)
{
    void *p;

    if (l->sealed)
        return 0;
    if ((!l->index || l->index_size < 2 * l->n) && index_build(l, l->n) < 0)
        return -ENOMEM;
    /* give back the doubling slack (best effort: a failed shrink keeps it) */
    if (l->n && l->n < l->cap && (p = realloc(l->recs, l->n * sizeof(*l->recs)))) {
        l->recs = p;
        l->cap = l->n;
    }
    if (l->alen && l->alen < l->acap && (p = realloc(l->arena, l->alen))) {
        l->arena = p;
        l->acap = l->alen;
    }
    l->sealed = 1;
    return 0;
}

/* Append unless present; see cache.h. */
int listing_add_once(struct listing *l, const char *name, const char *key, int has_attr,
                     uint64_t size, struct timespec mtime)
{
    int rc;

    if (l->sealed)
        return -EINVAL;
    if ((!l->index || l->index_size < 2 * (l->n + 1)) && index_build(l, 2 * (l->n + 1)) < 0)
        return -ENOMEM;
    if (listing_find(l, name) >= 0)
        return 1;
    /* listing_add puts it into the index */
    return (rc = listing_add(l, name, key, has_attr, size, mtime)) < 0 ? rc : 0;
}

size_t listing_count(const struct listing *l)
{
    return l->n;
}

/* Entry view; see cache/cache.h. */
void listing_get(const struct listing *l, size_t i, struct listing_ent *out)
{
    const struct rec *r = &l->recs[i];

    out->name = l->arena + r->name_off;
    out->key = l->arena + r->key_off;
    out->key_len = r->key_len;
    out->has_attr = r->size != NO_ATTR;
    out->size = out->has_attr ? r->size : 0;
    out->mtime.tv_sec = (time_t)r->mtime_sec;
    out->mtime.tv_nsec = (long)r->mtime_nsec;
}

/* Look a name up; see cache/cache.h. */
long listing_find(const struct listing *l, const char *name)
{
    if (!l->index) {
        for (size_t i = 0; i < l->n; i++)
            if (strcmp(l->arena + l->recs[i].name_off, name) == 0)
                return (long)i;
        return -1;
    }
    for (size_t h = (size_t)hash_fnv1a(name) & (l->index_size - 1); l->index[h];
         h = (h + 1) & (l->index_size - 1)) {
        size_t i = l->index[h] - 1;

        if (strcmp(l->arena + l->recs[i].name_off, name) == 0)
            return (long)i;
    }
    return -1;
}

/* Does entry R's key sort after KEY (KLEN bytes), bytewise? */
static int key_after(const struct listing *l, const struct rec *r, const char *key, size_t klen)
{
    size_t n = r->key_len < klen ? r->key_len : klen;
    int c = memcmp(l->arena + r->key_off, key, n);

    return c > 0 || (c == 0 && r->key_len > klen);
}

/* Copy entry R of SRC into DST. */
static int copy_rec(struct listing *dst, const struct listing *src, const struct rec *r)
{
    struct listing_ent e;
    char *key = listing_key_dup(src, (size_t)(r - src->recs));
    int rc;

    if (!key)
        return -ENOMEM;
    listing_get(src, (size_t)(r - src->recs), &e);
    rc = listing_add(dst, e.name, key, e.has_attr, e.size, e.mtime);
    free(key);
    return rc;
}

/* Edited copy; see cache/cache.h. */
struct listing *listing_edit(const struct listing *l, const char *name, const char *key,
                             int has_attr, uint64_t size, struct timespec mtime, int remove)
{
    struct listing *out = listing_new();
    size_t klen = strlen(key);
    int placed = remove, rc = out ? 0 : -ENOMEM;

    for (size_t i = 0; rc == 0 && i < l->n; i++) {
        const struct rec *r = &l->recs[i];

        if (!placed && key_after(l, r, key, klen)) {
            rc = listing_add(out, name, key, has_attr, size, mtime);
            placed = 1;
        }
        if (rc == 0 && strcmp(l->arena + r->name_off, name) != 0)
            rc = copy_rec(out, l, r);
    }
    if (rc == 0 && !placed)
        rc = listing_add(out, name, key, has_attr, size, mtime);
    if (rc == 0)
        rc = listing_seal(out);
    if (rc < 0) {
        listing_unref(out);
        return NULL;
    }
    return out;
}

/* Order of entries A and B of L (listing_sorted): key, then name. */
static int rec_cmp(const void *a, const void *b, void *ctx)
{
    const struct listing *l = ctx;
    const struct rec *ra = &l->recs[*(const uint32_t *)a], *rb = &l->recs[*(const uint32_t *)b];
    size_t n = ra->key_len < rb->key_len ? ra->key_len : rb->key_len;
    int c = memcmp(l->arena + ra->key_off, l->arena + rb->key_off, n);

    if (c == 0 && ra->key_len != rb->key_len)
        c = ra->key_len < rb->key_len ? -1 : 1;
    return c ? c : strcmp(l->arena + ra->name_off, l->arena + rb->name_off);
}

/* Sorted copy; see cache.h. */
struct listing *listing_sorted(const struct listing *l)
{
    struct listing *out = listing_new();
    uint32_t *order = l->n ? malloc(l->n * sizeof(*order)) : NULL;
    int rc = out && (order || !l->n) ? 0 : -ENOMEM;

    for (size_t i = 0; rc == 0 && i < l->n; i++)
        order[i] = (uint32_t)i;
    if (rc == 0 && l->n)
        qsort_r(order, l->n, sizeof(*order), rec_cmp, (void *)l);
    for (size_t i = 0; rc == 0 && i < l->n; i++)
        rc = copy_rec(out, l, &l->recs[order[i]]);
    if (rc == 0)
        rc = listing_seal(out);
    free(order);
    if (rc < 0) {
        listing_unref(out);
        return NULL;
    }
    return out;
}

/* Copy a key out; see cache/cache.h. */
char *listing_key_dup(const struct listing *l, size_t i)
{
    const struct rec *r = &l->recs[i];
    char *k = malloc((size_t)r->key_len + 1);

    if (k) {
        memcpy(k, l->arena + r->key_off, r->key_len);
        k[r->key_len] = '\0';
    }
    return k;
}

size_t listing_bytes(const struct listing *l)
{
    return sizeof(*l) + l->cap * sizeof(*l->recs) + l->acap + l->index_size * sizeof(*l->index);
}

struct listing *listing_ref(struct listing *l)
{
    atomic_fetch_add_explicit(&l->refs, 1, memory_order_relaxed);
    return l;
}

void listing_unref(struct listing *l)
{
    if (!l || atomic_fetch_sub_explicit(&l->refs, 1, memory_order_acq_rel) != 1)
        return;
    free(l->recs);
    free(l->arena);
    free(l->index);
    free(l);
}
