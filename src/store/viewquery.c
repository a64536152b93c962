/* store/viewquery.c - query views: a filtered query streamed into listings, entities shared with the table (store.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "entity/entity.h"
#include "names/names.h"
#include "store/store.h"
#include "store/store_i.h"

/* One view query under way: the listing of DIR as the pages come. It
 * belongs to one thread at a time (the one that runs or reads it); while
 * it waits in a struct view_pending only NEXT changes, and others read
 * DIR (set when it is made) to find it. */
struct vstream {
    struct store *s;
    char *table;
    char *dir;        /* the view directory listed */
    char *scope;      /* the one partition the query may answer with, or NULL */
    int by_partition; /* a table-level view: OUT names partitions */
    int partition;    /* DIR is a partition of a table-level view: an
                       * empty answer means it is not in the view */
    struct table_pager *cur;
    int done;              /* the last page is in, the listings cached */
    struct listing *out;   /* DIR's names so far */
    char *pk;              /* the partition being passed: its key, */
    char *ndir;            /* its normal path ("/t/pk"), where its entities are cached, */
    char *vdir;            /* by_partition: its path in the view, */
    struct listing *part;  /* by_partition: and its entities so far */
    struct gather *gather; /* by_partition on a service without key order:
                            * the partitions gathered, cached at the end
                            * (store/gather.c); NULL: in the service's order */
    int unordered;         /* the service's order is not trusted: the
                           * listings cached sorted */
    int restart;           /* by_partition: a partition came out of order on
                           * a service thought ordered (stream_step) */
    char *filter;          /* the query's $filter */
    double started;        /* CLOCK_MONOTONIC seconds of its first page */
    struct vstream *next;  /* in struct view_pending; guarded by view_pending.lock */
};

struct view_pending {
    pthread_mutex_t lock;
    struct vstream *head; /* newest first; guarded by lock */
};

struct view_reader {
    struct listing *l;  /* complete, or growing with ST */
    struct vstream *st; /* NULL when L came complete from the cache */
    int files;
};

/* A waiting query's first page is older than this may be (seconds): the
 * listing lifetime, but at least a second (cache_timeout=0 keeps nothing,
 * yet a readdir follows its lookup within a moment). */
#define PENDING_MIN_LIFE 1.0

static double now_mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Forget the partition being passed; with KEEP (it is complete) cache its
 * listing in the view and name it in OUT first. */
static int end_partition(struct vstream *v, int keep)
{
    int rc = 0;

    if (keep && v->vdir) {
        rc = cache_put_listing(v->s->cache, v->vdir, v->part, 0);
        if (rc == 0)
            rc = listing_add(v->out, strrchr(v->vdir, '/') + 1, v->pk, 0, 0,
                             (struct timespec){ 0, 0 });
    }
    listing_unref(v->part);
    free(v->pk);
    free(v->ndir);
    free(v->vdir);
    v->part = NULL;
    v->pk = v->ndir = v->vdir = NULL;
    return rc;
}

/* Make PK the partition being passed (the one before it is complete). */
static int set_partition(struct vstream *v, const char *pk)
{
    char *name = keycodec_encode(pk);
    int rc = end_partition(v, 1);

    if (rc < 0 || !name) {
        free(name);
        return rc < 0 ? rc : -ENOMEM;
    }
    if (!(v->pk = strdup(pk)) || asprintf(&v->ndir, "/%s/%s", v->table, name) < 0)
        v->ndir = NULL;
    else /* it holds an entity: the partition exists (no probe to ask) */
        (void)cache_put_exists(v->s->cache, v->ndir);
    if (v->ndir && v->by_partition && (v->vdir = fspath_join(v->dir, name)))
        v->part = listing_new();
    free(name);
    return v->ndir && (!v->by_partition || v->part) ? 0 : -ENOMEM;
}

/* A page of V's query: each entity cached under its normal path and listed.
 * In a partition's view an entity of another partition is neither (the
 * filter cannot let one in, userfilter_build, so the service did): left
 * out, one log line for the page. */
