/* auth/sharedkey.c - SharedKey request signing for the Table service (HMAC-SHA256) and base64. */
#include "auth/auth.h"

#include <errno.h>
#include <locale.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

/* Format T as "Sun, 22 Nov 2026 08:26:34 GMT": strftime_l in the C locale,
 * so the names are English whatever the process's locale. A time that
 * gmtime_r cannot represent, or whose year has other than four digits
 * (before 1000 or after 9999), yields the epoch "Thu, 01 Jan 1970 00:00:00
 * GMT" (only a broken clock gives such a time). */
void sharedkey_rfc1123(time_t t, char out[RFC1123_LEN])
{
    static const char epoch[] = "Thu, 01 Jan 1970 00:00:00 GMT";
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    struct tm tm;

    if (!c || !gmtime_r(&t, &tm) || tm.tm_year < 1000 - 1900 || tm.tm_year > 9999 - 1900 ||
        strftime_l(out, RFC1123_LEN, "%a, %d %b %Y %H:%M:%S GMT", &tm, c) != RFC1123_LEN - 1)
        memcpy(out, epoch, sizeof(epoch));
    if (c)
        freelocale(c);
}

/* Build "VERB\nMD5\nTYPE\nDATE\n/ACCOUNT PATH[?comp=COMP]". VERB, DATE,
 * ACCOUNT and PATH are required (NULL -> NULL result); CONTENT_MD5,
 * CONTENT_TYPE and COMP may be NULL and then count as empty (an empty COMP
 * adds no "?comp="). Returns a malloc'd string or NULL. */
char *sharedkey_string_to_sign(const char *verb, const char *content_md5, const char *content_type,
                               const char *date, const char *account, const char *path,
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
    len = strlen(verb) + strlen(md5) + strlen(ctype) + strlen(date) + strlen(account) +
        strlen(path) + (with_comp ? strlen(comp) + 6 : 0) + 4 /* newlines */ + 1 /* '/' */ +
        1 /* NUL */;
    s = malloc(len);
    if (!s)
        return NULL;
    n = snprintf(s, len, "%s\n%s\n%s\n%s\n/%s%s%s%s", verb, md5, ctype, date, account, path,
                 with_comp ? "?comp=" : "", with_comp ? comp : "");
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
    if (!account || !*account || !key || key_len == 0 || key_len > INT32_MAX || !verb || !date ||
        !path)
        return -EINVAL;

    sts = sharedkey_string_to_sign(verb, NULL, content_type, date, account, path, comp);
    if (!sts) {
        rc = -ENOMEM;
        goto out;
    }
    if (!HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)sts, strlen(sts), mac,
              &mac_len)) {
        rc = -ENOMEM; /* arguments are valid: a resource failure */
        goto out;
    }
    sig = b64_encode(mac, mac_len);
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
