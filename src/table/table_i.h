/* table_i.h - the private face of the table/ folder: its parts below, each
 * with its own contract. */
#ifndef AZTFS_TABLE_TABLE_I_H
#define AZTFS_TABLE_TABLE_I_H

#include <stdatomic.h>
#include <stddef.h>
#include <jansson.h>

#include "http/http.h"
#include "table/table.h"

/* ---- table/pageread.c: a Query Entities page read into jansson values without
 * jansson's lexer, for the one shape the service sends. */

/* The JSON text BODY (LEN bytes) as json_loadb(BODY, LEN, 0, JERR) reads
 * it: its value (new reference), or NULL with JERR saying why. A page of
 * the shape the service sends (an object of scalar members and a "value"
 * array of flat objects) is split into its tokens here, and each value is
 * made by jansson itself (json_stringn, json_integer, json_loadb of the
 * token): names and strings without escapes, numbers of up to 18 integer
 * digits and literals here, the other tokens by jansson's parser. Anything
 * else, and any token this reading does not take (an escape in a name,
 * bytes that are not UTF-8, a malformed number, trailing text, nesting),
 * makes it read the whole text with json_loadb instead: the result is
 * json_loadb's in every case. */
json_t *page_read(const char *body, size_t len, json_error_t *jerr);

/* BODY as page_read reads it, but each entity of the page's "value" array
 * as its JSON text, unread: a JSON string (table_pager_text). Only the
 * tokens of the entities are checked (their values are the reader's:
 * entity_render_line_text). A page that is not of the service's shape, or
 * an entity that is not a flat object with plain member names, makes it
 * page_read's tree (entities as objects; one that is a string made null,
 * never to be taken for a text), or page_read's failure. */
json_t *page_read_text(const char *body, size_t len, json_error_t *jerr);

/* ---- inside the table protocol layer: what table/request.c, table/cursor.c, table/split.c,
 * table/batch.c and table/crud.c share and no other module uses (they use table.h).
 * Sending a signed request, the Table headers each response is searched
 * for, the one error parser, wire addresses and bodies of entities, and
 * the check that settles a write whose answer was lost. */

struct account;
struct az_status;
struct logger;

struct table_client {
    const struct account *acct;
    const struct logger *lg;
    struct http_stats *stats; /* borrowed: the service codes are counted here */
    struct http_pool *pool;
    const struct table_profile *profile; /* the service's (table/profile.c) */
    int (*cancelled)(void *ctx);         /* see table_client_set_cancel */
    void *cancel_ctx;
    atomic_int unordered;         /* see table_client_ordered: set once, read by any
                           * thread (a split's workers, the scans) */
    struct worker_budget threads; /* table_client_threads */
};

#define TABLE_ACCEPT_JSON "application/json;odata=minimalmetadata"

/* The Table protocol's response headers, captured from every answer
 * (http_request.capture): http_response.captured[TCAP_...]. */
enum table_capture {
    TCAP_ERROR_CODE, /* x-ms-error-code */
    TCAP_NEXT_PK,    /* x-ms-continuation-NextPartitionKey */
    TCAP_NEXT_RK,    /* x-ms-continuation-NextRowKey */
    TCAP_NEXT_TABLE, /* x-ms-continuation-NextTableName */
    TCAP_COUNT
};

/* Their names, NULL-terminated, for http_request.capture and
 * http_header_line (also what the fuzz target feeds header lines to). */
extern const char *const table_capture[TCAP_COUNT + 1];

/* One request: PATH is the encoded path after the endpoint's base path
 * ("/Tables", "/t()"), QUERY the encoded query without '?' (or NULL);
 * EXTRA more "Name: value" header lines (NULL-terminated, may be NULL);
 * WHAT names it in logs. A write that may be settled gives SETTLE (see
 * http_request.settle), else NULL. */
struct table_req {
    int kind; /* enum table_req_kind */
    const char *method, *path, *query;
    const char *content_type; /* NULL: none */
    const char *body;
    size_t body_len;
    const char *const *extra;
    const char *what;
    int (*settle)(void *ctx, const struct http_response *resp);
    void *settle_ctx;
    long (*status_of)(void *ctx, const struct http_response *resp); /* with
                                   * SETTLE_CTX: see http_request.status_of */
    const char *target; /* see http_request.target (table_target_key) */
    unsigned target_n;
    int (*rate_limited)(void *ctx, const struct http_response *resp); /* with
                                   * SETTLE_CTX: see http_request.rate_limited */
};

/* Sign and send RQ (table/request.c). On return 0 an HTTP response is in *RESP
 * (any status; ST filled from it: status, attempts, and for an answer of
 * 300 or more the service's error code and message). Returns -errno when
 * no response could be had (st->message says why). RESP is the caller's to
 * clear (http_response_clear) either way. */
int table_send(struct table_client *tc, const struct table_req *rq, struct http_response *resp,
               struct az_status *st);

/* Note a failed operation WHAT (debug level: the filesystem layer logs the
 * one line users see, with the path) and return its -errno
 * (az_status_errno). */
