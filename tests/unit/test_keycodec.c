/* test_keycodec.c - unit tests for the key <-> name codec (TAP). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "names/names.h"
#include "util/util.h"
#include "tap.h"

/* Encode KEY, compare with WANT, and check that WANT decodes back to KEY. */
static void check_pair(const char *key, const char *want, const char *label)
{
    char *enc = keycodec_encode(key), *dec = NULL;
    int rc;

    is_str(enc, want, "encode %s", label);
    rc = keycodec_decode(want, &dec);
    is_int(rc, 0, "decode %s returns 0", label);
    is_str(dec, key, "decode %s gives the key back", label);
    free(enc);
    free(dec);
}

/* NAME must be rejected (-EINVAL) with no key returned. */
static void check_reject(const char *name, const char *label)
{
    char *dec = (char *)"unset";
    int rc = keycodec_decode(name, &dec);

    is_int(rc, -EINVAL, "reject %s", label);
    ok(dec == NULL, "no key for rejected %s", label);
    if (rc >= 0)
        free(dec);
}

static void test_exact(void)
{
    check_pair("", "%", "empty key");
    check_pair(".", "%2E", "'.'");
    check_pair("..", "%2E.", "'..'");
    check_pair(".hidden", "%2Ehidden", "'.hidden'");
    check_pair("a.b", "a.b", "'a.b'");
    check_pair("a.", "a.", "trailing dot");
    check_pair("a%b", "a%25b", "percent");
    check_pair("%", "%25", "lone percent");
    check_pair("%~", "%25~", "percent tilde");
    check_pair("x/y", "x%2Fy", "slash");
    check_pair("a b  c", "a b  c", "spaces");
    check_pair(" ", " ", "single space");
    check_pair("it's \"q\"", "it's \"q\"", "quotes");
    check_pair("\\#?*", "\\#?*", "backslash and friends");
    check_pair("caf\xC3\xA9", "caf\xC3\xA9", "e-acute");
    check_pair("\xE6\x97\xA5\xE6\x9C\xAC", "\xE6\x97\xA5\xE6\x9C\xAC", "CJK");
    check_pair("\xF0\x9F\x98\x80!", "\xF0\x9F\x98\x80!", "emoji");
    check_pair("a\tb\nc\x01\x1F\x7F", "a%09b%0Ac%01%1F%7F", "control chars");
    check_pair("\x7F.", "%7F.", "DEL first, dot second");
    check_pair("~", "~", "tilde");
    check_pair("%2E", "%252E", "key that looks escaped");
}

/* A 1 KiB ASCII key: the first 200 bytes are kept, then the mark and hash
 * (hash computed with: python3 -c "..." | sha256sum). */
static void test_long_ascii(void)
{
    char key[1025], want[300], *enc, *dec = NULL, *fenc;
    int rc;

    for (int i = 0; i < 1024; i++)
        key[i] = (char)('a' + i % 26);
    key[1024] = '\0';
    memcpy(want, key, 200);
    strcpy(want + 200, "%~dba4a6315b76548b7a4dd079ef6aa29a");
    enc = keycodec_encode(key);
    is_str(enc, want, "1 KiB ASCII key: long form with literal hash");
    is_int(enc ? (long long)strlen(enc) : -1, 234, "long name is 234 bytes");
    rc = keycodec_decode(want, &dec);
    is_int(rc, 1, "long form decodes to 1");
    ok(dec && strlen(dec) == 200 && memcmp(dec, key, 200) == 0,
       "decoded prefix is the key's prefix");
    is_int(keycodec_matches(key, want), 1, "matches() on long form");
    key[1023] = 'A';
    is_int(keycodec_matches(key, want), 0, "different key, same prefix: no match");
    fenc = keycodec_file_encode(key);
    ok(fenc && strlen(fenc) <= 255, "long file name fits NAME_MAX");
    is_int(fenc ? keycodec_file_matches(key, fenc) : -1, 1, "file_matches() on long form");
    key[1023] = 'B';
    is_int(fenc ? keycodec_file_matches(key, fenc) : -1, 0,
           "file_matches(): different key, same prefix");
    free(fenc);
    free(enc);
    free(dec);
}

