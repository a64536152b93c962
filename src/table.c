/* table.c - Table service REST operations: addressing, signing, paging, error mapping. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "entity.h"
#include "sharedkey.h"
#include "table.h"

#define API_VERSION "2019-02-02"
#define ACCEPT_JSON "application/json;odata=minimalmetadata"
#define MAX_HEADERS 16

struct table_client {
    const struct account *acct;
    const struct logger *lg;
    struct http_pool *pool;
    int (*cancelled)(void *ctx);    /* see table_client_set_cancel */
    void *cancel_ctx;
};

static const char *const kind_names[TK_COUNT] = {
    [TK_LIST_TABLES] = "list_tables", [TK_QUERY] = "query",
    [TK_GET_ENTITY] = "get_entity", [TK_INSERT] = "insert", [TK_REPLACE] = "replace",
    [TK_MERGE] = "merge", [TK_DELETE] = "delete", [TK_BATCH] = "batch",
    [TK_CREATE_TABLE] = "create_table", [TK_DELETE_TABLE] = "delete_table",
};

const char *table_kind_name(int kind)
{
    return kind >= 0 && kind < TK_COUNT ? kind_names[kind] : NULL;
}

/* Create a client; see table.h. */
int table_client_new(struct table_client **out, const struct account *acct,
                     const struct http_config *hcfg, const struct logger *lg,
                     struct http_stats *stats)
{
    struct table_client *tc = calloc(1, sizeof(*tc));
    int rc;

    if (!tc)
        return -ENOMEM;
    tc->acct = acct;
    tc->lg = lg;
    rc = http_pool_new(&tc->pool, hcfg, lg, stats);
    if (rc < 0) {
        free(tc);
        return rc;
    }
    *out = tc;
    return 0;
}

/* See table.h. */
void table_client_set_cancel(struct table_client *tc, int (*cancelled)(void *ctx), void *ctx)
{
    tc->cancelled = cancelled;
    tc->cancel_ctx = ctx;
    http_pool_set_cancel(tc->pool, cancelled, ctx);
}

void table_client_free(struct table_client *tc)
{
    if (!tc)
        return;
    http_pool_free(tc->pool);
    free(tc);
}

/* Map a status to an errno; the single place where this is decided. */
int az_status_errno(const struct az_status *st)
{
    switch (st->http_status) {
    case 0:
        return EIO;
    case 400:
        return EINVAL;
    case 401:
    case 403:
        return EACCES;
    case 404:
        if (strcmp(st->code, "ResourceNotFound") == 0 ||
            strcmp(st->code, "TableNotFound") == 0 ||
            strcmp(st->code, "EntityNotFound") == 0)
            return ENOENT;
        return EIO;
    case 409:
        return EEXIST;
    case 412:
        return ESTALE;
    case 413:
        return EFBIG;
    default:
        return EIO;
    }
}

/* Percent-encode everything outside the unreserved set (libcurl's escaping). */
char *table_url_encode(const char *s)
{
    return http_escape(s);
}

/* 'S' with every ' doubled. */
char *table_odata_literal(const char *s)
{
    size_t n = strlen(s), q = 0;
    char *out, *o;

    for (const char *p = s; *p; p++)
        q += *p == '\'';
    out = malloc(n + q + 3);
    if (!out)
        return NULL;
    o = out;
    *o++ = '\'';
    for (const char *p = s; *p; p++) {
        *o++ = *p;
        if (*p == '\'')
            *o++ = '\'';
    }
    *o++ = '\'';
    *o = '\0';
    return out;
}

/* "FIELD OP 'VALUE'" (VALUE quoted), with " and "-joined REST when given. */
static char *filter_cmp(const char *field, const char *op, const char *value,
                        const char *rest)
{
    char *lit = table_odata_literal(value), *f = NULL;

    if (lit && asprintf(&f, "%s %s %s%s%s", field, op, lit, rest ? " and " : "",
                        rest ? rest : "") < 0)
        f = NULL;
    free(lit);
    return f;
}

char *table_filter_partition(const char *pk)
{
    return filter_cmp("PartitionKey", "eq", pk, NULL);
}

char *table_filter_after(const char *pk)
{
    return filter_cmp("PartitionKey", "gt", pk, NULL);
}

char *table_filter_from_row(const char *pk, const char *rk)
{
    char *row = filter_cmp("RowKey", "ge", rk, NULL);
    char *f = row ? filter_cmp("PartitionKey", "eq", pk, row) : NULL;

    free(row);
    return f;
}

/* See table.h. */
int table_etag_timestamp(const char *etag, char *out, size_t outlen)
{
    const char *p = etag ? strstr(etag, "datetime'") : NULL, *end;
    char *raw, *dec;
    int rc = -EINVAL;

    if (!p || !(end = strchr(p += 9, '\'')))
        return -EINVAL;
    if (!(raw = strndup(p, (size_t)(end - p))))
        return -ENOMEM;
    dec = http_unescape(raw);
    if (dec && strlen(dec) < outlen) {
        memcpy(out, dec, strlen(dec) + 1);
        rc = 0;
    }
    free(dec);
    free(raw);
    return rc;
}

