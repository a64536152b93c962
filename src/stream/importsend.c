/* stream/importsend.c - an import stream's sending side (stream_i.h): the
 * keys held or out, the queue of full transactions, and the senders that
 * take from it.
 *
 * A sender takes the first queued transaction of the partition sent to
 * least recently among those with none out, else the first of any, that
 * the service's targets let go now (http_targets_wait: the rates learned
 * from throttled answers, per partition and for the account, which every
 * $batch heeds), so that the transactions out at once spread over the
 * partitions queued, each partition takes its turn (a stream in
 * partition order would otherwise send its first partition's
 * transactions back to back, faster than a partition is served), and
 * each is written as fast as the service takes it: a partition's 503s
 * slow that partition, not the stream. The writer reads up to the cache's size of
 * lines ahead of what is sent: a stream in partition order (an export)
 * has that many partitions to spread over. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names/names.h"
#include "stream/stream_i.h"

/* Partitions the targets refused, remembered through one pick; and the
 * partitions weighed for the first choice. */
#define PICK_REFUSED 32
#define PICK_CANDIDATES 32
/* --- keys held or out ------------------------------------------------------------------ */

uint64_t import_key_hash(const char *pk, const char *rk)
{
    return hash_fnv1a(pk) * 31 ^ hash_fnv1a(rk);
}

/* The two counters of key K. */
static size_t slot(uint64_t k, int which)
{
    return (size_t)(which ? k >> 40 : k) & (IMPORT_FILTER_SIZE - 1);
}

int import_filter_has(const struct import_stream *m, uint64_t k)
{
    LOCK_HELD(&m->lock);
    return m->filter[slot(k, 0)] && m->filter[slot(k, 1)];
}

void import_filter_add(struct import_stream *m, uint64_t k, int by)
{
    LOCK_HELD(&m->lock);
    m->filter[slot(k, 0)] = (uint16_t)(m->filter[slot(k, 0)] + by);
    m->filter[slot(k, 1)] = (uint16_t)(m->filter[slot(k, 1)] + by);
}

/* Does B hold entity PK, RK (hash K)? (A spooled one's keys are known by
 * their 64-bit hashes: one that matches another key's costs a wait.) */
static int batch_holds(const struct import_batch *b, const char *pk, const char *rk, uint64_t k)
{
    if (strcmp(b->pk, pk) != 0)
        return 0;
    for (size_t i = 0; i < b->n; i++)
        if (b->key[i] == k && (b->spool_len || strcmp(b->rk[i], rk) == 0))
            return 1;
    return 0;
}

/* See stream/stream_i.h. */
int import_key_held(const struct import_stream *m, const char *pk, const char *rk, uint64_t k)
{
    LOCK_HELD(&m->lock);
    for (int i = 0; i < m->n_held; i++)
        if (batch_holds(m->held[i], pk, rk, k))
            return 1;
    for (const struct import_batch *b = m->queue; b; b = b->next)
        if (batch_holds(b, pk, rk, k))
            return 1;
    for (int i = 0; i < IMPORT_SENDERS_MAX; i++)
        if (m->out[i] && batch_holds(m->out[i], pk, rk, k))
            return 1;
    return 0;
}

/* --- transactions ---------------------------------------------------------------------- */

void import_batch_free(struct import_batch *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++) {
        json_decref(b->wire[i]);
        free(b->rk[i]);
    }
    free(b->pk);
    free(b);
}

/* Record the first failure of M: RC, and WHY (the line's number and what
 * was wrong) with ST in the log and user.aztfs.errors. Later ones are
 * the first's consequences, or stop a stream already stopped: not logged. */
void import_fail(struct import_stream *m, int rc, const struct az_status *st, const char *why)
{
    LOCK_HELD(&m->lock);
    if (m->err)
        return;
    m->err = rc;
    store_log_failure(m->s, "import", m->path, rc, st, why);
}

/* What applied transaction B leaves: the cache's copies of its entities,
 * its partition's listing and its table's, dropped (and the kernel's). */
