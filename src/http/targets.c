/* http/targets.c - the service's scalability targets as one mount learns
 * them: how many entities a second each key (a partition) and the account
 * take before the service throttles (http.h).
 *
 * Azure publishes the targets (2,000 entities a second a partition,
 * 20,000 an account) but a service may serve less (Cosmos DB's throughput
 * is provisioned; another client may share the account), so they are
 * learned, not assumed: a key has no limit until a write of it is
 * throttled; then its rate is 0.9 of what it was served over the last
 * second or two (one such write a second when less), cut again by 0.9
 * by each throttled write started after the last cut (multiplicative
 * decrease), and grown while writes are served: 2% a second, but a tenth
 * of that in the last 3% below the rate last refused; the limit ends once
 * the rate is back to twice the level cut.
 *
 * Azure gives every partition the same target, so a key first seen after
 * another was cut starts at the level the last cut set (and grows from
 * there as any other): a job that moves from partition to partition,
 * as a restore in partition order does, learns the rate once, not once a
 * partition (each lesson a refused write).
 *
 * The account is one more target, learned the same way from the answers
 * that name it: Azure's ServerBusy says "Operations per second is over the
 * account limit." (or "Ingress"/"Egress") where a partition's says "The
 * server is busy." (Common REST API error codes). A refusal cuts only the
 * rate it names. Judged from every refusal alike, an account-wide rate
 * cut a partition-limited job to 0.35 of 20 partitions' (the simulation
 * of tests/unit/test_targets.c); judged per partition alone, an
 * account-limited job spread its refusals over every partition and cut
 * each in turn (0.86 of the account's, a quarter of its writes refused). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"

#define TARGET_KEYS 1024          /* keys remembered; the least recently used goes */
#define TARGET_CUT 0.9            /* a cut keeps this share */
#define TARGET_GROW 0.02          /* of the rate, per second served */
#define TARGET_NEAR 0.97          /* of the rate last refused: growth slows */
#define TARGET_WINDOW_MS 1000.0   /* what was served is counted per window */
#define TARGET_MIN 1.0            /* entities a second: a throttled key still moves */
#define TARGET_SLOT_MAX_MS 2000.0 /* a request's turn is this long at most */

struct target {
    char *key;
    unsigned long hash;
    double rate;             /* entities a second allowed; 0: no limit */
    double level;            /* what the last cut set it to */
    double next_ms;          /* the earliest start of the next write */
    double used_ms;          /* last asked for */
    double cut_ms, grown_ms; /* the last cut, the last growth */
    double win_ms;           /* the current window's start */
    double served, prev;     /* entities served in it and in the one before */
};

struct http_targets {
    pthread_mutex_t mu;
    const struct logger *lg;
    struct target keys[TARGET_KEYS];
    struct target account; /* key NULL */
    double prior;          /* the level the last cut set: a new key's rate */
    unsigned long cuts;
};

/* See http.h. */
int http_targets_new(struct http_targets **out, const struct logger *lg)
{
    struct http_targets *t;

    *out = NULL;
    if (!(t = calloc(1, sizeof(*t))))
        return -ENOMEM;
    if (pthread_mutex_init(&t->mu, NULL) != 0) {
        free(t);
        return -ENOMEM;
    }
    t->lg = lg;
    t->account.cut_ms = -1e18;
    *out = t;
    return 0;
}

/* See http.h. */
void http_targets_free(struct http_targets *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < TARGET_KEYS; i++)
        free(t->keys[i].key);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static unsigned long key_hash(const char *s)
{
    unsigned long h = 5381;

    while (*s)
        h = h * 33 ^ (unsigned char)*s++;
    return h;
}

/* KEY's target, under t->mu: found, or made in the place of the one used
 * least recently; NULL for "" (the account's alone), or when out of memory
 * (the key is then not limited). */
static struct target *find(struct http_targets *t, const char *key, double now)
{
    unsigned long h = key_hash(key);
    struct target *old = &t->keys[0];
    char *dup;

    if (!key[0])
        return NULL; /* the account's alone */