/* Fill ST's code and message from an error response (JSON, XML or headers). */
static void parse_error(const struct http_response *r, struct az_status *st)
{
    json_t *root;

    st->http_status = r->status;
    st->attempts = r->attempts;
    if (r->hdr[HDR_ERROR_CODE])
        snprintf(st->code, sizeof(st->code), "%s", r->hdr[HDR_ERROR_CODE]);
    if (!r->body || !r->body[0])
        return;
    root = json_loads(r->body, 0, NULL);
    if (root) {
        json_t *e = json_object_get(root, "odata.error");
        const char *code = json_string_value(json_object_get(e, "code"));
        const char *msg = json_string_value(
            json_object_get(json_object_get(e, "message"), "value"));

        if (code)
            snprintf(st->code, sizeof(st->code), "%s", code);
        if (msg)
            snprintf(st->message, sizeof(st->message), "%.*s",
                     (int)strcspn(msg, "\r\n"), msg);
        json_decref(root);
        return;
    }
    /* XML: <Code>..</Code> ... <Message>..</Message> */
    {
        const char *c = strstr(r->body, "<Code>"), *m = strstr(r->body, "<Message>");

        if (c) {
            c += 6;
            snprintf(st->code, sizeof(st->code), "%.*s", (int)strcspn(c, "<"), c);
        }
        if (m) {
            m += 9;
            snprintf(st->message, sizeof(st->message), "%.*s",
                     (int)strcspn(m, "<\r\n"), m);
        }
    }
}

/* Send one signed request. PATH is the encoded path after the endpoint's base
 * path ("/Tables", "/t()"); QUERY the encoded query without '?' (or NULL).
 * On return 0 an HTTP response is in *resp (any status; ST filled from it).
 * Returns -errno when no response could be had (ST says why). */
/* A write's hook for answers that were lost (http_request.settle). */
struct settle_hook {
    int (*fn)(void *ctx, const struct http_response *resp);
    void *ctx;
};

static int send_hooked(struct table_client *tc, int kind, const char *method,
                       const char *path, const char *query, const char *content_type,
                       const char *body, size_t body_len,
                       const char *const *extra, const char *what,
                       const struct settle_hook *hook,
                       struct http_response *resp, struct az_status *st)
{
    const struct account *a = tc->acct;
    char date[RFC1123_LEN];
    char *full_path = NULL, *url = NULL, *auth = NULL;
    char *hdr_buf[MAX_HEADERS] = { 0 };
    const char *headers[MAX_HEADERS + 1] = { 0 };
    int nh = 0, rc;
    struct http_request req;

    memset(st, 0, sizeof(*st));
    sharedkey_rfc1123(time(NULL), date);
    if (asprintf(&full_path, "%s%s", a->base_path, path) < 0) {
        full_path = NULL;
        rc = -ENOMEM;
        goto out;
    }
    {
        const char *sep = "?";
        const char *q = query && *query ? query : NULL;
        int n = asprintf(&url, "%s://%s%s%s%s%s%s", a->scheme, a->host, full_path,
                         (q || a->sas) ? sep : "", q ? q : "",
                         (q && a->sas) ? "&" : "", a->sas ? a->sas : "");

        if (n < 0) {
            url = NULL;
            rc = -ENOMEM;
            goto out;
        }
    }
    if (asprintf(&hdr_buf[nh++], "x-ms-date: %s", date) < 0 ||
        asprintf(&hdr_buf[nh++], "x-ms-version: %s", API_VERSION) < 0 ||
        asprintf(&hdr_buf[nh++], "Accept: %s", ACCEPT_JSON) < 0 ||
        asprintf(&hdr_buf[nh++], "DataServiceVersion: 3.0") < 0 ||
        asprintf(&hdr_buf[nh++], "MaxDataServiceVersion: 3.0;NetFx") < 0 ||
        /* "Content-Type:" alone stops libcurl from adding its own */
        asprintf(&hdr_buf[nh++], "Content-Type:%s%s", content_type ? " " : "",
                 content_type ? content_type : "") < 0) {
        hdr_buf[nh - 1] = NULL;
        rc = -ENOMEM;
        goto out;
    }
    if (a->key) {
        rc = sharedkey_authorization(a->name, a->key, a->key_len, method, content_type,
                                     date, full_path, NULL, &auth);
        if (rc < 0)
            goto out;
        if (asprintf(&hdr_buf[nh++], "Authorization: %s", auth) < 0) {
            hdr_buf[nh - 1] = NULL;
            rc = -ENOMEM;
            goto out;
        }
    }
    for (int i = 0; i < nh; i++)
        headers[i] = hdr_buf[i];
    for (int i = 0; extra && extra[i] && nh < MAX_HEADERS; i++)
        headers[nh++] = extra[i];
    headers[nh] = NULL;

    req = (struct http_request){
        .method = method, .url = url, .headers = headers,
        .body = body, .body_len = body_len, .log_what = what, .kind = kind,
        .settle = hook ? hook->fn : NULL, .settle_ctx = hook ? hook->ctx : NULL,
    };
    rc = http_perform(tc->pool, &req, resp);
    st->attempts = resp->attempts;
    if (rc < 0) {
        snprintf(st->message, sizeof(st->message), "%s", resp->transport_error);
        goto out;
    }
    st->http_status = resp->status;
    if (resp->status >= 300)
        parse_error(resp, st);
out:
    for (int i = 0; i < MAX_HEADERS; i++)
        free(hdr_buf[i]);
    free(auth);
    if (url && a->sas)
        OPENSSL_cleanse(url, strlen(url));      /* it carries the SAS */
    free(url);
    free(full_path);
    return rc;
}

/* send_hooked without a hook: reads, and writes that settle nothing. */
static int send_request(struct table_client *tc, int kind, const char *method,
                        const char *path, const char *query, const char *content_type,
                        const char *body, size_t body_len,
                        const char *const *extra, const char *what,
                        struct http_response *resp, struct az_status *st)
{
    return send_hooked(tc, kind, method, path, query, content_type, body, body_len, extra,
                       what, NULL, resp, st);
}

