/* test_pageread.c - page_read against json_loadb (TAP): for pages of the
 * service's shape, for the inputs where the two readers could part (escapes,
 * UTF-8, numbers, literals, nesting, text around the page), and for random
 * pages and random damage to a real one, page_read's result is json_loadb's:
 * the same tree in the same order, or the same failure and message. And
 * page_read_text against page_read on the same pages: each entity's text
 * is the entity page_read reads, its keys page_read's. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/table_i.h"
#include "tap.h"

/* A reproducible 64-bit generator (xorshift64*). */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* Do page_read and json_loadb agree on TEXT (LEN bytes)? The same tree,
 * members in the same order, or both fail with the same message. */
static int agree(const char *text, size_t len)
{
    json_error_t e1, e2;
    json_t *a = page_read(text, len, &e1);
    json_t *b = json_loadb(text, len, 0, &e2);
    int same;

    if (!a || !b) {
        same = !a && !b && strcmp(e1.text, e2.text) == 0;
    } else {
        char *da = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
        char *db = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);

        same = json_equal(a, b) && da && db && strcmp(da, db) == 0;
        free(da);
        free(db);
    }
    json_decref(a);
    json_decref(b);
    return same;
}

/* Is entity T of page_read_text the entity E of page_read: its text read
 * is E, and table_entity_key finds E's keys (when strings) in it? */
static int same_entity(const json_t *t, const json_t *e)
{
    const enum entity_sys keys[] = { ENTITY_PK, ENTITY_RK };
    json_t *read;
    int same;

    if (!json_is_string(t))
        return 0;
    read = json_loadb(json_string_value(t), json_string_length(t), 0, NULL);
    same = read && json_equal(read, e);
    json_decref(read);
    for (size_t k = 0; k < 2; k++) {
        const char *want = entity_wire_sys(e, keys[k]);
        char *got = table_entity_key(t, keys[k]);

        if (want ? !got || strcmp(got, want) != 0 : got != NULL)
            same = 0;
        free(got);
    }
    return same;
}

/* Does page_read_text agree with page_read on TEXT? Where page_read reads
 * it, the same page with each entity as its text (same_entity), or the
 * same tree (page_read_text's fallback; an entity that is a string made
 * null); where page_read fails, the same failure, or texts of which one
 * is not JSON (the failure is then its renderer's). */
static int agree_text(const char *text, size_t len)
{
    json_error_t e1, e2;
    json_t *t = page_read_text(text, len, &e1);
    json_t *a = page_read(text, len, &e2);
    json_t *tv = json_object_get(t, "value"), *av = json_object_get(a, "value"), *e;
    size_t i;
    int same = 1, unread = 0, texts = 0;

    json_array_foreach (tv, i, e) {
        json_t *r = json_is_string(e) ?
            json_loadb(json_string_value(e), json_string_length(e), 0, NULL) :
            NULL;

        texts |= json_is_string(e);
        unread |= json_is_string(e) && !r;
        json_decref(r);
    }
    if (!a) {
        same = t ? unread : strcmp(e1.text, e2.text) == 0;
    } else if (!t) {
        same = 0;
    } else if (texts) {
        same = json_array_size(tv) == json_array_size(av) &&
            json_object_size(t) == json_object_size(a);
        json_array_foreach (tv, i, e)
            same = same && same_entity(e, json_array_get(av, i));
        json_object_del(t, "value");
        json_object_del(a, "value");
        same = same && json_equal(t, a);
    } else {
        json_array_foreach (av, i, e) /* the fallback's: strings made null */
            if (json_is_string(e))
                json_array_set_new(av, i, json_null());
        same = json_equal(t, a);
    }
    json_decref(t);
    json_decref(a);
    return same;
}

/* A TAP comment naming TEXT (LEN bytes) where the readers part, its bytes
 * outside printable ASCII shown as '?'. */
static void show_parting(const char *text, size_t len)
{
    printf("# page_read and json_loadb part on: ");
    for (size_t i = 0; i < len && i < 400; i++)
        putchar(text[i] >= 0x20 && text[i] < 0x7f ? text[i] : '?');
    printf("\n");
}

