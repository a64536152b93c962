/* http/http_i.h - what http.c asks retry.c inside the transport: when a
 * request is retried, and how long it waits first. */
#ifndef AZTFS_HTTP_HTTP_I_H
#define AZTFS_HTTP_HTTP_I_H

#include <curl/curl.h>

#include "http/http.h"

/* Will a request that failed in transport with RC fail the same way
 * however often it is sent (a certificate that does not verify, a
 * malformed URL)? 1 or 0. */
int http_transport_permanent(CURLcode rc);

/* Is STATUS worth another attempt? (408, 429, 500, 502, 503, 504) */
int http_status_is_transient(long status);

/* Seconds a Retry-After value V asks for (delta-seconds, or an HTTP date),
 * at most a day (more is kept as a day: the retry deadline then ends the
 * retries); -1 when V is absent or not understood. */
long http_retry_after_secs(const char *v);

/* Milliseconds the answer RESP asks to wait: its Retry-After (seconds or a
 * date), else its retry-after-ms, else its x-ms-retry-after-ms (Cosmos
 * DB's 429), at most a day; -1 when it says nothing understood. */
long http_retry_after_ms(const struct http_response *resp);

/* Milliseconds to wait before retry number ATTEMPT (1-based) under CFG:
 * full jitter over an exponentially growing window (retry_base_ms doubled,
 * at most retry_max_ms), or the server's RETRY_AFTER_MS (http_retry_after_ms;
 * < 0: none) if larger. */
long http_backoff_ms(const struct http_config *cfg, int attempt, long retry_after_ms);

#endif
