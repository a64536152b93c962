/* http/counters.c - the transport's counters: attempts by kind and answer,
 * bytes, and a histogram of how long attempts took (http.h). */
#include <stdatomic.h>
#include <stddef.h>

#include "http/http.h"

const unsigned long http_latency_bounds_us[HTTP_LATENCY_BUCKETS - 1] = {
    5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000
};

static void add(atomic_ulong *v, unsigned long n)
{
    atomic_fetch_add_explicit(v, n, memory_order_relaxed);
}

/* See http.h. */
void http_stats_count(struct http_stats *st, int kind, long status, size_t in, size_t out,
                      unsigned long us)
{
    size_t b = 0;

    if (!st)
        return;
    add(&st->requests, 1);
    if (kind >= 0 && kind < HTTP_KINDS)
        add(&st->by_kind[kind], 1);
    add(&st->bytes_in, in);
    add(&st->bytes_out, out);
    if (status == 0)
        add(&st->transport_errors, 1);
    else if (status < 300)
        add(&st->status_2xx, 1);
    else if (status < 400)
        add(&st->status_3xx, 1);
    else if (status < 500)
        add(&st->status_4xx, 1);
    else
        add(&st->status_5xx, 1);
    while (b < HTTP_LATENCY_BUCKETS - 1 && us > http_latency_bounds_us[b])
        b++;
    add(&st->latency[b], 1);
    add(&st->latency_us, us);
}