static int agree_str(const char *text)
{
    return agree(text, strlen(text)) && agree_text(text, strlen(text));
}

/* Inputs chosen where a reader of tokens could differ from jansson's. */
static void test_chosen(void)
{
    static const char *const cases[] = {
        "{\"odata.metadata\":\"x\",\"value\":[]}",
        "{\"value\":[{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"n\":1,\"d\":2.5,"
        "\"b\":true,\"f\":false,\"z\":null,\"odata.etag\":\"W/\\\"datetime'x'\\\"\"}]}",
        " \r\n\t{ \"value\" : [ { \"a\" : 1 } , { } ] } \n",
        "{\"value\":[{\"a\":\"\\u00e9\\n\\\"\\\\\\/\"}]}",                /* escapes */
        "{\"value\":[{\"a\\u0062\":1}]}",                                 /* escaped name */
        "{\"value\":[{\"a\":\"x\\u0000y\"}]}",                            /* NUL: refused */
        "{\"value\":[{\"a\":\"\\ud83d\\ude00\"}]}",                       /* surrogate pair */
        "{\"value\":[{\"a\":\"\\ud83d\"}]}",                              /* lone surrogate */
        "{\"value\":[{\"a\":\"\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\"}]}", /* UTF-8 */
        "{\"value\":[{\"a\":\"\xc3\"}]}",                                 /* cut sequence */
        "{\"value\":[{\"a\":\"\xc0\xaf\"}]}",                             /* overlong */
        "{\"value\":[{\"a\":\"\xed\xa0\x80\"}]}",                         /* surrogate in UTF-8 */
        "{\"value\":[{\"\xff\":1}]}",                                     /* name not UTF-8 */
        "{\"value\":[{\"a\":\"tab\there\"}]}",                            /* control character */
        "{\"value\":[{\"a\":\"\x7f\"}]}",
        "{\"value\":[{\"a\":0,\"b\":-0,\"c\":-1,\"d\":123456789012345678}]}",
        "{\"value\":[{\"a\":9223372036854775807,\"b\":-9223372036854775808}]}",
        "{\"value\":[{\"a\":9223372036854775808}]}", /* too big */
        "{\"value\":[{\"a\":-9223372036854775809}]}",
        "{\"value\":[{\"a\":01}]}",
        "{\"value\":[{\"a\":1.}]}",
        "{\"value\":[{\"a\":.5}]}",
        "{\"value\":[{\"a\":+1}]}",
        "{\"value\":[{\"a\":-}]}",
        "{\"value\":[{\"a\":1e}]}",
        "{\"value\":[{\"a\":1e+}]}",
        "{\"value\":[{\"a\":1.5.2}]}",
        "{\"value\":[{\"a\":1x}]}",
        "{\"value\":[{\"a\":1.5e3,\"b\":1E+2,\"c\":-2.5e-3,\"d\":0.1,\"e\":1e-400}]}",
        "{\"value\":[{\"a\":1e400}]}",
        "{\"value\":[{\"a\":-1e400}]}",
        "{\"value\":[{\"a\":tru}]}",
        "{\"value\":[{\"a\":truex}]}",
        "{\"value\":[{\"a\":nul}]}",
        "{\"value\":[{\"a\":NaN}]}",
        "{\"value\":[{\"a\":true}]}x",
        "{\"value\":[]}{}",
        "{\"value\":[{\"a\":{\"b\":1}}]}",
        "{\"value\":[{\"a\":[1]}]}", /* nesting */
        "{\"value\":[1,2]}",
        "{\"value\":{}}",
        "{\"value\":\"v\"}",
        "{\"other\":[1]}",
        "{\"value\":[{\"a\":1,}]}",
        "{\"value\":[{\"a\":1},]}",
        "{\"value\":[{\"a\" 1}]}",
        "{\"value\":[{\"a\":1,\"a\":2,\"b\":3,\"a\":4}]}", /* a name twice */
        "{\"value\":[{\"a\":1}],\"value\":[{\"b\":2}]}",
        "{\"value\":[{\"a\":1}]",
        "{\"value\":[{\"a\":1}",
        "{\"value\":[{\"a\":\"1",
        "",
        "   ",
        "[]",
        "\xef\xbb\xbf{\"value\":[]}",
        "{\"value\":[{\"a\":1}]}\0",
        "{\"a\x00b\":1}",
        "{'value':[]}",
        "{\"value\":[{\"a\":\"\\x\"}]}",
        "{\"value\":[{\"a\":\"\\u12\"}]}",
        "{\"value\":[{\"a\":\"x\\",
    };
    size_t i, bad = 0;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (!agree_str(cases[i])) {
            show_parting(cases[i], strlen(cases[i]));
            bad++;
        }
    is_int((int)bad, 0, "chosen inputs (%zu): page_read reads what json_loadb reads",
           sizeof(cases) / sizeof(cases[0]));
    ok(agree("{\"value\":[{\"a\":1}]}\0", 20) && agree("{\"v\":\"a\0b\"}", 11),
       "a NUL byte in the text: the same failure");
    {
        /* a number at the very end of a text that is not NUL-terminated
         * (a heap block of its exact size: ASan sees any read past it) */
        char *cut = malloc(7);

        ok(cut && (memcpy(cut, "{\"d\":12", 7), agree(cut, 7)),
           "a number cut by the end of the text: the same failure, nothing read past it");
        free(cut);
    }
    {
        json_error_t e1, e2;
        json_t *a = page_read(NULL, 0, &e1), *b = json_loadb("", 0, 0, &e2);

        ok(!a && !b && strcmp(e1.text, e2.text) == 0, "no body: read as an empty text");
    }
}