/* Note a failed operation (debug level: the filesystem layer logs the one
 * line users see, with the path) and return its -errno. */
static int fail_status(struct table_client *tc, const char *what, const struct az_status *st)
{
    int e = az_status_errno(st);

    if (e != ENOENT)
        log_debug(tc->lg, "%s failed: HTTP %ld %s%s%s (attempts %d)", what, st->http_status,
                 st->code[0] ? st->code : "-", st->message[0] ? ": " : "", st->message,
                 st->attempts);
    return -e;
}

/* Parse a page; see table.h. */
int table_parse_page(const char *body, size_t len, table_page_fn fn, void *ctx,
                     struct az_status *st)
{
    json_error_t jerr;
    json_t *root = json_loadb(body ? body : "", body ? len : 0, 0, &jerr);
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

/* Append "&name=value" (value encoded) to the growing query *Q. */
static int query_add(char **q, const char *name, const char *value)
{
    char *enc, *n;
    int r;

    if (!value)
        return 0;
    enc = table_url_encode(value);
    if (!enc)
        return -ENOMEM;
    r = asprintf(&n, "%s%s%s=%s", *q ? *q : "", *q && **q ? "&" : "", name, enc);
    free(enc);
    if (r < 0)
        return -ENOMEM;
    free(*q);
    *q = n;
    return 0;
}

/* Does a continuation (A1,A2) equal the previous one (B1,B2)? */
static int same_token(const char *a1, const char *a2, const char *b1, const char *b2)
{
    return b1 && a1 && strcmp(a1, b1) == 0 &&
           ((!a2 && !b2) || (a2 && b2 && strcmp(a2, b2) == 0));
}

/* The next page, fetched by a thread of its own while the caller works on
 * the current one (table_cursor_prefetch). */
struct page_fetch {
    pthread_t thread;
    struct table_client *tc;
    const struct table_cursor *c;
    char *query;
    struct http_response resp;
    struct az_status st;
    int rc;
};

/* A query in progress: what to ask, and where the next page starts. */
struct table_cursor {
    char *path, *what, *filter, *select;
    int top;
    int tables;               /* Query Tables (NextTableName) vs entities */
    char *tok1, *tok2;        /* continuation to send next (NULL: first page) */
    int done;
    int empty_run;            /* pages in a row without an entity */
    int prefetch;             /* fetch page N+1 while page N is parsed */
    int fetching;             /* pf holds a running fetch of page tok1/tok2 */
    struct page_fetch pf;
};

/* Start a query of PATH; see table.h for the public constructors. */
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

/* See table.h. */
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
        rc = cursor_new(out, path, what, filter, select, top, 0);
        free(what);
    }
    free(path);
    return rc;
}

/* See table.h. */
void table_cursor_prefetch(struct table_cursor *c, int on)
{
    c->prefetch = on;
}

/* Wait for C's background fetch, if any; its result stays in c->pf. */
static void fetch_join(struct table_cursor *c)
{
    if (!c->fetching)
        return;
    pthread_join(c->pf.thread, NULL);
    c->fetching = 0;
    free(c->pf.query);
    c->pf.query = NULL;
}

void table_cursor_free(struct table_cursor *c)
{
    if (!c)
        return;
    if (c->fetching) {
        fetch_join(c);
        http_response_clear(&c->pf.resp);
    }
    free(c->path);
    free(c->what);
    free(c->filter);
    free(c->select);
    free(c->tok1);
    free(c->tok2);
    free(c);
}

int table_cursor_done(const struct table_cursor *c)
{
    return c->done;
}

/* The query string of C's page that starts at continuation (TOK1, TOK2).
 * Returns 0 with malloc'd *q, or -ENOMEM. */
static int cursor_query(const struct table_cursor *c, const char *tok1, const char *tok2,
                        char **q)
{
    char topbuf[16];
    int rc;

    *q = NULL;
    snprintf(topbuf, sizeof(topbuf), "%d", c->top);
    if ((rc = query_add(q, "$filter", c->filter)) < 0 ||
        (rc = query_add(q, "$select", c->select)) < 0 ||
        (rc = query_add(q, "$top", c->top > 0 ? topbuf : NULL)) < 0 ||
        (rc = query_add(q, c->tables ? "NextTableName" : "NextPartitionKey", tok1)) < 0 ||
        (rc = query_add(q, "NextRowKey", tok2)) < 0) {
        free(*q);
        *q = NULL;
    }
    return rc;
}

static int cursor_send(struct table_client *tc, const struct table_cursor *c, const char *q,
                       struct http_response *resp, struct az_status *st)
{
    return send_request(tc, c->tables ? TK_LIST_TABLES : TK_QUERY, "GET", c->path, q, NULL,
                        NULL, 0, NULL, c->what, resp, st);
}

static void *fetch_main(void *arg)
{
    struct page_fetch *pf = arg;

    pf->rc = cursor_send(pf->tc, pf->c, pf->query, &pf->resp, &pf->st);
    return NULL;
}

/* Start fetching the page at continuation (TOK1, TOK2) in the background.
 * Without memory or a thread, nothing starts: the page is fetched when asked
 * for. */
