/* cursor.h - Query Entities and Query Tables read page by page: the paging
 * cursor (continuation tokens, the empty-page bound, the background fetch
 * of the next page), the whole-query loops built on it, and the page
 * parser. Part of the table protocol layer (table.h includes it). */
#ifndef AZTFS_CURSOR_H
#define AZTFS_CURSOR_H

#include <stddef.h>
#include <jansson.h>

#include "tablereq.h"

/* A query ends with -EIO when the service answers this many pages in a row
 * without an entity but with a continuation (a server can do that for a
 * selective filter; one that never stops would keep a listing going
 * forever). A query view lifts the bound: table_cursor_unbounded. */
#define TABLE_MAX_EMPTY_PAGES 100

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
 * for again). A continuation that does not advance is -EIO, and so are
 * TABLE_MAX_EMPTY_PAGES pages in a row without an entity; -EINTR when the
 * client's cancel callback (table_client_set_cancel) says so. */
int table_cursor_next(struct table_client *tc, struct table_cursor *c, table_page_fn fn,
                      void *ctx, struct az_status *st);

/* ON: from the next table_cursor_next on, fetch each next page in the
 * background while the caller's FN works on the current one (a listing's
 * pages are parsed and cached while the service prepares the next). At most
 * one page is in flight; one a caller never asks for is waited for and
 * dropped by table_cursor_free, so a caller that may stop turns it off. */
void table_cursor_prefetch(struct table_cursor *c, int on);

/* Work on each page of a split query done by the worker that fetched it,
 * off the caller's thread (cursor.h's caller is FUSE's thread, which a walk
 * waits for): PREP(VALUE) returns what FN may use while it works on that
 * page, through table_cursor_page_prep() (NULL: nothing, FN does it all),
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
};

/* From its first page on, read C (a query of entities) as disjoint key
 * ranges with up to WAYS requests in flight (splitcur.c): each page that
 * comes back with more to come has the rest of its range cut into ranges
 * at keys guessed from it (PartitionKeys, and RowKeys within a partition;
 * only RowKeys when ONE_PARTITION), while fewer than 2 * WAYS are open. Pages
 * still reach FN in the service's order; each range costs at most one
 * request more than the sequential scan, and at most 64 ranges are made
 * (none after 16 came back empty). Up to WAYS + 2 pages are held ahead of
 * the caller. A failed range is fetched again, alone, when the caller asks
 * again. PREP (may be NULL) is applied to each page by the workers.
 * WAYS <= 1, or pages already read: nothing changes. Returns 0 or -ENOMEM. */
int table_cursor_split(struct table_cursor *c, int ways, int one_partition,
                       const struct table_prep *prep);

/* During a page callback of split cursor C: what its PREP made of the page
 * (FN may take parts of it: it is freed with PREP's FREE after FN returns).
 * NULL when C is not split, PREP made nothing, or there is no PREP. */
void *table_cursor_page_prep(const struct table_cursor *c);

/* From now on C keeps going through pages without an entity however many
 * come in a row, as long as their continuation advances (a selective
 * filter over a big table: the service sends such pages while it looks);
 * cancellation still ends it between pages. */
void table_cursor_unbounded(struct table_cursor *c);

/* Has the query been read to its end? */
int table_cursor_done(const struct table_cursor *c);

/* Free C (NULL: nothing), waiting for a page it is fetching. */
void table_cursor_free(struct table_cursor *c);

/* Parse a Query page BODY (LEN bytes) and hand its "value" array to FN.
 * Returns FN's answer, or -EIO with st->message set when the body is not
 * JSON or has no "value" array. (Exposed for the fuzz targets.) */
int table_parse_page(const char *body, size_t len, table_page_fn fn, void *ctx,
                     struct az_status *st);

#endif