/* Append to OUT (room for at least 64 more bytes) a random token of the
 * kind the service sends, or one that it does not. */
static size_t random_scalar(uint64_t *s, char *out)
{
    static const char *const odd[] = {
        "\"\\u00e9\"",
        "\"a\\\"b\"",
        "\"\\\\\"",
        "\"\xc3\xa9\"",
        "\"\xe2\x82\"",
        "true",
        "false",
        "null",
        "0",
        "-0",
        "1.25",
        "-3e5",
        "1E-7",
        "12345678901234567890",
        "01",
        "1.",
        "\"\\u0000\"",
        "\"\\ud800\"",
        "{}",
        "[]",
        "\"\t\"",
        "nan",
        "1e999",
        "\"2024-01-01T00:00:00Z\"",
        "\"W/\\\"datetime'2026'\\\"\"",
        "-9223372036854775808",
    };
    uint64_t r = next_rand(s);

    switch (r % 4) {
    case 0:
        return (size_t)sprintf(out, "\"v%u\"", (unsigned)(r >> 8) % 100000);
    case 1:
        return (size_t)sprintf(out, "%lld", (long long)(r >> 8) % 2000000000LL - 1000000000LL);
    case 2:
        return (size_t)sprintf(out, "%.17g", (double)(r >> 11) / 1e9);
    default:
        return (size_t)sprintf(out, "%s", odd[(r >> 8) % (sizeof(odd) / sizeof(odd[0]))]);
    }
}

/* A random page of N_ENT entities into OUT (room for 64 KiB). */
static size_t random_page(uint64_t *s, char *out, int n_ent)
{
    static const char *const names[] = { "\"PartitionKey\"", "\"RowKey\"",  "\"a\"",
                                         "\"b@odata.type\"", "\"\\u0061\"", "\"\xc3\xa9\"",
                                         "\"value\"",        "\"a\"" };
    static const char *const ws[] = { "", " ", "\n", "\t", "\r\n ", "" };
    size_t n = (size_t)sprintf(out, "{\"odata.metadata\":\"m\",%s\"value\"%s:[",
                               ws[next_rand(s) % 6], ws[next_rand(s) % 6]);

    for (int e = 0; e < n_ent; e++) {
        int props = (int)(next_rand(s) % 6);

        n += (size_t)sprintf(out + n, "%s{", e ? "," : "");
        for (int p = 0; p < props; p++) {
            n += (size_t)sprintf(out + n, "%s%s%s:%s", p ? "," : "", ws[next_rand(s) % 6],
                                 names[next_rand(s) % 8], ws[next_rand(s) % 6]);
            n += random_scalar(s, out + n);
        }
        n += (size_t)sprintf(out + n, "}");
    }
    n += (size_t)sprintf(out + n, "]%s}%s", ws[next_rand(s) % 6], ws[next_rand(s) % 6]);
    return n;
}

