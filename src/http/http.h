/* http.h - libcurl transport: a pool of keep-alive handles, timeouts, retries with backoff.
 * Protocol-neutral: the headers a protocol needs are named by its requests. */
#ifndef AZTFS_HTTP_HTTP_H
#define AZTFS_HTTP_HTTP_H

#include <stddef.h>
#include <stdatomic.h>

#include "util/util.h"

struct http_pool;
struct http_response;

/* Transport settings; zero fields take the defaults shown. */
struct http_config {
    long connect_timeout_ms; /* default 10000 */
    long request_timeout_ms; /* whole request, default 60000 */
    int max_retries;         /* retries after the first attempt, default 4, <0: none */
    long retry_base_ms;      /* first backoff, doubled each retry, default 200 */
    long retry_max_ms;       /* cap of one backoff, default 10000 */
    long retry_deadline_ms;  /* no retry starts later than this after the
                                  first attempt started, default 120000 */
    const char *ca_file;     /* CA bundle for https, NULL = system default */
    size_t body_max;         /* largest response body, default 256 MiB
                                  (over it: a transport error) */
    struct http_pace *pace;  /* borrowed: the rate every pool of the mount
                                  shares (http_pace_new); NULL: none */
};

/* A mount's request rate, shared by its pools (listings, prefetch, splits
 * and write-behind send through different pools): at most MAX_RPS requests
 * start per second (0: no cap), and when the service throttles (503, 429)
 * for more than a request now and then, every request slows down, not only
 * the ones that were answered so. */
struct http_pace;

/* A pace capped at MAX_RPS (0: none) in *OUT; LG (borrowed, may be NULL)
 * hears each slowdown. 0, -EINVAL (MAX_RPS < 0) or -ENOMEM. */
int http_pace_new(struct http_pace **out, double max_rps, const struct logger *lg);

void http_pace_free(struct http_pace *p);

/* A request asks at NOW (ms, CLOCK_MONOTONIC) to start: the time it may
 * (NOW or later). Requests are spaced 1000/rate ms apart in the order
 * they ask, and none starts before a Retry-After heard by any. */
double http_pace_reserve(struct http_pace *p, double now);

/* A request about to be sent at NOW, after the start http_pace_reserve
 * gave it: 0 when it may go (and is counted as started), else the ms to
 * wait before asking again. With a cap of N, at most N requests start
 * within any second, however late the threads that reserved their starts
 * got to them. */
double http_pace_admit(struct http_pace *p, double now);

/* An answer arrived at NOW: served, or THROTTLED (503, 429) with a wait
 * of RETRY_AFTER_MS (<= 0: not said). A throttled answer alone costs only
 * its own request's retry (http_backoff_ms heeds its Retry-After). When
 * throttling is sustained - at least 4 throttled answers and a third of
 * all answers within the last two seconds, or a Retry-After over 2 s - it
 * holds every request until its Retry-After (at most 60 s), and cuts the
 * rate (once per second of such answers): from the rate allowed, or sent
 * when lower or unlimited, to the share of it the service served since
 * the last cut, at most 0.7 of it and never below 1 per second. The rate
 * grows back by a twentieth of the cut rate per second: to the cap, or
 * without a cap to twice the rate cut, where the limit ends. Each cut is
 * logged at info. */
void http_pace_answered(struct http_pace *p, double now, int throttled, long retry_after_ms);

/* The rate allowed now (0: no limit) and, in *CUTS (may be NULL), the
 * slowdowns so far. */
double http_pace_rate(struct http_pace *p, unsigned long *cuts);

/* The service's scalability targets as the mount learns them (targets.c):
 * the entities a second each key (a partition: "table\npk") and the
 * account take before the service throttles. Neither has a limit until a
 * write is refused for it; then it grows while served and is cut by each
 * refusal. Shared by every thread that writes in bulk. */
struct http_targets;

