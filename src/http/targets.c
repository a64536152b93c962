/* http/targets.c - the service's scalability targets as one mount learns
 * them: how many entities a second each key (a partition) takes before the
 * service throttles (http.h).
 *
 * Azure publishes the targets (2,000 entities a second a partition,
 * 20,000 an account) but a service may serve less (Cosmos DB's throughput
 * is provisioned; another client may share the account), so they are
 * learned, not assumed: a key has no limit until a write of it is
 * throttled; then its rate is 0.9 of what it was served over the last
 * second or two (one such write a second when less), cut again by 0.9
 * by each throttled write started after the last cut (multiplicative
 * decrease), and grown by 2% a second while writes are served; the limit
 * ends once the rate is back to twice the level cut.
 *
 * The account's target needs no rate of its own: when the account is the
 * limit, the partitions written are throttled in turn and each cuts its
 * own rate, so that together they settle at what the account serves (as
 * TCP's flows share a link). An account-wide rate judged from those same
 * answers cannot tell the two limits apart, and cut a partition-limited
 * job to a fraction (0.35 of 20 partitions' in the simulation of
 * tests/unit/test_targets.c). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"

#define TARGET_KEYS 1024        /* keys remembered; the least recently used goes */
#define TARGET_CUT 0.9          /* a cut keeps this share */
#define TARGET_GROW 0.02        /* of the rate, per second served */
#define TARGET_WINDOW_MS 1000.0 /* what was served is counted per window */
#define TARGET_MIN 1.0          /* entities a second: a throttled key still moves */

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
 * least recently (NULL when out of memory: the key is then not limited). */
static struct target *find(struct http_targets *t, const char *key, double now)
{
    unsigned long h = key_hash(key);
    struct target *old = &t->keys[0];
    char *dup;

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
    *old = (struct target){ .key = dup, .hash = h, .used_ms = now, .cut_ms = -1e18 };
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

/* Growth of E, served at NOW. */
static void grow(struct target *e, double now)
{
    double dt = (now - e->grown_ms) / 1000.0;

    if (e->rate <= 0)
        return;
    e->grown_ms = now;
    e->rate *= 1 + TARGET_GROW * (dt > 1 ? 1 : dt);
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
    if (from <= 0) /* the first cut: from what was served, or one such write a second */
        from = served > n ? served : n;
    e->rate = from * TARGET_CUT < TARGET_MIN ? TARGET_MIN : from * TARGET_CUT;
    e->level = e->rate;
    e->cut_ms = e->grown_ms = now;
    return 1;
}

/* Charge E a write of N entities starting at NOW. */
static void charge(struct target *e, unsigned n, double now)
{
    if (e->rate > 0)
        e->next_ms = (e->next_ms > now ? e->next_ms : now) + n * 1000.0 / e->rate;
}

/* A write of N to E throttled at NOW took none of the service's budget:
 * its slot is given back, but its retry waits half a write's time (the
 * budget was short of it, by about half on average). */
static void refund(struct target *e, unsigned n, double now)
{
    double slot = n * 1000.0 / e->rate;

    e->next_ms = e->next_ms - slot > now + slot / 2 ? e->next_ms - slot : now + slot / 2;
}

/* When a write of target E (may be NULL) may start, under t->mu. */
static double start_at(const struct target *e)
{
    return e ? e->next_ms : 0;
}

/* See http.h. */
double http_targets_wait(struct http_targets *t, const char *key, unsigned n, double now)
{
    double at;

    (void)n;
    pthread_mutex_lock(&t->mu);
    at = start_at(find(t, key, now));
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
    at = start_at(e);
    if (at > now) {
        pthread_mutex_unlock(&t->mu);
        return at - now;
    }
    if (e)
        charge(e, n, now);
    pthread_mutex_unlock(&t->mu);
    return 0;
}

/* See http.h. */
void http_targets_answered(struct http_targets *t, const char *key, unsigned n, int throttled,
                           double started, double now)
{
    struct target *e;

    pthread_mutex_lock(&t->mu);
    if ((e = find(t, key, now))) {
        roll(e, now);
        if (!throttled) {
            e->served += n;
            grow(e, now);
        } else {
            if (cut(e, n, started, now)) {
                t->cuts++;
                log_info(t->lg, "partition '%.80s' throttled: %.0f entities a second from now", key,
                         e->rate);
            }
            refund(e, n, now);
        }
    }
    pthread_mutex_unlock(&t->mu);
}

/* See http.h. */
double http_targets_rate(struct http_targets *t, const char *key, unsigned long *cuts)
{
    unsigned long h = key_hash(key);
    double r = 0;

    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < TARGET_KEYS; i++)
        if (t->keys[i].key && t->keys[i].hash == h && strcmp(t->keys[i].key, key) == 0)
            r = t->keys[i].rate;
    if (cuts)
        *cuts = t->cuts;
    pthread_mutex_unlock(&t->mu);
    return r;
}
