/* writeback/send.c - write-behind's batches: which partition goes next, cutting
 * its queue into entity group transactions (100 operations, 4 MiB, a
 * rename's two halves together), sending them, and what each answer means
 * for each operation: applied, failed for good (the others of the batch
 * sent again without it), or put back to wait (a transient failure). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "writeback/writeback_i.h"
#include "writeback/writeback.h"

/* Longest wait after transient failures in a row (seconds). */
#define BACKOFF_MAX 30

static int before(struct timespec a, struct timespec b)
{
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

static int same_time(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

/* T plus SECS seconds (0 or more). */
static struct timespec later_by(struct timespec t, double secs)
{
    t.tv_sec += (time_t)secs;
    t.tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* When the oldest change of P is due (its delay over). */
static struct timespec due_at(const struct writeback *wb, const struct wb_part *p)
{
    return later_by(p->head->queued_at, wb->cfg.delay);
}

/* Does the partition's target (http_targets: the rate the service was
 * found to take) hold P's next batch? Then *NEXT gets when it will not
 * (kept if earlier), and a sender takes another partition meanwhile. */
static int held_by_target(const struct writeback *wb, const struct wb_part *p, struct timespec now,
                          struct timespec *next)
{
    struct http_targets *t = table_client_targets(wb->tc);
    char key[TARGET_KEY_MAX];
    struct timespec at;
    double wait;

    if (!t || !p->table || !p->pk)
        return 0;
    table_target_key(key, sizeof(key), p->table, p->pk);
    wait = http_targets_wait(t, key, (unsigned)(p->n < TABLE_BATCH_OPS ? p->n : TABLE_BATCH_OPS),
                             http_now_ms());
    if (wait <= 0)
        return 0;
    at = later_by(now, wait / 1000);
    if (!next->tv_sec || before(at, *next))
        *next = at;
    return 1;
}

/* Should P go now? Else *next gets when it will (kept if earlier). */
static int part_ready(struct writeback *wb, struct wb_part *p, int force, struct timespec now,
                      struct timespec *next)
{
    struct timespec due;

    if (p->sending || !p->head || p->gave_up)
        return 0;
    if (p->head->dep) /* waits for its entity's change in another batch */
        return 0;
    if (before(now, p->not_before)) {
        if (!next->tv_sec || before(p->not_before, *next))
            *next = p->not_before;
        return 0;
    }
    if (held_by_target(wb, p, now, next))
        return 0;
    if (force || wb->urgent || wb->stopping || p->flush || p->again || p->n >= TABLE_BATCH_OPS)
        return 1;
    due = due_at(wb, p);
    if (!before(now, due))
        return 1;
    if (!next->tv_sec || before(due, *next))
        *next = due;
    return 0;
}

/* Cut the next batch of P into OPS. Returns how many. */
static size_t cut(const struct writeback *wb, struct wb_part *p, struct wb_op **ops)
{
    size_t room = table_batch_room(wb->tc, WB_BATCH_HEADROOM);
    struct timespec first = p->head->sent_at;
    size_t n = 0, bytes = 0;
    struct wb_op *op = p->head;

    while (op && n < TABLE_BATCH_OPS) {
        size_t take = 1, weight = op->bytes;
        struct wb_op *o = op;

        /* a rename's halves go together; a change waiting for another
         * change of its entity, or sent before in another batch (settled
         * as that batch), starts a batch of its own */
        while (o->next && o->group && o->next->group == o->group) {
            o = o->next;
            take++;
            weight += o->bytes;
        }
        o = op;
        for (size_t i = 0; i < take; i++, o = o->next)
            if (o->dep || !same_time(o->sent_at, first))
                return n;
        if (n + take > TABLE_BATCH_OPS && n > 0)
            break;
        if (n > 0 && bytes + weight > room)
            break;
        for (size_t i = 0; i < take && n < TABLE_BATCH_OPS; i++, op = op->next) {
            ops[n++] = op;
            bytes += op->bytes;
        }
    }
    return n;
}

/* The stop deadline as a monotonic time. */
static struct timespec stop_time(const struct writeback *wb)
{
    long long ms = atomic_load(&((struct writeback *)wb)->stop_ms);

    return (struct timespec){ (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
}

/* Has the stop's deadline passed? */
static int stop_passed(const struct writeback *wb)
{
    return !before(wb_now(), stop_time(wb));
}

/* UNTIL (0: none), but no later than the stop deadline. */
static struct timespec stop_deadline(const struct writeback *wb, struct timespec until)
{
    struct timespec end = stop_time(wb);

    return !until.tv_sec || before(end, until) ? end : until;
}

/* See writeback/writeback_i.h. */
size_t wb_take_batch(struct writeback *wb, int force, struct wb_op **ops,
                     struct timespec *wait_until)
{
    struct timespec now = wb_now(), next = { 0, 0 };
    struct wb_part *p = NULL;
    size_t n;

    LOCK_HELD(&wb->mu);
    *wait_until = next;
    if (wb->stopping && stop_passed(wb))
        return 0; /* stopped: what is left stays in the journal */
    for (size_t b = 0; b < wb->n_part_buckets && !p; b++)
        for (struct wb_part *q = wb->parts[b]; q && !p; q = q->hnext)
            if (part_ready(wb, q, force, now, &next))
                p = q;
    *wait_until = next;
    if (!p)
        return 0;
    n = cut(wb, p, ops);
    for (size_t i = 0; i < n; i++) {
        wb_part_unlink(ops[i]);
        ops[i]->state = WS_SENDING;
    }
    wb->n_queued -= n;
    wb->n_sending += n;
    p->sending = n > 0;
    p->again = 0;
    if (!p->head)
        p->flush = 0;
    if (wb->urgent && wb->bytes < wb->cfg.max_bytes / 2)
        wb->urgent = 0;
    return n;
}

/* Is a batch failure with -RC (details ST) worth sending again later: no
 * answer, or one that says "not now"? */
static int transient(int rc, const struct az_status *st)
{
    if (rc == -ENOMEM || rc == -EINTR)
        return 1;
    return st->http_status == 0 || st->http_status == 408 || st->http_status == 429 ||
        st->http_status >= 500;
}

/* Record that OPS (N) are handed to the network now, unless they were
 * before (then *first gets when). Returns 0 or -EIO. */
static int mark_sent(struct writeback *wb, struct wb_op **ops, size_t n, struct timespec *first,
                     int *again)
{
    struct timespec now;
    json_t *rec;

    *again = ops[0]->sent_at.tv_sec != 0;
    if (*again) {
        *first = ops[0]->sent_at;
        return 0;
    }
    clock_gettime(CLOCK_REALTIME, &now);
    rec = json_pack("{s:s, s:o, s:f}", "t", "sent", "seqs", wb_seq_array(ops, n), "at",
                    (double)now.tv_sec + now.tv_nsec / 1e9);
    /* in memory first: a compaction meanwhile writes the ops as sent */
    pthread_mutex_lock(&wb->mu);
    for (size_t i = 0; i < n; i++)
        ops[i]->sent_at = now;
    pthread_mutex_unlock(&wb->mu);
    if (wb_journal(wb, rec) == 0)
        return 0;
    pthread_mutex_lock(&wb->mu);
    for (size_t i = 0; i < n; i++) /* not sent: a compaction may heal the journal */
        ops[i]->sent_at = (struct timespec){ 0, 0 };
    (void)wb_compact(wb);
    pthread_mutex_unlock(&wb->mu);
    return -EIO;
}

/* The batch is applied: journal it, then settle each op. Lock not held. */
static void batch_applied(struct writeback *wb, struct wb_op **ops, size_t n, char **etags)
{
    struct wb_call *calls = NULL;
    json_t *e = json_array();

    for (size_t i = 0; e && i < n; i++)
        json_array_append_new(e, etags[i] ? json_string(etags[i]) : json_null());
    /* known applied before it is journalled: a compaction meanwhile says so */
    pthread_mutex_lock(&wb->mu);
    for (size_t i = 0; i < n; i++) {
        ops[i]->done = 1;
        ops[i]->done_etag = etags[i] ? strdup(etags[i]) : NULL;
    }
    pthread_mutex_unlock(&wb->mu);
    /* not durable (a full disk): after a crash the resend is settled by
     * reading the entities back */
    (void)wb_journal(
        wb, json_pack("{s:s, s:o, s:o?}", "t", "done", "seqs", wb_seq_array(ops, n), "etags", e));
    pthread_mutex_lock(&wb->mu);
    ops[0]->part->sending = 0;
    ops[0]->part->backoff = 0;
    for (size_t i = 0; i < n; i++)
        wb_op_applied(wb, ops[i], etags[i], &calls);
    pthread_cond_broadcast(&wb->done_cv);
    pthread_cond_broadcast(&wb->work_cv);
    pthread_mutex_unlock(&wb->mu);
    wb_calls_run(wb, calls);
}

/* OPS (N, out for sending) back at the head of their partition's queue,
 * in order (WB locked). */
static void requeue_front(struct writeback *wb, struct wb_op **ops, size_t n)
{
    LOCK_HELD(&wb->mu);
    for (size_t i = n; i-- > 0;) {
        ops[i]->state = WS_QUEUED;
        wb_part_push_front(ops[i]);
    }
    wb->n_sending -= n;
    wb->n_queued += n;
}

/* The batch could not be sent now: back to the head of the queue, the
 * partition waiting a while (closing: left for the next mount). */
static void batch_later(struct writeback *wb, struct wb_op **ops, size_t n, int rc,
                        const struct az_status *st)
{
    struct wb_part *p = ops[0]->part;

    pthread_mutex_lock(&wb->mu);
    requeue_front(wb, ops, n);
    p->sending = 0;
    p->backoff = p->backoff ? (p->backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : p->backoff * 2) : 1;
    p->not_before = wb_now();
    p->not_before.tv_sec += p->backoff;
    if (wb->stopping)
        p->gave_up = 1;
    log_warn(wb->lg, "%s: %zu queued change%s not sent: %s (HTTP %ld); %s", p->dir, n,
             n == 1 ? "" : "s", st->message[0] ? st->message : strerror(-rc), st->http_status,
             wb->stopping ? "they stay in the journal for the next mount" : "trying again");
    pthread_cond_broadcast(&wb->done_cv);
    pthread_cond_broadcast(&wb->work_cv);
    pthread_mutex_unlock(&wb->mu);
}

/* See writeback/writeback_i.h (exposed for the unit tests). */
size_t wb_batch_drop_failed(struct writeback *wb, struct wb_op **ops, size_t n, size_t i, int rc,
                            const char *why)
{
    struct wb_call *calls = NULL;
    uint64_t group = ops[i]->group;
    size_t m = 0;

    pthread_mutex_lock(&wb->mu);
    for (size_t k = 0; k < n; k++) {
        if (k == i || (group && ops[k]->group == group))
            wb_op_failed(wb, ops[k], rc, k == i ? why : "the other half of its rename failed",
                         &calls);
        else
            ops[m++] = ops[k];
    }
    pthread_cond_broadcast(&wb->done_cv);
    pthread_mutex_unlock(&wb->mu);
    wb_calls_run(wb, calls);
    return m;
}

/* Why the service refused a change, from its answer ST, in BUF (LEN): its
 * message's first line without the batch's "N:" (the operation's index,
 * which means nothing to a user), then the HTTP status and service code:
 * "The update condition ... not satisfied. (HTTP 412,
 * UpdateConditionNotSatisfied)". NULL when the answer says nothing. */
static const char *service_why(const struct az_status *st, char *buf, size_t len)
{
    const char *m = st->message;
    size_t n;

    if (table_batch_failed_index(st) >= 0)
        m = strchr(m, ':') + 1;
    n = strcspn(m, "\r\n");
    if (n == 0 && st->http_status == 0)
        return NULL;
    if (st->http_status == 0)
        snprintf(buf, len, "%.*s", (int)n, m);
    else
        snprintf(buf, len, "%.*s%s(HTTP %ld%s%s)", (int)n, m, n ? " " : "", st->http_status,
                 st->code[0] ? ", " : "", st->code);
    return buf;
}

/* Would a cut before OPS[H] (0 < H < N) part a rename's two halves? */
static int cuts_rename(struct wb_op **ops, size_t h)
{
    return ops[h]->group && ops[h]->group == ops[h - 1]->group;
}

/* See writeback/writeback_i.h (exposed for the unit tests). */
size_t wb_split_at(struct wb_op **ops, size_t n)
{
    size_t h = n / 2;

    while (h < n && cuts_rename(ops, h))
        h++;
    if (h < n)
        return h;
    for (h = n / 2; h > 0 && cuts_rename(ops, h); h--)
        ;
    return h; /* 0: the batch is one rename, which is never cut */
}

/* A batch refused with no operation named is cut in two: OPS (N) is its
 * second half, put back at the head of its partition's queue, in order,
 * to go as soon as the first half is settled (at once, or after the first
 * half's backoff when that is put back: the queue then holds both halves
 * in their order). The partition stays busy meanwhile: only the first
 * half is out. */
static void split_rest(struct writeback *wb, struct wb_op **ops, size_t n)
{
    struct wb_part *p = ops[0]->part;

    pthread_mutex_lock(&wb->mu);
    requeue_front(wb, ops, n);
    p->again = 1;
    pthread_mutex_unlock(&wb->mu);
}

/* See writeback/writeback_i.h. */
void wb_send_batch(struct writeback *wb, struct wb_op **ops, size_t n)
{
    struct table_batch_op bops[TABLE_BATCH_OPS];
    char *etags[TABLE_BATCH_OPS] = { 0 };
    struct az_status st = { 0 };
    struct timespec first;
    struct wb_part *p = ops[0]->part;
    size_t h;
    int rc, again, idx;
    char whybuf[sizeof(st.message) + sizeof(st.code) + 32];
    const char *why;

    while (n > 0) {
        if (mark_sent(wb, ops, n, &first, &again) < 0) {
            /* never sent unrecorded: they wait (a full disk frees up) */
            snprintf(st.message, sizeof(st.message), "the journal cannot record the send");
            batch_later(wb, ops, n, -EIO, &st);
            return;
        }
        for (size_t i = 0; i < n; i++) {
            struct wb_op *o = ops[i];

            bops[i] = (struct table_batch_op){ o->kind == WB_INSERT      ? TB_INSERT :
                                                   o->kind == WB_REPLACE ? TB_REPLACE :
                                                   o->kind == WB_MERGE   ? TB_MERGE :
                                                                           TB_DELETE,
                                               o->rk, o->entity, o->if_match, &etags[i] };
        }
        rc = table_batch_again(wb->tc, ops[0]->table, ops[0]->pk, bops, n, again ? &first : NULL,
                               &st);
        if (rc == 0) {
            batch_applied(wb, ops, n, etags);
            for (size_t i = 0; i < n; i++)
                free(etags[i]);
            return;
        }
        if (transient(rc, &st)) {
            batch_later(wb, ops, n, rc, &st);
            return;
        }
        /* the service answered: this send was not applied. After a first
         * send nothing was, and what is sent next is a first send again;
         * after a resend an earlier send may have been (a lost answer, a
         * crash), so the others keep their window: a conflict of theirs is
         * ours when the entity holds exactly what was sent in it */
        if (!again) {
            pthread_mutex_lock(&wb->mu);
            for (size_t i = 0; i < n; i++)
                ops[i]->sent_at = (struct timespec){ 0, 0 };
            pthread_mutex_unlock(&wb->mu);
        }
        idx = table_batch_failed_index(&st);
        why = service_why(&st, whybuf, sizeof(whybuf));
        if (idx >= 0 && (size_t)idx < n) {
            n = wb_batch_drop_failed(wb, ops, n, (size_t)idx, rc, why);
        } else if (n == 1 || st.http_status == 401 || st.http_status == 403 ||
                   (h = wb_split_at(ops, n)) == 0) {
            /* refused as a whole: one change, or a rename alone (its halves
             * stand or fall together: sent apart, the delete could go
             * through where the write did not) */
            while (n > 0)
                n = wb_batch_drop_failed(wb, ops, n, 0, rc, why);
        } else {
            split_rest(wb, ops + h, n - h);
            n = h;
        }
    }
    /* every op failed: the partition is free again */
    pthread_mutex_lock(&wb->mu);
    p->sending = 0;
    pthread_cond_broadcast(&wb->done_cv);
    pthread_cond_broadcast(&wb->work_cv);
    pthread_mutex_unlock(&wb->mu);
}

/* See writeback/writeback_i.h. */
void *wb_sender(void *arg)
{
    struct writeback *wb = arg;
    struct wb_op *ops[TABLE_BATCH_OPS];
    struct timespec until;

    pthread_mutex_lock(&wb->mu);
    for (;;) {
        size_t n = wb_take_batch(wb, 0, ops, &until);

        if (n > 0) {
            pthread_mutex_unlock(&wb->mu);
            wb_send_batch(wb, ops, n);
            pthread_mutex_lock(&wb->mu);
            wb_maybe_compact(wb);
            continue;
        }
        if (wb->stopping && ((wb->n_sending == 0 && !until.tv_sec) || stop_passed(wb)))
            break;
        if (wb->stopping) /* not past the stop deadline */
            until = stop_deadline(wb, until);
        if (until.tv_sec)
            pthread_cond_timedwait(&wb->work_cv, &wb->mu, &until);
        else
            pthread_cond_wait(&wb->work_cv, &wb->mu);
    }
    pthread_cond_broadcast(&wb->work_cv);
    pthread_mutex_unlock(&wb->mu);
    return NULL;
}
