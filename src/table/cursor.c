/* table/cursor.c - Query Entities and Query Tables page by page: continuation
 * tokens, the empty-page bound, cancellation, the prefetch thread. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "table/table.h"
#include "table/table_i.h"

/* The next page, fetched by the cursor's worker while the caller works on
 * the current one (table_cursor_prefetch). */
struct page_fetch {
    struct table_client *tc;
    const struct table_cursor *c;
    char *query;
    struct http_response resp;
    struct az_status st;
    unsigned charged; /* the entities its targets are charged: estimated
                         when the fetch is started (charge_of), on the
                         cursor's thread, which goes on to change what the
                         estimate reads */
    int rc;
};

/* A query in progress: what to ask, and where the next page starts. */
struct table_cursor {
    char *path, *what, *filter, *select;
    int top;
    int tables;        /* Query Tables (NextTableName) vs entities */
    char *tok1, *tok2; /* continuation to send next (NULL: first page) */
    int done;
    int empty_run;   /* pages in a row without an entity */
    int unbounded;   /* no bound on empty_run (table_cursor_unbounded) */
    int prefetch;    /* fetch page N+1 while page N is parsed */
    int text;        /* entities handed as their text (table_cursor_text) */
    int fetching;    /* pf holds a running fetch of page tok1/tok2 */
    unsigned last_n; /* entities of the last page taken: what the next is
                        charged to its targets */
    char *table;     /* the table queried (NULL: the tables) */
    char *target;    /* the partition its filter names (table_cursor_partition):
                        its target key; NULL: the account's alone */
    struct page_fetch pf;
    struct worker *fetcher; /* owned: runs pf's fetches (started with the first) */
};

/* Parse a page as trees, or with TEXT its entities as texts
 * (page_read_text); as table_parse_page. */
static int parse_page(const char *body, size_t len, int text, table_page_fn fn, void *ctx,
                      struct az_status *st)
{
    json_error_t jerr;
    json_t *root = text ? page_read_text(body, len, &jerr) : page_read(body, len, &jerr);
    json_t *value;
    int rc;

    if (!root || !json_is_array(value = json_object_get(root, "value"))) {
        snprintf(st->message, sizeof(st->message), "malformed response: %s",
                 root ? "no \"value\" array" : jerr.text);
        json_decref(root);
        return -EIO;
    }
    rc = fn(ctx, value);
    json_decref(root);
    return rc;
}

/* Parse a page; see table.h. */
int table_parse_page(const char *body, size_t len, table_page_fn fn, void *ctx,
                     struct az_status *st)
{
    return parse_page(body, len, 0, fn, ctx, st);
}

/* Start a query of PATH (the public constructor, table_cursor_new, is
 * declared in table/table_i.h). */
static int cursor_new(struct table_cursor **out, const char *path, const char *what,
                      const char *filter, const char *select, int top, int tables)
{
    struct table_cursor *c = calloc(1, sizeof(*c));

    *out = NULL;
    if (!c)
        return -ENOMEM;
    c->top = top;
    c->tables = tables;
    c->path = strdup(path);
    c->what = strdup(what);
    c->filter = filter ? strdup(filter) : NULL;
    c->select = select ? strdup(select) : NULL;
    if (!c->path || !c->what || (filter && !c->filter) || (select && !c->select)) {
        table_cursor_free(c);
        return -ENOMEM;
    }
    *out = c;
    return 0;
}

/* Make C's table TABLE and its target TARGET (each may be NULL). Returns
 * 0, or -ENOMEM with C freed. */
static int cursor_name(struct table_cursor *c, const char *table, const char *target)
{
    if ((table && !(c->table = strdup(table))) || (target && !(c->target = strdup(target)))) {
        table_cursor_free(c);
        return -ENOMEM;
    }
    return 0;
}

/* See table_i.h. */
int table_cursor_partition(struct table_cursor *c, const char *pk)
{
    char key[TARGET_KEY_MAX];

    if (c->tables || !c->table)
        return 0;
    table_target_key(key, sizeof(key), c->table, pk);
    free(c->target);
    return (c->target = strdup(key)) ? 0 : -ENOMEM;
}