    for (size_t i = 0; i < TARGET_KEYS; i++) {
        struct target *e = &t->keys[i];

        if (e->key && e->hash == h && strcmp(e->key, key) == 0) {
            e->used_ms = now;
            return e;
        }
        if (!e->key || (old->key && e->used_ms < old->used_ms))
            old = e;
    }
    if (!(dup = strdup(key)))
        return NULL;
    free(old->key);
    *old = (struct target){ .key = dup,
                            .hash = h,
                            .used_ms = now,
                            .cut_ms = -1e18,
                            .rate = t->prior,
                            .level = t->prior,
                            .grown_ms = now };
    return old;
}

/* Move E's window of served entities on to NOW. */
static void roll(struct target *e, double now)
{
    if (now - e->win_ms < TARGET_WINDOW_MS)
        return;
    e->prev = now - e->win_ms < 2 * TARGET_WINDOW_MS ? e->served : 0;
    e->served = 0;
    e->win_ms = now;
}

/* What E was served a second, over its last window and this one (a
 * second at least: a burst that came through is not a rate). */
static double served_rate(const struct target *e, double now)
{
    double span = now - e->win_ms + (e->prev > 0 ? TARGET_WINDOW_MS : 0);

    return (e->served + e->prev) * 1000.0 / (span > TARGET_WINDOW_MS ? span : TARGET_WINDOW_MS);
}

/* Growth of E, served at NOW: 2% a second up to TARGET_NEAR of the rate
 * it was last refused at (level / TARGET_CUT), a tenth of that from there
 * to that rate, 2% again past it (as CUBIC's window lingers near where it
 * was last cut: each refusal costs the key a write's time). */
static void grow(struct target *e, double now)
{
    double dt = (now - e->grown_ms) / 1000.0, peak = e->level / TARGET_CUT;
    double by = e->rate >= TARGET_NEAR * peak && e->rate < peak ? TARGET_GROW / 10 : TARGET_GROW;

    if (e->rate <= 0)
        return;
    e->grown_ms = now;
    e->rate *= 1 + by * (dt > 1 ? 1 : dt);
    if (e->rate >= 2 * e->level)
        e->rate = 0; /* the limit no longer holds anything back */
}

/* Multiplicative decrease of E, throttled at NOW for a write of N that
 * started at STARTED; 1 when it was cut. A write started before the last
 * cut says nothing of the rate it set. */
static int cut(struct target *e, unsigned n, double started, double now)
{
    double served = served_rate(e, now), from = e->rate;

    if (started < e->cut_ms + 1)
        return 0;
    if (served < n)
        served = n; /* one such write a second at least */
    /* the first cut is from what was served; a later one from the rate,
     * or from what was served when less over two windows of writes (a
     * rate set too high, as a new key's from another's, comes down in one
     * cut, not in one refusal per 10%) */
    if (from <= 0 || (e->prev > 0 && served < from))
        from = served;
    e->rate = from * TARGET_CUT < TARGET_MIN ? TARGET_MIN : from * TARGET_CUT;
    e->level = e->rate;
    e->cut_ms = e->grown_ms = now;
    return 1;
}

/* The time a request of N entities takes of E's rate: two seconds at
 * most, so that a target lets a request through every two seconds however
 * low its rate (a query is charged an estimate: its last page's entities). */
static double slot_ms(const struct target *e, unsigned n)
{
    double ms = n * 1000.0 / e->rate;

    return ms < TARGET_SLOT_MAX_MS ? ms : TARGET_SLOT_MAX_MS;
}

/* Charge E a write of N entities starting at NOW. */
static void charge(struct target *e, unsigned n, double now)
{
    if (e->rate > 0)
        e->next_ms = (e->next_ms > now ? e->next_ms : now) + slot_ms(e, n);
}

/* A write of N to E refused at NOW for E's rate: the service's budget
 * for E is short of N (a token bucket refills in about a write's time at
 * E's rate), so E's next turn is a write's time from now at the soonest.
 * The refused write's own turn is not given back: turns given since are
 * held by other writes, and a turn given twice is a second refusal. */
static void hold_off(struct target *e, unsigned n, double now)
{
    double at = now + slot_ms(e, n);

    if (e->next_ms < at)
        e->next_ms = at;
}

/* A write charged CHARGED entities of E moved N: its turn and its count
 * made what it was. */
