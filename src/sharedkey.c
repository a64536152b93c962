/* sharedkey.c - SharedKey request signing for the Table service (HMAC-SHA256) and base64. */
#include "sharedkey.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

/* Fixed English names: RFC 1123 dates must not depend on the locale. */
static const char *const day_names[7] = {
    "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"
};
static const char *const month_names[12] = {
    "Jan", "Feb", "Mar", "Apr", "May", "Jun",
    "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"
};

/* Format T as "Sun, 22 Nov 2026 08:26:34 GMT". A time that gmtime_r cannot
 * represent, or whose year is outside 0..9999 (the format has four year
 * digits), yields the epoch "Thu, 01 Jan 1970 00:00:00 GMT". */
void sharedkey_rfc1123(time_t t, char out[RFC1123_LEN])
{
    struct tm tm;

    if (!gmtime_r(&t, &tm) || tm.tm_year < -1900 || tm.tm_year > 9999 - 1900 ||
        tm.tm_wday < 0 || tm.tm_wday > 6 || tm.tm_mon < 0 || tm.tm_mon > 11) {
        memcpy(out, "Thu, 01 Jan 1970 00:00:00 GMT", RFC1123_LEN);
        return;
    }
    /* The modulos are no-ops on gmtime_r's ranges; they let the compiler
     * prove that the result fits. */
    snprintf(out, RFC1123_LEN, "%.3s, %02u %.3s %04u %02u:%02u:%02u GMT",
             day_names[tm.tm_wday], (unsigned)tm.tm_mday % 100u, month_names[tm.tm_mon],
             (unsigned)(tm.tm_year + 1900) % 10000u, (unsigned)tm.tm_hour % 100u,
             (unsigned)tm.tm_min % 100u, (unsigned)tm.tm_sec % 100u);
}

/* Build "VERB\nMD5\nTYPE\nDATE\n/ACCOUNT PATH[?comp=COMP]". VERB, DATE,
 * ACCOUNT and PATH are required (NULL -> NULL result); CONTENT_MD5,
 * CONTENT_TYPE and COMP may be NULL and then count as empty (an empty COMP
 * adds no "?comp="). Returns a malloc'd string or NULL. */
char *sharedkey_string_to_sign(const char *verb, const char *content_md5,
                               const char *content_type, const char *date,
                               const char *account, const char *path,
                               const char *comp)
{
    const char *md5 = content_md5 ? content_md5 : "";
    const char *ctype = content_type ? content_type : "";
    int with_comp = comp && *comp;
    size_t len;
    char *s;
    int n;

    if (!verb || !date || !account || !path)
        return NULL;
    len = strlen(verb) + strlen(md5) + strlen(ctype) + strlen(date) +
          strlen(account) + strlen(path) + (with_comp ? strlen(comp) + 6 : 0) +
          4 /* newlines */ + 1 /* '/' */ + 1 /* NUL */;
    s = malloc(len);
    if (!s)
        return NULL;
    n = snprintf(s, len, "%s\n%s\n%s\n%s\n/%s%s%s%s", verb, md5, ctype, date,
                 account, path, with_comp ? "?comp=" : "", with_comp ? comp : "");
    if (n < 0 || (size_t)n >= len) {
        free(s);
        return NULL;
    }
    return s;
}

/* Sign one request: *out = "SharedKey ACCOUNT:SIG". The Content-MD5 slot is
 * always empty (aztfs never sends Content-MD5). KEY must be non-empty: an
 * empty account key is a configuration error, not something to sign with.
 * Returns 0, -EINVAL (missing argument, empty key) or -ENOMEM (allocation
 * or OpenSSL failure). */
