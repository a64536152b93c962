/* names/keycodec.c - bijective mapping between Azure Table keys and file/directory names. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/asn1.h>
#include <openssl/evp.h>

#include "names/names.h"
#include "util/util.h"

/* Every long-form prefix is at least this long: the cut starts at
 * KEYCODEC_PREFIX_MAX and moves back at most 3 bytes (to the start of a UTF-8
 * sequence) or 2 bytes (to the start of a "%XX" escape), never both. */
#define KEYCODEC_PREFIX_MIN (KEYCODEC_PREFIX_MAX - 3)

static const char hex_upper[] = "0123456789ABCDEF";
static const char hex_lower[] = "0123456789abcdef";

/* Must byte C at position POS of a key be written as "%XX"? */
static int needs_escape(unsigned char c, size_t pos)
{
    return c == '%' || c == '/' || c < 0x20 || c == 0x7F || (pos == 0 && c == '.');
}

/* Length of the escaped form of the LEN bytes of KEY (no long-form cut). */
static size_t escaped_len(const unsigned char *key, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++)
        n += needs_escape(key[i], i) ? 3 : 1;
    return n;
}

/* Write the escaped form of the LEN bytes of KEY to OUT, which must hold
 * escaped_len(KEY, LEN) + 1 bytes. Returns the length written (NUL excluded). */
static size_t escape_into(const unsigned char *key, size_t len, char *out)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        if (needs_escape(key[i], i)) {
            out[n++] = '%';
            out[n++] = hex_upper[key[i] >> 4];
            out[n++] = hex_upper[key[i] & 0x0F];
        } else {
            out[n++] = (char)key[i];
        }
    }
    out[n] = '\0';
    return n;
}