int table_fail(struct table_client *tc, const char *what, const struct az_status *st);

/* Where an error text stands (table_error_parse). */
enum table_error_src {
    TE_BODY,       /* a whole response body: odata.error JSON, else the
                       XML error (<Code>, <Message>) */
    TE_BATCH_PART, /* a $batch part, from its odata.error JSON on: text
                       after the JSON value is allowed, no XML */
};

/* The one parser of the service's error answers: fill st->code and
 * st->message (first line) from TEXT (NUL-terminated), leaving each as it
 * was when TEXT does not carry it. */
void table_error_parse(const char *text, enum table_error_src src, struct az_status *st);

/* Does an answer of STATUS with details ST refuse its request for the
 * service's rate, and which (an enum http_refusal)? A 429 (Cosmos DB), or
 * a 503 whose code is ServerBusy: the code Azure Storage gives for "The
 * server is busy" and for "Operations per second is over the account
 * limit." (or "Ingress"/"Egress ... over the account limit."), the
 * account's (Common REST API error codes). A 503 with another code, or
 * none, is the service failing, not its rate. */
int table_refusal(long status, const struct az_status *st);

/* table_refusal of the answer RESP (an http_request.rate_limited hook;
 * CTX unused). */
int table_rate_limited(void *ctx, const struct http_response *resp);

/* "/TABLE(PartitionKey='PK',RowKey='RK')" with the keys quoted and
 * percent-encoded: malloc'd, NULL when PK or RK is NULL or on ENOMEM. */
char *table_entity_path(const char *table, const char *pk, const char *rk);

/* ENTITY (wire form; NULL: no properties) with PartitionKey PK and RowKey
 * RK added, as the compact ASCII JSON body of a write: malloc'd, or NULL
 * on ENOMEM. */
char *table_entity_body(const json_t *entity, const char *pk, const char *rk);

/* What settling a single-entity write needs (table/crud.c): the entity and how
 * it was written; ETAG receives the stored entity's ETag when the write
 * is found applied (the caller frees it). */
struct write_probe {
    struct table_client *tc;
    const char *what, *table, *pk, *rk;
    const json_t *entity; /* NULL: a delete */
    int merged;           /* a Merge: ENTITY over the stored properties */
    char *etag;
    const struct timespec *since; /* not NULL: the window of our sends starts here
                                   * (else it is worked out from the answer) */
};

/* Does CUR (a stored wire entity) hold exactly ENTITY's properties (and
 * types), or with MERGED, ENTITY's properties over whatever else it has,
 * written at or after SINCE? Returns 1, 0 or -ENOMEM. */
int table_entity_holds(const json_t *cur, const json_t *entity, int merged,
                       const struct timespec *since);

/* An http_request.settle hook (CTX a struct write_probe): was the write
 * applied by a send that RESP answers, or an earlier one? A written entity
 * must hold exactly what was sent with a Timestamp inside the window of
 * our sends (http_send_window); a deleted one must be gone. Returns 1
 * (ctx->etag set for writes), 0, or -errno when it cannot tell. */
int table_write_applied(void *ctx, const struct http_response *resp);

/* --- one range read page by page (table/cursor.c, for table/pager.c and
 * table/split.c) --------------------------------------------------------- */

/* A query read as one range, page after page: continuation, the empty-page
 * bound, the background fetch of the next page. */
struct table_cursor;

/* Start a query of TABLE's entities (FILTER, SELECT, TOP as for
 * table_query), or of the account's tables when TABLE is NULL. Nothing is
 * sent yet. Returns 0 with *out (free with table_cursor_free) or -ENOMEM. */
int table_cursor_new(struct table_cursor **out, const char *table, const char *filter,
                     const char *select, int top);

/* Fetch the next page of C and hand its "value" array to FN, as
 * table_pager_next does: 1 when more pages follow, 0 when the query is
 * complete (or FN returned 1), or -errno with details in *st (the cursor is
 * unchanged: the same page may be asked for again). A continuation that does not advance is -EIO, and so are
 * TABLE_MAX_EMPTY_PAGES pages in a row without an entity; -EINTR when the
 * client's cancel callback (table_client_set_cancel) says so. */
int table_cursor_next(struct table_client *tc, struct table_cursor *c, table_page_fn fn, void *ctx,
                      struct az_status *st);

/* ON: from the next table_cursor_next on, fetch each next page in the
 * background while the caller's FN works on the current one (a listing's
 * pages are parsed and cached while the service prepares the next). At most
 * one page is in flight; one a caller never asks for is waited for and
 * dropped by table_cursor_free, so a caller that may stop turns it off. */
void table_cursor_prefetch(struct table_cursor *c, int on);

/* From now on C keeps going through pages without an entity however many
 * come in a row, as long as their continuation advances (a selective
 * filter over a big table: the service sends such pages while it looks);
 * cancellation still ends it between pages. */
void table_cursor_unbounded(struct table_cursor *c);

/* From the next page on, C hands each entity as its text (page_read_text;
 * see table_pager_text). A query of tables: nothing changes. */
void table_cursor_text(struct table_cursor *c);

