/* writeback/life.c - write-behind's life: opening the journal (what a crash
 * left in it is writeback/replay.c's to read back) and sending it before the mount
 * serves, the sending threads, closing; and what the mount
 * asks of it: flushes, the pending report, discarding a failed change
 * (writeback.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writeback/writeback_i.h"
#include "writeback/writeback.h"

#define ENT_BUCKETS 65536
#define PART_BUCKETS 4096
#define DONE_BUCKETS 16384

/* Free everything WB holds in memory. */
static void wb_free(struct writeback *wb)
{
    for (size_t b = 0; wb->parts && b < wb->n_part_buckets; b++)
        while (wb->parts[b]) {
            struct wb_part *p = wb->parts[b];

            wb->parts[b] = p->hnext;
            while (p->head) {
                struct wb_op *op = p->head;

                p->head = op->next;
                wb_op_free(op);
            }
            free(p->dir);
            free(p->table);
            free(p->pk);
            free(p);
        }
    while (wb->failed_head) {
        struct wb_op *f = wb->failed_head;

        wb->failed_head = f->next;
        wb_op_free(f);
    }
    for (size_t b = 0; wb->ents && b < wb->n_ent_buckets; b++)
        while (wb->ents[b]) {
            struct wb_ent *e = wb->ents[b];

            wb->ents[b] = e->hnext;
            free(e->path);
            free(e);
        }
    for (size_t b = 0; wb->dones && b < wb->n_done_buckets; b++)
        while (wb->dones[b]) {
            struct wb_done *d = wb->dones[b];

            wb->dones[b] = d->hnext;
            free(d->token);
            free(d->etag);
            free(d);
        }
    free(wb->parts);
    free(wb->ents);
    free(wb->dones);
    journal_close(wb->j);
    table_client_free(wb->tc);
    pthread_mutex_destroy(&wb->mu);
    pthread_cond_destroy(&wb->work_cv);
    pthread_cond_destroy(&wb->done_cv);
    free(wb);
}

/* Bound the queue by the journal's disk: a quarter of what it may use, so
 * that a compaction (a new file of what is live, beside the old one) has
 * room. */
static void fit_queue(struct writeback *wb)
{
    size_t fit = (size_t)(journal_room(wb->j) / 4);

    if (fit < WB_QUEUE_MIN)
        fit = WB_QUEUE_MIN;
    if (fit < wb->cfg.max_bytes) {
        log_info(wb->lg,
                 "journal %s: the queue is bounded at %.1f MiB instead of %.1f MiB: "
                 "its disk has room for %.1f MiB",
                 journal_path(wb->j), fit / 1048576.0, wb->cfg.max_bytes / 1048576.0,
                 journal_room(wb->j) / 1048576.0);
        wb->cfg.max_bytes = fit;
    }
}

/* The monotonic clock in milliseconds. */
static long long now_ms(void)
{
    struct timespec t = wb_now();

    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Write-behind's client's abort hook: the stop deadline has passed, so
 * every request still out ends (its send was journalled first: the next
 * mount settles it). Asked from the sending threads, without the lock. */
static int wb_aborted(void *ctx)
{
    struct writeback *wb = ctx;
    long long at = atomic_load(&wb->stop_ms);

    return at != 0 && now_ms() >= at;
}

/* See writeback.h. */
int wb_open(const struct wb_config *cfg, const struct account *acct, const struct http_config *hc,
            struct logger *lg, struct http_stats *stats, const struct wb_hooks *hooks,
            struct writeback **out)
{
    struct writeback *wb = calloc(1, sizeof(*wb));
    pthread_condattr_t ca;
    int rc;

    *out = NULL;
    if (!wb)
        return -ENOMEM;
    lock_init(&wb->mu);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&wb->work_cv, &ca);
    pthread_cond_init(&wb->done_cv, &ca);
    pthread_condattr_destroy(&ca);
    wb->cfg = *cfg;
    wb->lg = lg;
    atomic_init(&wb->stop_ms, 0);
    wb->hooks = *hooks;
    wb->n_ent_buckets = ENT_BUCKETS;
    wb->n_part_buckets = PART_BUCKETS;
    wb->n_done_buckets = DONE_BUCKETS;
    wb->ents = calloc(ENT_BUCKETS, sizeof(*wb->ents));
    wb->parts = calloc(PART_BUCKETS, sizeof(*wb->parts));
    wb->dones = calloc(DONE_BUCKETS, sizeof(*wb->dones));
    if (!wb->ents || !wb->parts || !wb->dones ||
        (rc = table_client_new(&wb->tc, acct, hc, lg, stats)) < 0) {
        rc = -ENOMEM;
        goto out_err;
    }
    table_client_set_abort(wb->tc, wb_aborted, wb);
    if ((rc = journal_open(cfg->dir, cfg->name, cfg->allow_shared_dir, lg, &wb->j)) < 0 ||
        (rc = wb_replay(wb)) < 0)
        goto out_err;
    pthread_mutex_lock(&wb->mu);
    rc = wb_compact(wb); /* what is live, before anything is appended */
    pthread_mutex_unlock(&wb->mu);
    if (rc < 0)
        goto out_err;
    fit_queue(wb);
    *out = wb;
    return 0;
out_err:
    wb_free(wb);
    return rc;
}

