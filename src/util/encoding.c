/* util/encoding.c - the text encodings the layers share, each done by
 * OpenSSL: base64 (the account key, Edm.Binary, signatures, JWTs) and one
 * UTF-8 character (keys, log lines). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/asn1.h>
#include <openssl/evp.h>

#include "util/util.h"

/* b64_encode: see util.h. Standard base64 with padding and without line breaks. Returns a malloc'd
 * string ("" for LEN 0) or NULL on allocation failure or absurd LEN. */
char *b64_encode(const unsigned char *in, size_t len)
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

/* b64_decode: see util.h. Strict decode: length a multiple of 4, only alphabet characters, '='
 * only as the last one or two characters, and the unused bits before the
 * padding zero (so every byte string has exactly one accepted encoding).
 * "" decodes to a zero-length (but non-NULL) buffer. Returns 0, -EINVAL
 * or -ENOMEM; *out and *out_len are set only on success.
 * OpenSSL's EVP_DecodeBlock does the decoding; it takes '=' anywhere as a
 * zero digit and skips blanks, so the shape is checked first, and the
 * result is encoded again: only the canonical spelling gives back IN. */
int b64_decode(const char *in, unsigned char **out, size_t *out_len)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t len, pad;
    unsigned char *buf;
    char *again = NULL;
    int n, rc = -EINVAL;

    if (!in || !out || !out_len)
        return -EINVAL;
    len = strlen(in);
    if (len % 4 != 0 || len > (size_t)INT32_MAX)
        return -EINVAL;
    pad = len >= 2 && in[len - 1] == '=' ? (in[len - 2] == '=' ? 2 : 1) : 0;
    if (strspn(in, alphabet) != len - pad)
        return -EINVAL;
    if (!(buf = malloc(len / 4 * 3 + 1)))
        return -ENOMEM;
    n = EVP_DecodeBlock(buf, (const unsigned char *)in, (int)len);
    if (n == (int)(len / 4 * 3)) {
        again = b64_encode(buf, (size_t)n - pad);
        rc = !again ? -ENOMEM : strcmp(again, in) == 0 ? 0 : -EINVAL;
    }
    secret_free(again, len);
    if (rc == 0) {
        *out = buf;
        *out_len = (size_t)n - pad;
        return 0;
    }
    secret_free(buf, len / 4 * 3 + 1);
    return rc;
}

/* utf8_char: see util.h. OpenSSL's UTF8_getc does the
 * decoding; not every release of it refuses surrogates and code points past
 * U+10FFFF, so those are checked here. */
int utf8_char(const char *s, size_t len, unsigned long *cp)
{
    int n = UTF8_getc((const unsigned char *)s, len < 4 ? (int)len : 4, cp);

    if (n <= 0 || *cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF))
        return 0;
    return n;
}
