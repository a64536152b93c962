/* store/scan.c - listings fetched from the service, page by page into the cache (store.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "names/names.h"
#include "store/store.h"
#include "store/store_i.h"

/* What one scanned entity costs the cache beyond its text: the entry's
 * overhead, path and ETag, and its record in a listing (an estimate). */
#define SCAN_ENTITY_COST 320

/* A scan that fills listings: the tables of the account (FSP_ROOT), the
 * entities of a whole table (FSP_TABLE: the table's listing holds its
 * partitions, and each partition's listing is cached as the scan passes
 * it), or those of one partition (FSP_PARTITION).
 *
 * A table scan that has cached half of cache_size stops: the table does not
 * fit, so what it would cache next would evict what it cached first and
 * every partition would be fetched twice. It skips ahead instead: one query
 * per remaining partition (the first partition after the last one seen,
 * $top=1, only the key) names the next one, whose entities are fetched
 * when it is listed.
 *
 * All of this reads the service's order: a partition's entities in one
 * run, partitions in key order. On a service that keeps none (Cosmos DB
 * for Table: table_client_ordered), a table scan gathers its entities by
 * partition instead (store/gather.c) and names each partition once, its
 * listing cached at the end; a table too big for the budget is read to
 * its end for the names alone (no skip-ahead: a "gt" query's first answer
 * need not be the next partition). Every listing is then cached sorted,
 * each name once. A table scan that meets a partition out of order on a
 * service thought ordered tells the client (table_client_disorder) and
 * starts again so. */
struct scan {
    struct store *st;
    enum fsp_kind kind;
    char *table;             /* FSP_TABLE, FSP_PARTITION */
    char *dir;               /* path of the directory listed */
    struct table_pager *cur; /* NULL for a root listing of -o tables= */
    struct listing *out;     /* the directory's listing, growing */
    char *cur_pk;            /* FSP_TABLE: partition being collected */
    char *cur_dir;
    struct listing *files;       /* ... and its files */
    size_t charged, budget;      /* FSP_TABLE: cache bytes this scan filled, its limit */
    size_t entities, partitions; /* FSP_TABLE: seen by the scan */
    int skipping;                /* FSP_TABLE: naming partitions one query each (the
                                  * one a query named is cur_pk) */
    struct gather *gather;       /* FSP_TABLE on a service without order: the
                                  * partitions gathered (NULL: in order) */
    int names_only;              /* GATHER keeps names only (over budget) */
    int restart;                 /* a partition came out of order: gather from
                                  * the start (table_scan_next) */
    int unordered;               /* the service's order is not trusted: names
                                  * listed once, listings cached sorted */
    int quiet;                   /* a failure is logged at debug level only (a
                                  * prefetch: the walker's own fetch logs it) */
    int done;
};

static void scan_free(struct scan *s)
{
    if (!s)
        return;
    free(s->table);
    free(s->dir);
    table_pager_free(s->cur);
    listing_unref(s->out);
    free(s->cur_pk);
    free(s->cur_dir);
    listing_unref(s->files);
    gather_free(s->gather);
    free(s);
}

/* A scan of directory DIR (parsed as FP, keys resolved). Returns 0 with *out
 * or -ENOMEM. Nothing is sent yet. */
static int scan_new(struct store *st, const struct fspath *fp, const char *dir, struct scan **out)
{
    struct scan *s = calloc(1, sizeof(*s));
    char *filter = NULL;
    int rc = -ENOMEM;

    *out = NULL;
    if (!s)
        return -ENOMEM;
    s->st = st;
    s->kind = fp->kind;
    if (!(s->dir = strdup(dir)) || !(s->out = listing_new()))
        goto fail;
    if (fp->kind != FSP_ROOT && !(s->table = strdup(fp->table)))
        goto fail;
    if (fp->kind == FSP_PARTITION && !(filter = table_filter_partition(fp->pk)))
        goto fail;
    if (fp->kind != FSP_ROOT)
        store_settle(st, dir); /* write-behind: the listing holds the queued changes */
    if (!(fp->kind == FSP_ROOT && st->tables)) {
        if ((rc = table_pager_new(&s->cur, s->table, filter, NULL, 0)) < 0 ||
            (fp->kind == FSP_PARTITION && (rc = table_pager_partition(s->cur, fp->pk)) < 0))
            goto fail;
        table_pager_prefetch(s->cur, 1);
    }
    s->unordered = !table_client_ordered(st->tc);
    if (fp->kind == FSP_TABLE && s->unordered && !(s->gather = gather_new(dir, dir, s->out)))
        goto fail;
    if (fp->kind == FSP_TABLE) {
        struct cache_stats cs;

        cache_get_stats(st->cache, &cs);
        s->budget = st->cache_timeout > 0 ? cs.max_bytes / 2 : 0;
    }
    free(filter);
    *out = s;
    return 0;
fail:
    free(filter);
    scan_free(s);
    return rc;
}

