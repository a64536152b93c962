/* test_targets.c - http/targets.c on a clock of the test's own: no limit
 * until a write is throttled; then 0.9 of what was served, writes spaced
 * by it, a throttled write's retry a write's time later, grown by 2% a second, cut
 * again by 0.9 only by a write started after the cut, the limit ended at
 * twice the level, one
 * partition's limit not another's, the account's learned only from
 * refusals that name it; and, against a simulated service with Azure's targets (token
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
    http_targets_answered(t, "T\np", 100, HTTP_REFUSED_KEY, T0, T0 + 200);
    r = http_targets_rate(t, "T\np", &cuts);
    ok(fabs(r - 0.9 * 300) < 1e-6 && cuts == 1,
       "throttled after 300 served within a second: 0.9 of 300/s (%.1f)", r);
    slot = 100 * 1000.0 / r;
    w = http_targets_wait(t, "T\np", 100, T0 + 200);
    ok(fabs(w - slot) < 1e-6, "the throttled write's retry waits a write's time (%.0f ms)", w);
    http_targets_answered(t, "T\np", 100, HTTP_REFUSED_KEY, T0, T0 + 300);
    ok(http_targets_rate(t, "T\np", &cuts) == r && cuts == 1,
       "a write started before the cut, throttled: no second cut");
    ok(http_targets_admit(t, "T\np", 100, T0 + 300 + slot) == 0,
       "the next write goes a write's time after the last refusal");
    w = http_targets_admit(t, "T\np", 100, T0 + 300 + slot);
    ok(fabs(w - slot) < 1e-6, "the one after it waits 100 / %.0f s (%.0f ms)", r, w);
    ok(http_targets_admit(t, "T\nq", 100, T0 + 300) == 0, "another partition is not held");
    http_targets_answered(t, "T\np", 100, 0, T0 + 300, T0 + 1200);
    w = http_targets_rate(t, "T\np", NULL);
    ok(fabs(w - r * 1.02) < 1e-6, "a second served: +2%% (%.2f)", w);
    http_targets_answered(t, "T\np", 100, HTTP_REFUSED_KEY, T0 + 1100, T0 + 1400);
    ok(fabs(http_targets_rate(t, "T\np", &cuts) - w * 0.9) < 1e-6 && cuts == 2,
       "a write started after the cut, throttled: cut again by 0.9 (%.1f)",
       http_targets_rate(t, "T\np", NULL));
    for (double now = T0 + 1500; now < T0 + 120000; now += 500)
        http_targets_answered(t, "T\np", 50, 0, now, now);
    ok(http_targets_rate(t, "T\np", NULL) == 0, "back to twice the level: no limit");
    http_targets_free(t);
}

static void test_near_and_high(void)
{
    struct http_targets *t;
    double r, w;

    http_targets_new(&t, &quiet);
    http_targets_answered(t, "T\np", 100, HTTP_SERVED, T0, T0 + 100);
    http_targets_answered(t, "T\np", 100, HTTP_REFUSED_KEY, T0, T0 + 200);
    r = http_targets_rate(t, "T\np", NULL); /* 90: refused at 100 */
    for (double now = T0 + 1200; now <= T0 + 6200; now += 1000)
        http_targets_answered(t, "T\np", 90, HTTP_SERVED, now - 50, now);
    w = http_targets_rate(t, "T\np", NULL);
    ok(w > 0.97 * r / 0.9 && w < 0.985 * r / 0.9,
       "grown 2%% a second to 97%% of the rate refused, then a tenth of that (%.2f)", w);
    http_targets_free(t);

    http_targets_new(&t, &quiet);
    http_targets_answered(t, "T\na", 300, HTTP_SERVED, T0, T0 + 100);
    http_targets_answered(t, "T\na", 100, HTTP_REFUSED_KEY, T0, T0 + 200); /* level 270 */
    for (double now = T0 + 1200; now <= T0 + 4200; now += 100)
        http_targets_answered(t, "T\nb", 10, HTTP_SERVED, now - 50, now); /* b: 100/s */
    http_targets_answered(t, "T\nb", 10, HTTP_REFUSED_KEY, T0 + 4250, T0 + 4300);
    r = http_targets_rate(t, "T\nb", NULL);
    ok(r > 85 && r < 95,
       "a key started at another's 270/s and served 100/s is cut from what it was served (%.1f)",
       r);
    http_targets_free(t);
}

