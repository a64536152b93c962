/* http/retry.c - when a request is tried again, and after how long: the
 * statuses and transport failures worth another attempt, what an answer
 * asks to wait (Retry-After, retry-after-ms, x-ms-retry-after-ms), and
 * the jittered backoff (http_i.h). http.c's attempt loop asks them. */
#include <stdlib.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/rand.h>

#include "http/http_i.h"

/* See http_i.h. */
int http_status_is_transient(long status)
{
    return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 ||
        status == 504;
}

/* See http_i.h. */
long http_retry_after_secs(const char *v)
{
    char *end;
    long s;
    time_t t, now;

    if (!v)
        return -1;
    s = strtol(v, &end, 10);
    if (end == v || *end != '\0') {
        if ((t = curl_getdate(v, NULL)) == -1)
            return -1;
        now = time(NULL);
        s = t <= now ? 0 : (long)(t - now > 86400 ? 86400 : t - now);
    }
    return s < 0 ? -1 : s > 86400 ? 86400 : s;
}

/* Milliseconds in V (a number of them, maybe with a fraction), at most
 * a day; -1 when V is absent or not one. */
static long ms_value(const char *v)
{
    char *end;
    double d;

    if (!v)
        return -1;
    d = strtod(v, &end);
    if (end == v || *end != '\0' || !(d >= 0))
        return -1;
    return d > 86400000.0 ? 86400000 : (long)d;
}

/* See http_i.h. */
long http_retry_after_ms(const struct http_response *resp)
{
    long s = http_retry_after_secs(resp->hdr[HDR_RETRY_AFTER]), ms;

    if (s >= 0)
        return s * 1000;
    if ((ms = ms_value(resp->hdr[HDR_RETRY_AFTER_MS])) >= 0)
        return ms;
    return ms_value(resp->hdr[HDR_X_RETRY_AFTER_MS]);
}

/* See http_i.h. */
long http_backoff_ms(const struct http_config *cfg, int attempt, long retry_after_ms)
{
    long window = cfg->retry_base_ms;
    long ra = retry_after_ms;
    unsigned int r = 0;
    long wait;

    for (int i = 1; i < attempt && window < cfg->retry_max_ms; i++)
        window *= 2;
    if (window > cfg->retry_max_ms)
        window = cfg->retry_max_ms;
    if (RAND_bytes((unsigned char *)&r, sizeof(r)) != 1)
        r = (unsigned int)attempt * 2654435761u;
    wait = window / 2 + (long)(r % (unsigned long)(window / 2 + 1));
    return ra > wait ? ra : wait;
}

/* See http_i.h. */
int http_transport_permanent(CURLcode rc)
{
    switch (rc) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
        return 1;
    default:
        return 0;
    }
}
