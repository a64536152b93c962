/* wbcontrol.c - write-behind's life: opening the journal and loading what
 * a crash left in it, sending it before the mount serves, the sending
 * threads, compaction, closing; and what the mount asks of it: flushes,
 * the pending report, discarding a failed change (writeback.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wb_int.h"
#include "writeback.h"

#define ENT_BUCKETS 65536
#define PART_BUCKETS 4096
#define DONE_BUCKETS 16384

/* The journal's live ops while it is read back, in seq order. */
struct replay {
    struct writeback *wb;
    struct journal *j;          /* the journal read (wb->j is NULL meanwhile) */
    unsigned bad;               /* records skipped */
    struct wb_op **ops;
    uint64_t *seqs;
    size_t n, cap;
    uint64_t max_seq;
};

/* The live op of SEQ while replaying, or NULL (its slot in *slot). */
static struct wb_op *replay_find(struct replay *r, uint64_t seq, size_t *slot)
{
    size_t lo = 0, hi = r->n;

    while (lo < hi) {
        size_t mid = (lo + hi) / 2;

        if (r->seqs[mid] < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < r->n && r->seqs[lo] == seq) {
        if (slot)
            *slot = lo;
        return r->ops[lo];
    }
    return NULL;
}

/* Forget OP (seq SEQ) in the replay index. */
static void replay_forget(struct replay *r, uint64_t seq)
{
    size_t slot;

    if (replay_find(r, seq, &slot))
        r->ops[slot] = NULL;
}

static int parse_kind(const char *k, enum wb_kind *out)
{
    static const char *names[] = { "insert", "replace", "merge", "delete" };

    for (int i = 0; i < 4; i++)
        if (k && strcmp(k, names[i]) == 0) {
            *out = (enum wb_kind)i;
            return 0;
        }
    return -EINVAL;
}

/* An op from its journal record, or NULL (bad record, no memory). */
static struct wb_op *op_from_record(const json_t *rec, uint64_t *replaces, uint64_t *dep)
{
    const char *path, *table, *pk, *rk, *k, *im = NULL;
    json_int_t seq, g, rep, d;
    json_t *e = NULL;
    double sent = 0;
    struct wb_op *op;

    if (json_unpack((json_t *)rec, "{s:I, s:s, s:s, s:s, s:s, s:s, s?o, s:I, s:I, s:I, s?F}",
                    "seq", &seq, "path", &path, "table", &table, "pk", &pk, "rk", &rk,
                    "k", &k, "e", &e, "dep", &d, "g", &g, "replaces", &rep,
                    "sent", &sent) < 0 || !(op = calloc(1, sizeof(*op))))
        return NULL;
    im = json_string_value(json_object_get(rec, "if"));     /* null for an insert */
    if (parse_kind(k, &op->kind) < 0 || (op->kind != WB_DELETE && !json_is_object(e)) ||
        !(op->path = strdup(path)) || !(op->table = strdup(table)) ||
        !(op->pk = strdup(pk)) || !(op->rk = strdup(rk)) ||
        (im && !(op->if_match = strdup(im)))) {
        wb_op_free(op);
        return NULL;
    }
    op->seq = (uint64_t)seq;
    op->group = (uint64_t)g;
    op->entity = op->kind == WB_DELETE ? NULL : json_incref(e);
    op->sent_at.tv_sec = (time_t)sent;
    op->sent_at.tv_nsec = (long)((sent - (double)(time_t)sent) * 1e9);
    op->queued_at = wb_now();
    op->bytes = 512 + 2 * strlen(path) + (e ? json_dumpb(e, NULL, 0, JSON_COMPACT) : 0);
    *replaces = (uint64_t)rep;
    *dep = (uint64_t)d;
    return op;
}

/* Index OP in R. Returns 0 or -ENOMEM. */
static int replay_index(struct replay *r, struct wb_op *op)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 1024;
        struct wb_op **o = realloc(r->ops, cap * sizeof(*o));
        uint64_t *s;