/* 341 three-byte characters (1023 bytes): the cut must fall at 198 bytes. */
static void test_long_utf8(void)
{
    char key[1024], want[300], *enc, *fenc, *dec = NULL;
    int rc;

    for (int i = 0; i < 341; i++)
        memcpy(key + 3 * i, "\xE6\x97\xA5", 3);
    key[1023] = '\0';
    memcpy(want, key, 198);
    strcpy(want + 198, "%~be7b816e267ae7c0383daa71884c13fe");
    enc = keycodec_encode(key);
    is_str(enc, want, "1 KiB of 3-byte chars: prefix cut at a character boundary");
    fenc = keycodec_file_encode(key);
    ok(fenc && strlen(fenc) <= 255, "file name %zu bytes <= 255", fenc ? strlen(fenc) : 0);
    rc = keycodec_file_decode(fenc ? fenc : "", &dec);
    is_int(rc, 1, "file_decode of long form returns 1");
    ok(dec && strlen(dec) == 198 && memcmp(dec, key, 198) == 0, "prefix is 66 whole characters");
    free(enc);
    free(fenc);
    free(dec);
}

/* 100 '%' (300 escaped bytes): the cut must not split "%25" (198 bytes). */
static void test_long_escapes(void)
{
    char key[101], want[300], *enc, *dec = NULL;

    memset(key, '%', 100);
    key[100] = '\0';
    want[0] = '\0';
    for (int i = 0; i < 66; i++)
        strcat(want, "%25");
    strcat(want, "%~02f4ccf09d1f5740e28864c430f866b4");
    enc = keycodec_encode(key);
    is_str(enc, want, "escapes are not split at the cut");
    is_int(keycodec_decode(want, &dec), 1, "escape-cut long form decodes");
    ok(dec && strlen(dec) == 66 && strspn(dec, "%") == 66, "prefix is 66 '%%'");
    free(enc);
    free(dec);
}

static void test_boundary(void)
{
    char key[300], *enc, *dec = NULL;

    memset(key, 'k', 250);
    key[250] = '\0';
    enc = keycodec_encode(key);
    is_str(enc, key, "250-byte name stays short");
    is_int(keycodec_decode(key, &dec), 0, "250-byte short name decodes");
    free(dec);
    free(enc);
    dec = NULL;

    key[250] = 'k';
    key[251] = '\0';
    enc = keycodec_encode(key);
    ok(enc && strstr(enc, "%~") && strlen(enc) == 234, "251-byte name goes long");
    is_int(keycodec_decode(key, &dec), -EINVAL, "251-byte short-looking name rejected");
    free(enc);

    memset(key, 'k', 249);
    key[249] = '/';
    key[250] = '\0';
    enc = keycodec_encode(key);
    ok(enc && strstr(enc, "%~") != NULL, "escape pushing a key past 250 goes long");
    free(enc);
}