int sharedkey_authorization(const char *account, const unsigned char *key, size_t key_len,
                            const char *verb, const char *content_type, const char *date,
                            const char *path, const char *comp, char **out)
{
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    char *sts = NULL, *sig = NULL, *hdr = NULL;
    size_t len;
    int rc = -EINVAL;

    if (!out)
        return -EINVAL;
    *out = NULL;
    if (!account || !*account || !key || key_len == 0 || key_len > INT32_MAX ||
        !verb || !date || !path)
        return -EINVAL;

    sts = sharedkey_string_to_sign(verb, NULL, content_type, date, account, path, comp);
    if (!sts) {
        rc = -ENOMEM;
        goto out;
    }
    if (!HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)sts,
              strlen(sts), mac, &mac_len)) {
        rc = -ENOMEM;                   /* arguments are valid: a resource failure */
        goto out;
    }
    sig = sharedkey_b64encode(mac, mac_len);
    if (!sig) {
        rc = -ENOMEM;
        goto out;
    }
    len = strlen("SharedKey ") + strlen(account) + 1 + strlen(sig) + 1;
    hdr = malloc(len);
    if (!hdr) {
        rc = -ENOMEM;
        goto out;
    }
    snprintf(hdr, len, "SharedKey %s:%s", account, sig);
    *out = hdr;
    rc = 0;
out:
    OPENSSL_cleanse(mac, sizeof(mac));
    free(sts);
    free(sig);
    return rc;
}

/* Standard base64 with padding and without line breaks. Returns a malloc'd
 * string ("" for LEN 0) or NULL on allocation failure or absurd LEN. */
char *sharedkey_b64encode(const unsigned char *in, size_t len)
{
    size_t olen;
    char *out;

    if (len > (size_t)INT32_MAX / 4 * 3 - 3)
        return NULL;
    if (!in && len)
        return NULL;
    olen = (len + 2) / 3 * 4;
    out = malloc(olen + 1);
    if (!out)
        return NULL;
    if (len == 0) {
        out[0] = '\0';
        return out;
    }
    EVP_EncodeBlock((unsigned char *)out, in, (int)len);
    out[olen] = '\0';
    return out;
}

/* Value of one base64 alphabet character, or -1. */
static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Strict decode: length a multiple of 4, only alphabet characters, '='
 * only as the last one or two characters, and the unused bits before the
 * padding zero (so every byte string has exactly one accepted encoding).
 * "" decodes to a zero-length (but non-NULL) buffer. Returns 0, -EINVAL
 * or -ENOMEM; *out and *out_len are set only on success. */
int sharedkey_b64decode(const char *in, unsigned char **out, size_t *out_len)
{
    size_t len, pad = 0, olen, i, o = 0;
    unsigned char *buf;
    int rc = -EINVAL;

    if (!in || !out || !out_len)
        return -EINVAL;
    len = strlen(in);
    if (len % 4 != 0)
        return -EINVAL;
    if (len >= 4 && in[len - 1] == '=')
        pad = in[len - 2] == '=' ? 2 : 1;
    olen = len / 4 * 3 - pad;
    buf = malloc(olen ? olen : 1);
    if (!buf)
        return -ENOMEM;

    for (i = 0; i < len; i += 4) {
        int v[4], k, nd = (i + 4 == len) ? 4 - (int)pad : 4;
        unsigned long w = 0;

        for (k = 0; k < 4; k++) {
            if (k >= nd) {
                v[k] = 0;       /* a padding '=' (checked above) */
                continue;
            }
            v[k] = b64_value((unsigned char)in[i + k]);
            if (v[k] < 0)
                goto fail;
            w = (w << 6) | (unsigned long)v[k];
        }
        w <<= 6 * (4 - nd);
        if (nd == 4) {
            buf[o++] = (unsigned char)(w >> 16);
            buf[o++] = (unsigned char)(w >> 8);
            buf[o++] = (unsigned char)w;
        } else if (nd == 3) {
            if (w & 0xff)
                goto fail;      /* non-zero bits under the padding */
            buf[o++] = (unsigned char)(w >> 16);
            buf[o++] = (unsigned char)(w >> 8);
        } else {
            if (w & 0xffff)
                goto fail;
            buf[o++] = (unsigned char)(w >> 16);
        }
    }
    *out = buf;
    *out_len = olen;
    return 0;
fail:
    OPENSSL_cleanse(buf, olen ? olen : 1);
    free(buf);
    return rc;
}
