/* wb_util.h - helpers of the write-behind queue's unit tests (test_queue.c,
 * test_send.c): a struct writeback over a journal in a scratch directory
 * and an account at http://127.0.0.1:1 that no request ever reaches (no
 * wb_start, no wb_drain; wb_close's stop bound is 0 s, so it sends
 * nothing), changes written short, the queue looked at from the inside,
 * and batches taken and settled the way writeback/send.c does. */
#ifndef AZTFS_TEST_WB_UTIL_H
#define AZTFS_TEST_WB_UTIL_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "auth/auth.h"
#include "writeback/writeback.h"
#include "writeback/writeback_i.h"
#include "tap.h"

/* Room for a batch in the tests' arrays (more than TABLE_BATCH_OPS). */
#define WBT_CAP 128

/* One write-behind queue under test, and what its hooks heard. */
struct wbt {
    char dir[40]; /* the journal's directory (mkdtemp, 0700) */
    struct account acct;
    struct logger lg;
    struct writeback *wb;
    int n_applied, n_failed; /* hook calls */
    char failed_path[128];   /* the path of the last hooks.failed */
};

static inline void wbt_hook_applied(void *ctx, const char *path, const json_t *entity, int exact,
                                    const char *etag)
{
    (void)path;
    (void)entity;
    (void)exact;
    (void)etag;
    ((struct wbt *)ctx)->n_applied++;
}

static inline void wbt_hook_failed(void *ctx, const char *path)
{
    struct wbt *t = ctx;

    t->n_failed++;
    snprintf(t->failed_path, sizeof(t->failed_path), "%s", path);
}

/* A writer never waits in these tests: a full queue answers -EINTR. */
static inline int wbt_hook_cancelled(void *ctx)
{
    (void)ctx;
    return 1;
}

/* Open T's queue over the journal in T->dir (made when empty). 0 or -errno. */
static inline int wbt_open(struct wbt *t)
{
    struct http_config hc = { .connect_timeout_ms = 200,
                              .request_timeout_ms = 500,
                              .max_retries = -1 };
    struct wb_config cfg = { t->dir, "wb.journal", 3600.0, (size_t)1 << 30, 1, 0.0, 0 };
    struct wb_hooks hooks = { wbt_hook_applied, wbt_hook_failed, wbt_hook_cancelled, t };

    return wb_open(&cfg, &t->acct, &hc, &t->lg, NULL, &hooks, &t->wb);
}

/* A fresh scratch directory, an account whose table endpoint is ENDPOINT
 * ("http://127.0.0.1:PORT") and an open queue in T. Exits when that cannot
 * be had (nothing else can be tested). */
static inline void wbt_start_at(struct wbt *t, const char *endpoint)
{
    char err[200], cs[512];
    int rc;

    memset(t, 0, sizeof(*t));
    t->lg.level = LOG_LVL_QUIET;
    snprintf(t->dir, sizeof(t->dir), "/tmp/aztfs-test-wb-XXXXXX");
    snprintf(cs, sizeof(cs),
             "DefaultEndpointsProtocol=http;AccountName=" DEVSTORE_ACCOUNT
             ";AccountKey=" DEVSTORE_KEY ";TableEndpoint=%s/" DEVSTORE_ACCOUNT,
             endpoint);
    if (!mkdtemp(t->dir) || connstr_parse(cs, &t->acct, err, sizeof(err)) < 0 ||
        (rc = wbt_open(t)) < 0) {
        printf("Bail out! cannot open a write-behind queue in %s\n", t->dir);
        exit(1);
    }
}

/* wbt_start_at an endpoint nothing listens on: nothing is ever sent. */
static inline void wbt_start(struct wbt *t)
{
    wbt_start_at(t, "http://127.0.0.1:1");
}

/* Close T's queue (nothing is sent: the stop bound is 0 s) and return
 * wb_close's count of changes left in the journal. */
static inline size_t wbt_close(struct wbt *t)
{
    size_t left = wb_close(t->wb);

    t->wb = NULL;
    return left;
}

/* Close T's queue, remove its directory, free its account. */
static inline void wbt_finish(struct wbt *t)
{
    if (t->wb)
        (void)wbt_close(t);
    ok(tap_rmtree(t->dir), "scratch directory %s removed", t->dir);
    account_free(&t->acct);
}

/* A change of PATH ("/table/pk/rk") made of text: X->c points into X. */
struct wbt_ch {
    char table[32], pk[64], rk[64];
    json_t *e;
    struct wb_change c;
};

/* Make X the change KIND of PATH with the entity JSON (NULL: none) made
 * against IF_MATCH (borrowed, may be NULL). */
static inline void wbt_ch_make(struct wbt_ch *x, const char *path, enum wb_kind kind,
                               const char *json, const char *if_match)
{
    memset(x, 0, sizeof(*x));
    if (sscanf(path, "/%31[^/]/%63[^/]/%63s", x->table, x->pk, x->rk) != 3) {
        printf("Bail out! bad test path %s\n", path);
        exit(1);
    }
    x->e = json ? json_loads(json, 0, NULL) : NULL;
    x->c = (struct wb_change){ path, x->table, x->pk, x->rk, kind, x->e, if_match };
}

