/* table/request.c - the Table service request: the client, URLs, signed
 * headers and sending. What the answers mean is table/errors.c's, the
 * OData aztfs writes table/odata.c's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth/auth.h"
#include "table/table_i.h"
#include "table/table.h"

#define API_VERSION "2019-02-02"
#define MAX_HEADERS 16

static const char *const kind_names[TK_COUNT] = {
    [TK_LIST_TABLES] = "list_tables",
    [TK_QUERY] = "query",
    [TK_GET_ENTITY] = "get_entity",
    [TK_INSERT] = "insert",
    [TK_REPLACE] = "replace",
    [TK_MERGE] = "merge",
    [TK_DELETE] = "delete",
    [TK_BATCH] = "batch",
    [TK_CREATE_TABLE] = "create_table",
    [TK_DELETE_TABLE] = "delete_table",
};

_Static_assert(TCAP_COUNT <= HTTP_CAPTURE_MAX, "http_response.captured holds them all");

const char *const table_capture[TCAP_COUNT + 1] = {
    [TCAP_ERROR_CODE] = "x-ms-error-code",
    [TCAP_NEXT_PK] = "x-ms-continuation-NextPartitionKey",
    [TCAP_NEXT_RK] = "x-ms-continuation-NextRowKey",
    [TCAP_NEXT_TABLE] = "x-ms-continuation-NextTableName",
    [TCAP_COUNT] = NULL,
};

/* See table/table.h. */
const char *table_kind_name(int kind)
{
    return kind >= 0 && kind < TK_COUNT ? kind_names[kind] : NULL;
}

/* Create a client; see table/table.h. */
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
    tc->stats = stats;
    if ((rc = table_profile_pick(acct->host, acct->service, &tc->profile)) < 0) {
        free(tc);
        return rc;
    }
    if ((rc = worker_budget_init(&tc->threads, TABLE_THREADS_DEFAULT)) < 0) {
        free(tc);
        return rc;
    }
    rc = http_pool_new(&tc->pool, hcfg, lg, stats);
    if (rc < 0) {
        worker_budget_destroy(&tc->threads);
        free(tc);
        return rc;
    }
    *out = tc;
    return 0;
}

/* See table.h. */
struct http_targets *table_client_targets(const struct table_client *tc)
{
    return http_pool_targets(tc->pool);
}

/* See table.h. */
void table_target_key(char *buf, size_t len, const char *table, const char *pk)
{
    snprintf(buf, len, "%s\n%s", table, pk);
}

/* See table/table.h. */
void table_client_set_cancel(struct table_client *tc, int (*cancelled)(void *ctx), void *ctx)
{
    tc->cancelled = cancelled;
    tc->cancel_ctx = ctx;
    http_pool_set_cancel(tc->pool, cancelled, ctx);
}

/* See table/table.h. */
void table_client_set_abort(struct table_client *tc, int (*aborted)(void *ctx), void *ctx)
{
    tc->cancelled = aborted;
    tc->cancel_ctx = ctx;
    http_pool_set_abort(tc->pool, aborted, ctx);
}

/* See table.h. */
void table_client_set_ordered(struct table_client *tc, int ordered)
{
    atomic_store(&tc->unordered, !ordered);
}

/* See table.h. */
int table_client_ordered(const struct table_client *tc)
{
    return !tc || (table_profile_sorted(tc->profile) && !atomic_load(&tc->unordered));
}

/* See table.h. */
void table_client_disorder(struct table_client *tc, const char *what)
{
    if (atomic_exchange(&tc->unordered, 1) == 0)
        log_info(tc->lg,
                 "%s: the service answered with keys out of order; listings no longer "
                 "rely on its order (no key-range splits, no skip-ahead)",
                 what);
}

/* See table/table.h. */
void table_client_free(struct table_client *tc)
{
    if (!tc)
        return;
    http_pool_free(tc->pool);
    worker_budget_destroy(&tc->threads);
    free(tc);
}