static void test_reject(void)
{
    char name[300];

    check_reject("", "empty name");
    check_reject(".", "literal '.'");
    check_reject("..", "literal '..'");
    check_reject(".x", "literal leading dot");
    check_reject("%2e", "lowercase %2e");
    check_reject("%2f", "lowercase %2f");
    check_reject("a%0a", "lowercase %0a");
    check_reject("%41", "needless escape %41");
    check_reject("a%2E", "escaped dot not first");
    check_reject("%2", "truncated escape");
    check_reject("a%", "trailing percent");
    check_reject("%%", "double percent");
    check_reject("%zz", "non-hex escape");
    check_reject("%00", "escaped NUL");
    check_reject("a/b", "raw slash");
    check_reject("a\tb", "raw control char");
    check_reject("a\x7F", "raw DEL");
    check_reject("%~", "bare mark");
    check_reject("%E9", "escaped high byte");

    /* Long-form shapes. */
    memset(name, 'a', 200);
    strcpy(name + 200, "%~0123456789abcdef0123456789abcde");
    check_reject(name, "hash of 31 digits");
    strcpy(name + 200, "%~0123456789abcdef0123456789abcdef0");
    check_reject(name, "hash of 33 digits");
    strcpy(name + 200, "%~0123456789ABCDEF0123456789abcdef");
    check_reject(name, "upper-case hash");
    strcpy(name + 200, "%~0123456789abcdef0123456789abcdeg");
    check_reject(name, "non-hex hash");
    strcpy(name + 200, "%~0123456789abcdef0123456789abcdef");
    {
        char *dec = NULL;

        is_int(keycodec_decode(name, &dec), 1, "well-formed long form accepted");
        free(dec);
    }
    name[0] = '.';
    check_reject(name, "long form with non-canonical prefix");
    name[0] = 'a';
    memmove(name + 1, name, strlen(name) + 1);
    check_reject(name, "long form with 201-byte prefix");
    check_reject("abc%~0123456789abcdef0123456789abcdef", "long form with short prefix");
    memset(name, 'a', 200);
    strcpy(name + 200, "%~0123456789abcdef%~0123456789abcd");
    check_reject(name, "two marks");

    {
        char *dec = (char *)"unset";

        is_int(keycodec_file_decode("abc.txt", &dec), -EINVAL, "file_decode: no .json");
        ok(dec == NULL, "file_decode: no key on failure");
        is_int(keycodec_file_decode(".json", &dec), -EINVAL, "file_decode: bare .json");
        is_int(keycodec_file_decode("%2E.json", &dec), 0, "file_decode: %%2E.json");
        is_str(dec, ".", "file_decode gives '.'");
        free(dec);
        is_int(keycodec_file_decode("%.json", &dec), 0, "file_decode: %%.json");
        is_str(dec, "", "file_decode gives empty key");
        free(dec);
    }
}

static void test_file_names(void)
{
    char *f = keycodec_file_encode("a/b.json");

    is_str(f, "a%2Fb.json.json", "file_encode appends .json");
    free(f);
    f = keycodec_file_encode("");
    is_str(f, "%.json", "file_encode of the empty key");
    free(f);
    is_int(keycodec_matches("x/y", "x%2Fy"), 1, "matches() true");
    is_int(keycodec_matches("x/y", "x/y"), 0, "matches() false");
    is_int(keycodec_file_matches("x/y", "x%2Fy.json"), 1, "file_matches() true");
    is_int(keycodec_file_matches("x/y", "x%2Fy"), 0, "file_matches() wants .json");
    is_int(keycodec_file_matches("", "%.json"), 1, "file_matches() of the empty key");
}

static void test_utf8_char(void)
{
    unsigned long cp = 0;

    is_int(utf8_char("a", 1, &cp), 1, "utf8: ASCII");
    is_int(cp, 'a', "utf8: ASCII code point");
    is_int(utf8_char("\xC3\xA9x", 3, &cp), 2, "utf8: 2 bytes");
    is_int(cp, 0xE9, "utf8: U+00E9");
    is_int(utf8_char("\xF0\x9F\x98\x80", 4, &cp), 4, "utf8: 4 bytes");
    is_int(cp, 0x1F600, "utf8: U+1F600");
    is_int(utf8_char("\xF4\x8F\xBF\xBF", 4, &cp), 4, "utf8: U+10FFFF");
    is_int(utf8_char("", 0, &cp), 0, "utf8: nothing");
    is_int(utf8_char("\xC3\xA9", 1, &cp), 0, "utf8: cut short by LEN");
    is_int(utf8_char("\x80", 1, &cp), 0, "utf8: stray continuation");
    is_int(utf8_char("\xC0\x80", 2, &cp), 0, "utf8: overlong NUL");
    is_int(utf8_char("\xED\xBF\xBF", 3, &cp), 0, "utf8: surrogate U+DFFF");
    is_int(utf8_char("\xF4\x90\x80\x80", 4, &cp), 0, "utf8: U+110000");
    is_int(utf8_char("\xF8\x88\x80\x80\x80", 5, &cp), 0, "utf8: 5-byte form");
}

