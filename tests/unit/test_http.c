/* test_http.c - http_perform's retries against a tiny HTTP server the test
 * runs on 127.0.0.1 (TAP): each request it receives is answered from a
 * script (a status with headers, or the connection closed without an
 * answer). Checked: how many attempts are made, that they stop at the
 * retry count and the deadline, that Retry-After is honoured within
 * bounds, what the caller gets (return value, status, resent, settled),
 * and the counters. Backoffs are a few milliseconds. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "http/http.h"
#include "http/http_i.h"
#include "util/util.h"
#include "tap.h"
#include "httpd.h"

/* --- the server's script --------------------------------------------------- */

/* One scripted answer: STATUS (0: close the connection without answering)
 * with extra header lines HEADERS ("Name: value\r\n"...); KEEP: keep the
 * connection open for the next request. */
struct step {
    int status;
    const char *headers;
    int keep;
};

#define SCRIPT_MAX 8

static struct step steps[SCRIPT_MAX]; /* the last step repeats (httpd.lock) */
static int nsteps;
static char last_method[16]; /* of the last request (httpd.lock) */

/* From now on answer the requests with STEPS_ (N of them), counting anew. */
static void script(const struct step *steps_, int n)
{
    pthread_mutex_lock(&httpd.lock);
    memcpy(steps, steps_, (size_t)n * sizeof(*steps_));
    nsteps = n;
    pthread_mutex_unlock(&httpd.lock);
    httpd_reset();
}

/* The handler: request N gets step N (the last one once past the end), a
 * body that says its number. */
static size_t scripted(const char *head, int n, char *out, size_t size, int *keep)
{
    const struct step *st = &steps[n <= nsteps ? n - 1 : nsteps - 1];
    char body[32];

    sscanf(head, "%15s", last_method);
    if (st->status == 0)
        return 0;
    snprintf(body, sizeof(body), "answer %d", n);
    *keep = st->keep;
    return httpd_response(out, size, st->status, st->headers, body, st->keep);
}

/* --- the client ------------------------------------------------------------- */

static struct logger quiet = { .level = LOG_LVL_QUIET };
static struct http_stats stats;
static char url[64];

/* The defaults of these tests: retries a few milliseconds apart. */
static struct http_config config(int max_retries)
{
    return (struct http_config){ .connect_timeout_ms = 500,
                                 .request_timeout_ms = 1000,
                                 .max_retries = max_retries,
                                 .retry_base_ms = 2,
                                 .retry_max_ms = 4,
                                 .retry_deadline_ms = 2000 };
}

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* One request of METHOD (a body with anything but GET) through a new pool
 * of CFG to URL_; the response in *RESP (cleared by the caller), the time
 * it took in *MS (MS may be NULL). Returns http_perform's answer. */
static int perform(const struct http_config *cfg, const char *method, const char *url_,
                   int (*settle)(void *, const struct http_response *), struct http_response *resp,
                   double *ms)
{
    static const char *const headers[] = { "x-ms-version: 2019-02-02", NULL };
    struct http_request req = {
        .method = method,
        .url = url_,
        .headers = headers,
        .log_what = "test",
        .body = strcmp(method, "GET") ? "{}" : NULL,
        .body_len = strcmp(method, "GET") ? 2 : 0,
        .settle = settle,
    };
    struct http_pool *pool = NULL;
    double t0 = now_ms();
    int rc;

    memset(&stats, 0, sizeof(stats));
    if (http_pool_new(&pool, cfg, &quiet, &stats) != 0)
        abort();
    rc = http_perform(pool, &req, resp);
    if (ms)
        *ms = now_ms() - t0;
    http_pool_free(pool);
    return rc;
}

#define STEPS(...)                        \
    (const struct step[]){ __VA_ARGS__ }, \
        (int)(sizeof((const struct step[]){ __VA_ARGS__ }) / sizeof(struct step))

/* --- retries ---------------------------------------------------------------- */

/* Transient answers are retried until one is final: 503 (Retry-After: 0)
 * then 200; 500 twice then 200; 429 then 200. The caller gets the last
 * answer, its body and headers, the attempt count, and whether an earlier
 * send may have been applied (a 5xx: yes; a 429: no). */