/* See table.h. */
void table_client_set_threads(struct table_client *tc, int limit)
{
    tc->threads.limit = limit;
}

/* See table.h. */
struct worker_budget *table_client_threads(struct table_client *tc)
{
    return &tc->threads;
}

/* The URL of FULL_PATH (the base path included) with QUERY (encoded, no
 * '?', may be NULL or "") and the account's SAS: malloc'd, or NULL. */
static char *request_url(const struct account *a, const char *full_path, const char *query)
{
    const char *q = query && *query ? query : NULL;
    char *url;

    if (asprintf(&url, "%s://%s%s%s%s%s%s", a->scheme, a->host, full_path, (q || a->sas) ? "?" : "",
                 q ? q : "", (q && a->sas) ? "&" : "", a->sas ? a->sas : "") < 0)
        return NULL;
    return url;
}

/* The Authorization header of a request with A's credentials (Shared Key
 * over FULL_PATH with DATE, or the bearer token; a SAS is in the URL) into
 * *LINE (NULL: none), with the token's generation in *GEN. Returns 0 or
 * -errno (ST->message: why no token could be had). */
static int auth_header(const struct account *a, const struct table_req *rq, const char *full_path,
                       const char *date, char **line, unsigned long *gen, struct az_status *st)
{
    char *auth = NULL;
    int rc;

    *line = NULL;
    if (a->tokens) {
        /* no token: the errno of a failed transport (EIO), EACCES when the
         * identity was refused, like the service's own refusals */
        rc = token_cache_header(a->tokens, line, gen, st->message, sizeof(st->message));
        return rc == 0 || rc == -ENOMEM || rc == -EACCES ? rc : -EIO;
    }
    if (!a->key)
        return 0;
    rc = sharedkey_authorization(a->name, a->key, a->key_len, rq->method, rq->content_type, date,
                                 full_path, NULL, &auth);
    if (rc < 0)
        return rc;
    if (asprintf(line, "Authorization: %s", auth) < 0) {
        *line = NULL;
        rc = -ENOMEM;
    }
    free(auth);
    return rc;
}

/* The header lines every request of RQ's shape carries, with its
 * Authorization (auth_header), into LINES (each malloc'd; the caller wipes
 * and frees them, also on error). Returns their count, or -errno. */
static int request_headers(const struct account *a, const struct table_req *rq,
                           const char *full_path, char *lines[MAX_HEADERS], unsigned long *gen,
                           struct az_status *st)
{
    const char *ct = rq->content_type;
    char date[RFC1123_LEN];
    int nh = 0, rc;

    sharedkey_rfc1123(time(NULL), date);
    if (asprintf(&lines[nh++], "x-ms-date: %s", date) < 0 ||
        asprintf(&lines[nh++], "x-ms-version: %s", API_VERSION) < 0 ||
        asprintf(&lines[nh++], "Accept: %s", TABLE_ACCEPT_JSON) < 0 ||
        asprintf(&lines[nh++], "DataServiceVersion: 3.0") < 0 ||
        asprintf(&lines[nh++], "MaxDataServiceVersion: 3.0;NetFx") < 0 ||
        /* "Content-Type:" alone stops libcurl from adding its own */
        asprintf(&lines[nh++], "Content-Type:%s%s", ct ? " " : "", ct ? ct : "") < 0) {
        lines[nh - 1] = NULL;
        return -ENOMEM;
    }
    if ((rc = auth_header(a, rq, full_path, date, &lines[nh], gen, st)) < 0)
        return rc;
    return lines[nh] ? nh + 1 : nh;
}

/* Did the service refuse RESP's bearer token as expired or invalid? A 401
 * (InvalidAuthenticationInfo), or a 403 whose text says the token expired
 * (AuthenticationFailed: "Lifetime validation failed. The token is
 * expired."). Such a request was not applied: it may be sent again. */
static int token_refused(const struct http_response *resp)
{
    return resp->status == 401 ||
        (resp->status == 403 && resp->body && strcasestr(resp->body, "expired"));
}

