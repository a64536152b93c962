/* table.h - the public face of the table/ folder: its parts below, each
 * with its own contract. */
#ifndef AZTFS_TABLE_TABLE_H
#define AZTFS_TABLE_TABLE_H

#include <stddef.h>
#include <jansson.h>
#include <time.h>

#include "auth/auth.h"
#include "entity/entity.h"
#include "http/http.h"
#include "util/util.h"

/* ---- request.c, errors.c, odata.c: the Table service client and what
 * every request shares: request kinds (request.c), the status of an answer
 * and its errno (errors.c), OData literals and filters, URL encoding, the
 * Timestamp of an ETag (odata.c). table_i.h has the layer's inside. */

struct table_client;

/* Request kinds, counted in http_stats.by_kind. */
enum table_req_kind {
    TK_LIST_TABLES,
    TK_QUERY,
    TK_GET_ENTITY,
    TK_INSERT,
    TK_REPLACE,
    TK_MERGE,
    TK_DELETE,
    TK_BATCH,
    TK_CREATE_TABLE,
    TK_DELETE_TABLE,
    TK_COUNT
};

/* "list_tables", "query", ... for stats output; NULL past TK_COUNT. */
const char *table_kind_name(int kind);

/* The service error codes counted apart (http_stats.by_code): the index
 * of CODE ("UpdateConditionNotSatisfied"), the last index for any other;
 * and the name of index I ("other" for the last), NULL past HTTP_CODES. */
int table_code_index(const char *code);
const char *table_code_name(int i);

/* What the service said about a failed (or successful) operation. */
struct az_status {
    long http_status;  /* 0 when no response was received */
    char code[64];     /* service error code ("ResourceNotFound"), or "" */
    char message[256]; /* service message or transport error, secrets-free */
    int attempts;      /* attempts made by the last request */
    int throttled;     /* of them, throttled (503, 429) */
};

/* Create a client for ACCT (borrowed: must outlive the client), of the
 * service profile ACCT's host and Service setting pick (table_profile_pick).
 * LG and STATS are borrowed too. Returns 0, -ENOMEM, or -EINVAL for an
 * unknown Service. */
int table_client_new(struct table_client **out, const struct account *acct,
                     const struct http_config *hcfg, const struct logger *lg,
                     struct http_stats *stats);

/* The mount's learned write rates (http_targets) TC's writers in bulk
 * heed, NULL when none. A key is table_target_key's. */
struct http_targets *table_client_targets(const struct table_client *tc);

/* The targets' key of partition PK of TABLE into BUF (LEN bytes; a key
 * is cut at TARGET_KEY_MAX - 1 bytes). */
#define TARGET_KEY_MAX 1400
void table_target_key(char *buf, size_t len, const char *table, const char *pk);

/* Free TC and close its connections (NULL: nothing). */
void table_client_free(struct table_client *tc);

/* The bound on TC's background listing threads, every kind together (a
 * cursor's page fetcher, a split's fetchers, the prefetch pool's: struct
 * worker_budget, util/util.h): LIMIT places (TABLE_THREADS_DEFAULT until
 * set; -o fetch_threads). Call before concurrent use. One walk with the
 * defaults takes 17 (4 prefetchers, each job's pipeline 2, a split scan's
 * 4, a cursor's 1); an export at scan_parallel=64 takes 64. */
#define TABLE_THREADS_DEFAULT 128
#define TABLE_THREADS_DEFAULT_STR "128"
void table_client_set_threads(struct table_client *tc, int limit);

/* That budget, where a group of TC's threads takes its places (borrowed:
 * lives as long as TC). */
struct worker_budget *table_client_threads(struct table_client *tc);

/* From now on, reads ask CANCELLED(CTX) before each page and while they
 * wait or transfer (http_pool_set_cancel): nonzero ends them with -EINTR.
 * Writes always run to their end. Call before concurrent use. */
void table_client_set_cancel(struct table_client *tc, int (*cancelled)(void *ctx), void *ctx);

