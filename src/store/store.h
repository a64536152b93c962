/* store.h - the public face of the store/ folder: its parts below, each
 * with its own contract. */
#ifndef AZTFS_STORE_STORE_H
#define AZTFS_STORE_STORE_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>
#include <sys/types.h>

#include "cache/cache.h"
#include "auth/auth.h"
#include "http/http.h"
#include "util/util.h"
#include "table/table.h"
#include "names/names.h"

/* ---- core.c: the store's state (struct store) and what both halves of
 * the store layer build on: a wire entity rendered into the cache, a path
 * dropped from it, one-entity probes, the log line of a failed request.
 *
 * The store layer (store/core.c, store/scan.c, store/store.c) knows tables, keys and
 * entities, and the paths the cache is keyed by. It knows nothing of FUSE
 * (the layer above gives it hooks: store_set_hooks) and sends nothing
 * itself: every request goes through table.h. */

/* One mount's view of the service: its client, its cache and the options
 * that shape what is asked and kept. */
struct writeback;

struct store_changes;

struct store {
    struct table_client *tc;             /* owned (store_open) */
    const struct store_changes *changes; /* how a change reaches the service: at once
                                          * or queued (store_i.h; set by store_open and
                                          * store_writeback_open) */
    struct writeback *wb;                /* owned by store/queued.c, the only module that reads
                                          * it: -o writeback's queue (NULL: none) */
    struct cache *cache;                 /* owned (store_open) */
    struct logger log;
    struct http_stats stats; /* the client's counters */
    int merge;               /* -o merge: writes to existing entities MERGE */
    char **tables;           /* -o tables=: the tables shown (NULL: all); borrowed */
    double cache_timeout;    /* seconds a listing or entity stays fresh */
    double negative_timeout; /* seconds an absence stays known (<= cache_timeout) */
    time_t mount_time;       /* the mtime of an entity without a Timestamp */
    int scan_ways;           /* -o scan_parallel: requests in flight of a listing */
    const char *spool_dir;   /* -o spool_dir: imports read ahead there (NULL: none) */
    /* Told of every path store_forget drops (the layer above drops its
     * own copies, the kernel's); NULL: nobody to tell. */
    void (*dropped)(void *ctx, const char *path);
    void *dropped_ctx;
    /* Is the request a thread serves interrupted, or the mount ending?
     * (store_set_hooks; NULL: never) */
    int (*cancelled)(void *ctx);
    void *cancel_ctx;
    const struct entity_limits *limits; /* saves' and imports' (store_open: the service's) */
};

/* Create S's cache (CACHE_BYTES, fresh for S->cache_timeout) and client
 * (ACCT and HC borrowed; S->log and S->stats used by it). Set the other
 * members first. Returns 0 or -ENOMEM; store_free cleans up either way. */
int store_open(struct store *s, const struct account *acct, const struct http_config *hc,
               size_t cache_bytes);
void store_free(struct store *s);

/* From now on reads stop when CANCELLED(CTX) says so (-EINTR; see
 * table_client_set_cancel), and DROPPED(CTX, PATH) hears of every path
 * store_forget drops. Call before concurrent use. */
void store_set_hooks(struct store *s, int (*cancelled)(void *ctx),
                     void (*dropped)(void *ctx, const char *path), void *ctx);

/* How an entity is shown: its file name (malloc'd), size and mtime. */
struct store_shown {
    char *name;
    size_t len;
    struct timespec mtime;
};

/* Render wire entity E and cache it in directory DIR (FLAGS: CACHE_LISTED
 * when it came with a listing or read-ahead, else 0). With SHOWN non-NULL,
 * *SHOWN describes the file (free SHOWN->name); with COPY non-NULL, *COPY
 * receives the rendered file too (release with cache_file_clear), even when
 * the cache does not keep it. Returns 0 or -errno (logged). */
int store_cache_entity(struct store *s, const char *dir, const json_t *e, unsigned flags,
                       struct store_shown *shown, struct cache_file *copy);

/* An entity rendered ahead, off FUSE's thread (store_render_page): all a
 * listing needs of it, without its JSON. */