        if (!o)
            return -ENOMEM;
        r->ops = o;
        if (!(s = realloc(r->seqs, cap * sizeof(*s))))
            return -ENOMEM;
        r->seqs = s;
        r->cap = cap;
    }
    if (r->n == 0 || op->seq > r->seqs[r->n - 1]) {
        r->ops[r->n] = op;
        r->seqs[r->n++] = op->seq;
    } else {                /* out of order (a journal of another writer): in place */
        size_t at = r->n;

        while (at > 0 && r->seqs[at - 1] > op->seq)
            at--;
        memmove(&r->ops[at + 1], &r->ops[at], (r->n - at) * sizeof(*r->ops));
        memmove(&r->seqs[at + 1], &r->seqs[at], (r->n - at) * sizeof(*r->seqs));
        r->ops[at] = op;
        r->seqs[at] = op->seq;
        r->n++;
    }
    if (op->seq > r->max_seq)
        r->max_seq = op->seq;
    return 0;
}

/* An "op" record: queued again (merged into the op it replaces). */
static int replay_op(struct replay *r, const json_t *rec)
{
    struct writeback *wb = r->wb;
    uint64_t replaces = 0, dep = 0;
    struct wb_op *op = op_from_record(rec, &replaces, &dep), *old, *d;
    struct wb_ent *e;
    char *dir;

    if (!op) {              /* whole, but not ours to read: nothing of it is sent */
        log_error(wb->lg, "journal %s: a change record cannot be read: skipped",
                  journal_path(wb->j ? wb->j : r->j));
        r->bad++;
        return 0;
    }
    if (replay_index(r, op) < 0 || !(e = wb_ent_get(wb, op->path, 1))) {
        wb_op_free(op);
        return -ENOMEM;
    }
    if (replaces && (old = replay_find(r, replaces, NULL)) && old->state == WS_QUEUED) {
        op->part = old->part;
        replay_forget(r, replaces);
        wb_op_swap(wb, old, op);
        return 0;
    }
    if (dep && (d = replay_find(r, dep, NULL)) && d->state == WS_QUEUED) {
        op->dep = d;
        d->succ = op;
    } else if (op->if_match && strncmp(op->if_match, WB_TOKEN_PREFIX,
                                       strlen(WB_TOKEN_PREFIX)) == 0) {
        char *real = NULL;

        /* unresolved, the token stays: the service refuses it, and the
         * change is reported failed rather than sent unguarded */
        if (wb_resolve(wb, op->if_match, &real) == 1) {
            free(op->if_match);
            op->if_match = real;
        }
    }
    dir = strndup(op->path, (size_t)(strrchr(op->path, '/') - op->path));
    op->part = dir ? wb_part_get(wb, dir, 1) : NULL;
    free(dir);
    if (!op->part || (!op->part->table && (!(op->part->table = strdup(op->table)) ||
                                           !(op->part->pk = strdup(op->pk))))) {
        replay_forget(r, op->seq);
        wb_op_free(op);
        return -ENOMEM;
    }
    wb_part_push_back(op);
    wb->n_queued++;
    wb->bytes += op->bytes;
    e->last = op;
    return 0;
}

/* Take OP out of the queue (replaying). */
static void replay_unqueue(struct writeback *wb, struct wb_op *op)
{
    struct wb_ent *e = wb_ent_get(wb, op->path, 0);

    wb_part_unlink(op);
    wb->n_queued--;
    wb->bytes -= op->bytes;
    if (op->succ)
        op->succ->dep = NULL;
    if (op->dep)
        op->dep->succ = NULL;
    if (e && e->last == op)
        e->last = op->dep;
}

