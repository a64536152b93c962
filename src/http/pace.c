/* http/pace.c - when requests go: one mount's request rate (the -o
 * max_rps cap, and the slowdown every thread shares when the service
 * throttles, not for a 503 now and then; http.h). A retry's own wait is
 * http/retry.c's. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "http/http.h"

#define PACE_MIN_RPS 1.0    /* a throttled mount still makes progress */
#define PACE_CUT_GAP 1000   /* ms: one cut per burst of throttled answers */
#define PACE_WINDOW 1000    /* ms: the window the recent rate is counted over */
#define PACE_HOLD_MAX 60000 /* ms: the longest Retry-After every request heeds */
/* Throttling is sustained, and slows the whole mount, when at least
 * PACE_BUSY_MIN of the answers within the last two windows (PACE_JUDGE_MIN
 * or more) were throttled, and a PACE_BUSY_SHARE more of them than the
 * share that is no doing of the mount's rate (below), or an answer asks
 * for a wait over PACE_HOLD_OWN ms. Short of that a throttled answer costs only its own
 * request's backoff. */
#define PACE_BUSY_MIN 4
#define PACE_BUSY_SHARE 0.0625
#define PACE_HOLD_OWN 2000
/* A cut is judged PACE_CUT_GAP ms on, by PACE_JUDGE_MIN answers or more.
 * A service that throttles the mount's rate refuses next to nothing once
 * the rate is cut to what it served. When a third or more are still
 * refused (PACE_STRONG), it throttles harder: the cut stays. When
 * PACE_BUSY_MIN or more are, and PACE_BUSY_SHARE of them or more,
 * slowing down did not help - the 503s are a front end's now and then,
 * not an answer to the rate - and the cut is undone; the larger of that
 * share and the one that brought the cut is then the mount's base for
 * PACE_BASE_MS. When fewer came in the answers that would have shown
 * them (PACE_BUSY_MIN / PACE_BUSY_SHARE), the cut helped: it stays. No
 * cut follows one not judged yet. */
#define PACE_JUDGE_MIN 10
#define PACE_STRONG (1.0 / 3)
#define PACE_BASE_MS 60000

struct http_pace {
    pthread_mutex_t mu;
    const struct logger *lg;
    double cap;                       /* -o max_rps; 0: none */
    double rate;                      /* requests per second allowed now; 0: no limit */
    double next_ms;                   /* the earliest start of the next request */
    double hold_ms;                   /* no request starts before this (Retry-After) */
    double cut_ms;                    /* when the rate was last cut; < 0: never */
    double cut_from;                  /* the rate the last cut lowered */
    double cut_to;                    /* and what it lowered it to */
    double grown_ms;                  /* when the rate last grew back */
    double win_ms;                    /* the start of the current counting window */
    unsigned win_count;               /* starts in it */
    double seen;                      /* the rate of the last whole window */
    unsigned long good, refused;      /* answers since the last cut: served, throttled */
    double ans_ms;                    /* the start of the current window of answers */
    unsigned ans_good, ans_refused;   /* answers in it: served, throttled */
    unsigned prev_good, prev_refused; /* in the window before it (0 if not just before) */
    double before;                    /* the rate allowed before the last cut */
    double cut_share;                 /* the share throttled that brought it */
    int judged;                       /* has the last cut been judged? */
    double base_share, base_ms;       /* throttled share not the rate's doing, and when */
    double *ring;                     /* with a cap: when the last ring_n requests started */
    size_t ring_n, ring_i, ring_used;
    unsigned long cuts;           /* slowdowns so far */
    struct http_targets *targets; /* the bulk writers' rates (targets.c) */
};

/* See http.h. */
int http_pace_new(struct http_pace **out, double max_rps, const struct logger *lg)
{
    struct http_pace *p;

    *out = NULL;
    if (max_rps < 0)
        return -EINVAL;
    if (!(p = calloc(1, sizeof(*p))))
        return -ENOMEM;
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        return -ENOMEM;
    }
    p->ring_n = max_rps > 0 ? (size_t)max_rps + (max_rps > (double)(size_t)max_rps) : 0;
    if (p->ring_n && !(p->ring = calloc(p->ring_n, sizeof(*p->ring)))) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return -ENOMEM;
    }
    if (http_targets_new(&p->targets, lg) < 0) {
        pthread_mutex_destroy(&p->mu);
        free(p->ring);
        free(p);
        return -ENOMEM;
    }
    p->lg = lg;
    p->cap = max_rps;
    p->rate = max_rps;
    p->cut_ms = -1;
    *out = p;
    return 0;
}