static void test_transient(void)
{
    const struct http_config cfg = config(4);
    struct http_response r;

    script(STEPS({ 503, "Retry-After: 0\r\n", 0 }, { 200, "ETag: W/\"e\"\r\n", 0 }));
    is_int(perform(&cfg, "GET", url, NULL, &r, NULL), 0, "503 then 200: 0");
    is_int(r.status, 200, "the caller sees the 200");
    is_int(r.attempts, 2, "two attempts");
    is_int(httpd_seen(), 2, "the server saw two requests");
    is_str(r.body, "answer 2", "the body is the last answer's");
    is_str(r.hdr[HDR_ETAG], "W/\"e\"", "so are its headers");
    ok(r.hdr[HDR_RETRY_AFTER] == NULL, "the 503's Retry-After is not left over");
    is_int(r.resent, 1, "a 503 may have been applied: resent");
    is_int(atomic_load(&stats.requests), 2, "stats: two requests");
    is_int(atomic_load(&stats.retries), 1, "stats: one retry");
    ok(atomic_load(&stats.status_5xx) == 1 && atomic_load(&stats.status_2xx) == 1,
       "stats: one 5xx, one 2xx");
    http_response_clear(&r);

    script(STEPS({ 500, NULL, 0 }, { 500, NULL, 0 }, { 200, NULL, 0 }));
    is_int(perform(&cfg, "GET", url, NULL, &r, NULL), 0, "500, 500, 200: 0");
    ok(r.status == 200 && r.attempts == 3 && httpd_seen() == 3, "three attempts, 200");
    http_response_clear(&r);

    script(STEPS({ 429, NULL, 0 }, { 200, NULL, 0 }));
    is_int(perform(&cfg, "GET", url, NULL, &r, NULL), 0, "429 then 200: 0");
    ok(r.status == 200 && r.attempts == 2, "a throttled request is retried");
    is_int(r.resent, 0, "a 429 was not applied: not resent");
    http_response_clear(&r);
}

/* A final answer (404, 412, 409) is not retried: the caller gets it at
 * once, with 0 (an answer) and not resent. */
static void test_final(void)
{
    static const int final[] = { 404, 412, 409, 400 };
    const struct http_config cfg = config(4);
    struct http_response r;

    for (int i = 0; i < 4; i++) {
        script(STEPS({ final[i], NULL, 0 }, { 200, NULL, 0 }));
        is_int(perform(&cfg, "PUT", url, NULL, &r, NULL), 0, "%d: 0", final[i]);
        ok(r.status == final[i] && r.attempts == 1 && httpd_seen() == 1 && !r.resent,
           "%d: one attempt, the caller sees it", final[i]);
        http_response_clear(&r);
    }
}

/* The retry count bounds the attempts: with max_retries 1, 500 500 200 ends
 * on the second 500 (status 500, 0: an answer); with 2 it gets the 200;
 * with -1 (none) one attempt is made. */
static void test_max_retries(void)
{
    struct http_config cfg = config(1);
    struct http_response r;

    script(STEPS({ 500, NULL, 0 }, { 500, NULL, 0 }, { 200, NULL, 0 }));
    is_int(perform(&cfg, "GET", url, NULL, &r, NULL), 0, "max_retries 1: 0");
    ok(r.status == 500 && r.attempts == 2 && httpd_seen() == 2,
       "max_retries 1: two attempts, the last 500 is the answer");
    http_response_clear(&r);
    cfg = config(2);
    script(STEPS({ 500, NULL, 0 }, { 500, NULL, 0 }, { 200, NULL, 0 }));
    perform(&cfg, "GET", url, NULL, &r, NULL);
    ok(r.status == 200 && r.attempts == 3, "max_retries 2: the third attempt's 200");
    http_response_clear(&r);
    cfg = config(-1);
    script(STEPS({ 503, NULL, 0 }, { 200, NULL, 0 }));
    perform(&cfg, "GET", url, NULL, &r, NULL);
    ok(r.status == 503 && r.attempts == 1 && httpd_seen() == 1, "max_retries -1: one attempt");
    http_response_clear(&r);
}