/* The store's work on a listing's pages, read as entity texts, in the
 * workers of a split or pipelined pager. */
static const struct table_prep scan_render = { store_render_page, store_render_page_free, 1, 1 };

/* A walker's listing of a table or partition: its pages fetched as key
 * ranges in parallel (-o scan_parallel; table_pager_split), and rendered
 * by the workers that fetched them (store_render_page), so FUSE's thread
 * only caches and lists them. A fetch of the prefetch pool is not split
 * (the pool is already N fetches) but pipelined (scan_fetch_partition).
 * Returns 0 or -ENOMEM. */
static int scan_split(struct scan *s)
{
    if (s->kind == FSP_ROOT || !s->cur)
        return 0;
    return table_pager_split(s->cur, s->st->scan_ways, s->kind == FSP_PARTITION, &scan_render);
}

static int on_tables_page(void *p, json_t *value)
{
    struct scan *s = p;
    struct timespec none = { 0, 0 };
    size_t i;
    json_t *t;

    json_array_foreach (value, i, t) {
        const char *name = table_page_table_name(t);
        int rc;

        if (name && fspath_valid_table_name(name) &&
            (rc = s->unordered ? listing_add_once(s->out, name, name, 0, 0, none) :
                                 listing_add(s->out, name, name, 0, 0, none)) < 0)
            return rc;
    }
    return 0;
}

/* FSP_TABLE: the current partition is done with: name it in the table's
 * listing, and cache its own listing when COMPLETE (the scan saw all of it). */
static int finish_partition(struct scan *s, int complete)
{
    int rc = 0;

    if (!s->cur_pk)
        return 0;
    if (complete)
        rc = cache_put_listing(s->st->cache, s->cur_dir, s->files, 0);
    if (rc == 0)
        rc = listing_add(s->out, strrchr(s->cur_dir, '/') + 1, s->cur_pk, 0, 0,
                         (struct timespec){ 0, 0 });
    listing_unref(s->files);
    free(s->cur_pk);
    free(s->cur_dir);
    s->files = NULL;
    s->cur_pk = s->cur_dir = NULL;
    return rc;
}

/* FSP_TABLE: make PK the current partition (cur_pk, cur_dir). */
static int set_partition(struct scan *s, const char *pk)
{
    char *pk_name = keycodec_encode(pk), *dup = strdup(pk);
    char *dir = pk_name ? fspath_join(s->dir, pk_name) : NULL;

    free(pk_name);
    if (!dup || !dir) {
        free(dup);
        free(dir);
        return -ENOMEM;
    }
    free(s->cur_pk);
    free(s->cur_dir);
    s->cur_pk = dup;
    s->cur_dir = dir;
    return 0;
}

/* FSP_TABLE: start collecting partition PK. */
static int start_partition(struct scan *s, const char *pk)
{
    int rc;

    if ((rc = finish_partition(s, 1)) < 0 || (rc = set_partition(s, pk)) < 0)
        return rc;
    s->partitions++;
    return (s->files = listing_new()) ? 0 : -ENOMEM;
}

/* FSP_TABLE: has the scan filled its half of the cache, with partitions of
 * a page or more on average? Naming a partition costs a query, so skipping
 * only pays when it saves at least a page per partition. */
