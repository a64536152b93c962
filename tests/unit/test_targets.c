/* test_targets.c - http/targets.c on a clock of the test's own: no limit
 * until a write is throttled; then 0.9 of what was served, writes spaced
 * by it, a throttled write's slot given back, grown by 2% a second, cut
 * again by 0.9 only by a write started after the cut, the limit ended at
 * twice the level, one
 * partition's limit not another's; and, against a simulated service with Azure's targets (token
 * buckets of one second per partition and for the account, a throttled
 * write retried after a backoff as the http layer does), writers that
 * reach at least 0.8 of the service's limit with a quarter of the sends
 * throttled at most, on one partition and on twenty. (The simulation is
 * coarse on purpose, as bench/limits.py's scale is: at 100 entities a
 * second a partition a transaction of 100 is a whole second of its
 * budget, so each refusal costs far more than at Azure's 2,000.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "http/http.h"

#define T0 1000000.0 /* ms: a monotonic clock well past 0 */

static const struct logger quiet = { .level = LOG_LVL_QUIET };

static void test_learning(void)
{
    struct http_targets *t;
    unsigned long cuts = 9;
    int at_once = 0;
    double w, r, slot;

    is_int(http_targets_new(&t, &quiet), 0, "new targets");
    for (int i = 0; i < 50; i++)
        at_once += http_targets_admit(t, "T\np", 100, T0) == 0;
    is_int(at_once, 50, "nothing learned: fifty writes of 100 go at once");
    ok(http_targets_rate(t, "T\np", &cuts) == 0 && cuts == 0, "no rate, no cut");
    for (int i = 1; i <= 3; i++)
        http_targets_answered(t, "T\np", 100, 0, T0, T0 + 50 * i);
    http_targets_answered(t, "T\np", 100, 1, T0, T0 + 200);
    r = http_targets_rate(t, "T\np", &cuts);
    ok(fabs(r - 0.9 * 300) < 1e-6 && cuts == 1,
       "throttled after 300 served within a second: 0.9 of 300/s (%.1f)", r);
    slot = 100 * 1000.0 / r;
    w = http_targets_wait(t, "T\np", 100, T0 + 200);
    ok(fabs(w - slot / 2) < 1e-6, "the throttled write's retry waits half a write's time (%.0f ms)",
       w);
    http_targets_answered(t, "T\np", 100, 1, T0, T0 + 300);
    ok(http_targets_rate(t, "T\np", &cuts) == r && cuts == 1,
       "a write started before the cut, throttled: no second cut");
    ok(http_targets_admit(t, "T\np", 100, T0 + 300 + slot / 2) == 0,
       "the next write goes half a write's time after the last refusal");
    w = http_targets_admit(t, "T\np", 100, T0 + 300 + slot / 2);
    ok(fabs(w - slot) < 1e-6, "the one after it waits 100 / %.0f s (%.0f ms)", r, w);
    ok(http_targets_admit(t, "T\nq", 100, T0 + 300) == 0, "another partition is not held");
    http_targets_answered(t, "T\np", 100, 0, T0 + 300, T0 + 1200);
    w = http_targets_rate(t, "T\np", NULL);
    ok(fabs(w - r * 1.02) < 1e-6, "a second served: +2%% (%.2f)", w);
    http_targets_answered(t, "T\np", 100, 1, T0 + 1100, T0 + 1400);
    ok(fabs(http_targets_rate(t, "T\np", &cuts) - w * 0.9) < 1e-6 && cuts == 2,
       "a write started after the cut, throttled: cut again by 0.9 (%.1f)",
       http_targets_rate(t, "T\np", NULL));
    for (double now = T0 + 1500; now < T0 + 120000; now += 500)
        http_targets_answered(t, "T\np", 50, 0, now, now);
    ok(http_targets_rate(t, "T\np", NULL) == 0, "back to twice the level: no limit");
    http_targets_free(t);
}

static void test_many_keys(void)
{
    struct http_targets *t;
    unsigned long cuts;
    char key[16];

    http_targets_new(&t, &quiet);
    for (int i = 0; i < 3; i++) {
        snprintf(key, sizeof(key), "T\np%d", i);
        http_targets_answered(t, key, 100, 0, T0, T0 + 10);
        http_targets_answered(t, key, 100, 1, T0 + 20, T0 + 30);
    }
    ok(http_targets_rate(t, "T\np0", &cuts) > 0 && cuts == 3, "three partitions: three cuts");
    ok(http_targets_admit(t, "T\nnew", 100, T0 + 50) == 0 &&
           http_targets_admit(t, "T\nnew", 100, T0 + 50) == 0,
       "a partition never throttled is not held by the others'");
    ok(http_targets_wait(t, "T\np0", 100, T0 + 5000) == 0 &&
           http_targets_wait(t, "T\np0", 100, T0 + 5000) == 0 &&
           http_targets_admit(t, "T\np0", 100, T0 + 5000) == 0 &&
           http_targets_wait(t, "T\np0", 100, T0 + 5000) > 0,
       "asking when charges nothing; admitting does");
    for (int i = 0; i < 3000; i++) { /* more keys than are remembered */
        snprintf(key, sizeof(key), "U\n%d", i);
        http_targets_answered(t, key, 1, 0, T0 + 6000, T0 + 6000);
    }
    ok(http_targets_rate(t, "T\np0", NULL) == 0, "3,000 partitions later: the oldest forgotten");
    http_targets_free(t);
}