/* Replay one state record of type T for OP (seq SEQ; ETAG from a "done"). */
static void replay_one(struct replay *r, const json_t *rec, const char *t, struct wb_op *op,
                       const char *etag)
{
    struct writeback *wb = r->wb;
    struct wb_ent *e;
    char tok[64];

    if (strcmp(t, "fail") == 0) {
        if (op->state != WS_QUEUED)
            return;
        replay_unqueue(wb, op);
        e = wb_ent_get(wb, op->path, 1);
        if (e && e->failed)         /* replaced by this one: freed by wb_failed_keep */
            replay_forget(r, e->failed->seq);
        wb_failed_keep(wb, op, -(int)json_integer_value(json_object_get(rec, "errno")),
                       json_string_value(json_object_get(rec, "why")));
        return;
    }
    if (op->state == WS_QUEUED) {
        if (strcmp(t, "done") == 0 && op->succ) {
            free(op->succ->if_match);
            op->succ->if_match = op->kind == WB_DELETE ? NULL : strdup(etag ? etag : "*");
        }
        replay_unqueue(wb, op);
    } else {
        wb_failed_unlink(wb, op);
    }
    if (strcmp(t, "done") == 0) {
        wb_op_token(op, tok);
        wb_done_put(wb, tok, etag);
    }
    replay_forget(r, op->seq);
    e = wb_ent_get(wb, op->path, 0);
    wb_op_free(op);
    if (e)
        wb_ent_release(wb, e);
}

/* A "done", "sent", "fail" or "drop" record. */
static int replay_state(struct replay *r, const json_t *rec, const char *t)
{
    json_t *seqs = json_object_get(rec, "seqs"), *etags = json_object_get(rec, "etags");
    json_t *one = json_object_get(rec, "seq");
    size_t n = seqs ? json_array_size(seqs) : 1;
    double at = json_number_value(json_object_get(rec, "at"));

    for (size_t i = 0; i < n; i++) {
        uint64_t seq = (uint64_t)json_integer_value(seqs ? json_array_get(seqs, i) : one);
        struct wb_op *op = replay_find(r, seq, NULL);

        if (!op)
            continue;
        if (strcmp(t, "sent") == 0 && !op->sent_at.tv_sec) {
            op->sent_at.tv_sec = (time_t)at;
            op->sent_at.tv_nsec = (long)((at - (double)(time_t)at) * 1e9);
        } else if (strcmp(t, "sent") != 0) {
            replay_one(r, rec, t, op, json_string_value(json_array_get(etags, i)));
        }
    }
    return 0;
}

/* One record of the journal (a journal_read callback). */
static int replay_record(void *ctx, const json_t *rec)
{
    const char *t = json_string_value(json_object_get(rec, "t"));

    if (!t)
        return 0;
    if (strcmp(t, "op") == 0)
        return replay_op(ctx, rec);
    if (strcmp(t, "done") == 0 || strcmp(t, "sent") == 0 || strcmp(t, "fail") == 0 ||
        strcmp(t, "drop") == 0)
        return replay_state(ctx, rec, t);
    return 0;
}

static int by_seq(const void *a, const void *b)
{
    uint64_t x = (*(struct wb_op *const *)a)->seq, y = (*(struct wb_op *const *)b)->seq;

    return x < y ? -1 : x > y;
}

/* Collect into ALL (room for N ops, *n counted) every queued or sending
 * op of WB: each entity's chain from its latest change back through the
 * ones it waits for. Lock held. */
static void collect_live(struct writeback *wb, struct wb_op **all, size_t cap, size_t *n)
{
    for (size_t b = 0; b < wb->n_ent_buckets; b++)
        for (struct wb_ent *e = wb->ents[b]; e; e = e->hnext)
            for (struct wb_op *op = e->last; op && *n < cap; op = op->dep)
                all[(*n)++] = op;
}

/* Append to RECS the records of OP: its change (with when it was sent),
 * and what became of it when that is known but not yet settled (applied:
 * the ETag the service gave). 0 or -ENOMEM. */
static int op_records(json_t *recs, const struct wb_op *op)
{
    json_t *seqs, *etags;

    if (json_array_append_new(recs, wb_op_record(op, 0)) < 0)
        return -ENOMEM;
    if (!op->done)
        return 0;
    seqs = json_pack("[I]", (json_int_t)op->seq);
    etags = json_pack("[s?]", op->done_etag);
    return json_array_append_new(recs, json_pack("{s:s, s:o?, s:o?}", "t", "done", "seqs",
                                                 seqs, "etags", etags)) < 0 ? -ENOMEM : 0;
}

