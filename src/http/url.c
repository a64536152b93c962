/* http/url.c - URLs: escaping and unescaping a component (libcurl's), and
 * a URL made safe for a log line (a SAS signature redacted). */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "http/http.h"

/* See http.h. libcurl's functions need no handle for this; their result
 * is copied so that callers free it with free(). */
char *http_escape(const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0), *out;

    if (!e)
        return NULL;
    out = strdup(e);
    curl_free(e);
    return out;
}

/* See http.h. */
char *http_unescape(const char *s)
{
    int n = 0;
    char *d = curl_easy_unescape(NULL, s, 0, &n), *out = NULL;

    if (!d)
        return NULL;
    if (n >= 0 && strlen(d) == (size_t)n)
        out = strdup(d);
    curl_free(d);
    return out;
}

/* See http.h: URL with "sig=" values replaced by "REDACTED". */
void http_redact_url(const char *url, char *out, size_t outlen)
{
    size_t o = 0;
    const char *p = url;

    if (outlen == 0)
        return;
    while (*p && o + 1 < outlen) {
        int at_param = p > url && (p[-1] == '?' || p[-1] == '&');

        if (at_param && strncmp(p, "sig=", 4) == 0) {
            const char *red = "sig=REDACTED";

            while (*red && o + 1 < outlen)
                out[o++] = *red++;
            while (*p && *p != '&')
                p++;
            continue;
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
}