static int is_utf8_cont(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

/* Where to cut the escaped key ENC (longer than KEYCODEC_NAME_MAX) for its
 * long form: the longest prefix of at most KEYCODEC_PREFIX_MAX bytes that
 * splits neither a "%XX" escape nor a UTF-8 sequence. In an escaped key a '%'
 * always starts an escape; a stray continuation byte (invalid UTF-8) is a
 * unit of its own. */
static size_t long_form_cut(const char *enc)
{
    const unsigned char *u = (const unsigned char *)enc;
    size_t i = 0;

    /* walk whole units: a %XX escape, a UTF-8 sequence, or a single byte */
    for (;;) {
        size_t step = 1;

        if (u[i] == '%')
            step = 3;
        else if (u[i] >= 0xC0)
            while (step < 4 && is_utf8_cont(u[i + step]))
                step++;
        if (u[i] == '\0' || i + step > KEYCODEC_PREFIX_MAX)
            return i;
        i += step;
    }
}

/* Write the first 16 bytes of SHA-256(KEY) as 32 lower-case hex digits and a
 * NUL to OUT. Returns 0 or -ENOMEM (the digest context could not be made). */
static int key_hash_hex(const char *key, size_t len, char *out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;

    if (!EVP_Digest(key, len, md, &md_len, EVP_sha256(), NULL) || md_len < KEYCODEC_HASH_HEX / 2)
        return -ENOMEM;
    for (size_t i = 0; i < KEYCODEC_HASH_HEX / 2; i++) {
        out[2 * i] = hex_lower[md[i] >> 4];
        out[2 * i + 1] = hex_lower[md[i] & 0x0F];
    }
    out[KEYCODEC_HASH_HEX] = '\0';
    return 0;
}

/* keycodec_encode: see names/names.h. */
char *keycodec_encode(const char *key)
{
    const unsigned char *u = (const unsigned char *)key;
    size_t klen = strlen(key), n, cut;
    char *out;

    if (klen == 0)
        return strdup("%");
    n = escaped_len(u, klen);
    /* A long-form name (<= 234 bytes) always fits in the n + 1 >= 252 bytes. */
    out = malloc(n + 1);
    if (!out)
        return NULL;
    escape_into(u, klen, out);
    if (n <= KEYCODEC_NAME_MAX)
        return out;

    cut = long_form_cut(out);
    memcpy(out + cut, KEYCODEC_LONG_MARK, 2);
    if (key_hash_hex(key, klen, out + cut + 2) < 0) {
        free(out);
        return NULL;
    }
    return out;
}

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decode the LEN bytes of NAME (short form, or a long-form prefix) and check
 * that escaping the result gives NAME back byte for byte, which rejects every
 * non-canonical spelling. Returns 0 with *key_out malloc'd, -EINVAL, -ENOMEM. */
static int decode_canonical(const char *name, size_t len, char **key_out)
{
    const unsigned char *u = (const unsigned char *)name;
    char *key = NULL, *check = NULL;
    size_t k = 0;
    int rc = -EINVAL;

    key = malloc(len + 1);
    if (!key)
        return -ENOMEM;
    for (size_t i = 0; i < len; i++) {
        if (u[i] == '%') {
            int hi, lo;

            if (len - i < 3)
                goto fail;
            hi = hex_value(u[i + 1]);
            lo = hex_value(u[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                goto fail; /* not an escape, or a NUL no key can hold */
            key[k++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            key[k++] = (char)u[i];
        }
    }
    key[k] = '\0';

    if (escaped_len((unsigned char *)key, k) != len)
        goto fail;
    check = malloc(len + 1);
    if (!check) {
        rc = -ENOMEM;
        goto fail;
    }
    escape_into((unsigned char *)key, k, check);
    if (memcmp(check, name, len) != 0)
        goto fail;
    free(check);
    *key_out = key;
    return 0;

fail:
    free(check);
    free(key);
    return rc;
}

/* keycodec_decode: see names/names.h. */
int keycodec_decode(const char *name, char **key_out)
{
    const char *mark, *hash;
    size_t len = strlen(name), plen;
    int rc;

    *key_out = NULL;
    if (strcmp(name, "%") == 0) {
        *key_out = strdup("");
        return *key_out ? 0 : -ENOMEM;
    }

    mark = strstr(name, KEYCODEC_LONG_MARK);
    if (!mark) {
        if (len == 0 || len > KEYCODEC_NAME_MAX)
            return -EINVAL;
        return decode_canonical(name, len, key_out);
    }

    /* Long form: PREFIX "%~" HASH. '~' is not a hex digit, so a short-form
     * name never contains the mark, and the hex-only hash cannot repeat it. */
    plen = (size_t)(mark - name);
    hash = mark + 2;
    if (plen < KEYCODEC_PREFIX_MIN || plen > KEYCODEC_PREFIX_MAX ||
        strlen(hash) != KEYCODEC_HASH_HEX)
        return -EINVAL;
    for (size_t i = 0; i < KEYCODEC_HASH_HEX; i++)
        if (!((hash[i] >= '0' && hash[i] <= '9') || (hash[i] >= 'a' && hash[i] <= 'f')))
            return -EINVAL;
    rc = decode_canonical(name, plen, key_out);
    return rc < 0 ? rc : 1;
}

/* keycodec_matches: see names/names.h. */
int keycodec_matches(const char *key, const char *name)
{
    char *enc = keycodec_encode(key);
    int match;

    if (!enc)
        return -ENOMEM;
    match = strcmp(enc, name) == 0;
    free(enc);
    return match;
}

/* See names/names.h. */
int keycodec_file_matches(const char *key, const char *name)
{
    char *enc = keycodec_file_encode(key);
    int match = enc ? strcmp(enc, name) == 0 : -ENOMEM;

    free(enc);
    return match;
}

/* Is code point CP one that no key may hold? */
static int forbidden_in_key(unsigned long cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == '/' || cp == '\\' || cp == '#' ||
        cp == '?';
}

/* The byte at U[*i] (of LEN) and, with ESCAPES, a '%' and two hex digits
 * read as the byte they spell. Steps *i past what it read. */
static unsigned char next_byte(const unsigned char *u, size_t len, size_t *i, int escapes)
{
    size_t at = *i;

    if (escapes && u[at] == '%' && len - at >= 3 && hex_value(u[at + 1]) >= 0 &&
        hex_value(u[at + 2]) >= 0) {
        *i = at + 3;
        return (unsigned char)(hex_value(u[at + 1]) << 4 | hex_value(u[at + 2]));
    }
    *i = at + 1;
    return u[at];
}

/* The first reason the LEN bytes at U, read with next_byte, are no key. */
static const char *text_problem(const unsigned char *u, size_t len, int escapes)
{
    size_t i = 0;

    while (i < len) {
        char seq[4];
        size_t ends[4], j = i, n = 0;
        unsigned long cp;
        int clen;

        /* the next (up to) 4 key bytes, and where each ends in U */
        while (n < 4 && j < len) {
            seq[n] = (char)next_byte(u, len, &j, escapes);
            ends[n++] = j;
        }
        clen = utf8_char(seq, n, &cp);
        if (clen == 0)
            return KEYCODEC_WHY_UTF8;
        if (forbidden_in_key(cp))
            return KEYCODEC_WHY_CHAR;
        i = ends[clen - 1];
    }
    return NULL;
}

/* keycodec_key_problem: see names/names.h. */
const char *keycodec_key_problem(const char *key, size_t len)
{
    return text_problem((const unsigned char *)key, len, 0);
}

/* keycodec_name_problem: see names/names.h. */
const char *keycodec_name_problem(const char *name)
{
    return text_problem((const unsigned char *)name, strlen(name), 1);
}

/* keycodec_file_encode: see names/names.h. */
char *keycodec_file_encode(const char *key)
{
    char *enc = keycodec_encode(key), *out;
    size_t n;

    if (!enc)
        return NULL;
    n = strlen(enc);
    out = realloc(enc, n + sizeof(ENTITY_SUFFIX));
    if (!out) {
        free(enc);
        return NULL;
    }
    memcpy(out + n, ENTITY_SUFFIX, sizeof(ENTITY_SUFFIX));
    return out;
}

/* keycodec_file_decode: see names/names.h. */
int keycodec_file_decode(const char *name, char **key_out)
{
    size_t len = strlen(name), slen = strlen(ENTITY_SUFFIX);
    char *base;
    int rc;

    *key_out = NULL;
    if (len <= slen || strcmp(name + len - slen, ENTITY_SUFFIX) != 0)
        return -EINVAL;
    base = strndup(name, len - slen);
    if (!base)
        return -ENOMEM;
    rc = keycodec_decode(base, key_out);
    free(base);
    return rc;
}