struct store_rendered {
    char *text; /* its file text (NULL: it cannot be shown) */
    size_t len;
    int has_digest;
    unsigned char digest[CACHE_DIGEST_LEN];
    /* its system properties, in the page's KEYS or in OWN (NULL: absent) */
    const char *pk, *rk, *ts, *etag;
    char *own; /* rendered from text: the block they point into (free
                * it); else NULL */
    int rc;    /* no text: the rendering's -errno */
    char *why; /* and why, when said (NULL: strerror of RC) */
};

/* A listing page's entities rendered ahead: E[i] is the page's entity i. */
struct store_page_render {
    size_t n;
    char *keys; /* the strings the system properties of E's entities
                 * rendered from trees point into */
    struct store_rendered e[];
};

/* The table_prep (table/table.h) a split listing's workers apply to each page:
 * every entity of the page VALUE rendered, with its digest and system
 * properties, in a store_page_render (NULL on ENOMEM), which replaces the
 * page (its JSON is freed by the worker), and its free. Touch nothing but
 * their arguments: safe in several threads at once. */
void *store_render_page(const json_t *value);
void store_render_page_free(void *prepared);

/* A listing page's entity: E, or when E is NULL the entity PRE rendered
 * ahead (PRE may be NULL with E: rendered here; its text is taken), cached
 * in directory DIR (CACHE_LISTED) and added to listing L; *len (LEN may be
 * NULL) gets its file's size. Returns 0, 1 when it was left out (no keys,
 * or it cannot be shown: logged), or -errno (-ENOMEM, a listing too big). */
int store_list_entity(struct store *s, const char *dir, const json_t *e, struct listing *l,
                      size_t *len, struct store_rendered *pre);

/* A listing of directory DIR is about to be fetched from the service:
 * with write-behind, the queued changes in it are sent first (waiting for
 * them), so the listing holds them. */
void store_settle(struct store *s, const char *dir);

/* With write-behind, are changes in directory DIR queued (so it exists,
 * whatever the service says yet)? 1 or 0. */
int store_queued_in(struct store *s, const char *dir);

/* Drop what the cache holds at PATH (an entity or a listing) and tell the
 * layer above (s->dropped), so that the next stat or read asks again. */
void store_forget(struct store *s, const char *path);

/* Log the one line a failed operation gets: "OP PATH failed: WHY (HTTP
 * status, service code, attempts)". WHY NULL: strerror(-RC). Failures
 * that are answers (ENOENT, EEXIST for creates) are the caller's to skip. */
void store_log_failure(struct store *s, const char *op, const char *path, int rc,
                       const struct az_status *st, const char *why);

/* Does TABLE hold an entity matching FILTER (NULL: any)? One query for one
 * entity, asking only for SELECT. Returns 1, 0, or -errno (details in *st;
 * -ENOENT: no such table). */
int store_probe(struct store *s, const char *table, const char *filter, const char *select,
                struct az_status *st);

/* Does table NAME exist, and hold an entity? Asked with a one-entity query,
 * which a SAS scoped to the table allows. Returns 1 (it holds at least one
 * entity), 0 (it exists, empty), -ENOENT, or -errno (details in *st). */
int store_table_probe(struct store *s, const char *name, struct az_status *st);

/* ---- store/prefetch.c: partition listings fetched ahead of a walk (-o scan_parallel=N).
 *
 * When readdir hands out a table's partitions, the walk (find, grep -r,
 * rsync) enters them next in that order. The pool fetches their listings
 * into the cache before the walk gets there: a small fixed set of worker
 * threads owned by the mount (at most N fetches in flight, one request
 * each, beside the walker's own), jobs taken in the order they were added,
 * no two jobs for one directory (a second walker joins the one under way),
 * and no new job started while the listings fetched and not yet entered
 * hold a quarter of the cache (a fetch that alone grows past that stops
 * unless a walker waits for it, and the walker lists that partition
 * itself). A listing is put in the cache only
 * when complete; one that failed is simply not there, and the walker lists
 * it as it would without the pool. Part of the store layer: requests go
 * through store.h. */

struct prefetch;
/* The jobs added while one directory handle of a table is read. */
struct prefetch_walk;