static int on_view_page(void *p, json_t *value)
{
    struct vstream *v = p;
    const char *foreign = NULL;
    size_t i, dropped = 0;
    json_t *e;

    json_array_foreach (value, i, e) {
        const char *pk = entity_wire_sys(e, ENTITY_PK);
        int rc;

        if (v->scope && (!pk || strcmp(pk, v->scope) != 0)) {
            foreign = dropped++ ? foreign : pk ? pk : "(none)";
            continue;
        }
        if (v->gather) {
            size_t len;
            int isnew;

            if (pk && (rc = gather_entity(v->gather, v->s, pk, e, NULL, &len, &isnew)) < 0)
                return rc;
            continue;
        }
        if (pk && v->by_partition && v->pk && strcmp(pk, v->pk) != 0 &&
            (strcmp(pk, v->pk) < 0 || !table_client_ordered(v->s->tc))) {
            table_client_disorder(v->s->tc, v->dir);
            v->restart = 1;
            return 1;
        }
        if (pk && (!v->pk || strcmp(pk, v->pk) != 0) && (rc = set_partition(v, pk)) < 0)
            return rc;
        if ((rc = store_list_entity(v->s, v->ndir, e, v->by_partition ? v->part : v->out, NULL,
                                    NULL)) < 0)
            return rc;
    }
    if (dropped)
        log_error(&v->s->log,
                  "query view %s: the service answered with %zu entities outside "
                  "the view's partition (the first of partition '%s'): left out, not listed",
                  v->dir, dropped, foreign);
    return 0;
}

static void stream_free(struct vstream *v)
{
    if (!v)
        return;
    table_pager_free(v->cur);
    (void)end_partition(v, 0);
    gather_free(v->gather);
    listing_unref(v->out);
    free(v->table);
    free(v->dir);
    free(v->scope);
    free(v->filter);
    free(v);
}

/* The query of view directory DIR (FP's table and filter; only partition
 * PK when non-NULL; BY_PARTITION: DIR lists partitions). Nothing is sent
 * yet. 0 with *out; -EINVAL (over the limits: logged); -ENOMEM. */
static int stream_new(struct store *s, const struct fspath *fp, const char *dir, const char *pk,
                      int by_partition, struct vstream **out)
{
    struct vstream *v = calloc(1, sizeof(*v));
    const char *why;
    char *filter = NULL;
    int rc = -ENOMEM;

    *out = NULL;
    if (!v)
        return -ENOMEM;
    v->s = s;
    v->by_partition = by_partition;
    v->unordered = !table_client_ordered(s->tc);
    if ((v->table = strdup(fp->table)) && (v->dir = strdup(dir)) && (v->out = listing_new()) &&
        (!pk || (v->scope = strdup(pk))))
        rc = userfilter_build_for(s->tc, pk, fp->filter, &filter, &why);
    if (rc == 0 && by_partition && v->unordered) {
        char *tdir = fspath_join("/", fp->table);

        if (!tdir || !(v->gather = gather_new(dir, tdir, v->out)))
            rc = -ENOMEM;
        free(tdir);
    }
    if (rc == -EINVAL)
        store_log_failure(s, "query view", dir, rc, NULL, why); /* nothing sent */
    if (rc == 0) { /* write-behind: the query sees the table's queued changes */
        char *tdir = fspath_join("/", fp->table);

        if (tdir)
            store_settle(s, tdir);
        free(tdir);
    }
    if (rc == 0 && (rc = table_pager_new(&v->cur, v->table, filter, NULL, 0)) == 0)
        table_pager_unbounded(v->cur); /* a selective filter: empty pages go on */
    v->filter = filter;
    if (rc < 0) {
        stream_free(v);
        return rc;
    }
    *out = v;
    return 0;
}

/* V's listing, complete, cached: as it came, or sorted when the service's
 * order is not trusted (a copy: its readers hold V->out). 0 or -errno. */
static int cache_sorted(struct vstream *v)
{
    struct listing *l = v->unordered ? listing_sorted(v->out) : listing_ref(v->out);
    int rc = l ? cache_put_listing(v->s->cache, v->dir, l, 0) : -ENOMEM;

    listing_unref(l);
    return rc;
}