static void batch_forget(struct import_stream *m, const struct import_batch *b)
{
    char *dir = keycodec_encode(b->pk), *path = dir ? fspath_join(m->table_path, dir) : NULL;

    for (size_t i = 0; path && i < b->n; i++) {
        char *file = keycodec_file_encode(b->rk[i]), *p = file ? fspath_join(path, file) : NULL;

        if (p)
            store_forget(m->s, p);
        free(p);
        free(file);
    }
    if (path)
        store_forget(m->s, path);
    store_forget(m->s, m->table_path);
    free(path);
    free(dir);
}

/* Send B: one entity group transaction. Called by a sender, without the
 * lock. Returns 0 or -errno, with the failure recorded. */
static int batch_send(struct import_stream *m, struct import_batch *b)
{
    struct table_batch_op ops[TABLE_BATCH_OPS];
    struct az_status st;
    char why[800];
    int rc, at;

    for (size_t i = 0; i < b->n; i++)
        ops[i] = (struct table_batch_op){ m->insert ? TB_INSERT : TB_UPSERT, b->rk[i], b->wire[i],
                                          NULL, NULL };
    rc = table_batch(m->s->tc, m->table, b->pk, ops, b->n, &st);
    if (rc == 0) {
        batch_forget(m, b);
        return 0;
    }
    at = table_batch_failed_index(&st);
    if (at >= 0 && (size_t)at < b->n)
        snprintf(why, sizeof(why),
                 "line %llu (RowKey '%.80s' of partition '%.80s'): refused by the service; "
                 "its transaction (lines %llu to %llu, %zu entities) not applied",
                 b->line[at], b->rk[at], b->pk, b->line[0], b->line[b->n - 1], b->n);
    else
        snprintf(why, sizeof(why),
                 "the transaction of lines %llu to %llu (%zu entities of partition '%.80s') "
                 "failed: %.200s; not known to be applied",
                 b->line[0], b->line[b->n - 1], b->n, b->pk,
                 st.message[0] ? st.message : strerror(-rc));
    pthread_mutex_lock(&m->lock);
    import_fail(m, rc, &st, why);
    pthread_mutex_unlock(&m->lock);
    return rc;
}

/* Read spooled transaction B of M back (a sender's, without the lock).
 * Returns 0 or -errno, with the failure recorded. */
static int spooled_back(struct import_stream *m, struct import_batch *b)
{
    char why[300];
    int rc = import_spool_get(m, b);

    if (rc == 0)
        return 0;
    snprintf(why, sizeof(why),
             "the transaction of lines %llu to %llu (%zu entities of partition '%.80s') could "
             "not be read back from the spool: %s; not applied",
             b->line[0], b->line[b->n - 1], b->n, b->pk, strerror(-rc));
    pthread_mutex_lock(&m->lock);
    import_fail(m, rc, NULL, why);
    pthread_mutex_unlock(&m->lock);
    return rc;
}

/* The bytes of B's lines held in memory (0 once spooled): what it counts
 * in the queue's bytes. */
static size_t in_memory(const struct import_batch *b)
{
    return b->spool_len ? 0 : b->bytes;
}

/* Is a transaction of the partition of hash H out? */
static int is_out(const struct import_stream *m, uint64_t h)
{
    for (int i = 0; i < m->senders.n && i < IMPORT_SENDERS_MAX; i++)
        if (m->out[i] && m->out[i]->pk_hash == h)
            return 1;
    return 0;
}

static int among(const uint64_t *set, int n, uint64_t h)
{
    for (int i = 0; i < n; i++)
        if (set[i] == h)
            return 1;
    return 0;
}

/* How many sends ago M last sent to the partition of hash H
 * (IMPORT_RECENT when not among the last IMPORT_RECENT). */
static unsigned sends_since(const struct import_stream *m, uint64_t h)
{
    unsigned n = m->recent_n < IMPORT_RECENT ? m->recent_n : IMPORT_RECENT;

    for (unsigned age = 0; age < n; age++)
        if (m->recent[(m->recent_n - 1 - age) % IMPORT_RECENT] == h)
            return age;
    return IMPORT_RECENT;
}

/* May a transaction of B's partition go now (M's targets, T, may be
 * NULL)? Else *WAIT is lowered to the ms until it may. */