/* What a refusal for the service's rate names (http_request.rate_limited). */
enum http_refusal {
    HTTP_SERVED = 0,      /* not a refusal for the rate */
    HTTP_REFUSED_KEY,     /* the key's (a partition's) rate, or not said */
    HTTP_REFUSED_ACCOUNT, /* the account's ("over the account limit") */
};

/* New targets in *OUT, none learned; LG (borrowed, may be NULL) gets a
 * line per cut. Returns 0 or -ENOMEM. */
int http_targets_new(struct http_targets **out, const struct logger *lg);

void http_targets_free(struct http_targets *t);

/* Now on CLOCK_MONOTONIC, in ms: the clock of the pace and the targets. */
double http_now_ms(void);

/* The targets of pace P's mount (NULL when P is): every pool's writers
 * share them as they share the pace. */
struct http_targets *http_pace_targets(struct http_pace *p);

/* A write of N entities to KEY ("": to the account alone, as a query
 * across partitions) asks to start at NOW (ms, CLOCK_MONOTONIC):
 * it is given the next turn of KEY and the account, charged to both, and
 * the ms until that turn comes (0: now) are returned. Turns go in the
 * order asked: a write waiting for its turn is not passed by a later
 * one. */
double http_targets_admit(struct http_targets *t, const char *key, unsigned n, double now);

/* As http_targets_admit, but nothing is charged: the ms until a write of
 * N to KEY may start (0: now). */
double http_targets_wait(struct http_targets *t, const char *key, unsigned n, double now);

/* The write of N entities to KEY admitted at STARTED was answered at NOW:
 * REFUSED (an enum http_refusal) or served. */
void http_targets_answered(struct http_targets *t, const char *key, unsigned n, int refused,
                           double started, double now);

/* A write to KEY charged CHARGED entities when admitted (an estimate: a
 * query's page) was served and moved N: its charge, and so the turns
 * given after it, made N (a page that came back short gives the rest of
 * its turn back; a longer one takes more). */
void http_targets_settle(struct http_targets *t, const char *key, unsigned charged, unsigned n,
                         double now);

/* The rate KEY (NULL: the account) is held to now (0: none) and, in *CUTS
 * (may be NULL), the cuts so far. */
double http_targets_rate(struct http_targets *t, const char *key, unsigned long *cuts);

#define HTTP_KINDS \
    16 /* request kinds counted separately (the protocol's,
                           e.g. enum table_req_kind) */

#define HTTP_CODES 24           /* service error codes counted apart (the last: others) */
#define HTTP_LATENCY_BUCKETS 12 /* 5 ms ... 10 s, and slower */

/* Counters, readable at any time (relaxed atomics). */
struct http_stats {
    atomic_ulong by_kind[HTTP_KINDS]; /* attempts by request kind */
    atomic_ulong requests;            /* requests sent, retries included */
    atomic_ulong retries;
    atomic_ulong transport_errors;
    atomic_ulong bytes_in;
    atomic_ulong bytes_out;
    atomic_ulong status_2xx, status_3xx, status_4xx, status_5xx;
    atomic_ulong by_code[HTTP_CODES]; /* answers with a service error code, by
                                         the caller's index (table_code_index) */
    /* how long attempts took (a Prometheus histogram): latency[i] counts
     * those of at most http_latency_bounds_us[i] and more than the bound
     * before it (the last: all slower), latency_us their sum */
    atomic_ulong latency[HTTP_LATENCY_BUCKETS];
    atomic_ulong latency_us;
};

/* The upper bounds of the latency buckets, in microseconds; the last
 * bucket has none (+Inf). */
extern const unsigned long http_latency_bounds_us[HTTP_LATENCY_BUCKETS - 1];

/* Count one finished attempt of kind KIND in ST (NULL: nothing): its HTTP
 * STATUS (0: no answer), bytes IN and OUT, and how long it took, US. */
void http_stats_count(struct http_stats *st, int kind, long status, size_t in, size_t out,
                      unsigned long us);