/* --- a simulated service ---------------------------------------------------------------- */

#define SIM_PARTS 20
#define SIM_SENDERS 8
#define SIM_RTT 25.0

struct bucket {
    double tokens, rate, at;
};

/* May BK pay N at NOW? (refilled to one second's worth at most) */
static int pay(struct bucket *bk, double n, double now)
{
    bk->tokens += (now - bk->at) * bk->rate / 1000.0;
    bk->at = now;
    if (bk->tokens > bk->rate)
        bk->tokens = bk->rate;
    if (bk->tokens < n)
        return 0;
    bk->tokens -= n;
    return 1;
}

struct sim_result {
    double seconds;
    unsigned long batches, throttled;
};

/* A writer of the simulation: idle from AT (P < 0), or with partition P's
 * batch: waiting from AT for the targets to admit it (SENT 0), or its
 * attempt, sent at SENT, reaching the service at AT. */
struct sim_sender {
    double at, sent;
    int p;
};

/* Write PARTS partitions of PER entities (batches of 100, in partition
 * order, as an export writes them) with SIM_SENDERS writers picking as
 * importsend.c does and sending as the http layer does (each attempt
 * admitted by the targets, a throttled one sent again once they admit
 * it), against buckets of PART_RATE and ACCT_RATE; each step an event in
 * time order. */
static struct sim_result simulate(int parts, int per, double part_rate, double acct_rate)
{
    struct bucket part[SIM_PARTS], acct = { acct_rate, acct_rate, T0 };
    struct sim_sender snd[SIM_SENDERS];
    struct http_targets *t;
    int left[SIM_PARTS], out[SIM_PARTS] = { 0 }, remaining = parts * per / 100, busy = 0;
    double end = T0;
    struct sim_result r = { 0, 0, 0 };
    char key[16];

    http_targets_new(&t, &quiet);
    for (int p = 0; p < parts; p++) {
        part[p] = (struct bucket){ part_rate, part_rate, T0 };
        left[p] = per / 100;
    }
    for (int i = 0; i < SIM_SENDERS; i++)
        snd[i] = (struct sim_sender){ T0, 0, -1 };
    while (remaining > 0 || busy > 0) {
        struct sim_sender *e = &snd[0];
        double now, wait = 0, w;

        for (int i = 1; i < SIM_SENDERS; i++)
            if (snd[i].at < e->at)
                e = &snd[i];
        now = e->at;
        if (e->p < 0) { /* idle: pick (importsend.c) */
            for (int pass = 0; pass < 2 && e->p < 0; pass++)
                for (int q = 0; q < parts && e->p < 0; q++) {
                    if (!left[q] || (pass == 0 && out[q]))
                        continue;
                    snprintf(key, sizeof(key), "T\n%d", q);
                    if ((w = http_targets_wait(t, key, 100, now)) == 0)
                        e->p = q;
                    else if (wait == 0 || w < wait)
                        wait = w;
                }
            if (e->p < 0) {
                e->at = remaining > 0 ? now + (wait > 0 ? wait : 1) : 1e300;
                continue;
            }
            left[e->p]--;
            out[e->p]++;
            remaining--;
            busy++;
            e->sent = 0;
            continue;
        }
        snprintf(key, sizeof(key), "T\n%d", e->p);
        if (e->sent == 0) { /* the http layer: admitted, then sent */
            if ((w = http_targets_admit(t, key, 100, now)) > 0) {
                e->at = now + w;
                continue;
            }
            e->sent = now;
            e->at = now + SIM_RTT / 2;
            continue;
        }
        r.batches++;
        if (!(pay(&part[e->p], 100, now) && pay(&acct, 100, now))) {
            r.throttled++;
            http_targets_answered(t, key, 100, 1, e->sent, now + SIM_RTT / 2);
            e->sent = 0;
            e->at = now + SIM_RTT / 2;
            continue;
        }
        http_targets_answered(t, key, 100, 0, e->sent, now + SIM_RTT / 2);
        out[e->p]--;
        busy--;
        end = now + SIM_RTT / 2 > end ? now + SIM_RTT / 2 : end;
        e->p = -1;
        e->at = now + SIM_RTT / 2;
    }
    http_targets_free(t);
    r.seconds = (end - T0) / 1000.0;
    return r;
}

static void test_simulated(void)
{
    struct sim_result r;
    double frac;

    r = simulate(1, 6000, 100, 1000);
    frac = 6000 / r.seconds / 100;
    ok(frac >= 0.8, "one partition at 100/s: %.2f of its target (%.1f s)", frac, r.seconds);
    ok(r.throttled * 4 <= r.batches, "and %lu of %lu sends throttled (a quarter at most)",
       r.throttled, r.batches);
    r = simulate(20, 3000, 100, 1000);
    frac = 60000 / r.seconds / 1000;
    ok(frac >= 0.8, "twenty partitions, in partition order: %.2f of the account's (%.1f s)", frac,
       r.seconds);
    ok(r.throttled * 4 <= r.batches, "and %lu of %lu sends throttled (a quarter at most)",
       r.throttled, r.batches);
    r = simulate(20, 3000, 100, 20000);
    frac = 60000 / r.seconds / 2000;
    ok(frac >= 0.8, "twenty partitions under a larger account: %.2f of 20 x 100/s (%.1f s)", frac,
       r.seconds);
}

int main(void)
{
    test_learning();
    test_many_keys();
    test_simulated();
    return done_testing();
}