/* wb_submit of one change; *TOKEN (TOKEN may be NULL) gets its token. */
static inline int wbt_put(struct wbt *t, const char *path, enum wb_kind kind, const char *json,
                          const char *if_match, char **token)
{
    struct wbt_ch x;
    char *tok = NULL;
    int rc;

    wbt_ch_make(&x, path, kind, json, if_match);
    rc = wb_submit(t->wb, &x.c, 1, &tok);
    json_decref(x.e);
    if (token)
        *token = tok;
    else
        free(tok);
    return rc;
}

/* wb_submit of a rename: TO written with JSON (an insert when TO_IF is
 * NULL, else a replace against it), FROM deleted against FROM_IF. TOKENS
 * get the two tokens. */
static inline int wbt_rename(struct wbt *t, const char *to, const char *json, const char *to_if,
                             const char *from, const char *from_if, char *tokens[2])
{
    struct wbt_ch x[2];
    struct wb_change c[2];
    int rc;

    wbt_ch_make(&x[0], to, to_if ? WB_REPLACE : WB_INSERT, json, to_if);
    wbt_ch_make(&x[1], from, WB_DELETE, NULL, from_if);
    c[0] = x[0].c;
    c[1] = x[1].c;
    rc = wb_submit(t->wb, c, 2, tokens);
    json_decref(x[0].e);
    return rc;
}

/* The latest queued or sending change of PATH, or NULL. */
static inline struct wb_op *wbt_last(struct wbt *t, const char *path)
{
    struct wb_ent *e;

    pthread_mutex_lock(&t->wb->mu);
    e = wb_ent_get(t->wb, path, 0);
    pthread_mutex_unlock(&t->wb->mu);
    return e ? e->last : NULL;
}

/* What PATH's latest change holds, or shows when there is none: its
 * entity (NULL), its kind's name ("none"), its If-Match (NULL), its
 * weight (0). */
static inline const json_t *wbt_entity(struct wbt *t, const char *path)
{
    struct wb_op *op = wbt_last(t, path);

    return op ? op->entity : NULL;
}

static inline const char *wbt_kind(struct wbt *t, const char *path)
{
    struct wb_op *op = wbt_last(t, path);

    return op ? wb_kind_name(op->kind) : "none";
}

static inline const char *wbt_if(struct wbt *t, const char *path)
{
    struct wb_op *op = wbt_last(t, path);

    return op ? op->if_match : NULL;
}

static inline size_t wbt_bytes(struct wbt *t, const char *path)
{
    struct wb_op *op = wbt_last(t, path);

    return op ? op->bytes : 0;
}

/* OP's token as a static string (one at a time). */
static inline const char *wbt_token(const struct wb_op *op)
{
    static char tok[64];

    wb_op_token(op, tok);
    return tok;
}

/* Does the JSON text WANT equal J (NULL: J must be NULL)? */
static inline int wbt_json_is(const json_t *j, const char *want)
{
    json_t *w = want ? json_loads(want, 0, NULL) : NULL;
    int same = want ? w && j && json_equal((json_t *)j, w) : j == NULL;

    json_decref(w);
    return same;
}

/* wb_take_batch with the lock held, as the senders call it. */
static inline size_t wbt_take(struct wbt *t, int force, struct wb_op **ops)
{
    struct timespec until;
    size_t n;

    pthread_mutex_lock(&t->wb->mu);
    n = wb_take_batch(t->wb, force, ops, &until);
    pthread_mutex_unlock(&t->wb->mu);
    return n;
}

/* The batch OPS (N, being sent) applied with ETAG, settled as
 * writeback/send.c's batch_applied does (without its journal record). */
static inline void wbt_applied(struct wbt *t, struct wb_op **ops, size_t n, const char *etag)
{
    struct wb_call *calls = NULL;

    pthread_mutex_lock(&t->wb->mu);
    ops[0]->part->sending = 0;
    for (size_t i = 0; i < n; i++)
        wb_op_applied(t->wb, ops[i], etag, &calls);
    pthread_mutex_unlock(&t->wb->mu);
    wb_calls_run(t->wb, calls);
}

/* The batch OPS (N, being sent) put back at the head of its partition's
 * queue, as writeback/send.c's batch_later does (without the backoff). */
static inline void wbt_put_back(struct wbt *t, struct wb_op **ops, size_t n)
{
    pthread_mutex_lock(&t->wb->mu);
    for (size_t i = n; i-- > 0;) {
        ops[i]->state = WS_QUEUED;
        wb_part_push_front(ops[i]);
    }
    t->wb->n_sending -= n;
    t->wb->n_queued += n;
    ops[0]->part->sending = 0;
    pthread_mutex_unlock(&t->wb->mu);
}

#endif
