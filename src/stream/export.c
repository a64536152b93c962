/* stream/export.c - a table's, a partition's or a query view's entities as
 * one NDJSON stream, read page by page (stream.h).
 *
 * Each line is one entity as its file shows it, on one line
 * (entity_render_line). The query is read as a listing's is: split into key
 * ranges fetched in parallel, each page rendered to lines by the worker
 * that fetched it (-o scan_parallel), or one page fetched ahead of the
 * reader; a view's query (a selective filter, pages without an entity go
 * on) one page ahead. Nothing goes into the cache: a stream is read once,
 * and a million entities would only evict what the tree holds. What is
 * held is the page being read and the pages fetched ahead (at most
 * scan_parallel + 2 of them), whatever the size of the table. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "names/names.h"
#include "stream/stream.h"

/* A page's lines are at most this long (a page holds at most 1,000
 * entities, and is a few MiB at most on the wire): a bound on memory, not
 * a size met in practice. */
#define EXPORT_PAGE_MAX ((size_t)256 * 1024 * 1024)

/* One page as lines, made by a split's worker (table_prep) or by the
 * reader. */
struct export_page {
    struct buf lines;
    size_t entities; /* lines in LINES */
    size_t skipped;  /* entities that cannot be shown, left out */
    char *why;       /* the first one's keys and reason (NULL: none, or no memory) */
    int rc;          /* the page could not be made (-ENOMEM, -EFBIG): 0 or -errno */
};

struct export_stream {
    struct store *s;
    char *path;   /* the stream's, for log lines */
    char *table;  /* the query: TABLE's entities, */
    char *filter; /* FILTER's (NULL: all), */
    int view;     /* a user's filter: pages without an entity go on */
    int one_partition;
    char *pk; /* a partition's stream: its PartitionKey (its pages are paced by its target) */
    pthread_mutex_t lock;     /* one read at a time */
    struct table_pager *cur;  /* guarded by lock */
    struct export_page page;  /* the page being read; guarded by lock */
    unsigned long long start; /* the stream's offset of PAGE's first byte; guarded by lock */
    unsigned long long pos;   /* the offset of the next byte to read; guarded by lock */
    int done;                 /* PAGE is the last; guarded by lock */
    int err;                  /* a page could not be made: every read fails so; guarded
                               * by lock */
};

static void page_init(struct export_page *pg)
{
    memset(pg, 0, sizeof(*pg));
    buf_init(&pg->lines, EXPORT_PAGE_MAX);
}

static void page_clear(struct export_page *pg)
{
    buf_free(&pg->lines);
    free(pg->why);
    page_init(pg);
}

/* Empty PG for the next page, keeping its buffer's memory: a page's lines
 * are some 300 KiB, and a buffer freed and grown again for every page cost
 * the allocator more than the copies. */
static void page_empty(struct export_page *pg)
{
    struct buf lines = pg->lines;

    buf_reset(&lines);
    free(pg->why);
    memset(pg, 0, sizeof(*pg));
    pg->lines = lines;
}

/* Render the entities of page VALUE (texts, or trees: table_pager_text)
 * into PG as lines. One that cannot be
 * shown is left out, as a listing leaves it out (counted, the first's
 * reason kept); a failure of memory fails the page (PG->rc). Touches
 * nothing but its arguments (a split's workers run it). */
static void page_fill(struct export_page *pg, const json_t *value)
{
    struct entity_error err;
    size_t i;
    json_t *e;

    json_array_foreach (value, i, e) {
        char *pk, *rk;
        int rc = json_is_string(e) ?
            entity_render_line_text(json_string_value(e), json_string_length(e), &pg->lines, &err) :
            entity_render_line(e, &pg->lines, &err);

        if (rc == 0) {
            pg->entities++;
        } else if (rc != -EINVAL) {
            pg->rc = rc;
            return;
        } else if (pg->skipped++ == 0) {
            pk = table_entity_key(e, ENTITY_PK);
            rk = table_entity_key(e, ENTITY_RK);
            if (asprintf(&pg->why, "'%s' of partition '%s': %s", rk ? rk : "(no RowKey)",
                         pk ? pk : "(none)", err.text) < 0)
                pg->why = NULL;
            free(pk);
            free(rk);
        }
    }
}

/* The split's table_prep: page VALUE as lines, made by the worker. */
static void *page_prep(const json_t *value)
{
    struct export_page *pg = malloc(sizeof(*pg));

    if (pg) {
        page_init(pg);
        page_fill(pg, value);
    }
    return pg;
}

static void page_prep_free(void *prepared)
{
    if (prepared)
        page_clear(prepared);
    free(prepared);
}

/* table_page_fn: the next page becomes X's page (its lines made by the
 * worker, or here). */
static int on_page(void *ctx, json_t *value)
{
    struct export_stream *x = ctx;
    struct export_page *made = table_pager_page_prep(x->cur);

    page_empty(&x->page);
    if (made) { /* swapped: the worker's struct is freed with our old buffer */
        struct export_page old = x->page;

        x->page = *made;
        *made = old;
    } else if (value) {
        page_fill(&x->page, value);
    } else {
        x->page.rc = -ENOMEM;
    }
    if (x->page.skipped)
        log_warn(&x->s->log, "export %s: %zu entities cannot be shown, left out (the first: %s)",
                 x->path, x->page.skipped, x->page.why ? x->page.why : "?");
    return x->page.rc;
}