static int over_budget(const struct scan *s)
{
    return s->charged > s->budget && s->entities >= (size_t)TABLE_PAGE_MAX * s->partitions;
}

/* FSP_TABLE: could the next page take the scan over its budget? (Then the
 * page after it may never be asked for.) */
static int near_budget(const struct scan *s)
{
    size_t per = s->entities ? s->charged / s->entities : 1024;

    return s->charged + per * TABLE_PAGE_MAX > s->budget;
}

/* FSP_TABLE without order: entity E (or PRE) of partition PK gathered.
 * Returns 0 (listed), 1 (not), -errno. */
static int gather_one(struct scan *s, const char *pk, const json_t *e, struct store_rendered *pre,
                      size_t *len)
{
    int isnew = 0, rc;

    if (!pk)
        return 1;
    rc = gather_entity(s->gather, s->st, pk, e, pre, len, &isnew);
    s->partitions += isnew;
    return rc;
}

/* FSP_TABLE in order: partition PK begins (it is not the current one).
 * Returns 0, 1 when it comes out of key order (RESTART set), -errno. */
static int next_partition(struct scan *s, const char *pk)
{
    if (s->cur_pk && (strcmp(pk, s->cur_pk) < 0 || !table_client_ordered(s->st->tc))) {
        table_client_disorder(s->st->tc, s->dir);
        s->restart = 1;
        return 1;
    }
    return start_partition(s, pk);
}

/* Add the entities of page VALUE (when PRE is NULL: trees), or those PRE
 * rendered, to the scan's listing. Returns 0, 1 to skip ahead (or start
 * again), or -errno. */
static int list_page(struct scan *s, json_t *value, struct store_page_render *pre)
{
    size_t n = pre ? pre->n : json_array_size(value);

    for (size_t i = 0; i < n; i++) {
        const json_t *e = pre ? NULL : json_array_get(value, i);
        const char *pk = pre ? pre->e[i].pk : entity_wire_sys(e, ENTITY_PK);
        size_t len = 0;
        int rc;

        if (s->gather) {
            if ((rc = gather_one(s, pk, e, pre ? &pre->e[i] : NULL, &len)) != 0) {
                if (rc < 0)
                    return rc;
                continue;
            }
            s->charged += len + SCAN_ENTITY_COST;
            s->entities++;
            if (!s->names_only && over_budget(s) && (s->names_only = 1) &&
                (rc = gather_names_only(s->gather)) < 0)
                return rc;
            continue;
        }
        if (s->kind == FSP_TABLE && pk && (!s->cur_pk || strcmp(pk, s->cur_pk) != 0) &&
            (rc = next_partition(s, pk)) != 0)
            return rc;
        rc = store_list_entity(s->st, s->kind == FSP_TABLE ? s->cur_dir : s->dir, e,
                               s->kind == FSP_TABLE ? s->files : s->out, &len,
                               pre ? &pre->e[i] : NULL);
        if (rc < 0)
            return rc;
        if (rc > 0)
            continue;
        s->charged += len + SCAN_ENTITY_COST;
        s->entities++;
        if (s->kind == FSP_TABLE && over_budget(s))
            return 1; /* skip ahead (table_scan_next) */
    }
    return 0;
}

/* A page of entities: VALUE, or when VALUE is NULL (a split listing) the
 * page its worker rendered. */
static int on_entities_page(void *p, json_t *value)
{
    struct scan *s = p;
    struct store_page_render *pre = value ? NULL : table_pager_page_prep(s->cur), *own = NULL;
    int rc;

    /* a page read as text that its worker could not render: render it here */
    if (value && json_is_string(json_array_get(value, 0)) &&
        !(pre = own = store_render_page(value)))
        return -ENOMEM;
    rc = list_page(s, value, pre);
    store_render_page_free(own);
    return rc;
}

/* FSP_TABLE, skipping: the one entity of the query for the partitions
 * after the last one names the next partition. */
static int on_skip_page(void *p, json_t *value)
{
    struct scan *s = p;
    const char *pk = entity_wire_sys(json_array_get(value, 0), ENTITY_PK);
    int rc;

    if (!pk)
        return 0; /* an empty page: the continuation goes on */
    return (rc = set_partition(s, pk)) < 0 ? rc : 1;
}