/* V (by_partition) met a partition out of order: the partitions' listings
 * it cached as complete are dropped, and its query starts again, gathered
 * (names already listed stay, each once). 0 or -errno. */
static int view_again(struct vstream *v)
{
    struct listing_ent e;
    char *pdir, *tdir = fspath_join("/", v->table);
    int rc = -ENOMEM;

    log_info(&v->s->log, "%s: listed again without relying on the service's order", v->dir);
    for (size_t i = 0; i < listing_count(v->out); i++) {
        listing_get(v->out, i, &e);
        if ((pdir = fspath_join(v->dir, e.name)))
            cache_invalidate(v->s->cache, pdir);
        free(pdir);
    }
    (void)end_partition(v, 0);
    table_pager_free(v->cur);
    v->cur = NULL;
    v->restart = 0;
    v->unordered = 1;
    if (tdir && (v->gather = gather_new(v->dir, tdir, v->out)) &&
        (rc = table_pager_new(&v->cur, v->table, v->filter, NULL, 0)) == 0) {
        table_pager_unbounded(v->cur);
        table_pager_prefetch(v->cur, 1);
    }
    free(tdir);
    return rc;
}

/* Fetch V's next page. At the end the listings are sealed and cached.
 * Returns 0 or -errno (logged, but for ENOENT: no such table). */
static int stream_step(struct vstream *v)
{
    struct az_status st = { 0 };
    int rc;

    if (v->done)
        return 0;
    rc = table_pager_next(v->s->tc, v->cur, on_view_page, v, &st);
    if (rc >= 0 && v->restart)
        rc = view_again(v);
    else if (rc == 0) {
        v->done = 1;
        if (v->gather)
            rc = gather_finish(v->gather, v->s->cache);
        else if (v->by_partition)
            rc = end_partition(v, 1);
        if (rc == 0 && !(v->partition && listing_count(v->out) == 0))
            rc = cache_sorted(v);
    }
    if (rc < 0 && rc != -ENOENT)
        store_log_failure(v->s, "query view", v->dir, rc, &st,
                          rc == -EINVAL && st.http_status ? "the service refused the filter" :
                                                            NULL);
    return rc < 0 ? rc : 0;
}

/* Start the query of view directory DIR (FP: FSP_VIEW or
 * FSP_VIEW_PARTITION, keys known) and fetch its first page; with
 * TO_ENTITY, fetch on until an entity is in (or the end). */
static int stream_start(struct store *s, struct fspath *fp, const char *dir, int to_entity,
                        struct vstream **out)
{
    int by_partition = fp->kind == FSP_VIEW && !fp->scoped;
    int rc = stream_new(s, fp, dir, by_partition ? NULL : fp->pk, by_partition, out);

    if (rc < 0)
        return rc;
    (*out)->partition = fp->kind == FSP_VIEW_PARTITION;
    (*out)->started = now_mono();
    do
        rc = stream_step(*out);
    while (rc == 0 && to_entity && !(*out)->done && listing_count((*out)->out) == 0);
    if (rc < 0) {
        stream_free(*out);
        *out = NULL;
    }
    return rc;
}

/* --- the queries waiting for their reader ------------------------------------ */

/* See store/store.h. */
struct view_pending *view_pending_new(void)
{
    struct view_pending *vp = calloc(1, sizeof(*vp));

    if (vp && lock_init(&vp->lock) != 0) {
        free(vp);
        return NULL;
    }
    return vp;
}

/* See store/store.h. */
void view_pending_free(struct view_pending *vp)
{
    if (!vp)
        return;
    while (vp->head) {
        struct vstream *v = vp->head;

        vp->head = v->next;
        stream_free(v);
    }
    pthread_mutex_destroy(&vp->lock);
    free(vp);
}

/* The query of DIR waiting in VP, taken out of it (TAKE) or only looked
 * for (then the pointer is only good for a yes/no); NULL: none. */