static void test_slot_bound(void)
{
    struct http_targets *t;
    double w;

    http_targets_new(&t, &quiet);
    http_targets_answered(t, "", 1, HTTP_SERVED, T0, T0 + 10);
    http_targets_answered(t, "", 1, HTTP_REFUSED_ACCOUNT, T0, T0 + 20);
    ok(http_targets_rate(t, NULL, NULL) < 2, "the account cut to %.1f a second",
       http_targets_rate(t, NULL, NULL));
    ok(http_targets_admit(t, "", 1000, T0 + 2000) == 0, "a query charged 1,000 goes");
    w = http_targets_admit(t, "", 1000, T0 + 2000);
    ok(fabs(w - 2000) < 1e-6, "the next waits two seconds, not 1,000 / %.1f s (%.0f ms)",
       http_targets_rate(t, NULL, NULL), w);
    ok(http_targets_rate(t, "", NULL) == 0, "the key \"\" has no rate of its own: the account's");
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
        http_targets_answered(t, key, 100, HTTP_REFUSED_KEY, T0 + 20, T0 + 30);
    }
    ok(http_targets_rate(t, "T\np0", &cuts) > 0 && cuts == 3, "three partitions: three cuts");
    ok(http_targets_admit(t, "T\nnew", 100, T0 + 50) == 0 &&
           http_targets_rate(t, "T\nnew", NULL) == http_targets_rate(t, "T\np2", NULL) &&
           http_targets_admit(t, "T\nnew", 100, T0 + 50) > 0,
       "a partition first seen after the others were cut starts at the last cut's level (%.1f/s)",
       http_targets_rate(t, "T\nnew", NULL));
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

static void test_account(void)
{
    struct http_targets *t;
    unsigned long cuts;
    double r, w, slot;
    char key[16];

    http_targets_new(&t, &quiet);
    for (int i = 0; i < 20; i++) {
        snprintf(key, sizeof(key), "T\np%d", i);
        http_targets_answered(t, key, 50, HTTP_SERVED, T0, T0 + 10 + 40 * i);
    }
    http_targets_answered(t, "T\np0", 100, HTTP_REFUSED_ACCOUNT, T0 + 100, T0 + 900);
    r = http_targets_rate(t, NULL, &cuts);
    ok(fabs(r - 0.9 * 1000) < 1e-6 && cuts == 1,
       "over the account limit after 1,000 served in a second: 0.9 of 1,000/s (%.1f)", r);
    ok(http_targets_rate(t, "T\np0", NULL) == 0, "the partition it named is not held");
    slot = 100 * 1000.0 / r;
    w = http_targets_wait(t, "T\np7", 100, T0 + 900);
    ok(fabs(w - slot) < 1e-6,
       "every partition's next write waits a write's time of the account (%.0f ms)", w);
    ok(http_targets_admit(t, "T\np5", 100, T0 + 900 + slot) == 0, "then a write of 100 goes");
    w = http_targets_wait(t, "T\np7", 100, T0 + 900 + slot);
    ok(fabs(w - slot) < 1e-6, "and one to another partition waits 100 / %.0f s (%.0f ms)", r, w);
    ok(http_targets_admit(t, "T\np3", 100, T0 + 900 + 2 * slot) == 0, "then it goes");
    http_targets_answered(t, "T\np3", 100, HTTP_REFUSED_KEY, T0 + 900 + 2 * slot, T0 + 1150);
    ok(http_targets_rate(t, NULL, &cuts) == r && http_targets_rate(t, "T\np3", NULL) > 0 &&
           cuts == 2,
       "a partition's refusal cuts the partition, not the account");
    w = http_targets_wait(t, "T\np7", 100, T0 + 1150);
    ok(fabs(w - (900 + 3 * slot - 1150)) < 1e-6, "nor moves the account's turns (%.0f ms)", w);
    w = http_targets_wait(t, "T\np3", 100, T0 + 1150);
    slot = 100 * 1000.0 / http_targets_rate(t, "T\np3", NULL);
    ok(fabs(w - (slot < 2000 ? slot : 2000)) < 1e-6,
       "and holds the partition off for a write's time, two seconds at most (%.0f ms)", w);
    http_targets_free(t);
}

/* --- a simulated service ---------------------------------------------------------------- */

#define SIM_PARTS 20
#define SIM_SENDERS 8
#define SIM_RTT 25.0

struct bucket {
    double tokens, rate, at;
};