static void fetch_start(struct table_client *tc, struct table_cursor *c, const char *tok1,
                        const char *tok2)
{
    struct page_fetch *pf = &c->pf;

    memset(pf, 0, sizeof(*pf));
    pf->tc = tc;
    pf->c = c;
    if (cursor_query(c, tok1, tok2, &pf->query) < 0)
        return;
    if (pthread_create(&pf->thread, NULL, fetch_main, pf) != 0) {
        free(pf->query);
        pf->query = NULL;
        return;
    }
    c->fetching = 1;
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

/* Fetch one page; see table.h. */
int table_cursor_next(struct table_client *tc, struct table_cursor *c, table_page_fn fn,
                      void *ctx, struct az_status *st)
{
    struct http_response resp;
    struct page_count pc = { fn, ctx, 0 };
    char *q, *n1, *n2;
    int rc;

    if (c->done)
        return 0;
    if (tc->cancelled && tc->cancelled(tc->cancel_ctx)) {
        memset(st, 0, sizeof(*st));
        snprintf(st->message, sizeof(st->message), "cancelled");
        return -EINTR;
    }
    if (c->fetching) {      /* the page at tok1/tok2, asked for while the last was parsed */
        fetch_join(c);
        rc = c->pf.rc;
        resp = c->pf.resp;
        *st = c->pf.st;
    } else {
        if ((rc = cursor_query(c, c->tok1, c->tok2, &q)) < 0)
            return rc;
        rc = cursor_send(tc, c, q, &resp, st);
        free(q);
    }
    if (rc < 0) {
        log_debug(tc->lg, "%s failed: no response: %s (attempts %d)", c->what, st->message,
                 st->attempts);
        http_response_clear(&resp);
        return rc;
    }
    if (resp.status != 200) {
        rc = fail_status(tc, c->what, st);
        http_response_clear(&resp);
        return rc;
    }
    n1 = resp.hdr[c->tables ? HDR_CONT_TABLE : HDR_CONT_PK];
    n2 = c->tables ? NULL : resp.hdr[HDR_CONT_RK];
    if (c->prefetch && n1 && !same_token(n1, n2, c->tok1, c->tok2))
        fetch_start(tc, c, n1, n2);
    rc = table_parse_page(resp.body, resp.body_len, count_page, &pc, st);
    if (rc == -EIO)
        log_debug(tc->lg, "%s: %s", c->what, st->message);
    c->empty_run = pc.n ? 0 : c->empty_run + 1;
    if (rc == 0 && n1 && c->empty_run >= TABLE_MAX_EMPTY_PAGES) {
        snprintf(st->message, sizeof(st->message), "the service sent %d pages in a row "
                 "without an entity; stopping", c->empty_run);
        http_response_clear(&resp);
        return -EIO;
    }
    if (rc != 0 || !n1) {
        http_response_clear(&resp);
        c->done = 1;
        return rc > 0 ? 0 : rc;
    }
    if (same_token(n1, n2, c->tok1, c->tok2)) {
        snprintf(st->message, sizeof(st->message), "continuation did not advance");
        log_debug(tc->lg, "%s: the service returned the same continuation twice; "
                  "stopping instead of looping", c->what);
        http_response_clear(&resp);
        return -EIO;
    }
    free(c->tok1);
    free(c->tok2);
    c->tok1 = n1;
    c->tok2 = n2;
    resp.hdr[c->tables ? HDR_CONT_TABLE : HDR_CONT_PK] = NULL;
    if (!c->tables)
        resp.hdr[HDR_CONT_RK] = NULL;
    http_response_clear(&resp);
    return 1;
}

/* Run cursor C to the end. Frees C. */
static int cursor_run(struct table_client *tc, struct table_cursor *c, table_page_fn fn,
                      void *ctx, struct az_status *st)
{
    int rc;

    while ((rc = table_cursor_next(tc, c, fn, ctx, st)) > 0)
        ;
    table_cursor_free(c);
    return rc;
}

/* Query Tables; see table.h. */
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

    json_array_foreach(value, i, t) {
        const char *got = json_string_value(json_object_get(t, "TableName"));

        if (got && strcmp(got, s->name) == 0) {
            s->found = 1;
            return 1;
        }
    }
    return 0;
}

/* Query Tables with a TableName filter (GET /Tables('x') is not answered
 * as documented by Azurite); exact-case match required. */
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

/* Query Entities; see table.h. */
int table_query(struct table_client *tc, const char *table, const char *filter,
                const char *select, int top, table_page_fn fn, void *ctx,
                struct az_status *st)
{
    struct table_cursor *c;
    int rc = table_cursor_new(&c, table, filter, select, top);

    return rc < 0 ? rc : cursor_run(tc, c, fn, ctx, st);
}

/* Build "/table(PartitionKey='..',RowKey='..')" with keys quoted and encoded. */
static char *entity_path(const char *table, const char *pk, const char *rk)
{
    char *lp, *lr;

    if (!pk || !rk)
        return NULL;
    lp = table_odata_literal(pk);
    lr = table_odata_literal(rk);
    char *ep = NULL, *er = NULL, *path = NULL;

    if (lp && lr && (ep = table_url_encode(lp + 1)) && (er = table_url_encode(lr + 1))) {
        /* the encoded literal still ends in "%27": strip it and requote */
        ep[strlen(ep) - 3] = '\0';
        er[strlen(er) - 3] = '\0';
        if (asprintf(&path, "/%s(PartitionKey='%s',RowKey='%s')", table, ep, er) < 0)
            path = NULL;
    }
    free(lp);
    free(lr);
    free(ep);
    free(er);
    return path;
}

