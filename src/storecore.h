/* storecore.h - the store's state (struct store) and what both halves of
 * the store layer build on: a wire entity rendered into the cache, a path
 * dropped from it, one-entity probes, the log line of a failed request.
 *
 * The store layer (storecore.c, scan.c, store.c) knows tables, keys and
 * entities, and the paths the cache is keyed by. It knows nothing of FUSE
 * (the layer above gives it hooks: store_set_hooks) and sends nothing
 * itself: every request goes through table.h. */
#ifndef AZTFS_STORECORE_H
#define AZTFS_STORECORE_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>

#include "cache.h"
#include "connstr.h"
#include "http.h"
#include "log.h"
#include "table.h"

/* One mount's view of the service: its client, its cache and the options
 * that shape what is asked and kept. */
struct writeback;

struct store {
    struct table_client *tc;     /* owned (store_open) */
    struct writeback *wb;        /* owned: -o writeback's queue (NULL: synchronous) */
    struct cache *cache;         /* owned (store_open) */
    struct logger log;
    struct http_stats stats;     /* the client's counters */
    int merge;                   /* -o merge: writes to existing entities MERGE */
    char **tables;               /* -o tables=: the tables shown (NULL: all); borrowed */
    double cache_timeout;        /* seconds a listing or entity stays fresh */
    double negative_timeout;     /* seconds an absence stays known (<= cache_timeout) */
    time_t mount_time;           /* the mtime of an entity without a Timestamp */
    int scan_ways;               /* -o scan_parallel: requests in flight of a listing */
    /* Told of every path store_forget drops (the layer above drops its
     * own copies, the kernel's); NULL: nobody to tell. */
    void (*dropped)(void *ctx, const char *path);
    void *dropped_ctx;
    /* Is the request a thread serves interrupted, or the mount ending?
     * (store_set_hooks; NULL: never) */
    int (*cancelled)(void *ctx);
    void *cancel_ctx;
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
    char *text;                 /* its file text (NULL: it cannot be shown) */
    size_t len;
    int has_digest;
    unsigned char digest[CACHE_DIGEST_LEN];
    /* its system properties, in the page's KEYS (NULL: absent) */
    const char *pk, *rk, *ts, *etag;
    int rc;                     /* no text: the rendering's -errno */
    char *why;                  /* and why, when said (NULL: strerror of RC) */
};

/* A listing page's entities rendered ahead: E[i] is the page's entity i. */
struct store_page_render {
    size_t n;
    char *keys;                 /* the strings E's system properties point into */
    struct store_rendered e[];
};

/* The table_prep (cursor.h) a split listing's workers apply to each page:
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

#endif