/* A pool for store S (borrowed; it must outlive the pool) with N
 * workers, started when the first job is added. NULL when N <= 1, nothing
 * is cached (cache_timeout=0) or the cache is under 16 MiB: every function
 * below then does nothing (and the walk is today's, one fetch at a time). *err gets -ENOMEM on failure (else 0). */
struct prefetch *prefetch_new(struct store *s, int n, int *err);

/* Cancel every job, wait for the workers, free P (NULL: nothing). */
void prefetch_free(struct prefetch *p);

/* A new walk of TABLE in P (NULL when P is NULL or on ENOMEM: then
 * nothing is fetched ahead). */
struct prefetch_walk *prefetch_walk_new(struct prefetch *p, const char *table);

/* Fetch the listing of partition PK (PK_LEN bytes) of W's table, directory
 * DIR, ahead of W's walk, unless the cache holds it or a job for DIR
 * exists. Returns 0 or -ENOMEM (nothing queued: the walker lists it when it
 * gets there). W NULL: nothing. */
int prefetch_add(struct prefetch_walk *w, const char *pk, size_t pk_len, const char *dir);

/* The directory handle of W is closed. Unless its listing was read to the
 * end (COMPLETE: the walk goes on into the partitions), W's jobs are
 * cancelled: queued ones dropped, running ones stopped before their next
 * page. Frees W (NULL: nothing). */
void prefetch_walk_end(struct prefetch_walk *w, int complete);

/* A walker enters DIR: a job fetching it is waited for, a queued one is
 * run by the caller (other walkers entering DIR wait for it): either way
 * its listing is then in the cache, unless the fetch failed (the walker
 * then lists it itself). Nothing when P is NULL or no job names DIR. */
void prefetch_claim(struct prefetch *p, const char *dir);

/* ---- store/scan.c: listings fetched from the service: the account's tables, a
 * table's partitions and a partition's entities, each page cached as it
 * comes (with the entities themselves); a table too large for the cache is
 * skipped through; snapshots that readdir reads page by page; long-form
 * names resolved to their keys by listing; the root listing at mount.
 * Part of the store layer (store.h): no FUSE, requests through table.h. */

/* List the account's tables (or probe those of -o tables=) into the
 * cache: at mount time this is both the credentials check and the first
 * listing. Returns 0 or -errno, details in *st. */
int scan_list_root(struct store *s, struct az_status *st);

/* List partition FP->pk of FP->table (keys known) to its end into the
 * cache as directory DIR. Returns 0 or -errno (logged). */
int scan_list_partition(struct store *s, const struct fspath *fp, const char *dir);

/* Fetch partition PK of TABLE to its end into the cache as directory DIR,
 * one request in flight, for the prefetch pool (store.h): before each
 * page STOP(CTX, BYTES) is asked (BYTES: what the fetch has charged to the
 * cache so far); nonzero ends it with -EINTR. *BYTES gets what the whole
 * fetch charged, its last page included, whatever the outcome. The listing
 * is cached only when complete. Failures are logged at debug level only
 * (the walker's own fetch logs them). Returns 0 or -errno. */
int scan_fetch_partition(struct store *s, const char *table, const char *pk, const char *dir,
                         int (*stop)(void *ctx, size_t bytes), void *ctx, size_t *bytes);

/* Fill in FP->pk (and FP->rk for entities) when the names are long-form
 * (doc/NAMES.md), from the fresh listing of the directory, else by listing
 * it (which fills the cache). Returns 0, -ENOENT (not listed), or -errno. */
int scan_resolve_keys(struct store *s, struct fspath *fp);

/* A directory's remote names as they were when it was opened: the cached
 * listing, shared as it is, or a listing that grows page by page as it is
 * read (and is cached when complete). Not thread-safe: one reader at a
 * time. */
struct scan_view;

/* A view of directory DIR (FP parsed from it: FSP_ROOT, FSP_TABLE or
 * FSP_PARTITION). Nothing is sent unless a partition's long-form name has
 * to be resolved. Returns 0 with *out (free with scan_view_free), -ENOENT
 * (no such partition), or -errno. */