/* As table_client_set_cancel, but for every request, writes included
 * (http_pool_set_abort): for write-behind's own client, whose journal
 * settles a write cut short. Call before concurrent use. */
void table_client_set_abort(struct table_client *tc, int (*aborted)(void *ctx), void *ctx);

/* Does the service hand out query results in key order (PartitionKey,
 * then RowKey), as Azure Table storage does? Cosmos DB for Table does not
 * ("Query results returned by the Table API aren't sorted in partition
 * key/row key order", its FAQ). A new client says what its profile says
 * (table_profile_sorted); ORDERED 0 (-o unordered) makes
 * every layer above take the paths that assume no order: no key-range
 * splits, no skip-ahead, listings built whole. Call before concurrent
 * use. */
void table_client_set_ordered(struct table_client *tc, int ordered);

/* Does TC trust the service's order? Its profile's answer (Cosmos DB: no)
 * until table_client_set_ordered(0), or until a page was seen out of order
 * (table_client_disorder); 1 for no client (TC NULL: a store of the unit
 * tests). */
int table_client_ordered(const struct table_client *tc);

/* A reader saw a page of TC's service out of key order (WHAT names the
 * query, for the one log line): from now on table_client_ordered is 0. */
void table_client_disorder(struct table_client *tc, const char *what);

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

/* ---- table/profile.c: the service behind the endpoint, Azure Storage or
 * Cosmos DB for Table, and everything that differs between them: the one
 * place that looks at a host name. The layers above ask the profile
 * (table_client_profile) and never the host. */

enum table_service { TABLE_STORAGE, TABLE_COSMOS };

/* An entity group transaction holds at most TABLE_BATCH_OPS operations on
 * every service, and at most its profile's batch_max bytes of body:
 * TABLE_BATCH_BYTES on Azure Storage ("Performing entity group
 * transactions"), 2 MB on Cosmos DB. table_batch_room says what the
 * operations may add up to; nothing else states these limits. */
#define TABLE_BATCH_OPS 100
#define TABLE_BATCH_BYTES ((size_t)4 * 1024 * 1024)

/* What a service takes, checked before anything is sent. */
struct table_limits {
    size_t pk_max, rk_max;       /* bytes of a PartitionKey, a RowKey (0: only
                                     * the entity limits' UTF-16 count) */
    size_t entity_max;           /* bytes of an entity as sent (compact JSON;
                                     * 0: only the entity limits' count) */
    size_t batch_max;            /* bytes of an entity group transaction */
    int empty_keys;              /* an empty PartitionKey or RowKey is taken */
    const char *const *reserved; /* property names refused (any case),
                                     * NULL-terminated; NULL: none */
};

struct table_profile {
    enum table_service service;
    const char *name;     /* "storage", "cosmos" (-o service=) */
    int sorted;           /* query results come in PartitionKey,
                                   * RowKey order (Cosmos: in none) */
    int merge_tunneled;   /* Merge is sent as POST with
                                   * "X-HTTP-Method: MERGE" (Cosmos answers the
                                   * MERGE verb with 405), in $batch too */
    long throttle_status; /* the answer of a throttling service:
                                   * 503 ServerBusy, or Cosmos's 429 */
    int timestamp_filter; /* a $filter on Timestamp works (Cosmos
                                   * answers it with no entities) */
    const char *scope;    /* the Microsoft Entra ID token scope */
    struct table_limits limits;
    const struct entity_limits *entity; /* what entity_check_limits checks */
};

/* The profile of the endpoint on HOST (host[:port]): SERVICE ("storage",
 * "cosmos", any case: -o service= or the config's Service=) when given,
 * else Cosmos DB for *.table.cosmos.azure.com and *.table.cosmosdb.azure.com,
 * Azure Storage for any other host. Returns 0 with *OUT (static), or
 * -EINVAL for another SERVICE. */
int table_profile_pick(const char *host, const char *service, const struct table_profile **out);

