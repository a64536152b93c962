/* test_pace.c - http/pace.c on a clock of the test's own: the cap spaces
 * starts 1000/rate ms apart in the order asked, and admits at most N
 * starts within any second however late they come; a 503 now and then
 * costs only its own request's retry; sustained throttling (a third of the
 * answers of two seconds, at least 4) holds every request until its
 * Retry-After and cuts the rate, once per second of such answers, to the
 * share the service served (at most 0.7, from the rate sent when there was
 * no cap, never below 1/s); the rate
 * grows back by a twentieth of the cut rate per second, to the cap, or
 * without one to twice the rate cut, where the limit ends. */
#include <errno.h>
#include <math.h>
#include <stdio.h>

#include "tap.h"
#include "http/http.h"

#define T0 1000000.0 /* ms: a monotonic clock well past 0 */

static int near(double a, double b)
{
    return fabs(a - b) < 1e-6;
}

static void test_cap(void)
{
    struct http_pace *p;
    double s[5];
    unsigned long cuts = 9;

    is_int(http_pace_new(&p, -1, NULL), -EINVAL, "a negative cap: EINVAL");
    is_int(http_pace_new(&p, 10, NULL), 0, "a cap of 10/s");
    for (int i = 0; i < 5; i++)
        s[i] = http_pace_reserve(p, T0); /* five asking at once */
    ok(near(s[0], T0) && near(s[1], T0 + 100) && near(s[4], T0 + 400),
       "five at once start 100 ms apart (%.0f %.0f %.0f)", s[0] - T0, s[1] - T0, s[4] - T0);
    ok(near(http_pace_reserve(p, T0 + 2000), T0 + 2000), "after a pause: at once");
    ok(near(http_pace_rate(p, &cuts), 10) && cuts == 0, "rate 10, no cut");
    http_pace_free(p);
}

/* N answers at NOW: served, or throttled without a Retry-After. */
static void answers(struct http_pace *p, double now, int n, int throttled)
{
    for (int i = 0; i < n; i++)
        http_pace_answered(p, now, throttled, -1000);
}

static void test_throttled_with_cap(void)
{
    struct http_pace *p;
    unsigned long cuts;

    http_pace_new(&p, 40, NULL);
    for (int i = 0; i < 40; i++)
        http_pace_reserve(p, T0 + i * 25.0);
    answers(p, T0 + 990, 30, 0);
    ok(near(http_pace_rate(p, &cuts), 40) && cuts == 0, "served answers change nothing");
    http_pace_answered(p, T0 + 1000, 1, 2000);
    ok(near(http_pace_rate(p, &cuts), 40) && cuts == 0,
       "one 503 after 30 served: no cut (its own retry waits)");
    /* (asked at T0 + 999: the window of starts, 40 in a second, stays whole) */
    ok(http_pace_reserve(p, T0 + 999) < T0 + 1100, "and nobody else waits for its Retry-After");
    answers(p, T0 + 1000, 2, 1);
    ok(near(http_pace_rate(p, &cuts), 40) && cuts == 0, "3 throttled: no cut yet");
    http_pace_answered(p, T0 + 1000, 1, 2000);
    ok(near(http_pace_rate(p, &cuts), 28) && cuts == 1,
       "4 of 34 throttled: 40 -> 28/s (at most 0.7 of it; %.1f)", http_pace_rate(p, NULL));
    ok(http_pace_reserve(p, T0 + 1001) >= T0 + 3000,
       "throttled for good: nobody starts before its Retry-After");
    http_pace_answered(p, T0 + 1500, 1, 0);
    ok(near(http_pace_rate(p, &cuts), 28) && cuts == 1, "another 503 within a second: no cut");
    answers(p, T0 + 1600, 2, 0);
    answers(p, T0 + 1600, 6, 1);
    http_pace_answered(p, T0 + 2000, 1, 0);
    ok(near(http_pace_rate(p, &cuts), 28.0 * 2 / 10) && cuts == 2,
       "a second later, 2 of 10 served since the cut (judged: it stays): 28 -> 5.6/s (%.2f)",
       http_pace_rate(p, NULL));
    http_pace_reserve(p, T0 + 3000); /* a twentieth of 5.6 is less than 1 */
    ok(near(http_pace_rate(p, NULL), 28.0 * 2 / 10 + 1), "one quiet second: +1/s (%.2f)",
       http_pace_rate(p, NULL));
    http_pace_reserve(p, T0 + 60000);
    ok(near(http_pace_rate(p, NULL), 40), "a minute on: back to the cap, not past it");
    http_pace_free(p);
}