/* Has BK N at NOW? (refilled to one second's worth at most) */
static int can_pay(struct bucket *bk, double n, double now)
{
    bk->tokens += (now - bk->at) * bk->rate / 1000.0;
    bk->at = now;
    if (bk->tokens > bk->rate)
        bk->tokens = bk->rate;
    return bk->tokens >= n;
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
    double last[SIM_PARTS] = { 0 };
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
        int kind;

        for (int i = 1; i < SIM_SENDERS; i++)
            if (snd[i].at < e->at)
                e = &snd[i];
        now = e->at;
        if (e->p < 0) { /* idle: pick (importsend.c), least recently sent first */
            for (int pass = 0; pass < 2 && e->p < 0; pass++)
                for (int q = 0; q < parts; q++) {
                    if (!left[q] || (pass == 0 && out[q]) || (e->p >= 0 && last[q] >= last[e->p]))
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
            last[e->p] = now;
            remaining--;
            busy++;
            e->sent = 0;
            continue;
        }
        snprintf(key, sizeof(key), "T\n%d", e->p);
        if (e->sent == 0) { /* the http layer: given a turn, sent at it */
            e->sent = now + http_targets_admit(t, key, 100, now);
            e->at = e->sent + SIM_RTT / 2;
            continue;
        }
        r.batches++;
        /* checked in limitmodel.py's order, charged only when both pay */
        kind = !can_pay(&part[e->p], 100, now) ? HTTP_REFUSED_KEY :
            !can_pay(&acct, 100, now)          ? HTTP_REFUSED_ACCOUNT :
                                                 HTTP_SERVED;
        if (kind != HTTP_SERVED) {
            r.throttled++;
            http_targets_answered(t, key, 100, kind, e->sent, now + SIM_RTT / 2);
            e->sent = 0;
            e->at = now + SIM_RTT / 2;
            continue;
        }
        part[e->p].tokens -= 100;
        acct.tokens -= 100;
        http_targets_answered(t, key, 100, HTTP_SERVED, e->sent, now + SIM_RTT / 2);
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

/* A query's page is charged an estimate when it goes (a full page) and
 * settled at what it held: the rest of its turn is given back, to the
 * partition and the account, and what it was served counts as moved. */
static void test_settle(void)
{
    struct http_targets *t, *u;
    double r, w_kept, w_settled, s_kept, s_settled;

    http_targets_new(&t, &quiet);
    http_targets_new(&u, &quiet);
    for (struct http_targets **x = (struct http_targets *[]){ t, u, NULL }; *x; x++) {
        http_targets_answered(*x, "T\np", 500, HTTP_SERVED, T0, T0 + 100);
        http_targets_answered(*x, "T\np", 500, HTTP_REFUSED_KEY, T0, T0 + 200);
        http_targets_answered(*x, "", 500, HTTP_REFUSED_ACCOUNT, T0, T0 + 200);
    }
    r = http_targets_rate(t, "T\np", NULL);
    ok(r > 0 && http_targets_rate(t, NULL, NULL) > 0,
       "a partition's rate (%.0f/s) and the "
       "account's",
       r);
    http_targets_admit(t, "T\np", 1000, T0 + 5000);
    http_targets_admit(u, "T\np", 1000, T0 + 5000);
    http_targets_answered(t, "T\np", 1000, HTTP_SERVED, T0 + 5000, T0 + 5050);
    http_targets_answered(u, "T\np", 1000, HTTP_SERVED, T0 + 5000, T0 + 5050);
    http_targets_settle(t, "T\np", 1000, 10, T0 + 5050);
    w_kept = http_targets_wait(u, "T\np", 100, T0 + 5050);
    w_settled = http_targets_wait(t, "T\np", 100, T0 + 5050);
    ok(w_kept > 1000 && w_settled < w_kept - 1000,
       "a page of 10 charged 1,000 gives its turn back: the next waits %.0f ms, not %.0f",
       w_settled, w_kept);
    w_settled = http_targets_wait(t, "T\nq", 100, T0 + 5050);
    w_kept = http_targets_wait(u, "T\nq", 100, T0 + 5050);
    ok(w_settled < w_kept, "  and so does the account's (another partition: %.0f ms, not %.0f)",
       w_settled, w_kept);
    http_targets_free(t);
    http_targets_free(u);
    /* what was served: a first cut is from it */
    http_targets_new(&t, &quiet);
    http_targets_new(&u, &quiet);
    http_targets_answered(t, "T\np", 1000, HTTP_SERVED, T0, T0 + 50);
    http_targets_answered(u, "T\np", 1000, HTTP_SERVED, T0, T0 + 50);
    http_targets_settle(t, "T\np", 1000, 10, T0 + 50);
    http_targets_answered(t, "T\np", 10, HTTP_REFUSED_KEY, T0 + 100, T0 + 200);
    http_targets_answered(u, "T\np", 10, HTTP_REFUSED_KEY, T0 + 100, T0 + 200);
    s_settled = http_targets_rate(t, "T\np", NULL);
    s_kept = http_targets_rate(u, "T\np", NULL);
    ok(fabs(s_settled - 9) < 1e-6 && fabs(s_kept - 900) < 1e-6,
       "  and counts 10 served, not 1,000: a first cut to 0.9 of 10/s (%.0f), not of 1,000 "
       "(%.0f)",
       s_settled, s_kept);
    http_targets_free(t);
    http_targets_free(u);
}

int main(void)
{
    test_learning();
    test_near_and_high();
    test_slot_bound();
    test_many_keys();
    test_account();
    test_settle();
    test_simulated();
    return done_testing();
}