/* See writeback.h. */
int wb_drain(struct writeback *wb)
{
    struct wb_op *ops[TABLE_BATCH_OPS];
    struct timespec until;
    int rc;

    pthread_mutex_lock(&wb->mu);
    for (;;) {
        size_t n = wb_take_batch(wb, 1, ops, &until);

        if (n == 0)
            break;
        pthread_mutex_unlock(&wb->mu);
        wb_send_batch(wb, ops, n);
        pthread_mutex_lock(&wb->mu);
    }
    rc = wb->n_failed ? -EIO : 0;
    pthread_mutex_unlock(&wb->mu);
    return rc;
}

/* See writeback.h. */
int wb_start(struct writeback *wb)
{
    int n = wb->cfg.senders > 0 ? wb->cfg.senders : 1;

    pthread_mutex_lock(&wb->mu);
    wb->n_threads = workers_start(&wb->senders, "aztfs-send", n, wb_sender, wb);
    pthread_mutex_unlock(&wb->mu);
    return wb->n_threads > 0 ? 0 : -EAGAIN;
}

/* Log the failed changes WB keeps (lock held): the first few by name. */
static void log_failed(struct writeback *wb)
{
    size_t n = 0;

    LOCK_HELD(&wb->mu);
    for (struct wb_op *f = wb->failed_head; f && n < 10; f = f->next, n++)
        log_error(wb->lg, "%s: the queued %s failed (%s%s%s); it stays in the journal %s", f->path,
                  wb_kind_name(f->kind), strerror(f->err), f->why ? ": " : "", f->why ? f->why : "",
                  journal_path(wb->j));
    if (wb->n_failed > n)
        log_error(wb->lg,
                  "... and %zu more failed changes (user.aztfs.pending at the next "
                  "mount lists them)",
                  wb->n_failed - n);
}

/* Begin the stop (lock held): every partition due now, the deadline set,
 * the senders and any waiting writer woken. */
static void stop_begin(struct writeback *wb)
{
    LOCK_HELD(&wb->mu);
    wb->stopping = 1;
    atomic_store(&wb->stop_ms, now_ms() + (long long)(wb->cfg.stop_seconds * 1000));
    for (size_t b = 0; b < wb->n_part_buckets; b++)
        for (struct wb_part *p = wb->parts[b]; p; p = p->hnext) {
            p->backoff = 0;
            p->not_before = (struct timespec){ 0, 0 };
        }
    pthread_cond_broadcast(&wb->work_cv);
    pthread_cond_broadcast(&wb->done_cv);
}

/* See writeback.h. */
size_t wb_close(struct writeback *wb)
{
    long long t0 = now_ms();
    size_t applied0, todo, left;

    if (!wb)
        return 0;
    pthread_mutex_lock(&wb->mu);
    applied0 = wb->n_applied;
    todo = wb->n_queued + wb->n_sending;
    if (todo)
        log_info(wb->lg, "stopping: %zu queued change%s to send (for at most %g s)", todo,
                 todo == 1 ? "" : "s", wb->cfg.stop_seconds);
    stop_begin(wb);
    pthread_mutex_unlock(&wb->mu);
    workers_join(&wb->senders);
    if (wb->n_threads == 0)
        (void)wb_drain(wb);
    pthread_mutex_lock(&wb->mu);
    log_failed(wb);
    left = wb->n_queued + wb->n_failed;
    if (left == 0)
        log_info(wb->lg,
                 "write-behind stopped: every change sent (%zu since the stop, in "
                 "%.1f s); the journal is empty",
                 wb->n_applied - applied0, (now_ms() - t0) / 1000.0);
    else
        log_error(wb->lg,
                  "write-behind stopped after %.1f s: %zu change%s sent since the "
                  "stop; %zu unsent and %zu failed stay in the journal %s (sent, or "
                  "reported, at the next mount with it)",
                  (now_ms() - t0) / 1000.0, wb->n_applied - applied0,
                  wb->n_applied - applied0 == 1 ? "" : "s", wb->n_queued, wb->n_failed,
                  journal_path(wb->j));
    wb_compact(wb);
    pthread_mutex_unlock(&wb->mu);
    wb_free(wb);
    return left;
}

/* Is PATH under SCOPE ("/" holds everything; a directory its tree; an
 * entity's path itself)? */