int scan_view_open(struct store *s, struct fspath *fp, const char *dir, struct scan_view **out);

/* A view with no names (a directory that exists only locally); NULL on
 * ENOMEM. */
struct scan_view *scan_view_empty(void);

/* Entry I of V (borrowed: valid while V is open), fetching pages until it
 * is in. Returns 0 with *e, 1 when the listing ended before I, or -errno
 * (logged; the page may be asked for again). */
int scan_view_get(struct scan_view *v, size_t i, struct listing_ent *e);

/* How many names V holds so far (all of them once scan_view_get said 1). */
size_t scan_view_count(const struct scan_view *v);

/* Index of NAME among V's names so far, or -1. */
long scan_view_find(const struct scan_view *v, const char *name);

void scan_view_free(struct scan_view *v);

/* ---- store/store.c: entities by key: loaded from the cache or the service (with
 * read-ahead), saved, deleted and renamed with their ETag guards, and what
 * the cached listings learn from each change or must drop after a conflict
 * (tables and partitions: store.h). Part of the store layer
 * (store.h): no FUSE, requests through table.h (and, to resolve a
 * long-form name by listing, store.h).
 *
 * Entities are addressed by their path (the cache's key) and FP, that path
 * parsed; FP's keys are filled in when a long-form name is resolved. Every
 * function returns 0 or -errno unless it says otherwise, and logs the
 * failures of its requests itself (one line each). */

/* --- reading ----------------------------------------------------------------- */

/* The entity at PATH: from the cache when fresh; else, when its partition's
 * fresh listing lacks it, -ENOENT; else (the listing is fresh, so a reader
 * is likely walking it) a read-ahead of it and the entities after it; else
 * a point query. 0 with *out filled (release with cache_file_clear). */
int store_load(struct store *s, struct fspath *fp, const char *path, struct cache_file *out);

/* store_load for an open: a copy older than the negative lifetime is read
 * again (its ETag is what a save will be guarded by), unless the open only
 * reads, the copy came with its partition's listing and a walk is going
 * through that listing (fetched or read within the negative lifetime): a
 * walk reads the snapshot it listed. -ENOENT: gone (logged as info). */
int store_load_current(struct store *s, struct fspath *fp, const char *path, struct cache_file *out,
                       int writing);

/* Note that a reader is going through directory PATH's listing now (a
 * walk of its table: store_load_current). */
void store_dir_read(struct store *s, const char *path);

/* store_load, with FP's keys resolved too (an entity served from the cache
 * under a long-form name carries none yet): what every change needs. */
int store_load_keyed(struct store *s, struct fspath *fp, const char *path, struct cache_file *out);

/* The entity at PATH if the cache holds it fresh (no request): 0 with
 * *out, or -ENOENT. */
int store_peek(struct store *s, const char *path, struct cache_file *out);

/* Size and mtime of the entity at PATH from the cache alone (no request):
 * 0 or -ENOENT. */
int store_cached_attr(struct store *s, const char *path, size_t *len, struct timespec *mtime);

/* Size and mtime of the entity at PATH: the cached file, else what its
 * partition's listing recorded, else store_load. */
int store_entity_attr(struct store *s, struct fspath *fp, const char *path, size_t *len,
                      struct timespec *mtime);

/* --- changing ---------------------------------------------------------------- */

/* How a save writes an entity. */
enum store_save_as {
    SAVE_INSERT,  /* a new entity: Insert (fails with EEXIST when it exists) */
    SAVE_UPDATE,  /* Replace, or Merge with -o merge, guarded by the ETag */
    SAVE_REPLACE, /* Replace guarded by the ETag, even with -o merge (a new
                   * file renamed onto an entity; a copy saved over one) */
};

/* What a save writes: TEXT (LEN bytes; 0: an entity without properties) as
 * the entity at PATH (FP: PATH parsed; a long-form name's keys are resolved
 * into it), AS says how, guarded by ETAG (the ETag the text was read at;
 * NULL for an insert). Everything borrowed. */
struct store_save {
    const char *path;
    struct fspath *fp;
    const char *text;
    size_t len;
    enum store_save_as as;
    const char *etag;
};