struct http_request {
    const char *method;         /* "GET", "POST", "PUT", "MERGE", "DELETE" */
    const char *url;            /* absolute URL, already percent-encoded */
    const char *const *headers; /* NULL-terminated "Name: value" lines */
    const char *body;           /* may be NULL */
    size_t body_len;
    const char *log_what; /* short description for logs, e.g. "query t" */
    int kind;             /* 0..HTTP_KINDS-1, for the counters */
    /* For a write: called right after an attempt whose outcome is unknown
     * (sent, then no answer, 408 or 5xx), before any retry, to look at the
     * service and say whether that attempt was applied: 1 yes (no retry;
     * resp->settled = 1), 0 no (the retry is then a first send again), or
     * -errno (cannot tell: retry, and resp->resent stays set). NULL: none. */
    int (*settle)(void *ctx, const struct http_response *resp);
    void *settle_ctx;
    /* The status that counts for retries and the pace, of an answer whose
     * own status does not tell (a $batch's 202 whose failed part says 429,
     * nothing applied): called with SETTLE_CTX for each answer. NULL: the
     * answer's own. */
    long (*status_of)(void *ctx, const struct http_response *resp);
    /* NULL-terminated names of further response headers to keep, in
     * http_response.captured at the same index (names compare without
     * regard to case); at most HTTP_CAPTURE_MAX, later ones are ignored.
     * NULL: none. The protocol above names its own headers here. */
    const char *const *capture;
    /* A write in bulk of TARGET_N entities to the partition TARGET names
     * (a key of the pace's http_targets; "": the account alone, and a
     * refusal that names no account is then any 503's): each attempt waits until the
     * targets admit it, and its answer is counted there; a throttled one
     * is tried again as soon as they admit it (or after its Retry-After),
     * with no backoff of its own. NULL: none. */
    const char *target;
    unsigned target_n;
    /* Does the answer RESP (503 or 429) say the service is over its rate
     * (and not failing for another reason), with SETTLE_CTX? An enum
     * http_refusal: which rate, or HTTP_SERVED for none. Only a refusal
     * slows TARGET (or the account) and is retried at its next turn; any
     * other answer is retried after its backoff and judged by the pace.
     * NULL: every 503 and 429 is HTTP_REFUSED_KEY. */
    int (*rate_limited)(void *ctx, const struct http_response *resp);
};

/* Response headers of HTTP itself, kept from every response. */
enum http_hdr {
    HDR_ETAG,
    HDR_RETRY_AFTER,
    HDR_CONTENT_TYPE,
    HDR_DATE,
    HDR_RETRY_AFTER_MS,   /* retry-after-ms (Azure's, in milliseconds) */
    HDR_X_RETRY_AFTER_MS, /* x-ms-retry-after-ms (Cosmos DB's 429) */
    HDR_COUNT
};

/* The most headers one request may ask to capture (http_request.capture). */
#define HTTP_CAPTURE_MAX 8

struct http_response {
    long status; /* HTTP status, 0 when no response was received */
    char *body;  /* malloc'd, NUL-terminated (may be empty) */
    size_t body_len;
    char *hdr[HDR_COUNT];             /* malloc'd values or NULL */
    char *captured[HTTP_CAPTURE_MAX]; /* values of the request's capture
                                    headers, by index: malloc'd or NULL */
    int attempts;                     /* attempts made (1 = no retry) */
    int throttled;                    /* of them, answered 503 or 429 */
    int resent;                       /* an earlier send of this request may have
                                    reached the server and been applied: we
                                    retried after an answer-less or 408/5xx
                                    attempt, or libcurl resent the request by
                                    itself after a reused connection died.
                                    0: the request was applied at most once,
                                    by the send that this answer answers. */
    int settled;                      /* req->settle said an attempt whose answer was
                                    lost was applied: the request succeeded,
                                    status and body are the lost attempt's */
    double elapsed_ms;                /* from the start of the first send to the
                                    last answer (the window in which an
                                    earlier send may have been applied) */
    char transport_error[128];        /* curl's message when status == 0 */
};

/* Create a pool. LG and STATS are borrowed and must outlive the pool.
 * Returns 0 or -ENOMEM. */