/* The profile of TC's endpoint (picked at table_client_new). */
const struct table_profile *table_client_profile(const struct table_client *tc);

/* What the operations of one entity group transaction to TC's service
 * may add up to, as the caller weighs them: the service's batch_max (TC
 * NULL: TABLE_BATCH_BYTES) less HEADROOM (what the caller's weights leave
 * out: each operation's headers and URL, the growth from its text to the
 * wire). */
size_t table_batch_room(const struct table_client *tc, size_t headroom);

/* The limits entity_check_limits holds an entity to on P's service. */
const struct entity_limits *table_profile_entity_limits(const struct table_profile *p);

/* Does the service return query results in key order? 1 or 0. Nothing may
 * infer "no more keys before K" from a page when it does not. */
int table_profile_sorted(const struct table_profile *p);

/* Is an answer of STATUS (an HTTP status, or a $batch part's) the service
 * asking to slow down (its throttle_status; 429 and 503 on either)? */
int table_profile_throttled(const struct table_profile *p, long status);

/* Why P's service refuses table name NAME (a static string), or NULL. */
const char *table_name_problem(const struct table_profile *p, const char *name);

/* Does the entity WIRE (wire form; NULL: keys only) with keys PK and RK
 * (NULL: not checked) fit P's limits: keys not empty (Cosmos) and within
 * their bytes, no reserved property name, the entity as sent within
 * entity_max (TEXT_LEN: the length of the text it was parsed from, so that
 * only an entity near the bound is measured)? Returns 0, -EINVAL (a key,
 * a name) or -EFBIG (the size) with WHY (WHYLEN bytes) saying which, or
 * -ENOMEM. */
int table_entity_fits(const struct table_profile *p, const char *pk, const char *rk,
                      const json_t *wire, size_t text_len, char *why, size_t whylen);

/* Why FILTER (a user's $filter) would not work on P's service (a static
 * string: Cosmos answers a filter naming Timestamp with no entities), or
 * NULL. */
const char *table_filter_problem(const struct table_profile *p, const char *filter);

/* ---- table/batch.c: entity group transactions ($batch): the multipart request,
 * reading its answer, and settling one whose answer was lost. Part of the
 * table protocol layer (table.h includes it). */

/* One operation of an entity group transaction. */
struct table_batch_op {
    /* TB_UPSERT is Insert Or Replace: a PUT without If-Match */
    enum { TB_INSERT, TB_REPLACE, TB_MERGE, TB_DELETE, TB_UPSERT } kind;
    const char *rk;       /* all operations share one PartitionKey */
    const json_t *entity; /* TB_INSERT/TB_REPLACE/TB_MERGE/TB_UPSERT */
    const char *etag;     /* If-Match for TB_REPLACE/TB_MERGE/TB_DELETE, NULL = "*" */
    char **new_etag;      /* writes, may be NULL: receives the
                           * written entity's new ETag (see table_batch) */
};

/* Run OPS (at most 100, one partition PK of TABLE) atomically with $batch.
 * Returns 0 when every operation succeeded; else -errno of the failing one
 * (st->message names its index), and nothing was applied; -EINVAL for no
 * or more than 100 operations. A 409/412 is settled like a single write's:
 * only after a send that may have been applied, and then when every entity
 * holds the batch's result (written within the window of our sends,
 * deleted ones gone), that is success. A batch whose answer was lost is
 * settled the same way before it is sent again - unless every operation
 * is TB_UPSERT: that one is sent again as it is (writing the same
 * entities twice leaves what writing them once does).
 * On success each non-NULL new_etag of a write gets a malloc'd copy of the
 * ETag its changeset response carried (for a settled batch: the ETag of
 * the entity found to hold our write), or NULL when there was none; on
 * failure NULL. */
int table_batch(struct table_client *tc, const char *table, const char *pk,
                const struct table_batch_op *ops, size_t n, struct az_status *st);