/* Save SV. Nothing is sent when the text is not a valid entity (-EINVAL,
 * -EFBIG), a long-form name's keys are neither listed nor in the text
 * (-EINVAL), or the entity already holds exactly this (0). On success the
 * saved entity is what the cache shows (store_peek) and *new_etag
 * (NEW_ETAG may be NULL) gets its ETag; after -ESTALE, -EEXIST or -ENOENT
 * the cache shows nothing of it, so the next read sees the entity as it
 * is. */
int store_save(struct store *s, const struct store_save *sv, char **new_etag);

/* Save TEXT as the entity at PATH whatever is there: Insert when there is
 * none, else a full Replace guarded by the ETag it has as the mount knows
 * it, read again first when the mount's copy is older than the negative
 * lifetime (store_load_current: the save of sed -i, rsync and atomic-save
 * editors is this rename). */
int store_save_over(struct store *s, struct fspath *fp, const char *path, const char *text,
                    size_t len);

/* Cut or zero-extend the text of the entity at PATH to SIZE bytes and save
 * it, guarded by the ETag it was read with. */
int store_truncate(struct store *s, struct fspath *fp, const char *path, size_t size);

/* Delete the entity at PATH, guarded by the ETag it was read with (-ESTALE:
 * changed since; -ENOENT: deleted by someone else). The cached listings
 * lose its name (and the table's the partition, when that was its last). */
int store_delete(struct store *s, struct fspath *fp, const char *path);

/* Rename entity FROM onto TO in the same partition: one entity group
 * transaction that writes TO (Insert, or Replace guarded by its ETag) and
 * deletes FROM with its ETag, so either both happen or neither (the
 * service fails the whole changeset on a stale ETag). On success
 * *from_etag gets the ETag FROM had and *to_etag the one the service gave
 * TO (each malloc'd, or NULL when there was none). -ESTALE: FROM or TO
 * changed since it was read, nothing changed. */
int store_rename(struct store *s, const char *from, struct fspath *ff, const char *to,
                 struct fspath *tf, char **from_etag, char **to_etag);

/* --- write-behind (-o writeback; store/queued.c) ------------------------------------ */

struct wb_config;

/* Open the journal of CFG, load what it holds and send it now, before the
 * mount serves (a crash's changes; those that fail stay reported).
 * Write-behind sends through its own client for ACCT with HC (ACCT
 * borrowed: it outlives the store). Returns 0 or -errno (logged). */
int store_writeback_open(struct store *s, const struct wb_config *cfg, const struct account *acct,
                         const struct http_config *hc);

/* An O_EXCL create of PATH (FP): with write-behind, decided by the service
 * now, so that across mounts one create wins: an empty entity inserted at
 * once (after the entity's queued delete, if any, is sent), which the
 * file's content then replaces (queued, guarded by *ETAG). Returns 0 with
 * *etag (malloc'd), -EEXIST (it exists, made here or elsewhere), -errno
 * (logged), or 1 when the create is decided at its close as usual
 * (synchronous mode: the close's insert fails with EEXIST for the loser;
 * a long-form name, whose keys are in its content). */
int store_create_exclusive(struct store *s, const char *path, struct fspath *fp, char **etag);

/* A new file's refused content: the empty entity its create made removed,
 * guarded by ETAG (store.c). 0, -ESTALE/-ENOENT (left), -errno. */
int store_uncreate(struct store *s, struct fspath *fp, const char *path, const char *etag);

/* Start sending in the background (after daemonizing). 0 or -errno. */
int store_writeback_start(struct store *s);

/* Stop write-behind (the mount has ended): what is queued is sent for at
 * most cfg.stop_seconds, one log line says what was sent and what is
 * left, the journal is closed. Returns the number of changes left in the
 * journal (unsent or failed); 0 in synchronous mode or when called again. */
size_t store_writeback_close(struct store *s);

/* fsync of PATH (an entity, a directory, "/"): the queued changes under it
 * sent, waiting for them. Returns 0, or -EIO when a change under PATH
 * failed and was not dealt with. Synchronous mode: 0. */
