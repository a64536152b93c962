/* fuzz_keycodec.c - libFuzzer target for src/keycodec.c.
 *
 * Input = arbitrary bytes, used twice:
 *  1. as a key (cut at the first NUL, since keys are C strings): encode ->
 *     name; a short-form name must decode (rc 0) to exactly the key, a
 *     long-form name (rc 1) must decode to a prefix of the key; the name must
 *     match the key (keycodec_matches), stay within KEYCODEC_NAME_MAX, and
 *     the ".json" file-name variants must agree.
 *  2. as a name (cut at the first NUL): decode must not crash; rc 0 means the
 *     name is canonical, so encode(decoded key) == name; rc 1 means a long
 *     form whose decoded prefix re-encodes to the part before "%~".
 * Both steps also check the service's key rules: the name of a key that
 * keycodec_key_problem accepts is never refused by keycodec_name_problem, a
 * canonical short-form name is refused exactly as its key is, and
 * keycodec_key_problem agrees with this file's own UTF-8 check.
 * With FUZZ_KEYCODEC_VALID_UTF8=1 in the environment, step 1 skips keys that
 * are not valid UTF-8 (keys from the service always are), to explore past a
 * known invalid-UTF-8 failure.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names/names.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Are A and B the same reason (or both NULL)? */
static int same_reason(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

static void key_roundtrip(const char *key)
{
    char *name = keycodec_encode(key), *back = NULL, *fname, *fback = NULL;
    const char *why;
    int rc, frc, m;

    if (!name)
        return; /* ENOMEM */
    FUZZ_CHECK(strlen(name) <= KEYCODEC_NAME_MAX, "name of %zu bytes", strlen(name));
    FUZZ_CHECK(strcmp(name, ".") != 0 && strcmp(name, "..") != 0 && strchr(name, '/') == NULL,
               "unsafe name '%s'", name);
    rc = keycodec_decode(name, &back);
    if (rc == 0) {
        FUZZ_CHECK(back != NULL, "rc 0 without a key");
        FUZZ_CHECK(strstr(name, KEYCODEC_LONG_MARK) == NULL, "short form with a mark");
        FUZZ_CHECK(strcmp(back, key) == 0, "key '%s' -> '%s' -> '%s'", key, name, back);
    } else if (rc == 1) {
        FUZZ_CHECK(back != NULL, "rc 1 without a prefix");
        FUZZ_CHECK(strlen(key) > 0 && strncmp(back, key, strlen(back)) == 0,
                   "long form '%s': decoded prefix is not a prefix of the key", name);
        FUZZ_CHECK(strlen(back) < strlen(key), "long-form prefix is the whole key");
    } else {
        FUZZ_CHECK(rc == -ENOMEM, "encode output '%s' does not decode: %d", name, rc);
    }
    m = keycodec_matches(key, name);
    FUZZ_CHECK(m == 1 || m == -ENOMEM, "keycodec_matches(key, encode(key)) = %d", m);
    why = keycodec_key_problem(key, strlen(key));
    if (!why)
        FUZZ_CHECK(keycodec_name_problem(name) == NULL, "valid key, refused name '%s'", name);
    else if (rc == 0)
        FUZZ_CHECK(same_reason(keycodec_name_problem(name), why),
                   "short name '%s' of a refused key: %s", name,
                   keycodec_name_problem(name) ? keycodec_name_problem(name) : "accepted");

    fname = keycodec_file_encode(key);
    if (fname) {
        size_t n = strlen(name);

        FUZZ_CHECK(strncmp(fname, name, n) == 0 && strcmp(fname + n, ENTITY_SUFFIX) == 0,
                   "file name '%s' vs name '%s'", fname, name);
        frc = keycodec_file_decode(fname, &fback);
        FUZZ_CHECK(frc == rc || frc == -ENOMEM || rc == -ENOMEM, "file_decode rc %d, decode rc %d",
                   frc, rc);
        if (frc >= 0 && rc >= 0)
            FUZZ_CHECK(strcmp(fback, back) == 0, "file_decode and decode differ");
        free(fback);
        free(fname);
    }
    free(back);
    free(name);
}

static void name_roundtrip(const char *name)
{
    char *key = NULL;
    int rc = keycodec_decode(name, &key);

    if (rc == 0) {
        char *again;

        FUZZ_CHECK(key != NULL, "rc 0 without key");
        again = keycodec_encode(key);
        if (again) {
            FUZZ_CHECK(strcmp(again, name) == 0,
                       "decode('%s') = '%s' (%zu bytes) re-encodes to '%s'", name, key, strlen(key),
                       again);
            free(again);
        }
        FUZZ_CHECK(keycodec_matches(key, name) != 0, "matches() disagrees");
        FUZZ_CHECK(same_reason(keycodec_name_problem(name), keycodec_key_problem(key, strlen(key))),
                   "canonical name '%s' and its key are judged differently", name);
    } else if (rc == 1) {
        const char *mark = strstr(name, KEYCODEC_LONG_MARK);
        char *again;

        FUZZ_CHECK(key != NULL && mark != NULL, "rc 1 without key or mark");
        again = keycodec_encode(key);
        if (again) {
            FUZZ_CHECK(strlen(again) == (size_t)(mark - name) &&
                           strncmp(again, name, (size_t)(mark - name)) == 0,
                       "long-form prefix of '%s' decodes to '%s' which re-encodes to '%s'", name,
                       key, again);
            free(again);
        }
    } else {
        FUZZ_CHECK(rc == -EINVAL || rc == -ENOMEM, "unexpected rc %d", rc);
        FUZZ_CHECK(key == NULL, "key set on failure");
    }
    free(key);
}

/* Is S valid UTF-8 (no overlongs, surrogates or code points > U+10FFFF)? */
static int valid_utf8(const unsigned char *s)
{
    while (*s) {
        unsigned c = *s, n, cp;

        if (c < 0x80) {
            s++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            cp = c & 0x07;
        } else
            return 0;
        for (unsigned i = 1; i <= n; i++) {
            if ((s[i] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (s[i] & 0x3F);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        s += n + 1;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int utf8_only = -1;

    char *s = malloc(size + 1);

    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0'; /* a C string: cut at the first NUL */
    if (utf8_only < 0)
        utf8_only = getenv("FUZZ_KEYCODEC_VALID_UTF8") != NULL &&
            strcmp(getenv("FUZZ_KEYCODEC_VALID_UTF8"), "0") != 0;
    if (valid_utf8((const unsigned char *)s))
        FUZZ_CHECK(!same_reason(keycodec_key_problem(s, strlen(s)), KEYCODEC_WHY_UTF8),
                   "valid UTF-8 refused as not UTF-8");
    else
        FUZZ_CHECK(keycodec_key_problem(s, strlen(s)) != NULL, "invalid UTF-8 accepted");
    if (!utf8_only || valid_utf8((const unsigned char *)s))
        key_roundtrip(s);
    name_roundtrip(s);
    free(s);
    return 0;
}