int http_pool_new(struct http_pool **out, const struct http_config *cfg, const struct logger *lg,
                  struct http_stats *stats);

/* Close every pooled connection and free POOL (NULL: nothing). */
void http_pool_free(struct http_pool *pool);

/* From now on, ask CANCELLED(CTX) during reads (GET): before each retry,
 * during its backoff and while a transfer is in progress. When it answers
 * nonzero the read ends with -EINTR. Writes are never cancelled: a write
 * cut off after it was sent would leave its outcome unknown. Call before
 * the pool is used by more than one thread. */
void http_pool_set_cancel(struct http_pool *pool, int (*cancelled)(void *ctx), void *ctx);

/* The targets POOL's pace keeps (http_pace_targets; NULL: no pace). */
struct http_targets *http_pool_targets(const struct http_pool *pool);

/* From now on, ask ABORTED(CTX) during every request, writes included (as
 * http_pool_set_cancel does for reads; it replaces that hook): nonzero ends
 * the request with -EINTR, even after it was sent. For a caller that can
 * settle a write whose outcome is unknown (write-behind: its journal
 * recorded the send first). Call before the pool is used by more than one
 * thread. */
void http_pool_set_abort(struct http_pool *pool, int (*aborted)(void *ctx), void *ctx);

/* Perform REQ, retrying transient failures (transport errors, 408, 429, 500,
 * 502, 503, 504; the status req->status_of says when it is given) with
 * exponential backoff, full jitter and Retry-After (or retry-after-ms,
 * x-ms-retry-after-ms), up to
 * cfg.max_retries and while the next attempt would start within
 * cfg.retry_deadline_ms of the first (so a request takes at most about the
 * deadline plus one request timeout; a Retry-After beyond the deadline ends
 * the retries at once). RESP receives the last attempt's outcome (caller clears it
 * with http_response_clear, also on error), and resp->resent says whether
 * an earlier send may have been applied (see struct http_response): the one
 * signal that a 409/412/404 may answer our own write rather than someone
 * else's.
 * Returns 0 when an HTTP response was received (any status), -EIO when none
 * could be (resp->transport_error says why: refused, reset, timed out...),
 * -EACCES at once, without retries, when the server's certificate does not
 * verify (or the CA file is unusable), -EINTR when a read was cancelled
 * (http_pool_set_cancel), -ENOMEM. */
int http_perform(struct http_pool *pool, const struct http_request *req,
                 struct http_response *resp);

/* The earliest time, by the server's clock, at which an earlier send of the
 * request RESP answers could have been applied: the answer's Date header
 * (or our clock when it has none) less resp->elapsed_ms, less one second
 * for the Date's resolution. Compared with an entity's Timestamp, it tells
 * a change made by that send from one made before it. */
void http_send_window(const struct http_response *resp, struct timespec *from);

/* Free everything RESP owns and zero it. */
void http_response_clear(struct http_response *resp);

/* Parse one raw header line ("Name: value\r\n", N bytes, not necessarily
 * NUL-terminated) into R->hdr when Name is one of enum http_hdr's, else
 * into R->captured[i] when Name is CAPTURE[i] (CAPTURE as in
 * http_request.capture, may be NULL); names compare without regard to
 * case, and a repeated header keeps the last value. Other lines are
 * ignored. */
void http_header_line(struct http_response *r, const char *const *capture, const char *buf,
                      size_t n);

/* Percent-encode S: every byte but A-Z a-z 0-9 - . _ ~ (libcurl's
 * escaping). Returns a malloc'd string, or NULL on ENOMEM. */
char *http_escape(const char *s);

/* Decode the %XX escapes of S (libcurl's unescaping). Returns a malloc'd
 * NUL-terminated string, or NULL on ENOMEM or when the result would hold a
 * NUL byte. */
char *http_unescape(const char *s);

/* Copy URL into OUT (size OUTLEN) with the value of any "sig=" query
 * parameter replaced by "REDACTED", for logs. */
void http_redact_url(const char *url, char *out, size_t outlen);

#endif