static int may_go(struct import_stream *m, struct http_targets *t, const struct import_batch *b,
                  double now, double *wait)
{
    char key[TARGET_KEY_MAX];
    double w;

    if (!t)
        return 1;
    table_target_key(key, sizeof(key), m->table, b->pk);
    if ((w = http_targets_wait(t, key, (unsigned)b->n, now)) == 0)
        return 1;
    *wait = *wait > 0 && *wait < w ? *wait : w;
    return 0;
}

/* The first choice of a pick: the first queued transaction (its link in
 * M's queue) of the partition sent to least recently among those with
 * none out that may go now; NULL when none. */
static struct import_batch **pick_spread(struct import_stream *m, struct http_targets *t,
                                         double now, double *wait)
{
    struct import_batch **cand[PICK_CANDIDATES], **pp;
    unsigned age[PICK_CANDIDATES];
    int n = 0;

    for (pp = &m->queue; *pp && n < PICK_CANDIDATES; pp = &(*pp)->next) {
        int seen = 0;

        for (int i = 0; i < n && !seen; i++)
            seen = (*cand[i])->pk_hash == (*pp)->pk_hash;
        if (seen || is_out(m, (*pp)->pk_hash))
            continue;
        cand[n] = pp;
        age[n++] = sends_since(m, (*pp)->pk_hash);
    }
    while (n > 0) { /* the oldest first; of equals, the first queued */
        int best = 0;

        for (int i = 1; i < n; i++)
            if (age[i] > age[best])
                best = i;
        if (may_go(m, t, *cand[best], now, wait))
            return cand[best];
        n--; /* in queue order still */
        memmove(&cand[best], &cand[best + 1], (size_t)(n - best) * sizeof(cand[0]));
        memmove(&age[best], &age[best + 1], (size_t)(n - best) * sizeof(age[0]));
    }
    return NULL;
}

/* The queued transaction of M a sender sends next, unlinked (see the top:
 * table_batch charges it to the targets; a partition held to a rate has
 * one out at a time); NULL when none may go now, with *WAIT the ms
 * until the targets admit one (0: none queued). Under m->lock. */
static struct import_batch *pick(struct import_stream *m, double *wait)
{
    struct http_targets *t = table_client_targets(m->s->tc);
    struct import_batch **pp, *b;
    uint64_t refused[PICK_REFUSED];
    char key[TARGET_KEY_MAX];
    double now = http_now_ms();
    int n_refused = 0;

    LOCK_HELD(&m->lock);
    *wait = 0;
    if (!(pp = pick_spread(m, t, now, wait)))
        for (pp = &m->queue; *pp; pp = &(*pp)->next) { /* a second out, of one not held */
            b = *pp;
            if (among(refused, n_refused, b->pk_hash))
                continue;
            if (t) {
                table_target_key(key, sizeof(key), m->table, b->pk);
                /* a partition held to a rate has one out at a time: its
                 * next is charged only when sent, so a second one picked
                 * now would wait in the http layer, holding a sender */
                if (http_targets_rate(t, key, NULL) > 0)
                    continue;
            }
            if (may_go(m, t, b, now, wait))
                break;
            if (n_refused < PICK_REFUSED)
                refused[n_refused++] = b->pk_hash;
        }
    if (!pp || !*pp)
        return NULL;
    b = *pp;
    if (!(*pp = b->next))
        m->queue_tail = pp;
    m->queued--;
    m->queued_bytes -= in_memory(b);
    m->recent[m->recent_n++ % IMPORT_RECENT] = b->pk_hash;
    return b;
}

/* Wait on M's condition for MS at most. */
static void wait_ms(struct import_stream *m, double ms)
{
    struct timespec t;
    long ns = (long)(ms * 1e6);

    LOCK_HELD(&m->lock);
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ns / 1000000000L;
    t.tv_nsec += ns % 1000000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&m->cond, &m->lock, &t);
}

/* A sender (number SLOT of M->out): queued transactions sent one at a
 * time (pick) until the stream stops; once it has failed, what is queued
 * is dropped unsent. */
