/* http/http.c - libcurl transport: pooled keep-alive easy handles, timeouts, retries with jittered backoff. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "util/util.h"
#include "http/http_i.h"

#define POOL_MAX 16

struct http_pool {
    struct http_config cfg;   /* set by http_pool_new */
    const struct logger *lg;  /* set by http_pool_new */
    struct http_stats *stats; /* set by http_pool_new (its counters are atomic) */
    pthread_mutex_t lock;
    CURL *idle[POOL_MAX];        /* handles with live connections, LIFO; guarded by
                                   lock */
    int n_idle;                  /* guarded by lock */
    int (*cancelled)(void *ctx); /* see http_pool_set_cancel: set before the pool
                                       is shared */
    void *cancel_ctx;            /* set before the pool is shared */
    int cancel_writes;           /* see http_pool_set_abort: set before the pool
                                       is shared */
};

/* The largest response body accepted: a page of 1000 entities of up to
 * 1 MiB each would be more, but the service sends far smaller pages. */
#define HTTP_BODY_MAX (256u * 1024 * 1024)

static const char *const hdr_names[HDR_COUNT] = {
    [HDR_ETAG] = "ETag",
    [HDR_RETRY_AFTER] = "Retry-After",
    [HDR_CONTENT_TYPE] = "Content-Type",
    [HDR_DATE] = "Date",
    [HDR_RETRY_AFTER_MS] = "retry-after-ms",
    [HDR_X_RETRY_AFTER_MS] = "x-ms-retry-after-ms",
};

/* What one attempt tells about sends that may have reached the server. */
struct send_count {
    int sends; /* times libcurl was about to send the request */
};

/* curl prerequest callback: called each time libcurl is about to send the
 * request on a connection, so a second call within one attempt is libcurl's
 * own resend after the reused connection died (after it may have written
 * the whole request). */
static int on_prereq(void *clientp, char *primary_ip, char *local_ip, int primary_port,
                     int local_port)
{
    struct send_count *sc = clientp;

    (void)primary_ip;
    (void)local_ip;
    (void)primary_port;
    (void)local_port;
    sc->sends++;
    return CURL_PREREQFUNC_OK;
}

/* Create a pool with CFG's values or their defaults. */
int http_pool_new(struct http_pool **out, const struct http_config *cfg, const struct logger *lg,
                  struct http_stats *stats)
{
    struct http_pool *p = calloc(1, sizeof(*p));

    if (!p)
        return -ENOMEM;
    if (cfg)
        p->cfg = *cfg;
    if (p->cfg.connect_timeout_ms <= 0)
        p->cfg.connect_timeout_ms = 10000;
    if (p->cfg.request_timeout_ms <= 0)
        p->cfg.request_timeout_ms = 60000;
    if (p->cfg.max_retries == 0)
        p->cfg.max_retries = 4;
    else if (p->cfg.max_retries < 0)
        p->cfg.max_retries = 0;
    if (p->cfg.retry_base_ms <= 0)
        p->cfg.retry_base_ms = 200;
    if (p->cfg.retry_max_ms <= 0)
        p->cfg.retry_max_ms = 10000;
    if (p->cfg.retry_deadline_ms <= 0)
        p->cfg.retry_deadline_ms = 120000;
    if (p->cfg.body_max == 0)
        p->cfg.body_max = HTTP_BODY_MAX;
    p->lg = lg;
    p->stats = stats;
    if (lock_init(&p->lock) != 0) {
        free(p);
        return -ENOMEM;
    }
    *out = p;
    return 0;
}