/* See http.h. */
void http_pace_free(struct http_pace *p)
{
    if (!p)
        return;
    http_targets_free(p->targets);
    pthread_mutex_destroy(&p->mu);
    free(p->ring);
    free(p);
}

/* See http.h. */
struct http_targets *http_pace_targets(struct http_pace *p)
{
    return p ? p->targets : NULL;
}

/* Additive increase, under p->mu: a cut rate grows back by a twentieth
 * of what it was cut to per second without a throttled answer (at least
 * 1/s), up to the cap; without a cap the limit ends once the rate is back
 * to twice the rate that was cut (it no longer holds anything back). */
static void grow(struct http_pace *p, double now)
{
    double step;
    long secs;

    if (p->cut_ms < 0 || p->rate <= 0 || now - p->grown_ms < 1000)
        return;
    secs = (long)((now - p->grown_ms) / 1000);
    step = p->cut_to / 20 > 1 ? p->cut_to / 20 : 1;
    p->rate += step * (double)secs;
    p->grown_ms += 1000.0 * (double)secs;
    if (p->cap > 0 && p->rate >= p->cap)
        p->rate = p->cap;
    else if (p->cap <= 0 && p->rate >= 2 * p->cut_from)
        p->rate = 0;
}

/* See http.h. */
double http_pace_reserve(struct http_pace *p, double now)
{
    double start;

    pthread_mutex_lock(&p->mu);
    grow(p, now);
    if (now - p->win_ms >= PACE_WINDOW) {
        p->seen = now - p->win_ms < 2 * PACE_WINDOW ? p->win_count * 1000.0 / (now - p->win_ms) : 0;
        p->win_ms = now;
        p->win_count = 0;
    }
    p->win_count++;
    start = now > p->hold_ms ? now : p->hold_ms;
    if (p->rate > 0) {
        if (p->next_ms > start)
            start = p->next_ms;
        p->next_ms = start + 1000.0 / p->rate;
    }
    pthread_mutex_unlock(&p->mu);
    return start;
}

/* See http.h. */
double http_pace_admit(struct http_pace *p, double now)
{
    double wait = 0;

    pthread_mutex_lock(&p->mu);
    if (p->ring_n && p->ring_used == p->ring_n && now < p->ring[p->ring_i] + 1000)
        wait = p->ring[p->ring_i] + 1000 - now;
    else if (p->ring_n) {
        p->ring[p->ring_i] = now;
        p->ring_i = (p->ring_i + 1) % p->ring_n;
        if (p->ring_used < p->ring_n)
            p->ring_used++;
    }
    pthread_mutex_unlock(&p->mu);
    return wait;
}

/* The cut of a throttled answer at NOW, under p->mu: from the rate
 * allowed, or the rate sent when that is lower (or there is no limit), to
 * the share of it the service served since the last cut, at most 0.7 of
 * it (at least PACE_MIN_RPS). Returns the new rate. */
static double cut(struct http_pace *p, double now, double recent)
{
    double from, share;

    if (p->seen <= 0 && now > p->win_ms) /* the first window: so far */
        p->seen = p->win_count * 1000.0 / (now - p->win_ms > 100 ? now - p->win_ms : 100);
    from = p->rate > 0 && (p->seen <= 0 || p->seen >= p->rate) ? p->rate : p->seen;
    share = p->good + p->refused > 0 ? (double)p->good / (double)(p->good + p->refused) : 0.7;
    if (share > 0.7)
        share = 0.7;
    p->before = p->rate;
    p->cut_share = recent;
    p->judged = 0;
    p->cut_from = from;
    p->cut_to = from * share < PACE_MIN_RPS ? PACE_MIN_RPS : from * share;
    p->rate = p->cut_to;
    p->cut_ms = p->grown_ms = now;
    p->good = p->refused = 0;
    p->cuts++;
    return p->rate;
}