static struct vstream *pending_find(struct view_pending *vp, const char *dir, int take)
{
    struct vstream **pp, *v = NULL;

    pthread_mutex_lock(&vp->lock);
    for (pp = &vp->head; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->dir, dir) == 0) {
            v = *pp;
            if (take) {
                *pp = v->next;
                v->next = NULL;
            }
            break;
        }
    }
    pthread_mutex_unlock(&vp->lock);
    if (v && take && now_mono() - v->started > v->s->cache_timeout &&
        now_mono() - v->started > PENDING_MIN_LIFE) {
        stream_free(v); /* its first page is older than any listing is kept */
        v = NULL;
    }
    return v;
}

/* Leave V in VP for its reader; the oldest beyond VIEW_PENDING_MAX goes. */
static void pending_put(struct view_pending *vp, struct vstream *v)
{
    struct vstream *drop = NULL, *w;
    int n = 1;

    pthread_mutex_lock(&vp->lock);
    v->next = vp->head;
    vp->head = v;
    for (w = v; w->next; w = w->next)
        if (++n > VIEW_PENDING_MAX) {
            drop = w->next;
            w->next = NULL;
            break;
        }
    pthread_mutex_unlock(&vp->lock);
    while (drop) {
        w = drop->next;
        stream_free(drop);
        drop = w;
    }
}

/* --- lookups and readers -------------------------------------------------------- */

/* See store/store.h. */
int view_where_exists(struct store *s, struct fspath *fp)
{
    struct fspath pfp;
    int rc = store_table_exists(s, fp->table);

    if (rc < 0 || !fp->scoped)
        return rc;
    if ((rc = fspath_parse(fp->parent, &pfp)) < 0)
        return rc;
    rc = store_partition_exists(s, &pfp, 0);
    fspath_free(&pfp);
    return rc < 0 ? rc : rc ? 0 : -ENOENT;
}

/* Does ROOT, the listing of a table-level view, hold FP's partition
 * (FSP_VIEW_PARTITION)? 1 (FP->pk filled in), -ENOENT, -ENOMEM. */
static int partition_in(const struct listing *root, struct fspath *fp)
{
    long i = listing_find(root, fp->pk_name);

    if (i < 0)
        return -ENOENT;
    if (!fp->pk && !(fp->pk = listing_key_dup(root, (size_t)i)))
        return -ENOMEM;
    return 1;
}

static int read_all(struct store *s, struct view_pending *vp, struct fspath *fp, const char *dir,
                    struct listing **out);

/* Before FP's query is started: its partition's key (a long-form name is
 * resolved by listing), and for a partition of a table-level view what the
 * view's cached listing says. 0 (go on), 1 (known to be in the view),
 * -ENOENT, -errno. */
static int prepare(struct store *s, struct view_pending *vp, struct fspath *fp)
{
    struct listing *root;
    struct fspath rfp;
    int rc;

    if (fp->kind == FSP_VIEW)
        return fp->scoped && !fp->pk ? scan_resolve_keys(s, fp) : 0;
    if ((root = cache_get_listing(s->cache, fp->view))) {
        rc = partition_in(root, fp);
        listing_unref(root);
        return rc;
    }
    if (fp->pk)
        return 0; /* its own query tells: no entity, not in the view */
    rfp = *fp;    /* a long-form name: the whole view's listing has its key */
    rfp.kind = FSP_VIEW;
    if ((rc = read_all(s, vp, &rfp, fp->view, &root)) < 0)
        return rc;
    rc = partition_in(root, fp);
    listing_unref(root);
    return rc;
}

/* See store/store.h. */
int view_lookup(struct store *s, struct view_pending *vp, struct fspath *fp, const char *dir)
{
    struct listing *l = cache_get_listing(s->cache, dir);
    struct vstream *v;
    int rc;

    if (l || pending_find(vp, dir, 0)) {
        listing_unref(l);
        return 0;
    }
    if ((rc = prepare(s, vp, fp)) != 0)
        return rc < 0 ? rc : 0;
    if ((rc = stream_start(s, fp, dir, fp->kind == FSP_VIEW_PARTITION, &v)) < 0)
        return rc;
    if (!v->done) {
        pending_put(vp, v); /* for the readdir that follows */
        return 0;
    }
    rc = v->partition && listing_count(v->out) == 0 ? -ENOENT : 0;
    stream_free(v);
    return rc;
}