/* What is live, as journal records (a journal_rewrite builder; CTX the
 * writeback, its lock held): every queued or sending change in the order
 * of its seq (the order they were journalled: a change's predecessor comes
 * first, and the replay finds changes by seq), and every failed one with
 * its failure. */
static json_t *live_records(void *ctx)
{
    struct writeback *wb = ctx;
    size_t cap = wb->n_queued + wb->n_sending, n = 0;
    struct wb_op **all = calloc(cap + 1, sizeof(*all));
    json_t *recs = json_array();
    int ok = recs && all;

    if (ok) {
        collect_live(wb, all, cap, &n);
        qsort(all, n, sizeof(*all), by_seq);
    }
    for (size_t i = 0; ok && i < n; i++)
        ok = op_records(recs, all[i]) == 0;
    free(all);
    for (struct wb_op *f = wb->failed_head; ok && f; f = f->next)
        ok = json_array_append_new(recs, wb_op_record(f, 0)) == 0 &&
             json_array_append_new(recs, json_pack("{s:s, s:I, s:i, s:s?}", "t", "fail",
                                                   "seq", (json_int_t)f->seq, "errno",
                                                   f->err, "why", f->why)) == 0;
    if (!ok) {
        json_decref(recs);
        return NULL;
    }
    return recs;
}

/* See wb_int.h. */
int wb_compact(struct writeback *wb)
{
    return journal_rewrite(wb->j, live_records, wb);
}

/* See wb_int.h. */
void wb_maybe_compact(struct writeback *wb)
{
    uint64_t live = wb->bytes + 512 * (uint64_t)wb->n_failed;

    if (journal_size(wb->j) > WB_COMPACT_MIN && journal_size(wb->j) > 2 * live)
        (void)wb_compact(wb);
}

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
    free(wb->threads);
    journal_close(wb->j);
    table_client_free(wb->tc);
    pthread_mutex_destroy(&wb->mu);
    pthread_cond_destroy(&wb->work_cv);
    pthread_cond_destroy(&wb->done_cv);
    free(wb);
}

/* Read the journal back into WB's queue (nothing sent), then rewrite it
 * with what is live. */