/* Count an answer at NOW in the window of answers, under p->mu. */
static void count_answer(struct http_pace *p, double now, int throttled)
{
    if (now - p->ans_ms >= PACE_WINDOW) {
        int adjacent = now - p->ans_ms < 2 * PACE_WINDOW;

        p->prev_good = adjacent ? p->ans_good : 0;
        p->prev_refused = adjacent ? p->ans_refused : 0;
        p->ans_good = p->ans_refused = 0;
        p->ans_ms = now;
    }
    if (throttled)
        p->ans_refused++;
    else
        p->ans_good++;
}

/* The share of the answers within the last two windows that were
 * throttled, under p->mu; *REFUSED: how many, of *ALL. */
static double recent_share(const struct http_pace *p, unsigned *refused, unsigned *all)
{
    *refused = p->ans_refused + p->prev_refused;
    *all = *refused + p->ans_good + p->prev_good;
    return *all ? (double)*refused / *all : 0;
}

/* Is the service throttling the mount, not one request now and then, at
 * NOW: a throttled answer asking for RETRY_AFTER_MS just counted, under
 * p->mu? *RECENT: the share throttled lately. */
static int busy(const struct http_pace *p, double now, long retry_after_ms, double *recent)
{
    double base = now - p->base_ms < PACE_BASE_MS ? p->base_share : 0;
    unsigned refused, all;

    *recent = recent_share(p, &refused, &all);
    return retry_after_ms > PACE_HOLD_OWN ||
        (refused >= PACE_BUSY_MIN && all >= PACE_JUDGE_MIN && *recent >= base + PACE_BUSY_SHARE);
}

/* Judge the last cut at NOW, under p->mu (see PACE_JUDGE_MIN): returns
 * the share throttled when it is undone, else 0. */
static double judge(struct http_pace *p, double now)
{
    unsigned long all = p->good + p->refused;
    double after;

    if (p->cut_ms < 0 || p->judged || now - p->cut_ms < PACE_CUT_GAP || all < PACE_JUDGE_MIN)
        return 0;
    after = (double)p->refused / (double)all;
    if (after >= PACE_STRONG || (p->refused < PACE_BUSY_MIN || after < PACE_BUSY_SHARE)) {
        /* throttled harder, or (with enough answers to tell) helped */
        p->judged = after >= PACE_STRONG || (double)all >= PACE_BUSY_MIN / PACE_BUSY_SHARE;
        return 0;
    }
    p->judged = 1;
    p->rate = p->before;
    if (p->rate > 0 && (p->cap <= 0 || p->rate < p->cap)) { /* an earlier cut grows on */
        p->cut_to = p->rate;
        p->cut_ms = p->grown_ms = now;
    } else {
        p->cut_ms = -1;
    }
    p->base_share = after > p->cut_share ? after : p->cut_share;
    p->base_ms = now;
    return after;
}

/* See http.h. */
void http_pace_answered(struct http_pace *p, double now, int throttled, long retry_after_ms)
{
    double from = 0, to = 0, undone, recent;

    pthread_mutex_lock(&p->mu);
    count_answer(p, now, throttled);
    if (throttled)
        p->refused++;
    else
        p->good++;
    undone = judge(p, now);
    if (throttled && busy(p, now, retry_after_ms, &recent)) {
        if (retry_after_ms > PACE_HOLD_MAX)
            retry_after_ms = PACE_HOLD_MAX; /* longer: the request's own retries end */
        if (retry_after_ms > 0 && now + retry_after_ms > p->hold_ms)
            p->hold_ms = now + retry_after_ms;
        if (p->cut_ms < 0 || (p->judged && now - p->cut_ms >= PACE_CUT_GAP)) {
            to = cut(p, now, recent);
            from = p->cut_from;
        }
    } /* else its own retry waits; nobody else does */
    pthread_mutex_unlock(&p->mu);
    if (undone > 0 && p->lg)
        log_info(p->lg,
                 "the service refuses %.0f%% of requests however fast they go: not this "
                 "mount's doing, its rate is back",
                 undone * 100);
    if (to > 0 && p->lg)
        log_info(p->lg,
                 "the service is throttling: every request of this mount slowed to %.0f "
                 "per second (from %.0f), growing back as it answers",
                 to, from);
}

/* See http.h. */
double http_pace_rate(struct http_pace *p, unsigned long *cuts)
{
    double r;

    pthread_mutex_lock(&p->mu);
    r = p->rate;
    if (cuts)
        *cuts = p->cuts;
    pthread_mutex_unlock(&p->mu);
    return r;
}