/* No retry starts past the deadline: 500 forever, backoffs of 20-40 ms and
 * 100 retries allowed, a deadline of 150 ms: a handful of attempts, and the
 * call returns within the deadline and one request timeout (1 s) with the
 * last 500. */
static void test_deadline(void)
{
    struct http_config cfg = config(100);
    struct http_response r;
    double ms;

    cfg.retry_base_ms = cfg.retry_max_ms = 40;
    cfg.retry_deadline_ms = 150;
    script(STEPS({ 500, NULL, 0 }));
    is_int(perform(&cfg, "GET", url, NULL, &r, &ms), 0, "500 forever: 0 (an answer)");
    is_int(r.status, 500, "the last 500 is the answer");
    ok(r.attempts >= 2 && r.attempts <= 9, "a handful of attempts (%d)", r.attempts);
    is_int(httpd_seen(), r.attempts, "as many as the server saw");
    ok(ms < 150 + 1000, "within the deadline and one request timeout (%.0f ms)", ms);
    http_response_clear(&r);
}

/* Retry-After is taken when longer than the backoff: 1 s against a
 * 300 ms deadline ends the retries at once (no wait); 0, one in the past
 * (an HTTP date), a negative or unreadable one leave the short backoff. */
static void test_retry_after(void)
{
    static const char *const soon[] = {
        "Retry-After: 0\r\n",
        "Retry-After: Thu, 01 Jan 2015 00:00:00 GMT\r\n",
        "Retry-After: -5\r\n",
        "Retry-After: soon\r\n",
    };
    struct http_config cfg = config(3);
    struct http_response r;
    double ms;

    cfg.retry_deadline_ms = 300;
    script(STEPS({ 503, "Retry-After: 1\r\n", 0 }, { 200, NULL, 0 }));
    is_int(perform(&cfg, "GET", url, NULL, &r, &ms), 0, "503 Retry-After: 1: 0");
    ok(r.status == 503 && r.attempts == 1 && httpd_seen() == 1,
       "a Retry-After past the deadline: no retry, the 503 is the answer");
    ok(ms < 250, "and no wait for it (%.0f ms)", ms);
    is_str(r.hdr[HDR_RETRY_AFTER], "1", "the caller sees the Retry-After");
    http_response_clear(&r);
    for (int i = 0; i < 4; i++) {
        script(STEPS({ 503, soon[i], 0 }, { 200, NULL, 0 }));
        perform(&cfg, "GET", url, NULL, &r, &ms);
        ok(r.status == 200 && r.attempts == 2 && ms < 250, "%.*s: retried at once (%.0f ms)",
           (int)strlen(soon[i]) - 2, soon[i], ms);
        http_response_clear(&r);
    }
}

/* Cosmos DB throttles with 429 and x-ms-retry-after-ms (Azure's
 * retry-after-ms too): the wait they ask is the request's own and the
 * whole mount's (its pace), as a 503's Retry-After is. 5 s against a
 * 300 ms deadline ends the retries at once; 40 ms is waited; with a pace,
 * nobody starts before the 5 s are over. */
static void test_retry_after_ms(void)
{
    static const char *const late[] = { "x-ms-retry-after-ms: 5000\r\n",
                                        "retry-after-ms: 5000\r\n" };
    struct http_config cfg = config(3);
    struct http_response r;
    struct http_pace *pace = NULL;
    double ms, t;

    cfg.retry_deadline_ms = 300;
    for (int i = 0; i < 2; i++) {
        script(STEPS({ 429, late[i], 0 }, { 200, NULL, 0 }));
        is_int(perform(&cfg, "GET", url, NULL, &r, &ms), 0, "429 %.*s: 0", (int)strlen(late[i]) - 2,
               late[i]);
        ok(r.status == 429 && r.attempts == 1 && httpd_seen() == 1,
           "%.*s past the deadline: no retry, the 429 is the answer", (int)strlen(late[i]) - 2,
           late[i]);
        http_response_clear(&r);
    }
    script(STEPS({ 429, "x-ms-retry-after-ms: 40\r\n", 0 }, { 200, NULL, 0 }));
    perform(&cfg, "GET", url, NULL, &r, &ms);
    ok(r.status == 200 && r.attempts == 2 && ms >= 40,
       "x-ms-retry-after-ms: 40: retried after it (%.0f ms)", ms);
    http_response_clear(&r);
    r = (struct http_response){ 0 };
    r.hdr[HDR_X_RETRY_AFTER_MS] = "1500";
    is_int(http_retry_after_ms(&r), 1500, "x-ms-retry-after-ms in milliseconds");
    r.hdr[HDR_RETRY_AFTER] = "2";
    is_int(http_retry_after_ms(&r), 2000, "a Retry-After comes first");
    r = (struct http_response){ 0 };
    is_int(http_retry_after_ms(&r), -1, "none: -1");

    if (http_pace_new(&pace, 0, &quiet) != 0)
        abort();
    cfg.pace = pace;
    script(STEPS({ 429, late[0], 0 }, { 200, NULL, 0 }));
    perform(&cfg, "GET", url, NULL, &r, NULL);
    t = now_ms();
    ok(http_pace_reserve(pace, t) >= t + 4000,
       "the pace holds every request for the 429's x-ms-retry-after-ms");
    http_response_clear(&r);
    http_pace_free(pace);
}