/* KEY is a key the service accepts. */
static void check_key_ok(const char *key, const char *label)
{
    ok(keycodec_key_problem(key, strlen(key)) == NULL, "key ok: %s", label);
}

/* KEY (LEN bytes) is refused for the reason WHY. */
static void check_key_bad(const char *key, size_t len, const char *why, const char *label)
{
    is_str(keycodec_key_problem(key, len), why, "key refused: %s", label);
}

static void test_key_problem(void)
{
    check_key_ok("", "empty");
    check_key_ok("alice 2024-06-01", "letters, digits, space, dash");
    check_key_ok("%.~'\"*<>|:;,=+&@!$()[]{}^`", "other ASCII punctuation");
    check_key_ok("caf\xC3\xA9 \xE6\x97\xA5 \xF0\x9F\x98\x80", "non-ASCII");
    check_key_ok("\xC2\xA0", "U+00A0, first after C1");
    check_key_ok("\xEF\xBF\xBF", "U+FFFF");

    check_key_bad("a/b", 3, KEYCODEC_WHY_CHAR, "slash");
    check_key_bad("a\\b", 3, KEYCODEC_WHY_CHAR, "backslash");
    check_key_bad("a#b", 3, KEYCODEC_WHY_CHAR, "number sign");
    check_key_bad("a?b", 3, KEYCODEC_WHY_CHAR, "question mark");
    check_key_bad("a\tb", 3, KEYCODEC_WHY_CHAR, "tab");
    check_key_bad("\n", 1, KEYCODEC_WHY_CHAR, "newline");
    check_key_bad("\x01", 1, KEYCODEC_WHY_CHAR, "U+0001");
    check_key_bad("\x1F", 1, KEYCODEC_WHY_CHAR, "U+001F");
    check_key_bad("\x7F", 1, KEYCODEC_WHY_CHAR, "U+007F");
    check_key_bad("\xC2\x80", 2, KEYCODEC_WHY_CHAR, "U+0080");
    check_key_bad("\xC2\x85", 2, KEYCODEC_WHY_CHAR, "U+0085");
    check_key_bad("\xC2\x9F", 2, KEYCODEC_WHY_CHAR, "U+009F");
    check_key_bad("a\0b", 3, KEYCODEC_WHY_CHAR, "U+0000 inside LEN");

    check_key_bad("\xFF", 1, KEYCODEC_WHY_UTF8, "0xFF");
    check_key_bad("caf\xE9", 4, KEYCODEC_WHY_UTF8, "Latin-1");
    check_key_bad("\xC3", 1, KEYCODEC_WHY_UTF8, "cut short");
    check_key_bad("\xC0\xAF", 2, KEYCODEC_WHY_UTF8, "overlong slash");
    check_key_bad("\xED\xA0\x80", 3, KEYCODEC_WHY_UTF8, "surrogate");
    check_key_bad("\xF4\x90\x80\x80", 4, KEYCODEC_WHY_UTF8, "past U+10FFFF");
    check_key_bad("\xFF/", 2, KEYCODEC_WHY_UTF8, "first problem: not UTF-8");
    check_key_bad("/\xFF", 2, KEYCODEC_WHY_CHAR, "first problem: slash");
}

/* NAME is refused (WHY) or not (WHY NULL) by keycodec_name_problem. */
static void check_name(const char *name, const char *why, const char *label)
{
    is_str(keycodec_name_problem(name), why, "name %s", label);
}

