/* tablereq.h - the Table service client and what every request shares:
 * request kinds, the status of an answer and its errno, OData literals and
 * filters, URL encoding, the Timestamp of an ETag. Part of the table
 * protocol layer (table.h includes it; tableint.h has the layer's inside). */
#ifndef AZTFS_TABLEREQ_H
#define AZTFS_TABLEREQ_H

#include <stddef.h>

#include <jansson.h>

#include "connstr.h"
#include "entity.h"
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

/* Free TC and close its connections (NULL: nothing). */
void table_client_free(struct table_client *tc);

/* From now on, reads ask CANCELLED(CTX) before each page and while they
 * wait or transfer (http_pool_set_cancel): nonzero ends them with -EINTR.
 * Writes always run to their end. Call before concurrent use. */
void table_client_set_cancel(struct table_client *tc, int (*cancelled)(void *ctx), void *ctx);

/* As table_client_set_cancel, but for every request, writes included
 * (http_pool_set_abort): for write-behind's own client, whose journal
 * settles a write cut short. Call before concurrent use. */
void table_client_set_abort(struct table_client *tc, int (*aborted)(void *ctx), void *ctx);

/* Map a service answer to an errno, in one place:
 * 404 ResourceNotFound/TableNotFound/EntityNotFound -> ENOENT (other 404s
 * -> EIO), 409 -> EEXIST, 412 -> ESTALE, 403/401 -> EACCES, 400 -> EINVAL,
 * 413 -> EFBIG, 408/429/5xx/no response -> EIO. Returns a positive errno
 * (the one exception to -errno returns: it is a mapping, not an outcome). */
int az_status_errno(const struct az_status *st);

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
 * has another shape (Cosmos DB's ETags carry none) or OUT is too small,
 * -ENOMEM. */
int table_etag_timestamp(const char *etag, char *out, size_t outlen);

/* The $select expression that asks only for system member WHICH (ENTITY_PK
 * or ENTITY_RK) of each entity: a static string. */
const char *table_select_key(enum entity_sys which);

/* The name of table T, one element of a Query Tables page (borrowed from
 * T); NULL when T has none. */
const char *table_page_table_name(const json_t *t);

/* Build the OData string literal for S ('...' with ' doubled) into a malloc'd
 * string, e.g. for filters: "PartitionKey eq " + literal. NULL on ENOMEM. */
char *table_odata_literal(const char *s);

/* Percent-encode S for a URL path segment or query value (everything but
 * A-Z a-z 0-9 - . _ ~). Returns malloc'd string or NULL. */
char *table_url_encode(const char *s);

#endif