/* See store/store.h. */
int view_reader_open(struct store *s, struct view_pending *vp, struct fspath *fp, const char *dir,
                     struct view_reader **out)
{
    struct view_reader *r = calloc(1, sizeof(*r));
    int rc = 0;

    *out = NULL;
    if (!r)
        return -ENOMEM;
    r->files = fp->kind == FSP_VIEW_PARTITION || (fp->kind == FSP_VIEW && fp->scoped);
    if (!(r->l = cache_get_listing(s->cache, dir)) && !(r->st = pending_find(vp, dir, 1)) &&
        (rc = prepare(s, vp, fp)) >= 0)
        rc = stream_start(s, fp, dir, 0, &r->st);
    if (rc < 0) {
        view_reader_free(r);
        return rc;
    }
    if (r->st) {
        r->l = listing_ref(r->st->out);
        table_pager_prefetch(r->st->cur, 1); /* page N+1 while readdir hands out N */
    }
    *out = r;
    return 0;
}

/* See store/store.h. */
int view_reader_get(struct view_reader *r, size_t i, struct listing_ent *e)
{
    int rc;

    while (i >= listing_count(r->l)) {
        if (!r->st || r->st->done)
            return 1;
        if ((rc = stream_step(r->st)) < 0)
            return rc;
    }
    listing_get(r->l, i, e);
    return 0;
}

/* See store/store.h. */
int view_reader_files(const struct view_reader *r)
{
    return r->files;
}

/* See store/store.h. */
void view_reader_free(struct view_reader *r)
{
    if (!r)
        return;
    listing_unref(r->l);
    stream_free(r->st);
    free(r);
}

/* The whole listing of view directory DIR (FP as for view_lookup), read to
 * its end: 0 with *out (listing_unref it), or as view_lookup. */
static int read_all(struct store *s, struct view_pending *vp, struct fspath *fp, const char *dir,
                    struct listing **out)
{
    struct view_reader *r;
    struct listing_ent e;
    size_t n = 0;
    int rc = view_reader_open(s, vp, fp, dir, &r);

    *out = NULL;
    if (rc < 0)
        return rc;
    while ((rc = view_reader_get(r, n, &e)) == 0)
        n++;
    if (rc == 1) {
        *out = listing_ref(r->l);
        rc = 0;
    }
    view_reader_free(r);
    return rc;
}

/* See store/store.h. */
int view_entity(struct store *s, struct view_pending *vp, struct fspath *fp, struct fspath *nfp,
                char **npath)
{
    struct fspath pfp = *fp;
    struct listing *l = NULL;
    long i = -1;
    int rc;

    *npath = NULL;
    memset(nfp, 0, sizeof(*nfp));
    pfp.kind = fp->scoped ? FSP_VIEW : FSP_VIEW_PARTITION;
    rc = read_all(s, vp, &pfp, fp->parent, &l);
    fp->pk = pfp.pk; /* filled in when it was a long-form name */
    if (rc < 0)
        return rc;
    if ((i = listing_find(l, fp->file_name)) < 0)
        rc = -ENOENT;
    else if (!(*npath = fspath_normal(fp)))
        rc = -ENOMEM;
    else if ((rc = fspath_parse(*npath, nfp)) == 0) {
        if (!nfp->pk && !(nfp->pk = strdup(fp->pk)))
            rc = -ENOMEM;
        else if (!nfp->rk && !(nfp->rk = listing_key_dup(l, (size_t)i)))
            rc = -ENOMEM;
    }
    listing_unref(l);
    if (rc == 0) {
        store_dir_read(s, nfp->parent); /* opens take the view's copy */
        return 0;
    }
    fspath_free(nfp);
    free(*npath);
    *npath = NULL;
    return rc;
}