/* table_batch for a batch that was handed to the network before, at
 * FIRST_SENT (wall clock), and whose answer never came (a crash, a lost
 * answer): a 409/412 is then settled by the entities as for a resend, the
 * window of our sends starting at FIRST_SENT less 1 s. FIRST_SENT NULL:
 * table_batch. */
int table_batch_again(struct table_client *tc, const char *table, const char *pk,
                      const struct table_batch_op *ops, size_t n, const struct timespec *first_sent,
                      struct az_status *st);

/* The 0-based index of the operation a failed batch's error names (the
 * service begins the message with "INDEX:"), or -1 when it names none. */
int table_batch_failed_index(const struct az_status *st);

/* Parsers of $batch answers, exposed for the fuzz targets and tests. */

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

/* ---- table/cursor.c: Query Entities and Query Tables read page by page: the paging
 * cursor (continuation tokens, the empty-page bound, the background fetch
 * of the next page), the whole-query loops built on it, and the page
 * parser. Part of the table protocol layer (table.h includes it). */

/* A query ends with -EIO when the service answers this many pages in a row
 * without an entity but with a continuation (a server can do that for a
 * selective filter; one that never stops would keep a listing going
 * forever). A query view lifts the bound: table_pager_unbounded. */
#define TABLE_MAX_EMPTY_PAGES 100

/* Entities in a full page of Query Entities (the service's maximum). */
#define TABLE_PAGE_MAX 1000

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
int table_query(struct table_client *tc, const char *table, const char *filter, const char *select,
                int top, table_page_fn fn, void *ctx, struct az_status *st);

/* A query read one page at a time (what table_query and table_list_tables
 * loop over), for callers that stream: readdir hands out each page's names
 * before asking for the next. A pager reads its query as one range, page
 * after page (table/cursor.c), or, once split, as key ranges in parallel
 * (table/split.c); table/pager.c picks. */
struct table_pager;

/* Start a query of TABLE's entities (FILTER, SELECT, TOP as for
 * table_query), or of the account's tables when TABLE is NULL. Nothing is
 * sent yet. Returns 0 with *out (free with table_pager_free) or -ENOMEM. */
int table_pager_new(struct table_pager **out, const char *table, const char *filter,
                    const char *select, int top);

/* Fetch the next page and hand its "value" array to FN. Returns 1 when more
 * pages follow, 0 when the query is complete (or FN returned 1), or -errno
 * with details in *st (the pager is unchanged: the same page may be asked
 * for again). A continuation that does not advance is -EIO, and so are
 * TABLE_MAX_EMPTY_PAGES pages in a row without an entity; -EINTR when the
 * client's cancel callback (table_client_set_cancel) says so. */
int table_pager_next(struct table_client *tc, struct table_pager *p, table_page_fn fn, void *ctx,
                     struct az_status *st);

/* ON: from the next table_pager_next on, fetch each next page in the
 * background while the caller's FN works on the current one (a listing's
 * pages are parsed and cached while the service prepares the next). At most
 * one page is in flight; one a caller never asks for is waited for and
 * dropped by table_pager_free, so a caller that may stop turns it off.
 * (A split pager's workers fetch ahead anyway.) */
void table_pager_prefetch(struct table_pager *p, int on);

/* P's filter keeps it in partition PK: its pages are paced by that
 * partition's target as well as the account's (table_cursor_partition).
 * Call before its first page. Returns 0 or -ENOMEM. */
int table_pager_partition(struct table_pager *p, const char *pk);

/* Work on each page of a split query done by the worker that fetched it,
 * off the caller's thread (the pager's caller is FUSE's thread, which a walk
 * waits for): PREP(VALUE) returns what FN may use while it works on that
 * page, through table_pager_page_prep() (NULL: nothing, FN does it all),
 * freed with FREE after FN returns or when the page is dropped. With
 * REPLACES, what PREP returns holds all FN needs of the page: the worker
 * frees the page's JSON there and then, and FN is called with VALUE NULL
 * (when PREP returned NULL, FN gets the page as usual). PREP runs in
 * several threads at once and must touch nothing but VALUE (read only) and
 * what it returns. */
