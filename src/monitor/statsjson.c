/* monitor/statsjson.c - the mount's request and cache counters as JSON (xattr user.aztfs.stats, SIGUSR1). */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <jansson.h>

#include "util/util.h"
#include "monitor/monitor.h"

static json_int_t load(atomic_ulong *v)
{
    return (json_int_t)atomic_load_explicit(v, memory_order_relaxed);
}

/* The answers that carried a service error code, by code (those seen),
 * as ROOT's "errors_by_code". 0, or -ENOMEM. */
static int add_codes(json_t *root, struct http_stats *h)
{
    json_t *codes = json_object();

    for (int i = 0; codes && table_code_name(i); i++)
        if (load(&h->by_code[i]) > 0 &&
            json_object_set_new(codes, table_code_name(i), json_integer(load(&h->by_code[i]))) < 0)
            goto fail;
    return codes && json_object_set_new(root, "errors_by_code", codes) == 0 ? 0 : -ENOMEM;
fail:
    json_decref(codes);
    return -ENOMEM;
}

/* Write-behind's counts (user.aztfs.pending without its list of
 * failures and the journal's path) as ROOT's "writeback"; nothing on a
 * synchronous mount. 0, or -ENOMEM. */
static int add_writeback(json_t *root, struct store *s)
{
    struct store_pending_counts c;
    json_t *w;

    if (store_pending_counts(s, &c) < 0)
        return 0;
    w = json_pack("{s:I, s:I, s:I, s:I}", "queued", (json_int_t)c.queued, "sending",
                  (json_int_t)c.sending, "failed", (json_int_t)c.failed, "damaged",
                  (json_int_t)c.damaged);
    return w && json_object_set_new(root, "writeback", w) == 0 ? 0 : -ENOMEM;
}

/* How long requests took, as ROOT's "latency": "buckets", a list of
 * {"le": seconds (null: no bound), "count": attempts that took at most
 * that, cumulative}, "sum_seconds" and "count". 0, or -ENOMEM. */
static int add_latency(json_t *root, struct http_stats *h)
{
    json_t *buckets = json_array(), *b;
    json_int_t total = 0;

    for (size_t i = 0; buckets && i < HTTP_LATENCY_BUCKETS; i++) {
        total += load(&h->latency[i]);
        b = json_pack("{s:o, s:I}", "le",
                      i < HTTP_LATENCY_BUCKETS - 1 ? json_real(http_latency_bounds_us[i] / 1e6) :
                                                     json_null(),
                      "count", total);
        if (!b || json_array_append_new(buckets, b) < 0) {
            json_decref(buckets);
            return -ENOMEM;
        }
    }
    b = buckets ? json_pack("{s:o, s:f, s:I}", "buckets", buckets, "sum_seconds",
                            load(&h->latency_us) / 1e6, "count", total) :
                  NULL;
    return b && json_object_set_new(root, "latency", b) == 0 ? 0 : -ENOMEM;
}

/* The budget of background listing threads (-o fetch_threads) as ROOT's
 * "threads"; nothing without a client. 0, or -ENOMEM. */
static int add_threads(json_t *root, struct store *s)
{
    struct worker_budget_counts b;
    json_t *t;

    if (!s->tc)
        return 0;
    worker_budget_read(table_client_threads(s->tc), &b);
    t = json_pack("{s:i, s:i, s:i, s:I}", "limit", b.limit, "running", b.used, "peak", b.peak,
                  "refused", (json_int_t)b.refused);
    return t && json_object_set_new(root, "threads", t) == 0 ? 0 : -ENOMEM;
}

/* Build the JSON document; see monitor/monitor.h. */
json_t *stats_object(struct store *s)
{
    struct http_stats *h = &s->stats;
    struct cache_stats cs;
    json_t *root, *kinds;

    cache_get_stats(s->cache, &cs);
    kinds = json_object();
    for (int k = 0; kinds && table_kind_name(k); k++)
        json_object_set_new(kinds, table_kind_name(k), json_integer(load(&h->by_kind[k])));
    root = json_pack(
        "{s:I, s:o, s:I, s:I, s:{s:I, s:I, s:I, s:I}, s:I, s:I,"
        " s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}}",
        "requests", load(&h->requests), "requests_by_kind", kinds, "retries", load(&h->retries),
        "transport_errors", load(&h->transport_errors), "responses", "2xx", load(&h->status_2xx),
        "3xx", load(&h->status_3xx), "4xx", load(&h->status_4xx), "5xx", load(&h->status_5xx),
        "bytes_in", load(&h->bytes_in), "bytes_out", load(&h->bytes_out), "cache", "hits",
        (json_int_t)cs.hits, "misses", (json_int_t)cs.misses, "evictions", (json_int_t)cs.evictions,
        "expirations", (json_int_t)cs.expirations, "entries", (json_int_t)cs.entries, "bytes",
        (json_int_t)cs.bytes, "max_bytes", (json_int_t)cs.max_bytes);
    if (root &&
        json_object_set_new(
            root, "failures",
            json_integer(s->log.failures ? (json_int_t)failring_count(s->log.failures) : 0)) < 0) {
        json_decref(root);
        root = NULL;
    }
    if (root &&
        (add_codes(root, h) < 0 || add_writeback(root, s) < 0 || add_latency(root, h) < 0 ||
         add_threads(root, s) < 0)) {
        json_decref(root);
        root = NULL;
    }
    return root;
}

/* See monitor/monitor.h. */
char *stats_json(struct store *s)
{
    json_t *root = stats_object(s);
    char *out = root ? json_dumps(root, JSON_COMPACT) : NULL;

    json_decref(root);
    return out;
}
