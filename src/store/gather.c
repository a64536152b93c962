/* store/gather.c - a table's partitions gathered from a query whose
 * entities come in any order (store_i.h).
 *
 * A service that keeps no key order (Cosmos DB for Table) interleaves
 * partitions across a query's pages: a partition's entities are complete
 * only when the query is, and a partition seen again is not a new one.
 * So each partition's entities are gathered into a listing of their own
 * (found by name in an indexed listing of the partitions), every name
 * listed once, and nothing is cached or shown as complete before the
 * query's end; then each listing is sorted (a client-side sort of a
 * complete listing) and cached. A table too big for the scan's budget
 * drops its partitions' listings (names_only) and from then on gathers
 * only names. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "names/names.h"
#include "store/store.h"
#include "store/store_i.h"

struct gather_part {
    char *dir;             /* its listing's path, LDIR/NAME */
    char *edir;            /* where its entities are cached, EDIR/NAME */
    struct listing *files; /* its entities so far (NULL: names only) */
};

struct gather {
    char *ldir, *edir;         /* see gather_new */
    struct listing *out;       /* the table's listing, as readdir reads it (a
                               * reference): names go in at the end, or as they
                               * come once names_only */
    struct listing *names;     /* the partitions seen: name, key; indexed */
    struct gather_part *parts; /* entry I of NAMES is PARTS[I] */
    size_t cap;
    long last; /* the partition of the last entity (-1: none) */
    int names_only;
};

/* See store_i.h. */
struct gather *gather_new(const char *ldir, const char *edir, struct listing *out)
{
    struct gather *g = calloc(1, sizeof(*g));

    if (!g || !(g->ldir = strdup(ldir)) || !(g->edir = strdup(edir)) ||
        !(g->names = listing_new())) {
        gather_free(g);
        return NULL;
    }
    g->out = listing_ref(out);
    g->last = -1;
    return g;
}

/* Name partition I of G in the table's listing (once). 0 or -errno. */
static int publish(struct gather *g, size_t i)
{
    struct listing_ent e;
    char *key = listing_key_dup(g->names, i);
    int rc;

    if (!key)
        return -ENOMEM;
    listing_get(g->names, i, &e);
    rc = listing_add_once(g->out, e.name, key, 0, 0, e.mtime);
    free(key);
    return rc > 0 ? 0 : rc;
}

/* See store_i.h. */
void gather_free(struct gather *g)
{
    if (!g)
        return;
    for (size_t i = 0; g->names && i < listing_count(g->names); i++) {
        free(g->parts[i].dir);
        free(g->parts[i].edir);
        listing_unref(g->parts[i].files);
    }
    listing_unref(g->names);
    listing_unref(g->out);
    free(g->parts);
    free(g->ldir);
    free(g->edir);
    free(g);
}

/* The index of partition PK in G (added when new, with NEW set). Returns
 * it, or -errno. */
static long partition_of(struct gather *g, const char *pk, int *isnew)
{
    struct listing_ent e;
    char *name;
    long i;
    int rc;

    *isnew = 0;
    if (g->last >= 0) { /* a run of one partition costs no encoding */
        listing_get(g->names, (size_t)g->last, &e);
        if (e.key_len == strlen(pk) && memcmp(e.key, pk, e.key_len) == 0)
            return g->last;
    }
    if (!(name = keycodec_encode(pk)))
        return -ENOMEM;
    if ((i = listing_find(g->names, name)) >= 0) {
        free(name);
        return g->last = i;
    }
    i = (long)listing_count(g->names);
    if ((size_t)i == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 64;
        struct gather_part *p = realloc(g->parts, cap * sizeof(*p));

        if (!p) {
            free(name);
            return -ENOMEM;
        }
        g->parts = p;
        g->cap = cap;
    }
    memset(&g->parts[i], 0, sizeof(g->parts[i]));
    if (!(g->parts[i].dir = fspath_join(g->ldir, name)) ||
        !(g->parts[i].edir = fspath_join(g->edir, name)) ||
        (!g->names_only && !(g->parts[i].files = listing_new())) ||
        (rc = listing_add_once(g->names, name, pk, 0, 0, (struct timespec){ 0, 0 })) != 0) {
        /* not added (it was not there: rc is ENOMEM or EFBIG) */
        free(g->parts[i].dir);
        free(g->parts[i].edir);
        listing_unref(g->parts[i].files);
        free(name);
        return -ENOMEM;
    }
    free(name);
    *isnew = 1;
    g->last = i;
    return g->names_only && (rc = publish(g, (size_t)i)) < 0 ? rc : i;
}

/* See store_i.h. */
int gather_entity(struct gather *g, struct store *s, const char *pk, const json_t *e,
                  struct store_rendered *pre, size_t *len, int *isnew)
{
    long i = partition_of(g, pk, isnew);

    *len = 0;
    if (i < 0)
        return (int)i;
    if (*isnew) /* it holds an entity: the partition exists (no probe to ask) */
        (void)cache_put_exists(s->cache, g->parts[i].edir);
    if (g->names_only)
        return 1; /* named; the entity is not cached */
    return store_list_entity(s, g->parts[i].edir, e, g->parts[i].files, len, pre);
}

/* See store_i.h. */
int gather_names_only(struct gather *g)
{
    int rc = 0;

    for (size_t i = 0; i < listing_count(g->names); i++) {
        listing_unref(g->parts[i].files);
        g->parts[i].files = NULL;
        if (rc == 0)
            rc = publish(g, i);
    }
    g->names_only = 1;
    return rc;
}

/* See store_i.h. */
int gather_finish(struct gather *g, struct cache *c)
{
    struct listing *sorted = listing_sorted(g->names), *files;
    struct listing_ent e;
    long i;
    int rc = sorted ? 0 : -ENOMEM;

    /* each partition's listing cached before its name is shown: a walker
     * entering it finds it */
    for (size_t k = 0; rc == 0 && k < listing_count(sorted); k++) {
        listing_get(sorted, k, &e);
        if ((i = listing_find(g->names, e.name)) < 0)
            continue;
        if (g->parts[i].files) {
            if (!(files = listing_sorted(g->parts[i].files)))
                rc = -ENOMEM;
            else
                rc = cache_put_listing(c, g->parts[i].dir, files, 0);
            listing_unref(files);
        }
        if (rc == 0)
            rc = publish(g, (size_t)i);
    }
    listing_unref(sorted);
    return rc;
}