struct table_prep {
    void *(*prep)(const json_t *value);
    void (*free)(void *prepared);
    int replaces;
    int text; /* PREP reads entities handed as texts (table_pager_text):
               * the pager it splits reads its pages so (FN may get them
               * so too, when PREP made nothing) */
};

/* From its first page on, read P (a query of entities) as disjoint key
 * ranges with up to WAYS requests in flight (table/split.c): each page that
 * comes back with more to come has the rest of its range cut into ranges
 * at keys guessed from it (PartitionKeys, and RowKeys within a partition;
 * only RowKeys when ONE_PARTITION), while fewer than 2 * WAYS are open. Pages
 * still reach FN in the service's order; each range costs at most one
 * request more than the sequential scan, and at most 64 ranges are made
 * (none after 16 came back empty). Up to WAYS + 2 pages are held ahead of
 * the caller. A failed range is fetched again, alone, when the caller asks
 * again. PREP (may be NULL) is applied to each page by the workers.
 * WAYS <= 1, or pages already read: nothing changes. Returns 0 or -ENOMEM. */
int table_pager_split(struct table_pager *p, int ways, int one_partition,
                      const struct table_prep *prep);

/* The workers of a pipelined pager (table_pager_pipeline). */
#define TABLE_PIPELINE_WAYS 2

/* From its first page on, read P (a query of entities) as one range, one
 * request in flight as without this call, with PREP applied to each page
 * by TABLE_PIPELINE_WAYS workers ahead of the caller (the split's
 * machinery, cutting nothing: table/split.c): while the caller's FN works
 * on a page, the next is fetched and the one after it may be prepped, so
 * a long listing's work is spread over the cores without a request more.
 * Up to TABLE_PIPELINE_WAYS + 2 pages are held ahead of the caller (a
 * caller that stops early has paid for them). PREP NULL, or pages already
 * read: nothing changes. Returns 0 or -ENOMEM. */
int table_pager_pipeline(struct table_pager *p, const struct table_prep *prep);

/* During a page callback of split pager P: what its PREP made of the page
 * (FN may take parts of it: it is freed with PREP's FREE after FN returns).
 * NULL when P is not split, PREP made nothing, or there is no PREP. */
void *table_pager_page_prep(const struct table_pager *p);

/* From now on P keeps going through pages without an entity however many
 * come in a row, as long as their continuation advances (a selective
 * filter over a big table: the service sends such pages while it looks);
 * cancellation still ends it between pages. */
void table_pager_unbounded(struct table_pager *p);

/* From its first page on (call before table_pager_split), P hands each
 * entity of a page's "value" array as its JSON text, unread: a JSON string
 * of the object's bytes as the service wrote them. Reading a page so costs
 * a scan of its tokens and one copy, against a tree of every value (a
 * reader that renders text from text: the export). A page of another
 * shape than the service's, or with an entity that is not a flat object,
 * is handed as trees, as without this call: FN reads both (its keys
 * through table_entity_key). */
void table_pager_text(struct table_pager *p);

/* The PartitionKey or RowKey (WHICH) of entity E of a page, a tree or a
 * text (table_pager_text), decoded: a new string (caller frees), or NULL
 * when it has none that is a string, or no memory. */
char *table_entity_key(const json_t *e, enum entity_sys which);

/* Has the query been read to its end? */
int table_pager_done(const struct table_pager *p);

/* Free P (NULL: nothing), waiting for a page it is fetching and stopping
 * its split's workers. */
void table_pager_free(struct table_pager *p);

/* Parse a Query page BODY (LEN bytes) and hand its "value" array to FN.
 * Returns FN's answer, or -EIO with st->message set when the body is not
 * JSON or has no "value" array. (Exposed for the fuzz targets.) */