/* See table_i.h. */
int table_cursor_new(struct table_cursor **out, const char *table, const char *filter,
                     const char *select, int top)
{
    char *path = NULL, *what = NULL;
    int rc = -ENOMEM;

    *out = NULL;
    if (!table)
        return cursor_new(out, "/Tables", "list tables", filter, select, top, 1);
    if (asprintf(&path, "/%s()", table) < 0)
        return -ENOMEM;
    if (asprintf(&what, "query %s", table) >= 0) {
        if ((rc = cursor_new(out, path, what, filter, select, top, 0)) == 0 &&
            (rc = cursor_name(*out, table, NULL)) < 0)
            *out = NULL;
        free(what);
    }
    free(path);
    return rc;
}

/* See table_i.h. */
void table_cursor_prefetch(struct table_cursor *c, int on)
{
    c->prefetch = on;
}

/* Wait for C's background fetch, if any; its result stays in c->pf. */
static void fetch_join(struct table_cursor *c)
{
    if (!c->fetching)
        return;
    worker_wait(c->fetcher);
    c->fetching = 0;
    free(c->pf.query);
    c->pf.query = NULL;
}

/* See table_i.h. */
void table_cursor_free(struct table_cursor *c)
{
    if (!c)
        return;
    if (c->fetching) {
        fetch_join(c);
        http_response_clear(&c->pf.resp);
    }
    worker_free(c->fetcher);
    free(c->path);
    free(c->what);
    free(c->filter);
    free(c->select);
    free(c->tok1);
    free(c->tok2);
    free(c->table);
    free(c->target);
    free(c);
}

/* See table_i.h. */
int table_cursor_narrow(const struct table_cursor *c, const char *extra, struct table_cursor **out)
{
    char *filter = NULL;
    int rc;

    if (extra && c->filter && asprintf(&filter, "(%s) and %s", c->filter, extra) < 0)
        return -ENOMEM;
    rc = cursor_new(out, c->path, c->what,
                    filter    ? filter :
                        extra ? extra :
                                c->filter,
                    c->select, c->top, c->tables);
    free(filter);
    if (rc < 0)
        return rc;
    if ((rc = cursor_name(*out, c->table, c->target)) < 0) {
        *out = NULL;
        return rc;
    }
    (*out)->text = c->text;
    return 0;
}

/* See table_i.h. */
const char *table_cursor_next_pk(const struct table_cursor *c)
{
    return c->done || c->tables ? NULL : c->tok1;
}

/* See table_i.h. */
int table_cursor_fresh(const struct table_cursor *c)
{
    return !c->tables && !c->tok1 && !c->done;
}

/* See table_i.h. */
void table_cursor_text(struct table_cursor *c)
{
    c->text = !c->tables;
}

/* See table_i.h. */
void table_cursor_unbounded(struct table_cursor *c)
{
    c->unbounded = 1;
}

/* See table_i.h. */
int table_cursor_done(const struct table_cursor *c)
{
    return c->done;
}

/* Append "name=value" (VALUE encoded; NULL: nothing) to the query Q,
 * '&'-separated. Returns 0 or -errno (also Q's failure). */
static int query_add(struct buf *q, const char *name, const char *value)
{
    char *enc;

    if (!value)
        return q->err;
    if (!(enc = table_url_encode(value)))
        return -ENOMEM;
    buf_addf(q, "%s%s=%s", q->len ? "&" : "", name, enc);
    free(enc);
    return q->err;
}

/* The query string of C's page that starts at continuation (TOK1, TOK2).
 * Returns 0 with malloc'd *q, or -ENOMEM. */
static int cursor_query(const struct table_cursor *c, const char *tok1, const char *tok2, char **q)
{
    struct buf b = BUF_INIT(SIZE_MAX); /* bounded by the caller's filter and keys */
    char topbuf[16];
    int rc;

    *q = NULL;
    snprintf(topbuf, sizeof(topbuf), "%d", c->top);
    if ((rc = query_add(&b, "$filter", c->filter)) < 0 ||
        (rc = query_add(&b, "$select", c->select)) < 0 ||
        (rc = query_add(&b, "$top", c->top > 0 ? topbuf : NULL)) < 0 ||
        (rc = query_add(&b, c->tables ? "NextTableName" : "NextPartitionKey", tok1)) < 0 ||
        (rc = query_add(&b, "NextRowKey", tok2)) < 0) {
        buf_free(&b);
        return rc;
    }
    return (*q = buf_take(&b, NULL)) ? 0 : -ENOMEM;
}

/* The target C's pages are charged to: its partition's, else the
 * account's alone (""). */
static const char *target_of(const struct table_cursor *c)
{
    return c->target ? c->target : "";
}