static int under(const char *path, const char *scope)
{
    size_t n = strlen(scope);

    if (strcmp(scope, "/") == 0)
        return 1;
    return strncmp(path, scope, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Does partition P concern SCOPE (in its tree, or holding the entity)? */
static int part_in(const struct wb_part *p, const char *scope)
{
    return under(p->dir, scope) || under(scope, p->dir);
}

/* Is anything under SCOPE still to be sent? With WAITING, a partition
 * whose last send failed for a transient reason (the service unreachable:
 * retried later, with backoff) does not count: a flush does not wait for
 * it. Lock held. */
static int scope_busy(struct writeback *wb, const char *scope, int waiting)
{
    LOCK_HELD(&wb->mu);
    for (size_t b = 0; b < wb->n_part_buckets; b++)
        for (struct wb_part *p = wb->parts[b]; p; p = p->hnext)
            if (part_in(p, scope) &&
                (p->sending || (p->head && !p->gave_up && !(waiting && p->backoff))))
                return 1;
    return 0;
}

/* See writeback.h. */
int wb_queued(struct writeback *wb, const char *scope)
{
    int busy;

    pthread_mutex_lock(&wb->mu);
    busy = scope_busy(wb, scope, 0);
    pthread_mutex_unlock(&wb->mu);
    return busy;
}

/* See writeback.h. */
int wb_flush(struct writeback *wb, const char *scope, int wait)
{
    int rc = 0;

    pthread_mutex_lock(&wb->mu);
    for (size_t b = 0; b < wb->n_part_buckets; b++)
        for (struct wb_part *p = wb->parts[b]; p; p = p->hnext)
            if (p->head && part_in(p, scope)) {
                p->flush = 1; /* now, even in a backoff: the caller waits */
                p->backoff = 0;
                p->not_before = (struct timespec){ 0, 0 };
            }
    pthread_cond_broadcast(&wb->work_cv);
    while (wait && rc == 0 && wb->n_threads > 0 && scope_busy(wb, scope, 1))
        rc = wb_wait_sent(wb);
    for (struct wb_op *f = wb->failed_head; f && rc == 0; f = f->next)
        if (under(f->path, scope))
            rc = -EIO;
    /* not sent: the service could not be reached (still queued, retried) */
    if (wait && rc == 0 && scope_busy(wb, scope, 0))
        rc = -EIO;
    pthread_mutex_unlock(&wb->mu);
    log_debug(wb->lg, "flush of %s: %s", scope, rc < 0 ? strerror(-rc) : "sent");
    return rc;
}

/* See writeback.h. */
void wb_counts(struct writeback *wb, struct wb_counts *out)
{
    pthread_mutex_lock(&wb->mu);
    out->queued = wb->n_queued;
    out->sending = wb->n_sending;
    out->failed = wb->n_failed;
    out->damaged = wb->n_damaged;
    pthread_mutex_unlock(&wb->mu);
}

/* See writeback.h. */
char *wb_pending_json(struct writeback *wb, size_t limit)
{
    json_t *o, *fails = json_array();
    size_t used = 0;
    char *out = NULL;

    pthread_mutex_lock(&wb->mu);
    o = json_pack("{s:I, s:I, s:I, s:I, s:s}", "queued", (json_int_t)wb->n_queued, "sending",
                  (json_int_t)wb->n_sending, "failed", (json_int_t)wb->n_failed, "damaged",
                  (json_int_t)wb->n_damaged, "journal", wb->j ? journal_path(wb->j) : "");
    for (struct wb_op *f = wb->failed_head; o && fails && f; f = f->next) {
        const char *name = strerrorname_np(f->err);
        json_t *x = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s?}", "path", f->path, "op",
                              wb_kind_name(f->kind), "errno", f->err, "error", name ? name : "?",
                              "message", strerror(f->err), "why", f->why);

        used += strlen(f->path) + (f->why ? strlen(f->why) : 0) + 80;
        if (x && used > limit)
            json_decref(x); /* past the limit: counted above, not listed */
        if (!x || used > limit || json_array_append_new(fails, x) < 0)
            break;
    }
    pthread_mutex_unlock(&wb->mu);
    if (o && fails && json_object_set(o, "failures", fails) == 0)
        out = json_dumps(o, JSON_COMPACT);
    json_decref(fails);
    json_decref(o);
    return out;
}

/* See writeback.h. */
int wb_discard(struct writeback *wb, const char *path, const char *why)
{
    struct wb_call *calls = NULL;
    struct wb_op *f, *next;
    int rc = -ENOENT;

    pthread_mutex_lock(&wb->mu);
    for (f = wb->failed_head; f; f = next) {
        struct wb_ent *e;

        next = f->next;
        if (strcmp(path, "*") != 0 && strcmp(path, f->path) != 0)
            continue;
        if (wb_journal(wb, json_pack("{s:s, s:I}", "t", "drop", "seq", (json_int_t)f->seq)) < 0) {
            rc = -EIO;
            break;
        }
        wb_failed_unlink(wb, f);
        log_info(wb->lg, "%s: the failed %s is dropped from the journal: %s", f->path,
                 wb_kind_name(f->kind), why);
        wb_call_add(&calls, 0, f, NULL);
        if ((e = wb_ent_get(wb, f->path, 0)) != NULL)
            wb_ent_release(wb, e);
        wb_op_free(f);
        rc = 0;
    }
    pthread_mutex_unlock(&wb->mu);
    wb_calls_run(wb, calls);
    return rc;
}