static void send_loop(struct import_stream *m, int slot)
{
    pthread_mutex_lock(&m->lock);
    for (;;) {
        double wait = 0;
        struct import_batch *b = m->err && m->queue ? m->queue : pick(m, &wait);
        int rc = 0;

        if (!b) {
            if (m->stopping && !m->queue)
                break;
            if (wait > 0)
                wait_ms(m, wait < 100 ? wait : 100);
            else
                pthread_cond_wait(&m->cond, &m->lock);
            continue;
        }
        if (b == m->queue && m->err) { /* dropped unsent */
            if (!(m->queue = b->next))
                m->queue_tail = &m->queue;
            m->queued--;
            m->queued_bytes -= in_memory(b);
        }
        m->running++;
        m->out[slot] = b;
        if (!m->err) {
            pthread_mutex_unlock(&m->lock);
            rc = b->spool_len ? spooled_back(m, b) : 0;
            rc = rc == 0 ? batch_send(m, b) : rc;
            pthread_mutex_lock(&m->lock);
        } else {
            rc = -ECANCELED;
        }
        m->out[slot] = NULL;
        if (rc == 0) {
            m->applied += b->n;
            m->transactions++;
        } else {
            m->dropped += b->n;
        }
        for (size_t i = 0; i < b->n; i++)
            import_filter_add(m, b->key[i], -1);
        m->running--;
        pthread_cond_broadcast(&m->cond);
        pthread_mutex_unlock(&m->lock);
        import_batch_free(b);
        pthread_mutex_lock(&m->lock);
    }
    pthread_mutex_unlock(&m->lock);
}

/* See stream/stream_i.h. */
void *import_sender(void *arg)
{
    struct import_stream *m = arg;
    int slot;

    pthread_mutex_lock(&m->lock);
    slot = m->next_slot++;
    pthread_mutex_unlock(&m->lock);
    send_loop(m, slot);
    return NULL;
}

/* Wait on M's condition, a tenth of a second at most (the caller looks at
 * whether its request was interrupted). */
static void wait_a_little(struct import_stream *m)
{
    struct timespec t;

    LOCK_HELD(&m->lock);
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += 100 * 1000 * 1000;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&m->cond, &m->lock, &t);
}

/* Has the write the writer serves been interrupted (or the mount ended)?
 * A flush is never. */
static int interrupted(const struct import_stream *m)
{
    return !m->closing && m->s->cancelled && m->s->cancelled(m->s->cancel_ctx);
}

/* Has M's queue room for held transaction B? Always when empty; one in
 * memory past the cache's size only when empty. */
static int has_room(const struct import_stream *m, const struct import_batch *b)
{
    LOCK_HELD(&m->lock);
    return m->queued == 0 ||
        (m->queued < IMPORT_QUEUE_MAX && (b->spool_len || m->queued_bytes < m->queue_bytes));
}

/* See stream/stream_i.h. */
int import_submit(struct import_stream *m, int i)
{
    struct import_batch *b = m->held[i];
    int rc;

    pthread_mutex_lock(&m->lock);
    while (!m->err && !has_room(m, b) && !interrupted(m)) {
        if (!b->spool_len && m->s->spool_dir && !m->spool_broken && m->queued < IMPORT_QUEUE_MAX) {
            pthread_mutex_unlock(&m->lock);
            import_spool_put(m, b); /* a failure: B as it was, the spool off */
            pthread_mutex_lock(&m->lock);
            continue;
        }
        wait_a_little(m);
    }
    rc = m->err ? m->err : has_room(m, b) ? 0 : -EINTR;
    if (rc == 0) { /* B is the senders' from here: a sender may free it once we unlock */
        m->held_bytes -= b->bytes;
        m->held[i] = m->held[--m->n_held];
        b->next = NULL;
        *m->queue_tail = b;
        m->queue_tail = &b->next;
        m->queued++;
        m->queued_bytes += in_memory(b);
        pthread_cond_signal(&m->cond);
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

/* Queue every held transaction and wait until all are answered. Returns 0,
 * the stream's failure, or -EINTR. */
int import_drain(struct import_stream *m)
{
    int rc = 0;

    while (m->n_held > 0 && (rc = import_submit(m, m->n_held - 1)) == 0)
        ;
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&m->lock);
    while ((m->queued > 0 || m->running > 0) && !interrupted(m))
        wait_a_little(m);
    rc = m->err ? m->err : m->queued > 0 || m->running > 0 ? -EINTR : 0;
    pthread_mutex_unlock(&m->lock);
    return rc;
}