/* Close every pooled connection and free the pool. */
void http_pool_free(struct http_pool *pool)
{
    if (!pool)
        return;
    for (int i = 0; i < pool->n_idle; i++)
        curl_easy_cleanup(pool->idle[i]);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

/* See http.h. */
struct http_targets *http_pool_targets(const struct http_pool *pool)
{
    return http_pace_targets(pool->cfg.pace);
}

/* See http.h. */
void http_pool_set_cancel(struct http_pool *pool, int (*cancelled)(void *ctx), void *ctx)
{
    pool->cancelled = cancelled;
    pool->cancel_ctx = ctx;
    pool->cancel_writes = 0;
}

/* See http.h. */
void http_pool_set_abort(struct http_pool *pool, int (*aborted)(void *ctx), void *ctx)
{
    pool->cancelled = aborted;
    pool->cancel_ctx = ctx;
    pool->cancel_writes = 1;
}

/* May REQ be cut short by POOL's cancel hook? */
static int is_cancellable(const struct http_pool *pool, const struct http_request *req)
{
    return pool->cancelled && (pool->cancel_writes || strcmp(req->method, "GET") == 0);
}

/* Should the read in progress stop? */
static int pool_cancelled(const struct http_pool *pool)
{
    return pool->cancelled && pool->cancelled(pool->cancel_ctx);
}

/* curl progress callback of a cancellable transfer: nonzero aborts it. */
static int on_progress(void *clientp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    return pool_cancelled(clientp);
}

/* Take an idle handle (keeping its connection) or make a new one. */
static CURL *pool_get(struct http_pool *pool)
{
    CURL *h = NULL;

    pthread_mutex_lock(&pool->lock);
    if (pool->n_idle > 0)
        h = pool->idle[--pool->n_idle];
    pthread_mutex_unlock(&pool->lock);
    return h ? h : curl_easy_init();
}

/* Return a handle to the pool, or close it when the pool is full. */
static void pool_put(struct http_pool *pool, CURL *h)
{
    pthread_mutex_lock(&pool->lock);
    if (pool->n_idle < POOL_MAX) {
        pool->idle[pool->n_idle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&pool->lock);
    if (h)
        curl_easy_cleanup(h);
}

/* curl write callback: append to a struct buf (a failure stops the transfer). */
static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    size_t n = size * nmemb;

    return buf_add(userdata, ptr, n) == 0 ? n : 0;
}

/* Is the header line NAME (LEN bytes, up to its colon) called WANT? */
static int header_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

/* Keep one header line if it is one of hdr_names or CAPTURE; see http.h. */
void http_header_line(struct http_response *r, const char *const *capture, const char *buf,
                      size_t n)
{
    const char *colon = memchr(buf, ':', n), *v, *e;
    size_t nl;
    char **slot = NULL;

    if (!colon)
        return;
    nl = (size_t)(colon - buf);
    for (int i = 0; i < HDR_COUNT && !slot; i++)
        if (header_is(buf, nl, hdr_names[i]))
            slot = &r->hdr[i];
    for (int i = 0; !slot && capture && i < HTTP_CAPTURE_MAX && capture[i]; i++)
        if (header_is(buf, nl, capture[i]))
            slot = &r->captured[i];
    if (!slot)
        return;
    v = colon + 1;
    e = buf + n;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' '))
        e--;
    free(*slot);
    *slot = strndup(v, (size_t)(e - v)); /* a failure leaves NULL: treated as absent */
}

/* Where the header callback keeps what it finds. */
struct header_sink {
    struct http_response *resp;
    const char *const *capture;
};

/* curl header callback. */
static size_t on_header(char *buf, size_t size, size_t nitems, void *userdata)
{
    const struct header_sink *hs = userdata;

    http_header_line(hs->resp, hs->capture, buf, size * nitems);
    return size * nitems;
}

/* Release what RESP holds. */
void http_response_clear(struct http_response *resp)
{
    free(resp->body);
    for (int i = 0; i < HDR_COUNT; i++)
        free(resp->hdr[i]);
    for (int i = 0; i < HTTP_CAPTURE_MAX; i++)
        free(resp->captured[i]);
    memset(resp, 0, sizeof(*resp));
}

