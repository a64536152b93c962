/* auth/tokenresp.c - the answer of a token endpoint -> an access token and its expiry. */
#include "auth/auth_i.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>

/* Copy the first line of S into ERR as printable ASCII (other bytes '?'). */
static void copy_line(char *err, size_t errlen, const char *prefix, const char *s)
{
    size_t n = strlen(prefix), i;

    if (!errlen)
        return;
    snprintf(err, errlen, "%s", prefix);
    for (i = 0; s && s[i] && s[i] != '\n' && s[i] != '\r' && n + 1 < errlen; i++)
        err[n++] = (s[i] >= ' ' && s[i] < 0x7f) ? s[i] : '?';
    err[n] = '\0';
}

/* A whole non-negative decimal number in V (JSON integer, real, or a string
 * of digits) into *OUT. Returns 0 or -EINVAL. */
static int json_number(const json_t *v, long long *out)
{
    const char *s;
    char *end;

    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = json_integer_value(v);
        return 0;
    }
    if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 1e15) {
        *out = (long long)json_real_value(v);
        return 0;
    }
    if (!(s = json_string_value(v)) || *s < '0' || *s > '9' || strlen(s) > 15)
        return -EINVAL;
    *out = strtoll(s, &end, 10);
    return *end == '\0' ? 0 : -EINVAL;
}

/* "YYYY-MM-DD HH:MM:SS[.ffffff]" in local time -> *OUT. Returns 0 or -EINVAL. */
static int local_datetime(const char *s, time_t *out)
{
    struct tm tm = { 0 };
    char *end;

    if (!s || !(end = strptime(s, "%Y-%m-%d %H:%M:%S", &tm)))
        return -EINVAL;
    if (*end == '.')
        for (end++; *end >= '0' && *end <= '9'; end++)
            ;
    if (*end != '\0')
        return -EINVAL;
    tm.tm_isdst = -1;
    *out = mktime(&tm);
    return *out == (time_t)-1 ? -EINVAL : 0;
}

/* The expiry ROOT states, for a request made at NOW. Returns 0 or -EINVAL. */
static int expiry(const json_t *root, time_t now, time_t *out)
{
    const json_t *v;
    long long n;

    if ((v = json_object_get(root, "expires_in")) != NULL) {
        if (json_number(v, &n) < 0 || n > 10LL * 365 * 86400)
            return -EINVAL;
        *out = now + (time_t)n;
    } else if ((v = json_object_get(root, "expires_on")) != NULL) {
        if (json_number(v, &n) < 0 || n > 253402300799LL) /* 9999-12-31 */
            return -EINVAL;
        *out = (time_t)n;
    } else if (local_datetime(json_string_value(json_object_get(root, "expiresOn")), out) < 0) {
        return -EINVAL;
    }
    return *out > now ? 0 : -EINVAL;
}

/* Is S usable as a bearer token in a header line? */
static int token_ok(const char *s, size_t n)
{
    if (n == 0 || n > TOKEN_MAX_LEN)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] >= 0x7f)
            return 0;
    return 1;
}

/* An error answer in ROOT into ERR: -EACCES, or 0 when ROOT is none. */
static int error_answer(const json_t *root, char *err, size_t errlen)
{
    const char *e = json_string_value(json_object_get(root, "error"));
    const char *d = json_string_value(json_object_get(root, "error_description"));
    const char *m = json_string_value(json_object_get(root, "message"));
    const json_t *eo = json_object_get(root, "error");
    char prefix[96];

    if (json_is_object(eo)) { /* {"error": {"code":..,"message":..}} */
        e = json_string_value(json_object_get(eo, "code"));
        d = json_string_value(json_object_get(eo, "message"));
    }
    if (!e && !m)
        return 0;
    if (e) {
        copy_line(prefix, sizeof(prefix) - 2, "", e);
        strcat(prefix, ": ");
        copy_line(err, errlen, prefix, d ? d : "(no description)");
    } else {
        copy_line(err, errlen, "", *m ? m : "(an error answer without a message)");
    }
    if (errlen && !err[0])
        snprintf(err, errlen, "an error answer");
    return -EACCES;
}

/* Parse a token answer; see auth/auth_i.h. */
int token_response_parse(const char *body, size_t len, time_t now, char **token, time_t *expires_at,
                         char *err, size_t errlen)
{
    json_t *root = json_loadb(body ? body : "", body ? len : 0, 0, NULL);
    const json_t *t;
    const char *s;
    size_t n;
    int rc = -EINVAL;

    *token = NULL;
    if (errlen)
        err[0] = '\0';
    if (!json_is_object(root)) {
        snprintf(err, errlen, "the answer is not a JSON object");
        goto out;
    }
    if ((rc = error_answer(root, err, errlen)) < 0)
        goto out;
    rc = -EINVAL;
    t = json_object_get(root, "access_token");
    if (!t)
        t = json_object_get(root, "accessToken");
    s = json_string_value(t);
    n = s ? json_string_length(t) : 0;
    if (!s || !token_ok(s, n) || strlen(s) != n) {
        snprintf(err, errlen, "the answer holds no usable access token");
        goto out;
    }
    if (expiry(root, now, expires_at) < 0) {
        snprintf(err, errlen, "the answer gives no usable expiry (expires_in, expires_on)");
        goto out;
    }
    if (!(*token = strndup(s, n))) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
        goto out;
    }
    rc = 0;
out:
    /* jansson keeps the token in the value: wipe it before it is freed */
    if (json_is_object(root)) {
        json_t *v;
        const char *k;

        json_object_foreach (root, k, v)
            if (json_is_string(v))
                OPENSSL_cleanse((char *)json_string_value(v), json_string_length(v));
    }
    json_decref(root);
    return rc;
}
