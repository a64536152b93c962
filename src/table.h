/* table.h - Table service REST operations: addressing, signing, paging, error mapping. */
#ifndef AZTFS_TABLE_H
#define AZTFS_TABLE_H

#include <jansson.h>

#include "connstr.h"
#include "http.h"
#include "log.h"

struct table_client;

/* Request kinds, counted in http_stats.by_kind. */
enum table_req_kind {
    TK_LIST_TABLES, TK_QUERY, TK_GET_ENTITY, TK_INSERT, TK_REPLACE, TK_MERGE,
    TK_DELETE, TK_BATCH, TK_CREATE_TABLE, TK_DELETE_TABLE, TK_COUNT
};

/* "list_tables", "query", ... for stats output; NULL past TK_COUNT. */
const char *table_kind_name(int kind);

/* What the service said about a failed (or successful) operation. */
struct az_status {
    long http_status;       /* 0 when no response was received */
    char code[64];          /* service error code ("ResourceNotFound"), or "" */
    char message[256];      /* service message or transport error, secrets-free */
    int attempts;           /* attempts made by the last request */
};

/* Create a client for ACCT (borrowed: must outlive the client). LG and STATS
 * are borrowed too. Returns 0, -ENOMEM. */
int table_client_new(struct table_client **out, const struct account *acct,
                     const struct http_config *hcfg, const struct logger *lg,
                     struct http_stats *stats);
void table_client_free(struct table_client *tc);

/* From now on, reads ask CANCELLED(CTX) before each page and while they
 * wait or transfer (http_pool_set_cancel): nonzero ends them with -EINTR.
 * Writes always run to their end. Call before concurrent use. */
void table_client_set_cancel(struct table_client *tc, int (*cancelled)(void *ctx), void *ctx);

/* A query ends with -EIO when the service answers this many pages in a row
 * without an entity but with a continuation (a server can do that for a
 * selective filter; one that never stops would keep a listing going
 * forever). */
#define TABLE_MAX_EMPTY_PAGES 100

/* Map a service answer to an errno, in one place:
 * 404 ResourceNotFound/TableNotFound -> ENOENT (other 404s -> EIO),
 * 409 -> EEXIST, 412 -> ESTALE, 403/401 -> EACCES, 400 -> EINVAL,
 * 413 -> EFBIG, 408/429/5xx/no response -> EIO. Returns a positive errno. */
int az_status_errno(const struct az_status *st);

/* Called once per page with the page's "value" array (borrowed). Return 0 to
 * continue, 1 to stop early (not an error), or -errno to abort. */
typedef int (*table_page_fn)(void *ctx, json_t *value);

/* Query Tables, following NextTableName continuation. TOP > 0 asks for pages
 * of at most TOP entries. Returns 0, or -errno with details in *st. */
int table_list_tables(struct table_client *tc, int top, table_page_fn fn, void *ctx,
                      struct az_status *st);

/* Does table NAME exist (exact, case-sensitive name)? Returns 1, 0 or -errno. */
int table_exists(struct table_client *tc, const char *name, struct az_status *st);

/* Query Entities of TABLE, following NextPartitionKey/NextRowKey until no
 * continuation is returned (empty pages included). FILTER and SELECT are
 * plain OData expressions (NULL for none), encoded here. TOP > 0 sets $top.
 * A continuation that does not advance is an error (-EIO), not a loop.
 * Returns 0, or -errno with details in *st. */
int table_query(struct table_client *tc, const char *table, const char *filter,
                const char *select, int top, table_page_fn fn, void *ctx,
                struct az_status *st);

/* A query read one page at a time (what table_query and table_list_tables
 * loop over), for callers that stream: readdir hands out each page's names
 * before asking for the next. */
struct table_cursor;

/* Start a query of TABLE's entities (FILTER, SELECT, TOP as for
 * table_query), or of the account's tables when TABLE is NULL. Nothing is
 * sent yet. Returns 0 with *out (free with table_cursor_free) or -ENOMEM. */
int table_cursor_new(struct table_cursor **out, const char *table, const char *filter,
                     const char *select, int top);

/* Fetch the next page and hand its "value" array to FN. Returns 1 when more
 * pages follow, 0 when the query is complete (or FN returned 1), or -errno
 * with details in *st (the cursor is unchanged: the same page may be asked
 * for again). A continuation that does not advance is -EIO. */
int table_cursor_next(struct table_client *tc, struct table_cursor *c, table_page_fn fn,
                      void *ctx, struct az_status *st);

/* ON: from the next table_cursor_next on, fetch each next page in the
 * background while the caller's FN works on the current one (a listing's
 * pages are parsed and cached while the service prepares the next). At most
 * one page is in flight; one a caller never asks for is waited for and
 * dropped by table_cursor_free, so a caller that may stop turns it off. */
void table_cursor_prefetch(struct table_cursor *c, int on);

/* Has the query been read to its end? */
int table_cursor_done(const struct table_cursor *c);
void table_cursor_free(struct table_cursor *c);

/* Point query. On success *entity is a new reference (the wire object, with
 * "odata.etag"), and *etag (if ETAG non-NULL) a malloc'd copy of the ETag.
 * Returns 0, -ENOENT when no such entity, or -errno with details in *st. */
int table_get_entity(struct table_client *tc, const char *table, const char *pk,
                     const char *rk, json_t **entity, char **etag, struct az_status *st);