/* Start of the window of earlier sends; see http.h. */
void http_send_window(const struct http_response *resp, struct timespec *from)
{
    time_t date = resp->hdr[HDR_DATE] ? curl_getdate(resp->hdr[HDR_DATE], NULL) : -1;
    long long ms;

    if (date == -1)
        date = time(NULL);
    ms = (long long)date * 1000 - (long long)resp->elapsed_ms - 1000;
    from->tv_sec = (time_t)(ms / 1000);
    from->tv_nsec = (long)(ms % 1000) * 1000000L;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* Wait MS before a retry; a cancellable request looks up every 50 ms.
 * Returns 0, or -EINTR when cancelled. */
static int backoff_wait(const struct http_pool *pool, int cancellable, long ms)
{
    while (ms > 0) {
        long step = cancellable && ms > 50 ? 50 : ms;

        if (cancellable && pool_cancelled(pool))
            return -EINTR;
        sleep_ms(step);
        ms -= step;
    }
    return cancellable && pool_cancelled(pool) ? -EINTR : 0;
}

/* See http.h. */
double http_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* How long the attempt just made on H took, in microseconds. */
static unsigned long attempt_us(CURL *h)
{
    curl_off_t us = 0;

    return curl_easy_getinfo(h, CURLINFO_TOTAL_TIME_T, &us) == CURLE_OK && us > 0 ?
        (unsigned long)us :
        0;
}

/* One attempt on handle H. Returns 0 if a response arrived, -EIO
 * on transport failure (message in resp->transport_error), -EACCES when that
 * failure is permanent (a certificate that does not verify), -ENOMEM. */
static int attempt_once(struct http_pool *pool, CURL *h, const struct http_request *req,
                        struct curl_slist *hdrs, struct http_response *resp, struct send_count *sc)
{
    struct buf body = BUF_INIT(pool->cfg.body_max);
    struct header_sink hs = { resp, req->capture };
    char errbuf[CURL_ERROR_SIZE] = "";
    CURLcode rc;

    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, req->url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &hs);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, on_prereq);
    curl_easy_setopt(h, CURLOPT_PREREQDATA, sc);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, pool->cfg.connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, pool->cfg.request_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
    if (pool->cfg.ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, pool->cfg.ca_file);
    if (is_cancellable(pool, req)) {
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, pool);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    }
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req->method);
    if (strcmp(req->method, "GET") == 0) {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
    } else if (req->body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, req->body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
    } else if (strcmp(req->method, "DELETE") != 0) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
    }

    rc = curl_easy_perform(h);
    if (body.err == -EFBIG) {
        snprintf(errbuf, sizeof(errbuf), "response body over %zu bytes", pool->cfg.body_max);
        rc = CURLE_WRITE_ERROR;
    }
    if (!(resp->body = buf_take(&body, &resp->body_len))) {
        if (errbuf[0] == '\0')
            return -ENOMEM;
        resp->body_len = 0;
        if (!(resp->body = strdup("")))
            return -ENOMEM;
    }
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        snprintf(resp->transport_error, sizeof(resp->transport_error), "cancelled");
        return -EINTR;
    }
    if (rc != CURLE_OK) {
        snprintf(resp->transport_error, sizeof(resp->transport_error), "%s",
                 errbuf[0] ? errbuf : curl_easy_strerror(rc));
        http_stats_count(pool->stats, req->kind, 0, 0, req->body_len, attempt_us(h));
        /* the message says what: refused, reset, timed out...; a certificate
         * that does not verify will not verify on the next attempt either */
        return http_transport_permanent(rc) ? -EACCES : -EIO;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    http_stats_count(pool->stats, req->kind, resp->status, resp->body_len, req->body_len,
                     attempt_us(h));
    return 0;
}

/* May the attempt just made on H (RC, RESP) have been applied by the server
 * without our knowing? Yes when libcurl sent it twice, when it was sent and
 * no answer came, and when the answer says the server failed or timed out
 * while it may have been working on it (408, 5xx); not for a throttled
 * (429) or any other answered request, nor for one never sent. */
static int outcome_unknown(CURL *h, int rc, const struct http_response *resp,
                           const struct send_count *sc)
{
    long sent = 0;

    if (sc->sends > 1)
        return 1;
    if (rc != 0) {
        curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &sent);
        return sent > 0;
    }
    return resp->status == 408 || resp->status >= 500;
}

/* One http_perform call, across its attempts. */
struct perform {
    struct http_pool *pool;
    const struct http_request *req;
    struct http_response *resp;
    struct curl_slist *hdrs; /* req->headers and ours */
    const char *what;        /* for logs */
    char safe_url[1024];     /* req->url with any SAS signature redacted */
    double start;            /* when the first attempt started */
    int cancellable;         /* is_cancellable */
    int resent;              /* an earlier attempt may have been applied */
    int throttled;           /* attempts answered 503 or 429 */
};

/* The header list of P's request: its own lines, and "Expect:" (libcurl
 * would otherwise send "Expect: 100-continue" on large bodies). Returns 0
 * or -ENOMEM. */
static int perform_headers(struct perform *p)
{
    struct curl_slist *n;

    for (const char *const *h = p->req->headers; h && *h; h++) {
        if (!(n = curl_slist_append(p->hdrs, *h)))
            return -ENOMEM;
        p->hdrs = n;
    }
    if (!(n = curl_slist_append(p->hdrs, "Expect:")))
        return -ENOMEM;
    p->hdrs = n;
    return 0;
}

/* Make attempt number ATTEMPT of P on H, and settle it when its outcome is
 * unknown (http_request.settle). Returns as attempt_once (0 also when the
 * settle hook found the attempt applied: resp->settled); *DONE is set when
 * no retry may follow whatever the answer (cancelled, settled, ENOMEM). */
/* Wait for P's turn under the mount's pace (http_pace_reserve). Returns
 * 0, or -EINTR when a read was cancelled meanwhile. */