/* A query for the first partition after PK, asking for its key only. */
static int after_query(struct scan *s, const char *pk, struct table_pager **out)
{
    char *filter = table_filter_after(pk);
    int rc =
        filter ? table_pager_new(out, s->table, filter, table_select_key(ENTITY_PK), 1) : -ENOMEM;

    free(filter);
    return rc;
}

/* FSP_TABLE: replace the cursor by a query for the first partition after
 * the current one, which is named in the table's listing without its own
 * (the scan has not seen all of it). Returns 0 or -errno. */
static int skip_ahead(struct scan *s)
{
    int rc, rc2;

    table_pager_free(s->cur);
    s->cur = NULL;
    rc = after_query(s, s->cur_pk, &s->cur);
    rc2 = finish_partition(s, 0);
    return rc < 0 ? rc : rc2;
}

/* FSP_TABLE: a partition came out of order: the partitions this scan
 * cached as complete are dropped, and the table is read again from its
 * start, gathered (names already in the listing stay, each once). Returns
 * 0 or -errno. */
static int gather_again(struct scan *s)
{
    struct listing_ent e;
    char *pdir;

    log_info(&s->st->log, "%s: listed again without relying on the service's order", s->dir);
    for (size_t i = 0; i < listing_count(s->out); i++) {
        listing_get(s->out, i, &e);
        if ((pdir = fspath_join(s->dir, e.name)))
            cache_invalidate(s->st->cache, pdir);
        free(pdir);
    }
    table_pager_free(s->cur);
    s->cur = NULL;
    free(s->cur_pk);
    free(s->cur_dir);
    listing_unref(s->files);
    s->cur_pk = s->cur_dir = NULL;
    s->files = NULL;
    s->restart = s->skipping = 0;
    s->unordered = 1;
    s->charged = s->entities = s->partitions = 0;
    if (!(s->gather = gather_new(s->dir, s->dir, s->out)))
        return -ENOMEM;
    if (table_pager_new(&s->cur, s->table, NULL, NULL, 0) < 0)
        return -ENOMEM;
    table_pager_prefetch(s->cur, 1);
    return scan_split(s);
}

/* FSP_TABLE: after a page of the scan or of a skip query, decide what comes
 * next. Returns 1 when the table's listing is complete, 0 when more is to
 * be fetched, or -errno. */
static int table_scan_next(struct scan *s)
{
    if (s->restart)
        return gather_again(s);
    if (s->gather)
        return table_pager_done(s->cur);
    /* scanning within budget, or a skip page that named nothing (empty,
     * with a continuation, or the end) */
    if (s->skipping ? !s->cur_pk : !over_budget(s))
        return table_pager_done(s->cur);
    if (!s->skipping) {
        log_debug(&s->st->log,
                  "%s: larger than half the cache: naming the remaining "
                  "partitions one query each",
                  s->dir);
        s->skipping = 1;
    }
    return skip_ahead(s);
}

/* -o tables=: probe each named table with a one-entity query (a SAS scoped
 * to tables may not Query Tables). Absent tables are left out, with a note. */
static int list_named_tables(struct scan *s, struct az_status *st)
{
    struct timespec none = { 0, 0 };

    for (char **t = s->st->tables; *t; t++) {
        int rc = store_table_probe(s->st, *t, st);

        if (rc == -ENOENT) {
            log_debug(&s->st->log, "table '%s' named in -o tables= does not exist", *t);
            continue;
        }
        if (rc < 0 || (rc = listing_add(s->out, *t, *t, 0, 0, none)) < 0)
            return rc;
    }
    return 0;
}

/* S is read to its end: its listing cached (sorted, when built in the
 * service's order that is none). Returns 0 or -errno. */