/* Point query; see table.h. */
int table_get_entity(struct table_client *tc, const char *table, const char *pk,
                     const char *rk, json_t **entity, char **etag, struct az_status *st)
{
    struct http_response resp;
    char *path = entity_path(table, pk, rk);
    json_error_t jerr;
    int rc;

    *entity = NULL;
    if (etag)
        *etag = NULL;
    if (!pk || !rk) {
        free(path);
        return -EINVAL;
    }
    if (!path)
        return -ENOMEM;
    rc = send_request(tc, TK_GET_ENTITY, "GET", path, NULL, NULL, NULL, 0, NULL, "get entity",
                      &resp, st);
    free(path);
    if (rc < 0) {
        log_debug(tc->lg, "get entity %s: no response: %s", table, st->message);
        goto out;
    }
    if (resp.status != 200) {
        rc = fail_status(tc, "get entity", st);
        goto out;
    }
    *entity = json_loadb(resp.body, resp.body_len, 0, &jerr);
    if (!json_is_object(*entity)) {
        json_decref(*entity);
        *entity = NULL;
        snprintf(st->message, sizeof(st->message), "malformed entity: %s", jerr.text);
        log_debug(tc->lg, "get entity %s: %s", table, st->message);
        rc = -EIO;
        goto out;
    }
    if (etag) {
        const char *e = resp.hdr[HDR_ETAG];

        if (!e)
            e = json_string_value(json_object_get(*entity, "odata.etag"));
        if (e && !(*etag = strdup(e))) {
            json_decref(*entity);
            *entity = NULL;
            rc = -ENOMEM;
        }
    }
out:
    http_response_clear(&resp);
    return rc;
}

/* --- writes ------------------------------------------------------------------ */