/* Start X's query from its first entity: nothing is sent yet. */
static int start(struct export_stream *x)
{
    static const struct table_prep prep = { page_prep, page_prep_free, 1, 1 };
    int rc;

    if ((rc = table_pager_new(&x->cur, x->table, x->filter, NULL, 0)) < 0 ||
        (x->pk && (rc = table_pager_partition(x->cur, x->pk)) < 0))
        return rc;
    table_pager_text(x->cur); /* entities rendered from their text: no trees */
    if (x->view)              /* as a view's listing: one page ahead, empty pages go on */
        table_pager_unbounded(x->cur);
    if (!x->view && x->s->scan_ways > 1)
        return table_pager_split(x->cur, x->s->scan_ways, x->one_partition, &prep);
    table_pager_prefetch(x->cur, 1);
    return 0;
}

/* Fetch X's next page into X->page (its first byte at X->start). Returns 0
 * or -errno (logged, but ENOENT: no such table, and EINTR: the reader gave
 * up); a page that could not be made fails X for good. */
static int next_page(struct export_stream *x)
{
    struct az_status st = { 0 };
    int rc = table_pager_next(x->s->tc, x->cur, on_page, x, &st);

    if (rc == 0)
        x->done = 1;
    if (rc < 0 && x->page.rc < 0) {
        x->err = rc;
        page_clear(&x->page);
    }
    if (rc < 0 && rc != -ENOENT && rc != -EINTR)
        store_log_failure(x->s, "export", x->path, rc, &st,
                          rc == -EINVAL && st.http_status ? "the service refused the filter" :
                                                            NULL);
    return rc < 0 ? rc : 0;
}

/* The query of stream FP (a table's, a partition's, a view's) into X:
 * its table and filter. 0, -EINVAL (a view's filter over the limits:
 * logged), -ENOENT (a long-form partition name that is not listed),
 * -errno. */
static int query_of(struct store *s, struct fspath *fp, struct export_stream *x)
{
    const char *why = NULL;
    int rc;

    if (fp->pk_name && !fp->pk && (rc = scan_resolve_keys(s, fp)) < 0)
        return rc;
    x->one_partition = fp->pk_name != NULL;
    if (!(x->table = strdup(fp->table)) || (fp->pk_name && !(x->pk = strdup(fp->pk))))
        return -ENOMEM;
    if (fp->kind != FSP_VIEW_STREAM)
        return !fp->pk_name || (x->filter = table_filter_partition(fp->pk)) ? 0 : -ENOMEM;
    x->view = 1;
    rc = userfilter_build_for(s->tc, fp->pk_name ? fp->pk : NULL, fp->filter, &x->filter, &why);
    if (rc == -EINVAL)
        store_log_failure(s, "export", x->path, rc, NULL, why); /* nothing sent */
    return rc;
}

/* See stream/stream.h. */
int export_exists(struct store *s, struct fspath *fp)
{
    const char *why;
    char *filter;
    int rc = store_table_exists(s, fp->table);

    if (rc == 0 && fp->pk_name)
        rc = (rc = store_partition_exists(s, fp, 0)) < 0 ? rc : rc ? 0 : -ENOENT;
    if (rc < 0 || fp->kind != FSP_VIEW_STREAM)
        return rc;
    rc = userfilter_build_for(s->tc, fp->pk_name ? (fp->pk ? fp->pk : "") : NULL, fp->filter,
                              &filter, &why);
    if (rc == 0)
        free(filter);
    else if (rc == -EINVAL)
        store_log_failure(s, "export", fp->view, rc, NULL, why); /* nothing sent */
    return rc;
}

/* See stream/stream.h. */
int export_open(struct store *s, struct fspath *fp, const char *path, struct export_stream **out)
{
    struct export_stream *x = calloc(1, sizeof(*x));
    char *tdir = NULL;
    int rc;

    *out = NULL;
    if (!x)
        return -ENOMEM;
    x->s = s;
    page_init(&x->page);
    if (lock_init(&x->lock) != 0) {
        free(x);
        return -ENOMEM;
    }
    rc = (x->path = strdup(path)) ? query_of(s, fp, x) : -ENOMEM;
    if (rc == 0 && !(tdir = fspath_join("/", fp->table)))
        rc = -ENOMEM;
    if (rc == 0) /* write-behind: the stream holds the table's queued changes */
        store_settle(s, tdir);
    free(tdir);
    if (rc == 0 && (rc = start(x)) == 0)
        rc = next_page(x); /* a missing table, a refused filter: the open fails */
    if (rc < 0) {
        export_free(x);
        return rc;
    }
    *out = x;
    return 0;
}

/* See stream/stream.h. */
int export_read(struct export_stream *x, char *buf, size_t size, unsigned long long off)
{
    size_t got = 0;
    int rc;

    pthread_mutex_lock(&x->lock);
    if ((rc = x->err) == 0 && off != x->pos) {
        log_error(&x->s->log,
                  "export %s: read at %llu, not where the stream is (%llu): "
                  "a stream is read in order",
                  x->path, off, x->pos);
        rc = -ESPIPE;
    }
    while (rc == 0 && got < size) {
        size_t at = (size_t)(x->pos - x->start);

        if (at < x->page.lines.len) {
            got += buf_read(&x->page.lines, at, buf + got, size - got);
            x->pos = off + got;
            continue;
        }
        if (x->done) /* the stream's end: the one short read */
            break;
        x->start = x->pos; /* past this page: the next one */
        buf_reset(&x->page.lines);
        rc = next_page(x);
    }
    pthread_mutex_unlock(&x->lock);
    return got > 0 ? (int)got : rc;
}

/* See stream/stream.h. */
void export_free(struct export_stream *x)
{
    if (!x)
        return;
    table_pager_free(x->cur); /* the split's fetches under way end; no more are sent */
    page_clear(&x->page);
    pthread_mutex_destroy(&x->lock);
    free(x->path);
    free(x->table);
    free(x->filter);
    free(x->pk);
    free(x);
}