static int cache_listing(struct scan *s)
{
    /* the table list is asked again after the negative lifetime: tables
     * come and go elsewhere, and it is one cheap request */
    unsigned flags = s->kind == FSP_ROOT ? CACHE_SHORT : 0;
    struct listing *sorted;
    int rc;

    if (!s->unordered)
        return cache_put_listing(s->st->cache, s->dir, s->out, flags);
    /* a copy: readers hold S->out, in the order they were handed it */
    if (!(sorted = listing_sorted(s->out)))
        return -ENOMEM;
    rc = cache_put_listing(s->st->cache, s->dir, sorted, flags);
    listing_unref(sorted);
    return rc;
}

/* Fetch the next page of S into its listings. When the last page is in,
 * the directory's listing is sealed and cached. Returns 0 or -errno. */
static int scan_step(struct scan *s, struct az_status *st)
{
    int rc;

    if (s->done)
        return 0;
    if (s->kind == FSP_TABLE && !s->skipping) /* no page fetched for nothing */
        table_pager_prefetch(s->cur, !near_budget(s));
    if (!s->cur)
        rc = list_named_tables(s, st);
    else
        rc = table_pager_next(s->st->tc, s->cur,
                              s->kind == FSP_ROOT ? on_tables_page :
                                  s->skipping     ? on_skip_page :
                                                    on_entities_page,
                              s, st);
    if (rc < 0) {
        if (s->quiet)
            log_debug(&s->st->log, "prefetch of %s: %s", s->dir, strerror(-rc));
        else if (rc != -ENOENT)
            store_log_failure(s->st, "list", s->dir, rc, st, NULL);
        return rc;
    }
    if (s->kind == FSP_TABLE && (rc = table_scan_next(s)) <= 0)
        return rc; /* more to fetch, or failed */
    if (s->kind != FSP_TABLE && s->cur && !table_pager_done(s->cur))
        return 0; /* more pages to come */
    s->done = 1;
    if ((rc = s->gather ? gather_finish(s->gather, s->st->cache) : finish_partition(s, 1)) < 0)
        return rc;
    return cache_listing(s);
}

/* Scan directory DIR (FP parsed from it) to its end, filling the cache.
 * With NAME, also look it up in the scan's own listing (which the cache may
 * not have kept: cache_timeout=0, a listing larger than the cache): *KEY
 * gets a malloc'd copy of its key, or -ENOENT is returned when the listing
 * does not hold it. Returns 0 or -errno (details in *st). */
static int scan_dir(struct store *s, const struct fspath *fp, const char *dir, const char *name,
                    char **key, struct az_status *st)
{
    struct scan *sc;
    int rc = scan_new(s, fp, dir, &sc);
    long i;

    if (rc == 0)
        rc = scan_split(sc);
    while (rc == 0 && !sc->done)
        rc = scan_step(sc, st);
    if (rc == 0 && name) {
        if ((i = listing_find(sc->out, name)) < 0)
            rc = -ENOENT;
        else if (!(*key = listing_key_dup(sc->out, (size_t)i)))
            rc = -ENOMEM;
    }
    scan_free(sc);
    return rc;
}

/* See store/store.h. */
int scan_list_partition(struct store *s, const struct fspath *fp, const char *dir)
{
    struct fspath dfp = { .kind = FSP_PARTITION, .table = fp->table, .pk = fp->pk };
    struct az_status st = { 0 };

    return scan_dir(s, &dfp, dir, NULL, NULL, &st);
}

/* See store/store.h. */
int scan_fetch_partition(struct store *s, const char *table, const char *pk, const char *dir,
                         int (*stop)(void *ctx, size_t bytes), void *ctx, size_t *bytes)
{
    struct fspath fp = { .kind = FSP_PARTITION, .table = (char *)table, .pk = (char *)pk };
    struct az_status st = { 0 };
    struct scan *sc;
    int rc = scan_new(s, &fp, dir, &sc);

    *bytes = 0;
    if (rc < 0)
        return rc;
    sc->quiet = 1;
    /* one request in flight per fetch (the pool is N fetches), its pages
     * rendered ahead by the pipeline's workers: a partition of many pages,
     * fetched alone when the budget holds one, is not a one-core job */
    table_pager_prefetch(sc->cur, 0);
    if (s->scan_ways > 1 && (rc = table_pager_pipeline(sc->cur, &scan_render)) < 0) {
        scan_free(sc);
        return rc;
    }
    while (rc == 0 && !sc->done)
        rc = stop(ctx, sc->charged) ? -EINTR : scan_step(sc, &st);
    *bytes = sc->charged;
    scan_free(sc);
    return rc;
}