static void test_name_problem(void)
{
    char name[300];

    check_name("a%2Fb", KEYCODEC_WHY_CHAR, "%2F");
    check_name("a%2fb", KEYCODEC_WHY_CHAR, "%2f (non-canonical, still a slash)");
    check_name("%5C", KEYCODEC_WHY_CHAR, "%5C");
    check_name("%23", KEYCODEC_WHY_CHAR, "%23");
    check_name("%3f", KEYCODEC_WHY_CHAR, "%3f");
    check_name("tab%09here", KEYCODEC_WHY_CHAR, "%09");
    check_name("%0a", KEYCODEC_WHY_CHAR, "%0a");
    check_name("%00", KEYCODEC_WHY_CHAR, "%00");
    check_name("%7F", KEYCODEC_WHY_CHAR, "%7F");
    check_name("%C2%85", KEYCODEC_WHY_CHAR, "escaped U+0085");
    check_name("\xC2%85", KEYCODEC_WHY_CHAR, "U+0085 half escaped");
    check_name("a#b", KEYCODEC_WHY_CHAR, "raw number sign");
    check_name("a?b.json", KEYCODEC_WHY_CHAR, "raw question mark, .json kept");
    check_name("a\\b", KEYCODEC_WHY_CHAR, "raw backslash");
    check_name("a\tb", KEYCODEC_WHY_CHAR, "raw tab");
    check_name("\xFF", KEYCODEC_WHY_UTF8, "0xFF");
    check_name("%E9", KEYCODEC_WHY_UTF8, "escaped Latin-1");
    check_name("%C3", KEYCODEC_WHY_UTF8, "escaped lead byte alone");

    check_name("%C3%A9", NULL, "escaped e-acute (valid, not canonical)");
    check_name("%", NULL, "the empty key");
    check_name("%.json", NULL, "the empty key's file");
    check_name("%25", NULL, "%25");
    check_name("%252F", NULL, "%252F is the key '%2F'");
    check_name("%252f%2523", NULL, "escaped percents are not re-read");
    check_name("%2E", NULL, "%2E");
    check_name("%2", NULL, "truncated escape");
    check_name("%zz", NULL, "not hex");
    check_name("%~", NULL, "bare mark");
    check_name("caf\xC3\xA9 it's", NULL, "non-ASCII, space, quote");
    memset(name, 'a', 200);
    strcpy(name + 200, "%~0123456789abcdef0123456789abcdef.json");
    check_name(name, NULL, "long form");
}