/* --- no answer -------------------------------------------------------------- */

/* A connection closed without an answer is a transport error, retried;
 * the request may have been applied (resent). Closed every time: -EIO,
 * status 0, a message, max_retries + 1 attempts. A refused connection
 * (nothing was sent) is retried too, but never counts as resent. */
static void test_no_answer(void)
{
    const struct http_config cfg = config(2);
    struct http_response r;
    char refused[64];
    int port, fd = httpd_listen_local(&port);

    script(STEPS({ 0, NULL, 0 }, { 200, NULL, 0 }));
    is_int(perform(&cfg, "GET", url, NULL, &r, NULL), 0, "closed, then 200: 0");
    ok(r.status == 200 && r.attempts == 2 && httpd_seen() == 2, "two attempts, 200");
    is_int(r.resent, 1, "the lost attempt may have been applied: resent");
    http_response_clear(&r);

    script(STEPS({ 0, NULL, 0 }));
    is_int(perform(&cfg, "GET", url, NULL, &r, NULL), -EIO, "closed every time: -EIO");
    ok(r.status == 0 && r.attempts == 3 && httpd_seen() == 3, "status 0, three attempts");
    ok(r.transport_error[0] != '\0', "the transport error says why (%s)", r.transport_error);
    is_int(atomic_load(&stats.transport_errors), 3, "stats: three transport errors");
    http_response_clear(&r);

    close(fd); /* nobody listens on PORT now */
    snprintf(refused, sizeof(refused), "http://127.0.0.1:%d/t", port);
    is_int(perform(&cfg, "PUT", refused, NULL, &r, NULL), -EIO, "refused: -EIO");
    ok(r.status == 0 && r.attempts == 3, "refused: three attempts");
    is_int(r.resent, 0, "nothing was sent: not resent");
    http_response_clear(&r);
}

/* A keep-alive connection that dies under the next request: libcurl
 * resends it on a new connection by itself, within one attempt, and the
 * caller is told an earlier send may have been applied. */
static void test_reused_dies(void)
{
    const struct http_config cfg = config(2);
    struct http_request req = { .method = "GET", .url = url, .log_what = "test" };
    struct http_pool *pool = NULL;
    struct http_response r;

    script(STEPS({ 200, NULL, 1 }, { 0, NULL, 0 }, { 200, NULL, 0 }));
    if (http_pool_new(&pool, &cfg, &quiet, &stats) != 0)
        abort();
    is_int(http_perform(pool, &req, &r), 0, "a first request, kept alive");
    ok(r.status == 200 && !r.resent, "answered once");
    http_response_clear(&r);
    is_int(http_perform(pool, &req, &r), 0, "the next, on the same connection, which dies");
    ok(r.status == 200 && r.attempts == 1 && httpd_seen() == 3,
       "libcurl sent it again itself: one attempt, the server saw it twice");
    is_int(r.resent, 1, "resent: the first send may have been applied");
    http_response_clear(&r);
    http_pool_free(pool);
}

/* --- settling a write, cancelling a read ------------------------------------ */

static int settle_answer, settle_calls;