/* Serialize ENTITY with the keys added; malloc'd compact JSON or NULL. */
static char *entity_body(const json_t *entity, const char *pk, const char *rk)
{
    json_t *copy = entity ? json_deep_copy(entity) : json_object();
    char *body = NULL;

    if (!copy)
        return NULL;
    if (json_object_set_new(copy, "PartitionKey", json_string(pk)) == 0 &&
        json_object_set_new(copy, "RowKey", json_string(rk)) == 0)
        body = json_dumps(copy, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(copy);
    return body;
}

/* Canonical text of wire entity E with fixed keys and Timestamp, so that two
 * entities compare by their properties and types alone. NULL on error. */
static char *canonical_props(const json_t *e)
{
    json_t *c = json_deep_copy(e);
    char *text = NULL;
    size_t len;

    if (!c)
        return NULL;
    json_object_del(c, "Timestamp@odata.type");
    if (json_object_set_new(c, "PartitionKey", json_string("")) == 0 &&
        json_object_set_new(c, "RowKey", json_string("")) == 0 &&
        json_object_set_new(c, "Timestamp", json_string("")) == 0 &&
        entity_render(c, &text, &len, NULL) < 0)
        text = NULL;
    json_decref(c);
    return text;
}

/* Was wire entity E last changed at or after SINCE (its Timestamp)? */
static int changed_since(const json_t *e, const struct timespec *since)
{
    struct timespec ts;
    const char *t = json_string_value(json_object_get(e, "Timestamp"));

    if (!t || entity_parse_datetime(t, &ts) < 0)
        return 0;
    return ts.tv_sec > since->tv_sec ||
           (ts.tv_sec == since->tv_sec && ts.tv_nsec >= since->tv_nsec);
}

/* Does the stored entity hold exactly ENTITY's properties (and types), or
 * with MERGED, ENTITY's properties over whatever else it has, written at or
 * after SINCE? Used to settle a write whose earlier send may have been
 * applied: equal content written before that send is someone else's.
 * Returns 1, 0 (also when the entity is gone), or -errno; *etag gets the
 * stored entity's ETag. */
static int entity_holds(struct table_client *tc, const char *table, const char *pk,
                        const char *rk, const json_t *entity, int merged,
                        const struct timespec *since, char **etag)
{
    struct az_status st;
    json_t *cur = NULL, *want = NULL;
    char *a = NULL, *b = NULL;
    int rc;

    rc = table_get_entity(tc, table, pk, rk, &cur, etag, &st);
    if (rc == -ENOENT)
        return 0;
    if (rc < 0)
        return rc;
    if (merged) {
        const char *k;
        json_t *v;

        /* the merge of ENTITY into the stored one: the stored one itself?
         * A merged property brings its own annotation (or none). */
        want = json_deep_copy(cur);
        json_object_foreach((json_t *)entity, k, v) {
            char ann[300];

            snprintf(ann, sizeof(ann), "%s@odata.type", k);
            if (want)
                json_object_del(want, ann);
        }
        json_object_foreach((json_t *)entity, k, v) {
            if (want)
                json_object_set(want, k, v);
        }
    }
    a = canonical_props(cur);
    b = canonical_props(merged ? want : entity);
    json_decref(want);
    rc = (a && b) ? strcmp(a, b) == 0 && changed_since(cur, since) : -ENOMEM;
    free(a);
    free(b);
    json_decref(cur);
    return rc;
}

/* What a single-entity write needs to find out whether it was applied. */
struct write_probe {
    struct table_client *tc;
    const char *what, *table, *pk, *rk;
    const json_t *entity;       /* NULL: a delete */
    int merged;
    char *etag;                 /* the stored entity's ETag when it was ours */
};

/* Was the write of P applied by a send that RESP answers, or an earlier one?
 * The entity decides (see entity_holds); a deleted entity is gone. Returns
 * 1 (P->etag set for writes), 0, or -errno. */
static int write_applied(void *ctx, const struct http_response *resp)
{
    struct write_probe *p = ctx;
    struct timespec since;
    struct az_status st;
    json_t *e = NULL;
    int rc;

    if (!p->entity) {
        rc = table_get_entity(p->tc, p->table, p->pk, p->rk, &e, NULL, &st);
        json_decref(e);
        return rc == -ENOENT ? 1 : rc < 0 ? rc : 0;
    }
    http_send_window(resp, &since);
    free(p->etag);
    p->etag = NULL;
    rc = entity_holds(p->tc, p->table, p->pk, p->rk, p->entity, p->merged, &since, &p->etag);
    if (rc == 1)
        log_info(p->tc->lg, "%s: the service already holds this write (an earlier send "
                 "was applied)", p->what);
    return rc;
}

/* Write an entity; see table.h. */
int table_write_entity(struct table_client *tc, const char *table, const char *pk,
                       const char *rk, const json_t *entity, enum table_write how,
                       const char *etag, char **new_etag, struct az_status *st)
{
    struct http_response resp;
    char *path = NULL, *body = NULL, *ifmatch = NULL, *what = NULL;
    const char *extra[3] = { "Prefer: return-no-content", NULL, NULL };
    const char *method = how == TW_INSERT ? "POST" : how == TW_REPLACE ? "PUT" : "MERGE";
    struct write_probe probe = { 0 };
    struct settle_hook hook = { write_applied, &probe };
    int rc = -ENOMEM;

    if (new_etag)
        *new_etag = NULL;
    memset(&resp, 0, sizeof(resp));
    if ((how != TW_INSERT && !etag) || !pk || !rk)
        return -EINVAL;
    if (how == TW_INSERT) {
        if (asprintf(&path, "/%s", table) < 0)
            path = NULL;
    } else {
        path = entity_path(table, pk, rk);
    }
    body = entity_body(entity, pk, rk);
    if (!path || !body)
        goto out;
    if (etag) {
        if (asprintf(&ifmatch, "If-Match: %s", etag) < 0) {
            ifmatch = NULL;
            goto out;
        }
        extra[1] = ifmatch;
    }
    if (asprintf(&what, "%s %s", how == TW_INSERT ? "insert" : how == TW_REPLACE ?
                 "replace" : "merge", table) < 0) {
        what = NULL;
        goto out;
    }
    probe = (struct write_probe){ tc, what, table, pk, rk, entity, how == TW_MERGE, NULL };
    rc = send_hooked(tc, how == TW_INSERT ? TK_INSERT : how == TW_REPLACE ? TK_REPLACE :
                     TK_MERGE, method, path, NULL, "application/json", body, strlen(body),
                     extra, what, &hook, &resp, st);
    if (rc == 0 && resp.settled)
        goto done;
    if (rc < 0) {
        log_debug(tc->lg, "%s failed: no response: %s (attempts %d)", what, st->message,
                 st->attempts);
        goto out;
    }
    if (resp.status >= 300) {
        /* A 409 (insert) or 412 (replace/merge) answering a request sent
         * once is someone else's change: it fails, always. Only when an
         * earlier send may have been applied (our retry after a lost
         * answer, libcurl's resend on a dead connection) can it be our own
         * write meeting itself; then the entity decides. */
        if ((resp.status == 409 || resp.status == 412) && resp.resent &&
            write_applied(&probe, &resp) == 1)
            goto done;
        rc = fail_status(tc, what, st);
        goto out;
    }
    if (new_etag && resp.hdr[HDR_ETAG] && !(*new_etag = strdup(resp.hdr[HDR_ETAG])))
        rc = -ENOMEM;
    goto out;
done:                       /* applied by a send whose answer was lost */
    memset(st, 0, sizeof(*st));
    rc = 0;
    if (new_etag) {
        *new_etag = probe.etag;
        probe.etag = NULL;
    }
out:
    free(probe.etag);
    http_response_clear(&resp);
    free(what);
    free(ifmatch);
    free(body);
    free(path);
    return rc;
}

/* Delete an entity; see table.h. */
int table_delete_entity(struct table_client *tc, const char *table, const char *pk,
                        const char *rk, const char *etag, struct az_status *st)
{
    struct http_response resp;
    char *path = entity_path(table, pk, rk), *ifmatch = NULL;
    const char *extra[2] = { NULL, NULL };
    struct write_probe probe = { tc, "delete entity", table, pk, rk, NULL, 0, NULL };
    struct settle_hook hook = { write_applied, &probe };
    int rc = -ENOMEM;

    memset(&resp, 0, sizeof(resp));
    if (!path || asprintf(&ifmatch, "If-Match: %s", etag ? etag : "*") < 0) {
        ifmatch = NULL;
        goto out;
    }
    extra[0] = ifmatch;
    rc = send_hooked(tc, TK_DELETE, "DELETE", path, NULL, NULL, NULL, 0, extra,
                     "delete entity", &hook, &resp, st);
    if (rc == 0 && resp.settled) {
        memset(st, 0, sizeof(*st));
        goto out;
    }
    if (rc < 0) {
        log_debug(tc->lg, "delete entity failed: no response: %s", st->message);
        goto out;
    }
    /* The service says it is not there. After an earlier send that may
     * have been applied (our retry, libcurl's unseen resend on a dead
     * reused connection) that is our own delete; after one send, someone
     * else deleted it (-ENOENT). A 404 without the service's not-found code
     * (from a proxy, a wrong path) is an error. */
    if (resp.status == 404 && az_status_errno(st) == ENOENT)
        rc = resp.resent ? 0 : -ENOENT;
    else if (resp.status >= 300)
        rc = fail_status(tc, "delete entity", st);
out:
    http_response_clear(&resp);
    free(ifmatch);
    free(path);
    return rc;
}

/* Create a table; see table.h. */
int table_create(struct table_client *tc, const char *name, struct az_status *st)
{
    struct http_response resp;
    json_t *obj = json_pack("{s:s}", "TableName", name);
    char *body = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    const char *extra[] = { "Prefer: return-no-content", NULL };
    int rc = -ENOMEM;

    json_decref(obj);
    memset(&resp, 0, sizeof(resp));
    if (!body)
        return rc;
    rc = send_request(tc, TK_CREATE_TABLE, "POST", "/Tables", NULL, "application/json", body,
                      strlen(body), extra, "create table", &resp, st);
    if (rc == 0 && resp.status >= 300) {
        /* a resend of ours that the first attempt already applied */
        if (resp.status == 409 && resp.resent &&
            strcmp(st->code, "TableAlreadyExists") == 0)
            rc = 0;
        else
            rc = fail_status(tc, "create table", st);
    }
    http_response_clear(&resp);
    free(body);
    return rc;
}

/* Delete a table; see table.h. */
int table_delete(struct table_client *tc, const char *name, struct az_status *st)
{
    struct http_response resp;
    char *lit = table_odata_literal(name), *enc = NULL, *path = NULL;
    int rc = -ENOMEM;

    memset(&resp, 0, sizeof(resp));
    if (!lit || !(enc = table_url_encode(lit)) || asprintf(&path, "/Tables(%s)", enc) < 0) {
        path = NULL;
        goto out;
    }
    rc = send_request(tc, TK_DELETE_TABLE, "DELETE", path, NULL, NULL, NULL, 0, NULL,
                      "delete table", &resp, st);
    if (rc == 0 && resp.status >= 300) {
        if (resp.status == 404 && az_status_errno(st) == ENOENT)
            rc = 0;         /* gone, as for an entity (table_delete_entity) */
        else
            rc = fail_status(tc, "delete table", st);
    }
out:
    http_response_clear(&resp);
    free(path);
    free(enc);
    free(lit);
    return rc;
}

/* --- entity group transactions ------------------------------------------------ */

/* A growable string for building multipart bodies. */
struct sbuf {
    char *s;
    size_t len, cap;
    int oom;
};

static void sbuf_add(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Append printf-formatted text; sets b->oom on failure. */
static void sbuf_add(struct sbuf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (b->oom)
        return;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        char *s;

        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        if (!(s = realloc(b->s, cap))) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Outcome of a batch; see table.h. */
int table_batch_outcome(const char *body, struct az_status *st)
{
    const char *p = body;

    while ((p = strstr(p, "HTTP/1.1 ")) != NULL) {
        long code = strtol(p + 9, NULL, 10);
        const char *json;

        p += 9;
        if (code >= 200 && code < 300)
            continue;
        st->http_status = code;
        json = strstr(p, "{\"odata.error\"");
        if (json) {
            json_t *root = json_loads(json, JSON_DISABLE_EOF_CHECK, NULL);
            json_t *e = json_object_get(root, "odata.error");
            const char *c = json_string_value(json_object_get(e, "code"));
            const char *m = json_string_value(
                json_object_get(json_object_get(e, "message"), "value"));

            if (c)
                snprintf(st->code, sizeof(st->code), "%s", c);
            if (m)
                snprintf(st->message, sizeof(st->message), "%.*s",
                         (int)strcspn(m, "\r\n"), m);
            json_decref(root);
        }
        return -1;
    }
    return 0;
}

/* ETag of one operation's response; see table.h. */
int table_batch_etag(const char *body, size_t index, char **etag)
{
    const char *p = body;

    *etag = NULL;
    for (size_t i = 0; i < index && p; i++)
        if ((p = strstr(p, "HTTP/1.1 ")) != NULL)
            p += 9;
    if (!p || !(p = strstr(p, "HTTP/1.1 ")) || !(p = strchr(p, '\n')))
        return 0;
    /* its headers: the lines after the status line, up to an empty one */
    for (;;) {
        const char *line = p + 1;
        size_t len = strcspn(line, "\r\n");

        if (len == 0)
            return 0;
        if (len > 5 && strncasecmp(line, "ETag:", 5) == 0) {
            const char *v = line + 5 + strspn(line + 5, " \t");
            size_t vlen = len - (size_t)(v - line);

            while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
                vlen--;
            return vlen == 0 || (*etag = strndup(v, vlen)) ? 0 : -ENOMEM;
        }
        p = line + len;
        if (*p == '\r')
            p++;
        if (*p != '\n')
            return 0;
    }
}

/* Drop what the new_etag outputs of OPS hold. */
static void batch_etags_clear(const struct table_batch_op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ops[i].new_etag) {
            free(*ops[i].new_etag);
            *ops[i].new_etag = NULL;
        }
    }
}

/* Hand the ETags of BODY's changeset responses to OPS. 0 or -ENOMEM. */
static int batch_etags_take(const char *body, const struct table_batch_op *ops, size_t n)
{
    int rc = 0;

    batch_etags_clear(ops, n);      /* a settle attempt may have filled some */
    for (size_t i = 0; i < n && rc == 0; i++)
        if (ops[i].new_etag && ops[i].kind != TB_DELETE)
            rc = table_batch_etag(body, i, ops[i].new_etag);
    if (rc < 0)
        batch_etags_clear(ops, n);
    return rc;
}

/* A batch, for finding out whether it was applied. */
struct batch_probe {
    struct table_client *tc;
    const char *table, *pk;
    const struct table_batch_op *ops;
    size_t n;
};

/* Does the table hold the result of the batch CTX (struct batch_probe):
 * every written entity exactly as sent, written within the window of the
 * sends RESP answers, and every deleted one gone? Returns 1, 0 or -errno. */
static int batch_applied(void *ctx, const struct http_response *resp)
{
    const struct batch_probe *b = ctx;

    for (size_t i = 0; i < b->n; i++) {
        const struct table_batch_op *op = &b->ops[i];
        struct write_probe p = { b->tc, "batch", b->table, b->pk, op->rk,
                                 op->kind == TB_DELETE ? NULL : op->entity, 0, NULL };
        int rc = write_applied(&p, resp);

        if (op->new_etag && op->kind != TB_DELETE) {
            free(*op->new_etag);
            *op->new_etag = p.etag;     /* the entity that holds our write */
            p.etag = NULL;
        }
        free(p.etag);
        if (rc != 1)
            return rc;
    }
    return 1;
}

/* Run an entity group transaction; see table.h. */
int table_batch(struct table_client *tc, const char *table, const char *pk,
                const struct table_batch_op *ops, size_t n, struct az_status *st)
{
    const struct account *a = tc->acct;
    struct http_response resp;
    struct sbuf b = { 0 };
    unsigned char rnd[8];
    char id[17], *ctype = NULL;
    struct batch_probe probe = { tc, table, pk, ops, n };
    struct settle_hook hook = { batch_applied, &probe };
    int rc = -ENOMEM;

    memset(&resp, 0, sizeof(resp));
    memset(st, 0, sizeof(*st));
    batch_etags_clear(ops, n);
    if (n == 0 || n > 100)
        return -EINVAL;
    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        return -EIO;
    for (int i = 0; i < 8; i++)
        snprintf(id + 2 * i, 3, "%02x", rnd[i]);

    sbuf_add(&b, "--batch_%s\r\nContent-Type: multipart/mixed; boundary=changeset_%s\r\n\r\n",
             id, id);
    for (size_t i = 0; i < n; i++) {
        const char *method = ops[i].kind == TB_INSERT ? "POST" :
                             ops[i].kind == TB_REPLACE ? "PUT" : "DELETE";
        char *path = ops[i].kind == TB_INSERT ? NULL : entity_path(table, pk, ops[i].rk);
        char *body = ops[i].kind == TB_DELETE ? NULL : entity_body(ops[i].entity, pk, ops[i].rk);

        if ((ops[i].kind != TB_INSERT && !path) || (ops[i].kind != TB_DELETE && !body)) {
            free(path);
            free(body);
            goto out;
        }
        sbuf_add(&b, "--changeset_%s\r\nContent-Type: application/http\r\n"
                 "Content-Transfer-Encoding: binary\r\n\r\n", id);
        if (path)
            sbuf_add(&b, "%s %s://%s%s%s HTTP/1.1\r\n", method, a->scheme, a->host,
                     a->base_path, path);
        else
            sbuf_add(&b, "%s %s://%s%s/%s HTTP/1.1\r\n", method, a->scheme, a->host,
                     a->base_path, table);
        sbuf_add(&b, "Accept: %s\r\nDataServiceVersion: 3.0\r\n", ACCEPT_JSON);
        if (ops[i].kind != TB_INSERT)
            sbuf_add(&b, "If-Match: %s\r\n", ops[i].etag ? ops[i].etag : "*");
        if (body)
            sbuf_add(&b, "Content-Type: application/json\r\nPrefer: return-no-content\r\n"
                     "\r\n%s\r\n", body);
        else
            sbuf_add(&b, "\r\n");
        free(path);
        free(body);
    }
    sbuf_add(&b, "--changeset_%s--\r\n--batch_%s--\r\n", id, id);
    if (b.oom || asprintf(&ctype, "multipart/mixed; boundary=batch_%s", id) < 0) {
        ctype = NULL;
        goto out;
    }
    rc = send_hooked(tc, TK_BATCH, "POST", "/$batch", NULL, ctype, b.s, b.len, NULL, "batch",
                     &hook, &resp, st);
    if (rc == 0 && resp.settled) {
        memset(st, 0, sizeof(*st));
        goto out;
    }
    if (rc < 0) {
        log_debug(tc->lg, "batch on %s failed: no response: %s", table, st->message);
        goto out;
    }
    if (resp.status != 202) {
        rc = fail_status(tc, "batch", st);
        goto out;
    }
    if (table_batch_outcome(resp.body ? resp.body : "", st) < 0) {
        rc = fail_status(tc, "batch", st);
        /* as for single writes: a 409/412 may answer a resend of a batch
         * whose first send was applied (only then); the entities decide */
        if ((rc == -EEXIST || rc == -ESTALE) && resp.resent &&
            batch_applied(&probe, &resp) == 1) {
            log_info(tc->lg, "batch on %s: the service already holds it (an earlier send "
                     "was applied)", table);
            rc = 0;
        }
    } else {
        rc = batch_etags_take(resp.body ? resp.body : "", ops, n);
    }
out:
    if (rc < 0)
        batch_etags_clear(ops, n);
    http_response_clear(&resp);
    free(ctype);
    free(b.s);
    return rc;
}