/* xorshift64*: a fixed-seed PRNG so failures are reproducible. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* Append one random character (ASCII, control, special, or 2-4 byte UTF-8). */
static size_t random_char(uint64_t *s, char *out)
{
    static const char special[] = "%/.~ '\"\\#?";
    uint32_t cp;

    switch (rng_next(s) % 6) {
    case 0:
        out[0] = special[rng_next(s) % (sizeof(special) - 1)];
        return 1;
    case 1:
        out[0] = (char)(1 + rng_next(s) % 31);
        if (rng_next(s) % 4 == 0)
            out[0] = 0x7F;
        return 1;
    case 2:
        cp = 0x80 + rng_next(s) % (0x800 - 0x80);
        out[0] = (char)(0xC0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    case 3:
        cp = 0x800 + rng_next(s) % (0xD000 - 0x800);
        out[0] = (char)(0xE0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    case 4:
        cp = 0x10000 + rng_next(s) % 0x100000;
        out[0] = (char)(0xF0 | cp >> 18);
        out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        return 4;
    default:
        out[0] = (char)(0x20 + rng_next(s) % 95);
        return 1;
    }
}

/* Random keys: every encoding decodes back (short form: exactly; long form:
 * to a prefix whose own encoding starts the name), and names stay <= 250. */
static void test_roundtrip_random(void)
{
    uint64_t s = 0x9E3779B97F4A7C15ULL;
    char key[1200];
    int bad = 0, longs = 0, n = 3000;

    for (int t = 0; t < n; t++) {
        size_t len = 0, want = (t % 10 == 0) ? 200 + rng_next(&s) % 900 : rng_next(&s) % 40;
        char *enc, *dec = NULL;
        int rc;

        while (len < want && len + 4 < sizeof(key) - 1)
            len += random_char(&s, key + len);
        key[len] = '\0';
        enc = keycodec_encode(key);
        if (!enc || strlen(enc) > KEYCODEC_NAME_MAX) {
            bad++;
            free(enc);
            continue;
        }
        rc = keycodec_decode(enc, &dec);
        if (rc == 0) {
            if (strcmp(dec, key) != 0)
                bad++;
        } else if (rc == 1) {
            longs++;
            if (strncmp(dec, key, strlen(dec)) != 0 || keycodec_matches(key, enc) != 1)
                bad++;
        } else {
            bad++;
        }
        free(enc);
        free(dec);
    }
    is_int(bad, 0, "%d random keys round-trip", n);
    ok(longs > 0, "some random keys (%d) took the long form", longs);
}

/* Random keys (now and then with a stray byte that is not UTF-8): the name of
 * a key the service accepts is never refused, and the short-form name of a
 * key it refuses always is, for the same reason. */
static void test_valid_names_random(void)
{
    uint64_t s = 0x2545F4914F6CDD1DULL;
    char key[1200];
    int bad = 0, valid = 0, invalid = 0, n = 3000;

    for (int t = 0; t < n; t++) {
        size_t len = 0, want = (t % 10 == 0) ? 200 + rng_next(&s) % 900 : rng_next(&s) % 20;
        char *enc, *fenc;
        const char *why;

        while (len < want && len + 4 < sizeof(key) - 1) {
            if (rng_next(&s) % 64 == 0)
                key[len++] = (char)(0x80 + rng_next(&s) % 0x80); /* likely not UTF-8 */
            else
                len += random_char(&s, key + len);
        }
        key[len] = '\0';
        why = keycodec_key_problem(key, len);
        enc = keycodec_encode(key);
        fenc = keycodec_file_encode(key);
        if (!enc || !fenc)
            bad++;
        else if (!why && (keycodec_name_problem(enc) || keycodec_name_problem(fenc)))
            bad++;
        else if (why && !strstr(enc, KEYCODEC_LONG_MARK) &&
                 (keycodec_name_problem(enc) != why || keycodec_name_problem(fenc) != why))
            bad++;
        valid += !why;
        invalid += !!why;
        free(enc);
        free(fenc);
    }
    is_int(bad, 0, "%d random keys: names refused exactly when their keys are", n);
    ok(valid > 100 && invalid > 100, "both kinds were drawn (%d valid, %d not)", valid, invalid);
}

/* Random names over a hostile alphabet: whenever one decodes (rc 0), encoding
 * the key must give the name back, so no key has two names. */
static void test_canonical_random(void)
{
    static const char *alpha[] = { "%", "2", "E", "F", "e",    "f",        "0",   "5",   "A",
                                   ".", "/", "~", "a", "\x01", "\xC3\xA9", "%2E", "%25", "%2F" };
    uint64_t s = 42;
    int bad = 0, accepted = 0, n = 20000;

    for (int t = 0; t < n; t++) {
        char name[64], *dec = NULL;
        size_t len = 0, parts = 1 + rng_next(&s) % 6;
        int rc;

        for (size_t i = 0; i < parts; i++) {
            const char *a = alpha[rng_next(&s) % (sizeof(alpha) / sizeof(alpha[0]))];

            memcpy(name + len, a, strlen(a));
            len += strlen(a);
        }
        name[len] = '\0';
        rc = keycodec_decode(name, &dec);
        if (rc == 0) {
            accepted++;
            if (keycodec_matches(dec, name) != 1)
                bad++;
        } else if (rc != -EINVAL || dec != NULL) {
            bad++;
        }
        free(dec);
    }
    is_int(bad, 0, "%d random names: decode succeeds only on canonical names", n);
    ok(accepted > 100, "a fair share were canonical (%d)", accepted);
}

int main(void)
{
    test_exact();
    test_long_ascii();
    test_long_utf8();
    test_long_escapes();
    test_boundary();
    test_reject();
    test_file_names();
    test_utf8_char();
    test_key_problem();
    test_name_problem();
    test_roundtrip_random();
    test_valid_names_random();
    test_canonical_random();
    return done_testing();
}