static int settle(void *ctx, const struct http_response *resp)
{
    (void)ctx, (void)resp;
    settle_calls++;
    return settle_answer;
}

/* A write whose answer is lost or 5xx asks the settle hook: applied (1)
 * ends it at once (settled, 0); not applied (0) retries it as a first send
 * (not resent); unknown (-errno) retries it as resent. */
static void test_settle(void)
{
    static const int answer[] = { 1, 0, -EIO };
    const struct http_config cfg = config(2);
    struct http_response r;

    for (int i = 0; i < 3; i++) {
        settle_answer = answer[i];
        settle_calls = 0;
        script(STEPS({ 503, NULL, 0 }, { 204, NULL, 0 }));
        is_int(perform(&cfg, "PUT", url, settle, &r, NULL), 0, "settle %d: 0", answer[i]);
        is_int(settle_calls, 1, "settle %d: asked once, after the 503", answer[i]);
        if (answer[i] == 1)
            ok(r.settled && r.attempts == 1 && httpd_seen() == 1, "applied: settled, no retry");
        else
            ok(!r.settled && r.status == 204 && r.attempts == 2 && r.resent == (answer[i] < 0),
               "settle %d: retried, resent %d", answer[i], answer[i] < 0);
        http_response_clear(&r);
    }
}

static int always(void *ctx)
{
    (void)ctx;
    return 1;
}

/* A cancelled read ends with -EINTR before anything is sent; a write is
 * never cancelled by the read hook. */
static void test_cancel(void)
{
    const struct http_config cfg = config(2);
    struct http_request req = { .method = "GET", .url = url, .log_what = "test" };
    struct http_pool *pool = NULL;
    struct http_response r;

    script(STEPS({ 200, NULL, 0 }));
    if (http_pool_new(&pool, &cfg, &quiet, &stats) != 0)
        abort();
    http_pool_set_cancel(pool, always, NULL);
    is_int(http_perform(pool, &req, &r), -EINTR, "a cancelled read: -EINTR");
    is_int(httpd_seen(), 0, "nothing was sent");
    http_response_clear(&r);
    req.method = "DELETE";
    is_int(http_perform(pool, &req, &r), 0, "a write under the read hook: 0");
    ok(r.status == 200 && httpd_seen() == 1, "it was sent and answered");
    pthread_mutex_lock(&httpd.lock);
    is_str(last_method, "DELETE", "as a DELETE");
    pthread_mutex_unlock(&httpd.lock);
    http_response_clear(&r);
    http_pool_free(pool);
}

/* http_stats_count: each attempt in one latency bucket, a bound's own
 * value in its bucket, the slowest in the last; the sum in microseconds. */
static void test_latency_buckets(void)
{
    static const unsigned long us[] = { 0, 5000, 5001, 10000, 10000000, 10000001, 90000000 };
    static const int want[] = { 0, 0, 1, 1, 10, 11, 11 };
    struct http_stats st;
    unsigned long sum = 0;
    int ok_all = 1;

    memset(&st, 0, sizeof(st));
    for (size_t i = 0; i < sizeof(us) / sizeof(us[0]); i++) {
        struct http_stats one;

        memset(&one, 0, sizeof(one));
        http_stats_count(&one, 0, 200, 0, 0, us[i]);
        ok_all &= atomic_load(&one.latency[want[i]]) == 1;
        http_stats_count(&st, 0, 200, 0, 0, us[i]);
        sum += us[i];
    }
    ok(ok_all, "each attempt in its bucket (a bound in its own, past 10 s in the last)");
    is_int((int)atomic_load(&st.latency[11]), 2, "two past the last bound");
    ok(atomic_load(&st.latency_us) == sum, "the sum in microseconds");
    is_int((int)atomic_load(&st.requests), 7, "and each counted as a request");
}

int main(void)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return 99;
    httpd_start(scripted);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/t", httpd.port);
    test_transient();
    test_final();
    test_max_retries();
    test_deadline();
    test_retry_after();
    test_retry_after_ms();
    test_no_answer();
    test_reused_dies();
    test_settle();
    test_cancel();
    test_latency_buckets();
    httpd_stop();
    curl_global_cleanup();
    return done_testing();
}