static int pace_wait(struct perform *p)
{
    struct http_pace *pace = p->pool->cfg.pace;
    double now = http_now_ms(), wait;

    if (!pace)
        return 0;
    wait = http_pace_reserve(pace, now) - now;
    do {
        if (backoff_wait(p->pool, p->cancellable, wait > 0 ? (long)wait + 1 : 0) < 0)
            return -EINTR;
    } while ((wait = http_pace_admit(pace, http_now_ms())) > 0);
    return 0;
}

/* The status of P's answer that counts for retries and the pace
 * (http_request.status_of). */
static long counted_status(const struct perform *p)
{
    const struct http_request *r = p->req;

    return r->status_of && p->resp->status ? r->status_of(r->settle_ctx, p->resp) : p->resp->status;
}

/* Wait for the turn the targets give P's write in bulk (http_request.target).
 * Returns 0, or -EINTR when cancelled meanwhile. */
static int target_wait(struct perform *p)
{
    struct http_targets *t = http_pace_targets(p->pool->cfg.pace);
    const struct http_request *r = p->req;
    double wait;

    if (!t || !r->target)
        return 0;
    wait = http_targets_admit(t, r->target, r->target_n, http_now_ms());
    return wait > 0 && backoff_wait(p->pool, p->cancellable, (long)wait + 1) < 0 ? -EINTR : 0;
}

/* Is P's answer a write in bulk's refusal for its rate (http_request.
 * rate_limited): one its target answers for? An enum http_refusal. */
static int target_refused(const struct perform *p)
{
    const struct http_request *r = p->req;
    long status = counted_status(p);
    int kind;

    if (!r->target || !http_pool_targets(p->pool) || (status != 503 && status != 429))
        return HTTP_SERVED;
    kind = r->rate_limited ? r->rate_limited(r->settle_ctx, p->resp) : HTTP_REFUSED_KEY;
    /* the account's alone: another refusal is retried after its backoff */
    return kind == HTTP_REFUSED_KEY && !r->target[0] ? HTTP_SERVED : kind;
}

/* Count P's answer (refused for its rate or not) in the targets, for a
 * write in bulk whose attempt started at T0. */
static void target_answered(struct perform *p, double t0)
{
    struct http_targets *t = http_pace_targets(p->pool->cfg.pace);

    if (t && p->req->target)
        http_targets_answered(t, p->req->target, p->req->target_n, target_refused(p), t0,
                              http_now_ms());
}

static int perform_attempt(struct perform *p, CURL *h, int attempt, int *done)
{
    struct http_response *resp = p->resp;
    struct send_count sc = { 0 };
    double t0;
    int rc;

    *done = 1;
    if (attempt > 1)
        http_response_clear(resp);
    if ((p->cancellable && pool_cancelled(p->pool)) || pace_wait(p) < 0 || target_wait(p) < 0) {
        snprintf(resp->transport_error, sizeof(resp->transport_error), "cancelled");
        return -EINTR;
    }
    t0 = http_now_ms(); /* the attempt's start, after the waits */
    rc = attempt_once(p->pool, h, p->req, p->hdrs, resp, &sc);
    resp->attempts = attempt;
    if (rc == 0 && (counted_status(p) == 503 || counted_status(p) == 429))
        p->throttled++;
    if (rc == 0)
        target_answered(p, t0);
    resp->throttled = p->throttled;
    if (rc == 0 && p->pool->cfg.pace) /* a write in bulk's refusal for its rate is its target's */
        http_pace_answered(p->pool->cfg.pace, http_now_ms(),
                           !target_refused(p) &&
                               (counted_status(p) == 503 || counted_status(p) == 429),
                           http_retry_after_ms(resp));
    if (rc == -EINTR) {
        log_debug(p->pool->lg, "%s: cancelled", p->what);
        return rc;
    }
    resp->resent = p->resent || sc.sends > 1;
    resp->elapsed_ms = http_now_ms() - p->start;
    if (sc.sends > 1)
        log_debug(p->pool->lg, "%s: libcurl resent the request on a new connection", p->what);
    if (rc != -ENOMEM && outcome_unknown(h, rc, resp, &sc)) {
        int applied = p->req->settle ? p->req->settle(p->req->settle_ctx, resp) : -1;

        if (applied == 1) {
            log_info(p->pool->lg,
                     "%s: the answer was lost, but the service already "
                     "holds the change: done",
                     p->what);
            resp->settled = 1;
            return 0;
        }
        /* not applied (a retry is a first send again), or unknown */
        p->resent = applied < 0;
    }
    if (rc == -ENOMEM)
        return rc;
    if (rc == 0)
        log_debug(p->pool->lg, "%s %s -> %ld (%.1f ms, %zu bytes, attempt %d)", p->req->method,
                  p->safe_url, resp->status, http_now_ms() - t0, resp->body_len, attempt);
    else
        log_debug(p->pool->lg, "%s %s -> transport error: %s (attempt %d)", p->req->method,
                  p->safe_url, resp->transport_error, attempt);
    *done = 0;
    return rc;
}