static int wb_replay(struct writeback *wb)
{
    struct replay r = { wb, wb->j, 0, NULL, NULL, 0, 0, 0 };
    struct journal *j = wb->j;
    struct journal_damage d = { 0 };
    unsigned bad;
    int rc;

    wb->j = NULL;           /* records of the replay itself are not appended */
    rc = journal_read(j, replay_record, &r, &d);
    wb->j = j;
    free(r.ops);
    free(r.seqs);
    if (rc < 0)
        return rc;
    bad = d.damaged + d.foreign + r.bad;
    wb->n_damaged = bad;
    wb->next_seq = (uint64_t)time(NULL) * 1000;
    if (r.max_seq >= wb->next_seq)
        wb->next_seq = r.max_seq + 1;
    if (wb->n_queued || wb->n_failed || bad || d.torn)
        log_info(wb->lg, "journal %s: %zu change%s to send, %zu failed; %u damaged or refused "
                 "stretch%s skipped (the lines above say which), %u cut short",
                 journal_path(j), wb->n_queued, wb->n_queued == 1 ? "" : "s", wb->n_failed,
                 bad, bad == 1 ? "" : "es", d.torn);
    pthread_mutex_lock(&wb->mu);
    rc = journal_rewrite(j, live_records, wb);
    pthread_mutex_unlock(&wb->mu);
    return rc;
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
        log_info(wb->lg, "journal %s: the queue is bounded at %.1f MiB instead of %.1f MiB: "
                 "its disk has room for %.1f MiB", journal_path(wb->j), fit / 1048576.0,
                 wb->cfg.max_bytes / 1048576.0, journal_room(wb->j) / 1048576.0);
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
int wb_open(const struct wb_config *cfg, const struct account *acct,
            const struct http_config *hc, struct logger *lg, struct http_stats *stats,
            const struct wb_hooks *hooks, struct writeback **out)
{
    struct writeback *wb = calloc(1, sizeof(*wb));
    pthread_condattr_t ca;
    int rc;

    *out = NULL;
    if (!wb)
        return -ENOMEM;
    pthread_mutex_init(&wb->mu, NULL);
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
    struct wb_op *ops[WB_BATCH_OPS];
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

    if (!(wb->threads = calloc((size_t)n, sizeof(*wb->threads))))
        return -ENOMEM;
    pthread_mutex_lock(&wb->mu);
    for (int i = 0; i < n; i++) {
        if (pthread_create(&wb->threads[i], NULL, wb_sender, wb) != 0)
            break;
        wb->n_threads++;
    }
    pthread_mutex_unlock(&wb->mu);
    return wb->n_threads > 0 ? 0 : -EAGAIN;
}

/* Log the failed changes WB keeps (lock held): the first few by name. */
static void log_failed(struct writeback *wb)
{
    size_t n = 0;

    for (struct wb_op *f = wb->failed_head; f && n < 10; f = f->next, n++)
        log_error(wb->lg, "%s: the queued %s failed (%s%s%s); it stays in the journal %s",
                  f->path, wb_kind_name(f->kind), strerror(f->err), f->why ? ": " : "",
                  f->why ? f->why : "", journal_path(wb->j));
    if (wb->n_failed > n)
        log_error(wb->lg, "... and %zu more failed changes (user.aztfs.pending at the next "
                  "mount lists them)", wb->n_failed - n);
}

/* Begin the stop (lock held): every partition due now, the deadline set,
 * the senders and any waiting writer woken. */
static void stop_begin(struct writeback *wb)
{
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
    for (int i = 0; i < wb->n_threads; i++)
        pthread_join(wb->threads[i], NULL);
    if (wb->n_threads == 0)
        (void)wb_drain(wb);
    pthread_mutex_lock(&wb->mu);
    log_failed(wb);
    left = wb->n_queued + wb->n_failed;
    if (left == 0)
        log_info(wb->lg, "write-behind stopped: every change sent (%zu since the stop, in "
                 "%.1f s); the journal is empty", wb->n_applied - applied0,
                 (now_ms() - t0) / 1000.0);
    else
        log_error(wb->lg, "write-behind stopped after %.1f s: %zu change%s sent since the "
                  "stop; %zu unsent and %zu failed stay in the journal %s (sent, or "
                  "reported, at the next mount with it)", (now_ms() - t0) / 1000.0,
                  wb->n_applied - applied0, wb->n_applied - applied0 == 1 ? "" : "s",
                  wb->n_queued, wb->n_failed, journal_path(wb->j));
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
                p->flush = 1;       /* now, even in a backoff: the caller waits */
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
char *wb_pending_json(struct writeback *wb, size_t limit)
{
    json_t *o, *fails = json_array();
    size_t used = 0;
    char *out = NULL;

    pthread_mutex_lock(&wb->mu);
    o = json_pack("{s:I, s:I, s:I, s:I, s:s}", "queued", (json_int_t)wb->n_queued,
                  "sending", (json_int_t)wb->n_sending, "failed", (json_int_t)wb->n_failed,
                  "damaged", (json_int_t)wb->n_damaged,
                  "journal", wb->j ? journal_path(wb->j) : "");
    for (struct wb_op *f = wb->failed_head; o && fails && f; f = f->next) {
        json_t *x = json_pack("{s:s, s:s, s:i, s:s, s:s?}", "path", f->path,
                              "op", wb_kind_name(f->kind), "errno", f->err,
                              "error", strerror(f->err), "why", f->why);

        used += strlen(f->path) + (f->why ? strlen(f->why) : 0) + 80;
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
        if (wb_journal(wb, json_pack("{s:s, s:I}", "t", "drop", "seq",
                                     (json_int_t)f->seq)) < 0) {
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