static void settle(struct target *e, unsigned charged, unsigned n)
{
    e->served += (double)n - charged;
    if (e->served < 0)
        e->served = 0;
    if (e->rate > 0)
        e->next_ms += slot_ms(e, n) - slot_ms(e, charged);
}

/* What an answer was to one target. */
enum verdict { SERVED, REFUSED_HERE, REFUSED_ELSEWHERE };

/* Count a write of N to E, started at STARTED, answered at NOW with V;
 * 1 when it cut E's rate. A write refused for another target's rate
 * says nothing of E's. */
static int answered(struct target *e, unsigned n, enum verdict v, double started, double now)
{
    int cutnow = 0;

    roll(e, now);
    if (v == SERVED) {
        e->served += n;
        grow(e, now);
    } else if (v == REFUSED_HERE) {
        cutnow = cut(e, n, started, now);
        hold_off(e, n, now);
    }
    return cutnow;
}

/* What REFUSED (an enum http_refusal) was to the target that FOR names. */
static enum verdict verdict_of(int refused, int for_)
{
    return refused == HTTP_SERVED ? SERVED : refused == for_ ? REFUSED_HERE : REFUSED_ELSEWHERE;
}

/* When a write of target E (may be NULL) may start, under t->mu: when
 * both E's and the account's next slots have come. */
static double start_at(const struct http_targets *t, const struct target *e)
{
    double at = e ? e->next_ms : 0;

    return t->account.rate > 0 && t->account.next_ms > at ? t->account.next_ms : at;
}

/* See http.h. */
double http_targets_wait(struct http_targets *t, const char *key, unsigned n, double now)
{
    double at;

    (void)n;
    pthread_mutex_lock(&t->mu);
    at = start_at(t, find(t, key, now));
    pthread_mutex_unlock(&t->mu);
    return at > now ? at - now : 0;
}

/* See http.h. */
double http_targets_admit(struct http_targets *t, const char *key, unsigned n, double now)
{
    struct target *e;
    double at;

    pthread_mutex_lock(&t->mu);
    e = find(t, key, now);
    at = start_at(t, e);
    if (at < now)
        at = now;
    if (e)
        charge(e, n, at);
    charge(&t->account, n, at);
    pthread_mutex_unlock(&t->mu);
    return at - now;
}

/* See http.h. */
void http_targets_answered(struct http_targets *t, const char *key, unsigned n, int refused,
                           double started, double now)
{
    struct target *e;

    pthread_mutex_lock(&t->mu);
    if ((e = find(t, key, now)) &&
        answered(e, n, verdict_of(refused, HTTP_REFUSED_KEY), started, now)) {
        t->cuts++;
        t->prior = e->level;
        log_info(t->lg, "partition '%.80s' throttled: %.0f entities a second from now", key,
                 e->rate);
    }
    if (answered(&t->account, n, verdict_of(refused, HTTP_REFUSED_ACCOUNT), started, now)) {
        t->cuts++;
        log_info(t->lg, "account throttled: %.0f entities a second from now", t->account.rate);
    }
    pthread_mutex_unlock(&t->mu);
}

/* See http.h. */
void http_targets_settle(struct http_targets *t, const char *key, unsigned charged, unsigned n,
                         double now)
{
    struct target *e;

    if (n == charged)
        return;
    pthread_mutex_lock(&t->mu);
    if ((e = find(t, key, now)))
        settle(e, charged, n);
    settle(&t->account, charged, n);
    pthread_mutex_unlock(&t->mu);
}

/* See http.h. */
double http_targets_rate(struct http_targets *t, const char *key, unsigned long *cuts)
{
    unsigned long h = key ? key_hash(key) : 0;
    double r = 0;

    pthread_mutex_lock(&t->mu);
    if (!key)
        r = t->account.rate;
    for (size_t i = 0; key && i < TARGET_KEYS; i++)
        if (t->keys[i].key && t->keys[i].hash == h && strcmp(t->keys[i].key, key) == 0)
            r = t->keys[i].rate;
    if (cuts)
        *cuts = t->cuts;
    pthread_mutex_unlock(&t->mu);
    return r;
}