/* After attempt number ATTEMPT of P ended with RC (not done): wait for the
 * next one. Returns 0 to retry, 1 when no retry is due (a final answer, a
 * permanent failure, no retries or no time left), -EINTR when a read was
 * cancelled while waiting. */
static int perform_backoff(struct perform *p, int attempt, int rc)
{
    const struct http_pool *pool = p->pool;
    struct http_response *resp = p->resp;
    const char *why;
    long wait;
    /* a throttling service asks to slow down, not to give up: with a pace
     * (the whole mount slows down), its answers retry until the deadline */
    long status = rc == 0 ? counted_status(p) : 0;
    int unlimited =
        rc == 0 && (status == 503 || status == 429) && pool->cfg.pace && pool->cfg.max_retries > 0;

    if ((rc == 0 && !http_status_is_transient(status)) || rc == -EACCES ||
        (attempt > pool->cfg.max_retries && !unlimited))
        return 1;
    wait = http_backoff_ms(&pool->cfg, attempt, http_retry_after_ms(resp));
    if (rc == 0 && target_refused(p)) /* at its target's next turn (target_wait) */
        wait = http_retry_after_ms(resp) > 0 ? http_retry_after_ms(resp) : 0;
    why = rc == 0 ? "transient HTTP status" : resp->transport_error;
    if (http_now_ms() - p->start + (double)wait > (double)pool->cfg.retry_deadline_ms) {
        log_info(pool->lg,
                 "%s: %s, no retry: waiting %ld ms would pass the retry "
                 "deadline (%ld ms after the first attempt)",
                 p->what, why, wait, pool->cfg.retry_deadline_ms);
        return 1;
    }
    if (attempt > pool->cfg.max_retries)
        log_info(pool->lg,
                 "%s: throttled, retrying in %ld ms (attempt %d: throttled answers retry "
                 "until the retry deadline)",
                 p->what, wait, attempt + 1);
    else
        log_info(pool->lg, "%s: %s, retrying in %ld ms (attempt %d of %d)", p->what, why, wait,
                 attempt + 1, pool->cfg.max_retries + 1);
    if (pool->stats)
        atomic_fetch_add_explicit(&pool->stats->retries, 1, memory_order_relaxed);
    if (backoff_wait(pool, p->cancellable, wait) < 0) {
        log_debug(pool->lg, "%s: cancelled while waiting to retry", p->what);
        snprintf(resp->transport_error, sizeof(resp->transport_error), "cancelled");
        return -EINTR;
    }
    return 0;
}

/* Perform REQ with retries; see http.h for the contract. */
int http_perform(struct http_pool *pool, const struct http_request *req, struct http_response *resp)
{
    struct perform p = {
        .pool = pool,
        .req = req,
        .resp = resp,
        .what = req->log_what ? req->log_what : req->method,
        .cancellable = is_cancellable(pool, req),
    };
    CURL *h;
    int rc = 0;

    memset(resp, 0, sizeof(*resp));
    if (perform_headers(&p) < 0 || !(h = pool_get(pool))) {
        curl_slist_free_all(p.hdrs);
        return -ENOMEM;
    }
    http_redact_url(req->url, p.safe_url, sizeof(p.safe_url));
    p.start = http_now_ms();
    for (int attempt = 1;; attempt++) {
        int done, next;

        rc = perform_attempt(&p, h, attempt, &done);
        if (done)
            break;
        if ((next = perform_backoff(&p, attempt, rc)) != 0) {
            if (next < 0)
                rc = next;
            break;
        }
        if (rc != 0) {
            /* A broken connection: start over with a fresh handle. */
            curl_easy_cleanup(h);
            if (!(h = curl_easy_init())) {
                rc = -ENOMEM;
                break;
            }
        }
    }
    if (h) {
        if (rc == 0)
            pool_put(pool, h);
        else
            curl_easy_cleanup(h);
    }
    /* libcurl's copies of the header lines may hold a bearer token */
    for (struct curl_slist *n = p.hdrs; n; n = n->next)
        OPENSSL_cleanse(n->data, strlen(n->data));
    curl_slist_free_all(p.hdrs);
    return rc;
}