/* Sign and send RQ to URL once (see table_send). *GEN: the bearer token's
 * generation used. */
static int send_once(struct table_client *tc, const struct table_req *rq, const char *full_path,
                     const char *url, struct http_response *resp, struct az_status *st,
                     unsigned long *gen)
{
    char *lines[MAX_HEADERS] = { 0 };
    const char *headers[MAX_HEADERS + 1] = { 0 };
    struct http_request req;
    int nh, rc;

    memset(st, 0, sizeof(*st));
    memset(resp, 0, sizeof(*resp));
    if ((nh = rc = request_headers(tc->acct, rq, full_path, lines, gen, st)) < 0)
        goto out;
    for (int i = 0; i < nh; i++)
        headers[i] = lines[i];
    for (int i = 0; rq->extra && rq->extra[i] && nh < MAX_HEADERS; i++)
        headers[nh++] = rq->extra[i];
    req = (struct http_request){
        .method = rq->method,
        .url = url,
        .headers = headers,
        .body = rq->body,
        .body_len = rq->body_len,
        .log_what = rq->what,
        .kind = rq->kind,
        .settle = rq->settle,
        .settle_ctx = rq->settle_ctx,
        .status_of = rq->status_of,
        .capture = table_capture,
        .target = rq->target,
        .target_n = rq->target_n,
        .rate_limited = rq->rate_limited,
    };
    rc = http_perform(tc->pool, &req, resp);
    st->attempts = resp->attempts;
    st->throttled = resp->throttled;
    if (rc < 0) {
        snprintf(st->message, sizeof(st->message), "%s", resp->transport_error);
        goto out;
    }
    st->http_status = resp->status;
    if (resp->status >= 300) {
        if (resp->captured[TCAP_ERROR_CODE])
            snprintf(st->code, sizeof(st->code), "%s", resp->captured[TCAP_ERROR_CODE]);
        if (resp->body && resp->body[0])
            table_error_parse(resp->body, TE_BODY, st);
        if (st->code[0] && tc->stats)
            atomic_fetch_add_explicit(&tc->stats->by_code[table_code_index(st->code)], 1,
                                      memory_order_relaxed);
    }
out:
    for (int i = 0; i < MAX_HEADERS; i++)
        secret_str_free(lines[i]); /* one may hold a bearer token */
    return rc;
}

/* See table/table_i.h. A bearer token the service refuses as expired is dropped
 * and the request sent once more with a new one. */
int table_send(struct table_client *tc, const struct table_req *rq, struct http_response *resp,
               struct az_status *st)
{
    const struct account *a = tc->acct;
    char *full_path = NULL, *url = NULL;
    unsigned long gen = 0;
    int rc = -ENOMEM;

    memset(st, 0, sizeof(*st));
    memset(resp, 0, sizeof(*resp));
    if (asprintf(&full_path, "%s%s", a->base_path, rq->path) < 0) {
        full_path = NULL;
        goto out;
    }
    if (!(url = request_url(a, full_path, rq->query)))
        goto out;
    for (int again = 1;; again = 0) {
        rc = send_once(tc, rq, full_path, url, resp, st, &gen);
        if (rc < 0 || !again || !a->tokens || !token_refused(resp))
            break;
        log_debug(tc->lg,
                  "%s: HTTP %ld %s: the bearer token was refused, once more with a "
                  "new one",
                  rq->what, st->http_status, st->code);
        token_cache_rejected(a->tokens, gen);
        http_response_clear(resp);
    }
out:
    secret_str_free(url); /* it may carry the SAS */
    free(full_path);
    return rc;
}

/* See table/table_i.h. */
int table_fail(struct table_client *tc, const char *what, const struct az_status *st)
{
    int e = az_status_errno(st);

    if (e != ENOENT)
        log_debug(tc->lg, "%s failed: HTTP %ld %s%s%s (attempts %d)", what, st->http_status,
                  st->code[0] ? st->code : "-", st->message[0] ? ": " : "", st->message,
                  st->attempts);
    return -e;
}