int table_parse_page(const char *body, size_t len, table_page_fn fn, void *ctx,
                     struct az_status *st);

/* ---- odata.c: an OData $filter written by a user (a query view's name):
 * the service's limits checked before anything is sent, and the filter
 * restricted to one partition. Part of the table protocol layer (table.h
 * includes it): the one place above the wire that composes a user's OData. */

/* The Table service permits no more than 15 discrete comparisons in a
 * $filter ("Querying tables and entities", Supported query options). */
#define USERFILTER_MAX_COMPARISONS 15
/* The longest $filter, URL-encoded, that aztfs sends: well inside the
 * URL lengths HTTP servers take (8 KiB and more), with room for the path
 * and the continuation tokens. */
#define USERFILTER_MAX_ENCODED 4096

/* The comparisons (eq, ne, gt, ge, lt, le) in FILTER outside its string
 * literals ('...', with '' for a quote). */
int userfilter_comparisons(const char *filter);

/* Bytes FILTER takes once percent-encoded (everything but A-Z a-z 0-9 - .
 * _ ~ is three bytes, as table_url_encode writes it). */
size_t userfilter_encoded_len(const char *filter);

/* The $filter of a view: FILTER as it is, or with PK non-NULL
 * "PartitionKey eq 'PK' and (FILTER)". 0 with *out malloc'd; -EINVAL with
 * *why (a static string) when the result exceeds the service's
 * comparisons or aztfs's encoded length (nothing is to be sent); -ENOMEM. */
int userfilter_build(const char *pk, const char *filter, char **out, const char **why);

/* userfilter_build for TC's service: also -EINVAL with *why when FILTER
 * would not work there (table_filter_problem: a filter on Timestamp on
 * Cosmos DB, which answers it with no entities). */
int userfilter_build_for(const struct table_client *tc, const char *pk, const char *filter,
                         char **out, const char **why);

/* ---- crud.c: the table protocol layer, the one header its users include:
 * Table service operations on entities and tables (table/crud.c), and, through
 * the declarations below, the client, status and OData helpers
 * (table/request.c), paged queries (table/cursor.c) and entity group
 * transactions (table/batch.c). */

/* Point query. On success *entity is a new reference (the wire object, with
 * "odata.etag"), and *etag (if ETAG non-NULL) a malloc'd copy of the ETag.
 * Returns 0, -ENOENT when no such entity, -EINVAL when PK or RK is NULL, or
 * -errno with details in *st. */
int table_get_entity(struct table_client *tc, const char *table, const char *pk, const char *rk,
                     json_t **entity, char **etag, struct az_status *st);

/* How an entity write is guarded. */
enum table_write {
    TW_INSERT,  /* POST: fails with EEXIST when the entity exists */
    TW_REPLACE, /* PUT with If-Match: ETAG (ESTALE when it moved on) */
    TW_MERGE,   /* MERGE with If-Match: ETAG */
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
int table_write_entity(struct table_client *tc, const char *table, const char *pk, const char *rk,
                       const json_t *entity, enum table_write how, const char *etag,
                       char **new_etag, struct az_status *st);

/* Delete with If-Match: ETAG ("*" for any). Returns 0, -ENOENT when the
 * service says the entity is not there (someone else deleted it; but 0 when
 * an earlier send of ours may have been applied: then the delete was ours),
 * -ESTALE, -EIO (a 404 without the service's not-found code, 5xx, no
 * response), -errno. */
int table_delete_entity(struct table_client *tc, const char *table, const char *pk, const char *rk,
                        const char *etag, struct az_status *st);

/* Create table NAME. Returns 0, -EEXIST when it exists (any case; but 0
 * when our own earlier send created it), or -errno with details in *st. */
int table_create(struct table_client *tc, const char *name, struct az_status *st);

/* Delete table NAME. Returns 0 (also when it is already gone), or -errno
 * with details in *st. */
int table_delete(struct table_client *tc, const char *name, struct az_status *st);

#endif