/* See store/store.h. */
int scan_list_root(struct store *s, struct az_status *st)
{
    struct fspath fp = { .kind = FSP_ROOT };

    return scan_dir(s, &fp, "/", NULL, NULL, st);
}

/* Resolve NAME in directory DIRPATH to its key using the listing (filling
 * it when not cached). Returns 0 with malloc'd *key, -ENOENT, -errno. */
static int resolve_by_listing(struct store *s, const struct fspath *fp, const char *dirpath,
                              const char *name, char **key)
{
    struct fspath dfp = { .kind = fp->kind == FSP_PARTITION || !fp->pk ? FSP_TABLE : FSP_PARTITION,
                          .table = fp->table,
                          .pk = fp->pk };
    struct az_status st;
    int rc = cache_dir_lookup(s->cache, dirpath, name, key);

    if (rc != -EAGAIN)
        return rc;
    /* a partition's name: scan the table (which lists its partitions);
     * an entity's: scan its partition */
    return scan_dir(s, &dfp, dirpath, name, key, &st);
}

/* See store/store.h. */
int scan_resolve_keys(struct store *s, struct fspath *fp)
{
    char *tdir;
    int rc = 0;

    if (!fp->pk) {
        if (!(tdir = fspath_join("/", fp->table)))
            return -ENOMEM;
        rc = resolve_by_listing(s, fp, tdir, fp->pk_name, &fp->pk);
        free(tdir);
        if (rc < 0)
            return rc;
    }
    if (fp->kind == FSP_ENTITY && !fp->rk)
        rc = resolve_by_listing(s, fp, fp->parent, fp->file_name, &fp->rk);
    return rc;
}

/* --- views ------------------------------------------------------------------ */

struct scan_view {
    struct listing *l; /* remote names: complete, or growing with scan */
    struct scan *scan; /* pages still to fetch, or NULL */
};

/* See store/store.h. */
struct scan_view *scan_view_empty(void)
{
    struct scan_view *v = calloc(1, sizeof(*v));

    if (v && !(v->l = listing_new())) {
        free(v);
        return NULL;
    }
    return v;
}

/* See store/store.h. */
int scan_view_open(struct store *s, struct fspath *fp, const char *dir, struct scan_view **out)
{
    struct scan_view *v = calloc(1, sizeof(*v));
    int rc = 0;

    *out = NULL;
    if (!v)
        return -ENOMEM;
    /* a cached listing is shared as it is; else pages are fetched as the
     * reader reaches them */
    if (!(v->l = cache_get_listing(s->cache, dir))) {
        if (fp->kind == FSP_PARTITION)
            rc = scan_resolve_keys(s, fp);
        if (rc == 0)
            rc = scan_new(s, fp, dir, &v->scan);
        if (rc == 0)
            rc = scan_split(v->scan);
        if (rc == 0)
            v->l = listing_ref(v->scan->out);
    }
    if (rc < 0) {
        scan_view_free(v);
        return rc;
    }
    *out = v;
    return 0;
}

/* See store/store.h. */
int scan_view_get(struct scan_view *v, size_t i, struct listing_ent *e)
{
    struct az_status st = { 0 };
    int rc;

    while (i >= listing_count(v->l)) {
        if (!v->scan || v->scan->done)
            return 1;
        if ((rc = scan_step(v->scan, &st)) < 0)
            return rc;
    }
    listing_get(v->l, i, e);
    return 0;
}

/* See store/store.h. */
size_t scan_view_count(const struct scan_view *v)
{
    return listing_count(v->l);
}

/* See store/store.h. */
long scan_view_find(const struct scan_view *v, const char *name)
{
    return listing_find(v->l, name);
}

/* See store/store.h. */
void scan_view_free(struct scan_view *v)
{
    if (!v)
        return;
    listing_unref(v->l);
    scan_free(v->scan);
    free(v);
}