static void test_random(void)
{
    static char page[65536], damaged[65536];
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    size_t i, bad = 0, dbad = 0;

    for (i = 0; i < 20000; i++) {
        size_t n = random_page(&seed, page, (int)(next_rand(&seed) % 20));

        if (!agree(page, n) || !agree_text(page, n)) {
            if (bad++ < 3)
                show_parting(page, n);
        }
        /* and the same page damaged: a byte changed, dropped or doubled */
        memcpy(damaged, page, n);
        size_t at = (size_t)(next_rand(&seed) % n), m = n;
        uint64_t how = next_rand(&seed);

        if (how % 3 == 0) {
            damaged[at] = (char)(how >> 8);
        } else if (how % 3 == 1) {
            memmove(damaged + at, damaged + at + 1, n - at - 1);
            m--;
        } else {
            memmove(damaged + at + 1, damaged + at, n - at);
            m++;
        }
        if (!agree(damaged, m) || !agree_text(damaged, m)) {
            if (dbad++ < 3)
                show_parting(damaged, m);
        }
    }
    is_int((int)bad, 0, "20,000 random pages: page_read reads what json_loadb reads");
    is_int((int)dbad, 0, "the same pages damaged: the same result or the same failure");
}

/* Entities of the service's shape come as their texts, byte for byte,
 * their keys found in them; a nested one makes the page trees, and an
 * entity that is a string there null. */
static void test_texts(void)
{
    static const char page[] = "{\"odata.metadata\":\"m\",\"value\":[ {\"PartitionKey\":\"p\","
                               "\"RowKey\":\"r\\u00e9\",\"n\":1} ,{\"PartitionKey\":\"q\","
                               "\"RowKey\":5,\"RowKey\":\"x\",\"PartitionKey\":7}]}";
    static const char nested[] = "{\"value\":[{\"PartitionKey\":\"p\",\"o\":{}},\"{}\"]}";
    json_t *t = page_read_text(page, strlen(page), NULL);
    json_t *v = json_object_get(t, "value"), *e0 = json_array_get(v, 0), *e1 = json_array_get(v, 1);
    char *pk = table_entity_key(e0, ENTITY_PK), *rk = table_entity_key(e0, ENTITY_RK);
    char *pk1 = table_entity_key(e1, ENTITY_PK), *rk1 = table_entity_key(e1, ENTITY_RK);

    ok(json_is_string(e0) &&
           strcmp(json_string_value(e0),
                  "{\"PartitionKey\":\"p\",\"RowKey\":\"r\\u00e9\",\"n\":1}") == 0,
       "an entity's text is its bytes on the page (%s)",
       json_is_string(e0) ? json_string_value(e0) : "none");
    ok(pk && rk && strcmp(pk, "p") == 0 && strcmp(rk, "r\xc3\xa9") == 0, "its keys, decoded");
    ok(!pk1 && rk1 && strcmp(rk1, "x") == 0, "a key given twice: the last one counts (%s, %s)",
       pk1 ? pk1 : "none", rk1 ? rk1 : "none");
    free(pk);
    free(rk);
    free(pk1);
    free(rk1);
    json_decref(t);
    t = page_read_text(nested, strlen(nested), NULL);
    v = json_object_get(t, "value");
    e0 = json_array_get(v, 0);
    ok(json_is_object(e0) && json_object_get(e0, "o"), "a nested value: the page comes as trees");
    ok(json_is_null(json_array_get(v, 1)), "and an entity that is a string comes as null");
    json_decref(t);
}

int main(void)
{
    test_texts();
    test_chosen();
    test_random();
    return done_testing();
}