/* Send C's query Q (encoded), its targets charged CHARGED entities
 * (charge_of). Reads only what C's creation set, so that a fetch ahead
 * may run it beside the cursor's thread. Returns as table_send. */
static int cursor_send(struct table_client *tc, const struct table_cursor *c, const char *q,
                       unsigned charged, struct http_response *resp, struct az_status *st)
{
    struct table_req rq = {
        .kind = c->tables ? TK_LIST_TABLES : TK_QUERY,
        .method = "GET",
        .path = c->path,
        .query = q,
        .what = c->what,
    };

    if (!c->tables) { /* paced by the account's target, and its partition's
                         when its filter names one */
        rq.target = target_of(c);
        rq.target_n = charged;
        rq.rate_limited = table_rate_limited;
    }
    return table_send(tc, &rq, resp, st);
}

/* What C's next page is charged to its targets: the entities of its last
 * one, or as many as a page may hold (at first, or after an empty one);
 * none for Query Tables. */
static unsigned charge_of(const struct table_cursor *c)
{
    if (c->tables)
        return 0;
    return c->last_n ? c->last_n : c->top > 0 ? (unsigned)c->top : TABLE_PAGE_MAX;
}

static void fetch_main(void *arg)
{
    struct page_fetch *pf = arg;

    pf->rc = cursor_send(pf->tc, pf->c, pf->query, pf->charged, &pf->resp, &pf->st);
}

/* Start fetching the page at continuation (TOK1, TOK2) in the background,
 * on the cursor's worker (one thread for all its pages, started with the
 * first). Without memory or a thread, nothing starts: the page is fetched
 * when asked for. */
static void fetch_start(struct table_client *tc, struct table_cursor *c, const char *tok1,
                        const char *tok2)
{
    struct page_fetch *pf = &c->pf;

    memset(pf, 0, sizeof(*pf));
    pf->tc = tc;
    pf->c = c;
    pf->charged = charge_of(c);
    if (cursor_query(c, tok1, tok2, &pf->query) < 0)
        return;
    if (!c->fetcher && worker_new(&c->fetcher, "aztfs-page", &tc->threads) < 0) {
        free(pf->query);
        pf->query = NULL;
        return;
    }
    c->fetching = 1;
    worker_post(c->fetcher, fetch_main, pf);
}

/* Does a continuation (A1,A2) equal the previous one (B1,B2)? */
static int same_token(const char *a1, const char *a2, const char *b1, const char *b2)
{
    return b1 && a1 && strcmp(a1, b1) == 0 && ((!a2 && !b2) || (a2 && b2 && strcmp(a2, b2) == 0));
}

/* A page callback that counts the page's entities on its way. */
struct page_count {
    table_page_fn fn;
    void *ctx;
    size_t n;
};

static int count_page(void *ctx, json_t *value)
{
    struct page_count *pc = ctx;

    pc->n = json_array_size(value);
    return pc->fn(pc->ctx, value);
}

/* Hand the page RESP (a 200; its targets charged CHARGED entities) carries
 * to FN and move C past it: its continuation tokens move from RESP to C,
 * its charge is settled at what it held. Returns as table_cursor_next. */
static int page_take(struct table_client *tc, struct table_cursor *c, struct http_response *resp,
                     unsigned charged, table_page_fn fn, void *ctx, struct az_status *st)
{
    struct http_targets *t = table_client_targets(tc);
    struct page_count pc = { fn, ctx, 0 };
    char **next = &resp->captured[c->tables ? TCAP_NEXT_TABLE : TCAP_NEXT_PK];
    char *n1 = *next, *n2 = c->tables ? NULL : resp->captured[TCAP_NEXT_RK];
    int rc;

    if (c->prefetch && n1 && !same_token(n1, n2, c->tok1, c->tok2))
        fetch_start(tc, c, n1, n2);
    rc = parse_page(resp->body, resp->body_len, c->text, count_page, &pc, st);
    if (rc == -EIO)
        log_debug(tc->lg, "%s: %s", c->what, st->message);
    c->empty_run = pc.n ? 0 : c->empty_run + 1;
    c->last_n = (unsigned)pc.n;
    if (t && charged) /* the account is charged one for an empty page */
        http_targets_settle(t, target_of(c), charged, pc.n ? (unsigned)pc.n : 1, http_now_ms());
    if (rc == 0 && n1 && !c->unbounded && c->empty_run >= TABLE_MAX_EMPTY_PAGES) {
        snprintf(st->message, sizeof(st->message),
                 "the service sent %d pages in a row "
                 "without an entity; stopping",
                 c->empty_run);
        return -EIO;
    }
    if (rc != 0 || !n1) {
        c->done = 1;
        return rc > 0 ? 0 : rc;
    }
    if (same_token(n1, n2, c->tok1, c->tok2)) {
        snprintf(st->message, sizeof(st->message), "continuation did not advance");
        log_debug(tc->lg,
                  "%s: the service returned the same continuation twice; "
                  "stopping instead of looping",
                  c->what);
        return -EIO;
    }
    free(c->tok1);
    free(c->tok2);
    c->tok1 = n1;
    c->tok2 = n2;
    *next = NULL;
    if (!c->tables)
        resp->captured[TCAP_NEXT_RK] = NULL;
    return 1;
}