/* C's filter keeps it in partition PK: its pages (and those of the
 * cursors narrowed from it) wait for that partition's turn as well as the
 * account's, and a refusal for the partition's rate holds the partition
 * off (http_targets_admit). Returns 0 or -ENOMEM. */
int table_cursor_partition(struct table_cursor *c, const char *pk);

/* Has the query been read to its end? */
int table_cursor_done(const struct table_cursor *c);

/* Free C (NULL: nothing), waiting for a page it is fetching. */
void table_cursor_free(struct table_cursor *c);

/* Is C a query of entities from which nothing has been read yet (one that
 * may still be split)? */
int table_cursor_fresh(const struct table_cursor *c);

/* --- a query split into key ranges (table/split.c, for table/pager.c) ---------------- */

struct table_cursor;
struct table_prep;
struct table_split;

/* "FIELD OP 'VALUE'" (VALUE quoted), followed by " and REST" unless REST is
 * NULL: malloc'd, NULL on ENOMEM (table/odata.c; what table_filter_partition
 * and its kin are made of). */
char *table_filter_cmp(const char *field, const char *op, const char *value, const char *rest);

/* Requests in flight at most (scan_parallel's maximum), ranges one query
 * is cut into at most, empty ranges after which it is cut no more, and
 * pages held for the reader beyond one per way. */
#define SPLIT_MAX_WAYS 64
#define SPLIT_MAX_RANGES 64
#define SPLIT_MAX_EMPTY 16
#define SPLIT_HELD_EXTRA 2
/* Ranges open at most per way: more than the workers, so that a worker
 * finds one queued while a range that may be cut again is out. */
#define SPLIT_OPEN_PER_WAY 2

/* Up to MAX keys, in increasing order, after LAST (the last key of a page
 * whose first was FIRST) and before HI (NULL: no bound), where the keys to
 * come are guessed to lie a page apart: keys that end in a number step by
 * the numbers a page spanned (r00999 after r00000: r02000, r03000, ...;
 * the cut after LAST leaves the next page's numbers before it); others by
 * the characters the page spanned at the first place FIRST and LAST differ
 * (printable ASCII only). Each is malloc'd into CUTS. Returns how many (0:
 * no guess), or -ENOMEM. */
int table_split_cuts(const char *first, const char *last, const char *hi, char **cuts, int max);

/* Are the entities of page VALUE (trees or texts) in strictly increasing
 * key order (PartitionKey, then RowKey, bytewise)? Entities without both
 * keys are passed over. 1 or 0. What a split checks before it cuts at
 * keys guessed from a page (a page out of order: the service's order
 * cannot be trusted, table_client_disorder). */
int table_page_in_order(const json_t *value);

/* A cursor for C's query (its path, filter, $select, $top) with EXTRA
 * and'ed to its filter (NULL: none), from its first page, without
 * background fetch or split; its entities handed as C's are (trees or
 * texts). Returns 0 with *OUT or -ENOMEM. */
int table_cursor_narrow(const struct table_cursor *c, const char *extra, struct table_cursor **out);

/* C's NextPartitionKey token, where its next page starts (borrowed; NULL:
 * none, or before the first page). Opaque to the protocol: a hint only. */
const char *table_cursor_next_pk(const struct table_cursor *c);

/* Does NextPartitionKey token TOK (NULL: none) seem to name partition PK?
 * The emulator sends the key in base64, Azure "1!N!" and the key in base64
 * with '-' for '='. Only a guess (tokens are opaque): 1 or 0. */
int table_token_names(const char *tok, const char *pk);

/* What a split cuts its query into (table_split_new). */
enum split_cuts {
    SPLIT_CUT_KEYS, /* PartitionKeys, and RowKeys within a partition */
    SPLIT_CUT_ROWS, /* RowKeys only: the query is one partition's */
    SPLIT_CUT_NONE  /* nothing: one range, one request in flight, and the
                     * PREP of its pages done by the workers ahead of the
                     * reader (table_pager_pipeline) */
};

/* The split of cursor C (borrowed: it must outlive the split) with up to
 * WAYS workers (as many requests in flight, with CUTS other than
 * SPLIT_CUT_NONE); CUTS: what its query is cut into; PREP (copied; may be
 * NULL): the workers' work on each page (table/cursor.c). Nothing is sent yet.
 * Returns 0 with *OUT or -ENOMEM. */
int table_split_new(struct table_split **out, const struct table_cursor *c, int ways,
                    enum split_cuts cuts, const struct table_prep *prep);

/* What PREP made of the page table_split_next is handing to its FN (NULL:
 * none, or no page being handed). */
void *table_split_page_prep(const struct table_split *sp);

/* The next page in key order, as table_pager_next (1: more follow, 0:
 * complete or FN stopped it, -errno: a range failed; asked again, it is
 * fetched again). */
int table_split_next(struct table_client *tc, struct table_split *sp,
                     int (*fn)(void *ctx, json_t *value), void *ctx, struct az_status *st);

/* Stop SP's workers (each finishes the request it has out), free it. */
void table_split_free(struct table_split *sp);

#endif