/* How an entity write is guarded. */
enum table_write {
    TW_INSERT,          /* POST: fails with EEXIST when the entity exists */
    TW_REPLACE,         /* PUT with If-Match: ETAG (ESTALE when it moved on) */
    TW_MERGE,           /* MERGE with If-Match: ETAG */
};

/* Write ENTITY (wire form, without keys: they come from PK/RK) to TABLE.
 * For TW_REPLACE/TW_MERGE, ETAG is required ("*" = any existing entity).
 * On success *new_etag (if non-NULL) is the malloc'd ETag the service
 * returned (NULL if none). Returns 0, or -errno (EEXIST, ESTALE, ENOENT,
 * EINVAL, EIO...) with details in *st. A 409 (insert) or 412 (replace,
 * merge) is -EEXIST/-ESTALE whenever the request was sent once. Only when an
 * earlier send may have been applied (http_response.resent) is the entity
 * read back, and the write counts as done when it holds exactly what was
 * sent with a Timestamp inside the window of our sends. */
int table_write_entity(struct table_client *tc, const char *table, const char *pk,
                       const char *rk, const json_t *entity, enum table_write how,
                       const char *etag, char **new_etag, struct az_status *st);

/* Delete with If-Match: ETAG ("*" for any). Returns 0, -ENOENT when the
 * service says the entity is not there (someone else deleted it; but 0 when
 * an earlier send of ours may have been applied: then the delete was ours),
 * -ESTALE, -EIO (a 404 without the service's not-found code, 5xx, no
 * response), -errno. */
int table_delete_entity(struct table_client *tc, const char *table, const char *pk,
                        const char *rk, const char *etag, struct az_status *st);

/* Create / delete a table. Create returns -EEXIST when it exists (any case). */
int table_create(struct table_client *tc, const char *name, struct az_status *st);
int table_delete(struct table_client *tc, const char *name, struct az_status *st);

/* One operation of an entity group transaction. */
struct table_batch_op {
    enum { TB_INSERT, TB_REPLACE, TB_DELETE } kind;
    const char *rk;             /* all operations share one PartitionKey */
    const json_t *entity;       /* TB_INSERT/TB_REPLACE */
    const char *etag;           /* If-Match for TB_REPLACE/TB_DELETE, NULL = "*" */
    char **new_etag;            /* TB_INSERT/TB_REPLACE, may be NULL: receives the
                                 * written entity's new ETag (see table_batch) */
};

/* Run OPS (at most 100, one partition PK of TABLE) atomically with $batch.
 * Returns 0 when every operation succeeded; else -errno of the failing one
 * (st->message names its index), and nothing was applied. A 409/412 is
 * settled like a single write's: only after a send that may have been
 * applied, and then when every entity holds the batch's result (written
 * within the window of our sends, deleted ones gone), that is success.
 * On success each non-NULL new_etag of a write gets a malloc'd copy of the
 * ETag its changeset response carried (for a settled batch: the ETag of
 * the entity found to hold our write), or NULL when there was none; on
 * failure NULL. */
int table_batch(struct table_client *tc, const char *table, const char *pk,
                const struct table_batch_op *ops, size_t n, struct az_status *st);

/* Parsers of service answers, exposed for the fuzz targets and tests. */

/* Parse a Query page BODY (LEN bytes) and hand its "value" array to FN.
 * Returns FN's answer, or -EIO with st->message set when the body is not
 * JSON or has no "value" array. */
int table_parse_page(const char *body, size_t len, table_page_fn fn, void *ctx,
                     struct az_status *st);

/* Find the first non-2xx "HTTP/1.1 NNN" status line in the NUL-terminated
 * $batch response BODY and fill ST from it (status, and code/message from
 * the JSON error after it). Returns 0 when every operation succeeded, -1
 * when one failed. */
int table_batch_outcome(const char *body, struct az_status *st);

/* The ETag header of the response to operation INDEX (counted from 0) of
 * the NUL-terminated $batch response BODY. Returns 0 with *etag a malloc'd
 * copy, or NULL when that response has no ETag (or there is no such
 * response); -ENOMEM. */
int table_batch_etag(const char *body, size_t index, char **etag);

/* OData filters the store asks for, malloc'd (NULL on ENOMEM); keys are
 * quoted here, so no caller writes OData:
 *   table_filter_partition(pk)       PartitionKey eq 'pk'
 *   table_filter_after(pk)           PartitionKey gt 'pk'
 *   table_filter_from_row(pk, rk)    PartitionKey eq 'pk' and RowKey ge 'rk' */
char *table_filter_partition(const char *pk);
char *table_filter_after(const char *pk);
char *table_filter_from_row(const char *pk, const char *rk);

/* The Timestamp an Azure ETag carries (W/"datetime'2026-11-22T08%3A26%3A34.91Z'")
 * copied into OUT (OUTLEN bytes), unescaped. Returns 0, or -EINVAL when ETAG
 * has another shape (Cosmos DB's ETags carry none) or OUT is too small. */
int table_etag_timestamp(const char *etag, char *out, size_t outlen);

/* Build the OData string literal for S ('...' with ' doubled) into a malloc'd
 * string, e.g. for filters: "PartitionKey eq " + literal. NULL on ENOMEM. */
char *table_odata_literal(const char *s);

/* Percent-encode S for a URL path segment or query value (everything but
 * A-Z a-z 0-9 - . _ ~). Returns malloc'd string or NULL. */
char *table_url_encode(const char *s);

#endif