/* Fetch one page; see table_i.h. */
int table_cursor_next(struct table_client *tc, struct table_cursor *c, table_page_fn fn, void *ctx,
                      struct az_status *st)
{
    struct http_response resp;
    unsigned charged = 0;
    char *q;
    int rc;

    if (c->done)
        return 0;
    if (tc->cancelled && tc->cancelled(tc->cancel_ctx)) {
        memset(st, 0, sizeof(*st));
        snprintf(st->message, sizeof(st->message), "cancelled");
        return -EINTR;
    }
    if (c->fetching) { /* the page at tok1/tok2, asked for while the last was parsed */
        fetch_join(c);
        rc = c->pf.rc;
        resp = c->pf.resp;
        *st = c->pf.st;
        charged = c->pf.charged;
    } else {
        if ((rc = cursor_query(c, c->tok1, c->tok2, &q)) < 0)
            return rc;
        charged = charge_of(c);
        rc = cursor_send(tc, c, q, charged, &resp, st);
        free(q);
    }
    if (rc < 0)
        log_debug(tc->lg, "%s failed: no response: %s (attempts %d)", c->what, st->message,
                  st->attempts);
    else if (resp.status != 200)
        rc = table_fail(tc, c->what, st);
    else
        rc = page_take(tc, c, &resp, charged, fn, ctx, st);
    http_response_clear(&resp);
    return rc;
}

/* Run cursor C to the end. Frees C. */
static int cursor_run(struct table_client *tc, struct table_cursor *c, table_page_fn fn, void *ctx,
                      struct az_status *st)
{
    int rc;

    while ((rc = table_cursor_next(tc, c, fn, ctx, st)) > 0)
        ;
    table_cursor_free(c);
    return rc;
}

/* Query Tables; see table/table.h. */
int table_list_tables(struct table_client *tc, int top, table_page_fn fn, void *ctx,
                      struct az_status *st)
{
    struct table_cursor *c;
    int rc = table_cursor_new(&c, NULL, NULL, NULL, top);

    return rc < 0 ? rc : cursor_run(tc, c, fn, ctx, st);
}

struct exists_scan {
    const char *name;
    int found;
};

static int on_exists_page(void *p, json_t *value)
{
    struct exists_scan *s = p;
    size_t i;
    json_t *t;

    json_array_foreach (value, i, t) {
        const char *got = json_string_value(json_object_get(t, "TableName"));

        if (got && strcmp(got, s->name) == 0) {
            s->found = 1;
            return 1;
        }
    }
    return 0;
}

/* Query Tables with a TableName filter (GET /Tables('x') is not answered
 * as documented by Azurite); exact-case match required. See table/table.h. */
int table_exists(struct table_client *tc, const char *name, struct az_status *st)
{
    struct exists_scan s = { .name = name };
    struct table_cursor *c;
    char *lit = table_odata_literal(name), *filter = NULL;
    int rc;

    if (!lit || asprintf(&filter, "TableName eq %s", lit) < 0) {
        free(lit);
        return -ENOMEM;
    }
    rc = cursor_new(&c, "/Tables", "get table", filter, NULL, 0, 1);
    free(filter);
    if (rc == 0)
        rc = cursor_run(tc, c, on_exists_page, &s, st);
    free(lit);
    return rc < 0 ? rc : s.found;
}

/* Query Entities; see table/table.h. */
int table_query(struct table_client *tc, const char *table, const char *filter, const char *select,
                int top, table_page_fn fn, void *ctx, struct az_status *st)
{
    struct table_cursor *c;
    int rc = table_cursor_new(&c, table, filter, select, top);

    return rc < 0 ? rc : cursor_run(tc, c, fn, ctx, st);
}