int store_sync(struct store *s, const char *path);

/* The root's user.aztfs.pending (at most about LIMIT bytes) in *OUT
 * (malloc'd): 0, -ENODATA when the mount is synchronous, or -ENOMEM. */
int store_pending_json(struct store *s, size_t limit, char **out);

/* What write-behind holds (user.aztfs.pending's numbers): changes queued,
 * being sent, failed and kept; journal stretches skipped as damaged. */
struct store_pending_counts {
    size_t queued, sending, failed, damaged;
};

/* The counts of S in *OUT (zeroed first): 0, or -ENODATA when the mount
 * is synchronous. Takes no allocation: the systemd status and the metrics
 * ask every few seconds. */
int store_pending_counts(struct store *s, struct store_pending_counts *out);

/* Drop the failed change of PATH ("*": all) from the journal: 0, -ENOENT
 * when there is none, or -ENOTSUP when the mount is synchronous. */
int store_discard(struct store *s, const char *path);

/* ---- store/tables.c: tables and partitions: whether they exist (from the
 * listings, the markers of what the mount learnt, else one query), and the
 * tables and partition directories the mount makes and removes. Part of the
 * store layer (store.h): no FUSE, requests through table.h.
 *
 * Every function returns 0 or -errno unless it says otherwise, and logs
 * the failures of its requests itself. */

/* Does table TABLE exist (and, with -o tables=, is it one of them)? The
 * cached root listing when it names it, or what the mount knows of the
 * table itself; else a query (a table not in the list may be new), whose
 * "no" is believed for the negative lifetime. 0, -ENOENT, or -errno. */
int store_table_exists(struct store *s, const char *table);

/* Does partition FP->pk of FP->table hold at least one entity? 1, 0 or
 * -errno. Known when a listing names it; known absent when the table's
 * listing is one the mount made, or the service said so within the
 * negative lifetime; else a one-entity query. FRESH: always ask. */
int store_partition_exists(struct store *s, struct fspath *fp, int fresh);

/* Does entity FP's partition (keys known) hold an entity other than FP?
 * One query for one entity (with write-behind, the partition's queued
 * changes sent first). 1, 0 or -errno (logged). */
int store_partition_other(struct store *s, const struct fspath *fp);

/* Create table TABLE (-EEXIST in any case; -EINVAL: a name the service
 * refuses). PATH names it in log lines. The mount then knows it is empty:
 * names looked up in it cost nothing until cache_timeout after the last
 * change the mount makes in it. */
int store_create_table(struct store *s, const char *path, const char *table);

/* The mount made partition directory FP (mkdir; it holds no entity): like
 * a table it made, names looked up in it cost nothing. Returns 0. */
int store_partition_made(struct store *s, const struct fspath *fp);

/* Delete table TABLE if it holds no entity (-ENOTEMPTY). */
int store_remove_table(struct store *s, const char *path, const char *table);

/* ---- move.c: moves across partitions and tables: whether the copy that
 * mv makes after EXDEV can save its target, refused before mv removes
 * anything when it cannot. Part of the store layer (store.h): no FUSE,
 * requests through table.h (and, to find keys by listing, store.h). */

/* A rename of entity FROM (FF) onto entity TO (TF) in another partition or
 * table is answered EXDEV, and mv then copies: it removes an entity at TO,
 * creates TO, writes FROM's text (UNSAVED: FROM is a new file not saved yet,
 * its text unknown here) and removes FROM. Would that copy's save find TO's
 * keys? A short name gives them (the text's are not read). A long-form name
 * (doc/NAMES.md) is found by listing (a RowKey never is, once mv removed its
 * entity or when there was none; a PartitionKey while the partition holds
 * another entity), else taken from the text, which carries FROM's keys.
 * 0: it would (answer EXDEV); -ENOTSUP, logged: it would fail, after mv
 * removed the target, so the rename is refused and nothing changes; -errno:
 * FROM cannot be read, a listing or query failed (logged). */
int store_move_check(struct store *s, const char *from, struct fspath *ff, const char *to,
                     struct fspath *tf, int unsaved);