static void test_throttled_without_cap(void)
{
    struct http_pace *p;

    http_pace_new(&p, 0, NULL);
    ok(near(http_pace_reserve(p, T0), T0), "no cap: at once");
    for (int i = 1; i <= 100; i++) /* 100/s through a whole window */
        http_pace_reserve(p, T0 + i * 10.0);
    {
        int at_once = 0;

        for (int i = 0; i < 50; i++)
            at_once += near(http_pace_reserve(p, T0 + 1010), T0 + 1010);
        is_int(at_once, 50, "no limit: fifty asking at once all start at once");
    }
    answers(p, T0 + 1050, 40, 0);
    answers(p, T0 + 1050, 4, 1);
    ok(near(http_pace_rate(p, NULL), 70),
       "4 of 44 throttled: what was sent (100/s) cut to 0.7 (%.1f)", http_pace_rate(p, NULL));
    {
        double a = http_pace_reserve(p, T0 + 1200), b = http_pace_reserve(p, T0 + 1200);

        ok(fabs(b - a - 1000.0 / 70) < 1e-6, "spaced 1000/70 ms apart (%.1f)", b - a);
    }
    answers(p, T0 + 1500, 20, 0);
    answers(p, T0 + 1500, 79, 1);
    ok(near(http_pace_rate(p, NULL), 70), "more within the second: no second cut");
    http_pace_answered(p, T0 + 2060, 1, -1000);
    ok(near(http_pace_rate(p, NULL), 14),
       "a second on, 20 of 100 served since the cut: 70 -> 14/s (%.1f)", http_pace_rate(p, NULL));
    http_pace_reserve(p, T0 + 2060 + 9000); /* 9 s: +1/s each (14/20 < 1) */
    ok(near(http_pace_rate(p, NULL), 23), "9 quiet seconds: 23/s (%.1f)", http_pace_rate(p, NULL));
    http_pace_reserve(p, T0 + 2060 + 200000);
    ok(near(http_pace_rate(p, NULL), 0), "past twice the rate cut (140/s): no limit again");
    http_pace_free(p);
}

/* A service that refuses a tenth or a fifth of the requests at random
 * (without a Retry-After, or one of a second in twenty), 100 answers a
 * second for a minute: the first few may cut the rate, but slowing down
 * does not lower the share refused, so the cut is undone a second on and
 * that share becomes the base; each refused request waits its own backoff. */
static void test_503_now_and_then(void)
{
    struct http_pace *p;
    unsigned int seed = 12345;

    for (int pct = 10; pct <= 20; pct += 10) {
        int limited = 0;

        http_pace_new(&p, 0, NULL);
        for (int i = 0; i < 6000; i++) {
            double now = T0 + i * 10.0;

            seed = seed * 1103515245u + 12345u;
            http_pace_reserve(p, now);
            http_pace_answered(p, now, (int)((seed >> 16) % 100) < pct,
                               i % 20 == 19 ? 1000 : -1000);
            limited += http_pace_rate(p, NULL) > 0;
        }
        ok(limited < 300, "%d%% throttled at random: limited for %.1f s of 60", pct,
           limited / 100.0);
        ok(near(http_pace_rate(p, NULL), 0), "and no limit at the end");
        http_pace_free(p);
    }
}

static void test_admit(void)
{
    struct http_pace *p;

    http_pace_new(&p, 2.5, NULL);
    ok(near(http_pace_admit(p, T0), 0) && near(http_pace_admit(p, T0 + 1), 0) &&
           near(http_pace_admit(p, T0 + 2), 0),
       "a cap of 2.5: three start within a second (the ring holds 3)");
    ok(near(http_pace_admit(p, T0 + 500), 500), "a fourth waits until a second after the first");
    ok(near(http_pace_admit(p, T0 + 1000), 0), "then goes");
    ok(near(http_pace_admit(p, T0 + 1000.5), 0.5), "and the next waits for the second one's");
    http_pace_free(p);
    http_pace_new(&p, 0, NULL);
    for (int i = 0; i < 1000; i++)
        if (!near(http_pace_admit(p, T0), 0))
            break;
    ok(near(http_pace_admit(p, T0), 0), "no cap: no wait, however many");
    http_pace_free(p);
}

static void test_floor_and_long_hold(void)
{
    struct http_pace *p;

    http_pace_new(&p, 1, NULL);
    http_pace_reserve(p, T0);
    answers(p, T0 + 5, 3, 1);
    http_pace_answered(p, T0 + 10, 1, 3600 * 1000L);
    ok(near(http_pace_rate(p, NULL), 1), "nothing served: never below 1/s");
    ok(near(http_pace_reserve(p, T0 + 20), T0 + 10 + 60000),
       "an hour's Retry-After holds everyone 60 s at most");
    http_pace_free(p);
}

int main(void)
{
    test_cap();
    test_throttled_with_cap();
    test_throttled_without_cap();
    test_floor_and_long_hold();
    test_503_now_and_then();
    test_admit();
    return done_testing();
}