/* ---- store/viewquery.c: query views: a table or a partition restricted to a user's
 * OData filter (/t/.where/FILTER/..., /t/pk/.where/FILTER/...), listed with
 * one paged, filtered query whose entities are cached under their normal
 * paths (a view and the table share the entity cache) and whose listings
 * are cached under the view's paths. A view's query is started by the
 * lookup of the view (which must fail when the service refuses the filter)
 * and streamed on by the readdir that follows: the pages in between wait
 * in the mount's table of views under way (struct view_pending). Read-only:
 * nothing here changes anything remote. Part of the store layer
 * (store.h): no FUSE, requests through table.h. */

/* The view queries a lookup started and no reader has taken over yet (at
 * most VIEW_PENDING_MAX; the oldest is dropped). Thread-safe. */
struct view_pending;
#define VIEW_PENDING_MAX 8

/* A new, empty table; NULL on ENOMEM. */
struct view_pending *view_pending_new(void);
/* Free VP and the queries waiting in it (NULL: nothing). */
void view_pending_free(struct view_pending *vp);

/* Does the ".where" directory FP (FSP_WHERE) stand: its table exists (and,
 * under a partition, the partition holds an entity)? Nothing is sent when
 * the mount knows. 0, -ENOENT, or -errno. */
int view_where_exists(struct store *s, struct fspath *fp);

/* Look up view directory DIR, parsed as FP (FSP_VIEW: the view, listing
 * partitions or, under a partition, entities; FSP_VIEW_PARTITION: a
 * partition of a table-level view). Known from a cached listing, else the
 * view's query is started: its first page (for a partition, up to its
 * first entity) is fetched and the query waits in VP for the reader.
 * Returns 0, -ENOENT (no such table; a partition the view does not hold),
 * -EINVAL (the filter is over the service's limits, nothing sent, or the
 * service refused it: one log line with its message), -EINTR, -errno
 * (logged). */
int view_lookup(struct store *s, struct view_pending *vp, struct fspath *fp, const char *dir);

/* The names of a view directory as a reader goes through them: the cached
 * listing, or a listing that grows page by page (cached when complete).
 * One reader at a time. */
struct view_reader;

/* A reader of view directory DIR (FP as for view_lookup): the cached
 * listing, the query its lookup left in VP, or a new query whose first page
 * is fetched here. Returns 0 with *out (free with view_reader_free), or as
 * view_lookup. */
int view_reader_open(struct store *s, struct view_pending *vp, struct fspath *fp, const char *dir,
                     struct view_reader **out);

/* Entry I of R (borrowed: valid while R is open), fetching pages until it
 * is in. Returns 0 with *e, 1 when the listing ended before I, or -errno
 * (logged). Does the reader list entity files (else partitions)? is in
 * view_reader_files. */
int view_reader_get(struct view_reader *r, size_t i, struct listing_ent *e);
int view_reader_files(const struct view_reader *r);
void view_reader_free(struct view_reader *r);

/* The entity FP (FSP_VIEW_ENTITY) outside the view: 0 with *nfp parsed
 * from *npath (malloc'd), keys filled in from the view's listing (its
 * directory read to its end when not cached); -ENOENT when the view does
 * not list it; else as view_lookup. Its partition is noted as being walked
 * (store_dir_read), so an open reads the copy the view's fresh listing
 * brought instead of asking again. */
int view_entity(struct store *s, struct view_pending *vp, struct fspath *fp, struct fspath *nfp,
                char **npath);

/* ---- store/core.c: what the service takes. */

/* Does WIRE (keys PK, RK; parsed from TEXT_LEN bytes) fit the limits of
 * the service behind the endpoint: entity_check_limits with s->limits (the
 * keys' characters and UTF-16 size, properties, names, values, the size as
 * the service counts it), then the profile's (table_entity_fits: empty
 * keys, keys' bytes, reserved names)? 0, or -EINVAL/-EFBIG with WHY
 * (WHYLEN bytes) saying which, or -ENOMEM. Nothing is sent (core.c). */
int store_entity_fits(struct store *s, const char *pk, const char *rk, const json_t *wire,
                      size_t text_len, char *why, size_t whylen);

#endif
