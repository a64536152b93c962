/* test_parse.c - src/entity/parse.c: file text -> wire JSON, refusals, wire system members. */
/* The round trips (test_roundtrip) render, parse and render again: they state
 * parse's contract, that entity_parse reads back every text entity_render
 * (render.c) writes, the same entity. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "entity_util.h"
#include "tap.h"

static char *big_text(const char *head, const char *unit, size_t count, const char *tail)
{
    size_t ul = strlen(unit), len = strlen(head) + ul * count + strlen(tail);
    char *t = malloc(len + 1), *p = t;

    if (!t)
        return NULL;
    p = stpcpy(p, head);
    for (size_t i = 0; i < count; i++)
        p = stpcpy(p, unit);
    strcpy(p, tail);
    return t;
}

static void test_parse_errors(void)
{
    char name[300], text[700], *big;
    int rc;
    json_t *w;
    struct entity_error err;

    parse_fails("{\n  \"a\": 1,\n  \"b\": ,\n}\n", -EINVAL, 3, "invalid JSON", "syntax error");
    parse_fails("[1, 2]", -EINVAL, 0, "JSON object", "array at the top");
    parse_fails("42", -EINVAL, 0, "JSON object", "number at the top");
    parse_fails("", -EINVAL, -1, "invalid JSON", "empty text");
    parse_fails("{\"a\": 1}\n{\"b\": 2}", -EINVAL, 2, "invalid JSON", "two objects");
    parse_fails("{\n\"a\": 1,\n\"a\": 2\n}", -EINVAL, 3, "duplicate", "duplicate names");
    parse_fails("{\n \"o\": {\"x\": 1}\n}", -EINVAL, 2, "nested", "nested object");
    parse_fails("{\n \"o\": [1]\n}", -EINVAL, 2, "nested", "nested array");
    parse_fails("{\"o\": {}, \"o@odata.type\": \"Edm.String\"}", -EINVAL, 1, "nested",
                "nested object with a type");
    parse_fails("{\n \"x\": 1,\n \"age\": \"abc\",\n \"age@odata.type\": \"Edm.Int64\"\n}", -EINVAL,
                3, "property 'age': value \"abc\" is not an Edm.Int64", "bad Int64");
    parse_fails("{\"v\": \"9223372036854775808\", \"v@odata.type\": \"Edm.Int64\"}", -EINVAL, 1,
                "Edm.Int64", "Int64 overflow");
    parse_fails("{\"v\": \" 5\", \"v@odata.type\": \"Edm.Int64\"}", -EINVAL, 1, NULL,
                "Int64 with space");
    parse_fails("{\"v\": \"+5\", \"v@odata.type\": \"Edm.Int64\"}", -EINVAL, 1, NULL,
                "Int64 with plus");
    parse_fails("{\"v\": 1.5, \"v@odata.type\": \"Edm.Int64\"}", -EINVAL, 1, NULL,
                "Int64 from real");
    parse_fails("{\"v\": 99999999999999999999}", -EINVAL, 1, "invalid JSON",
                "bare integer beyond Int64");
    parse_fails("{\"v\": 2147483648, \"v@odata.type\": \"Edm.Int32\"}", -EINVAL, 1, "Edm.Int32",
                "Int32 out of range");
    parse_fails("{\"v\": \"1\", \"v@odata.type\": \"Edm.Int32\"}", -EINVAL, 1, NULL,
                "Int32 from string");
    parse_fails("{\"v\": \"inf\", \"v@odata.type\": \"Edm.Double\"}", -EINVAL, 1, "Edm.Double",
                "Double 'inf'");
    parse_fails("{\"v\": true, \"v@odata.type\": \"Edm.Double\"}", -EINVAL, 1, NULL,
                "Double from bool");
    parse_fails("{\"v\": 1, \"v@odata.type\": \"Edm.Boolean\"}", -EINVAL, 1, NULL,
                "Boolean from int");
    parse_fails("{\"v\": 1, \"v@odata.type\": \"Edm.String\"}", -EINVAL, 1, NULL,
                "String from int");
    parse_fails("{\"v\": \"0f8fad5b-d9cb-469f-a165-70867728950\", \"v@odata.type\": \"Edm.Guid\"}",
                -EINVAL, 1, "Edm.Guid", "short Guid");
    parse_fails("{\"v\": \"0f8fad5bxd9cb-469f-a165-70867728950e\", \"v@odata.type\": \"Edm.Guid\"}",
                -EINVAL, 1, NULL, "Guid without dash");
    parse_fails(
        "{\"v\": \"{0f8fad5b-d9cb-469f-a165-70867728950e}\", \"v@odata.type\": \"Edm.Guid\"}",
        -EINVAL, 1, NULL, "Guid in braces");
    parse_fails("{\"v\": \"2020-13-01T00:00:00Z\", \"v@odata.type\": \"Edm.DateTime\"}", -EINVAL, 1,
                "Edm.DateTime", "DateTime month 13");
    parse_fails("{\"v\": \"yesterday\", \"v@odata.type\": \"Edm.DateTime\"}", -EINVAL, 1, NULL,
                "DateTime garbage");
    parse_fails("{\"v\": \"AAE\", \"v@odata.type\": \"Edm.Binary\"}", -EINVAL, 1, "Edm.Binary",
                "Binary missing padding");
    parse_fails("{\"v\": \"AA=C\", \"v@odata.type\": \"Edm.Binary\"}", -EINVAL, 1, NULL,
                "Binary padding inside");
    parse_fails("{\"v\": \"AB==\", \"v@odata.type\": \"Edm.Binary\"}", -EINVAL, 1, NULL,
                "Binary non-zero trailing bits");
    parse_fails("{\"v\": \"AA*=\", \"v@odata.type\": \"Edm.Binary\"}", -EINVAL, 1, NULL,
                "Binary bad character");
    parse_fails("{\"v\": \"A===\", \"v@odata.type\": \"Edm.Binary\"}", -EINVAL, 1, NULL,
                "Binary three pads");
    parse_fails("{\n\"v\": 1,\n\"w@odata.type\": \"Edm.Int64\"\n}", -EINVAL, 3, "not present",
                "annotation without its property");
    parse_fails("{\"v\": 1, \"v@odata.type\": \"Edm.Int16\"}", -EINVAL, 1, "Edm type",
                "unknown type");
    parse_fails("{\"v\": 1, \"v@odata.type\": 5}", -EINVAL, 1, "must be a string",
                "type not a string");
    parse_fails("{\"1abc\": 1}", -EINVAL, 1, "not valid", "name starting with a digit");
    parse_fails("{\"a-b\": 1}", -EINVAL, 1, "not valid", "name with '-'");
    parse_fails("{\"a b\": 1}", -EINVAL, 1, "not valid", "name with a space");
    parse_fails("{\"\": 1}", -EINVAL, 1, "not valid", "empty name");
    parse_fails("{\"caf\xC3\xA9\": 1}", -EINVAL, 1, "not valid", "non-ASCII name");
    parse_fails("{\"a@b\": 1}", -EINVAL, 1, "not valid", "name with '@'");
    parse_fails("{\"a\": \"\\u0000\", \"a@odata.type\": \"Edm.DateTime\"}", -EINVAL, 1, NULL,
                "DateTime with NUL");

    memset(name, 'n', 256);
    name[256] = '\0';
    snprintf(text, sizeof(text), "{\"%s\": 1}", name);
    parse_fails(text, -EINVAL, 1, "not valid", "256-character name");
    name[255] = '\0';
    snprintf(text, sizeof(text), "{\"%s\": 1, \"%s@odata.type\": \"Edm.Int64\"}", name, name);
    w = parse_text(text, &rc, &err);
    is_int(rc, 0, "255-character name with annotation accepted");
    ok(json_is_string(json_object_get(w, name)), "  and is sent as Int64");
    json_decref(w);

    /* 252 properties are fine, 253 are not; nulls do not count. */
    big = malloc(253 * 16 + 64);
    strcpy(big, "{\"z\": null");
    for (int i = 0; i < 252; i++)
        sprintf(big + strlen(big), ", \"p%d\": %d", i, i);
    strcat(big, "}");
    w = parse_text(big, &rc, &err);
    is_int(rc, 0, "252 properties (plus a null) accepted");
    is_int(json_object_size(w), 252, "  252 members sent");
    json_decref(w);
    strcpy(big + strlen(big) - 1, ", \"p252\": 1}");
    parse_fails(big, -EINVAL, 0, "252", "253 properties");
    free(big);

    /* Sizes: whole text, String in UTF-16 units, Binary decoded bytes. */
    big = big_text("{\"s\": \"", "x", ENTITY_MAX_BYTES, "\"}");
    parse_fails(big, -EFBIG, 0, "1 MiB", "text over 1 MiB");
    free(big);
    big = big_text("{\"s\": \"", "x", 32768, "\"}");
    w = parse_text(big, &rc, &err);
    is_int(rc, 0, "32768 ASCII characters (64 KiB of UTF-16) accepted");
    json_decref(w);
    free(big);
    big = big_text("{\"s\": \"", "x", 32769, "\"}");
    parse_fails(big, -EFBIG, 1, "64 KiB", "32769 ASCII characters");
    free(big);
    big = big_text("{\"s\": \"", "\xF0\x9F\x98\x80", 16384, "\"}");
    w = parse_text(big, &rc, &err);
    is_int(rc, 0, "16384 emoji (2 UTF-16 units each) accepted");
    json_decref(w);
    free(big);
    big = big_text("{\"s\": \"", "\xF0\x9F\x98\x80", 16384, "x\"}");
    parse_fails(big, -EFBIG, 1, "64 KiB", "16384 emoji and one more character");
    free(big);
    big = big_text("{\"s\": \"", "\xE6\x97\xA5", 32768, "\"}");
    w = parse_text(big, &rc, &err);
    is_int(rc, 0, "32768 3-byte characters (96 KiB of UTF-8) accepted");
    json_decref(w);
    free(big);
    big = big_text("{\"b@odata.type\": \"Edm.Binary\", \"b\": \"", "AAAA", 65536 / 3,
                   "AQ==\"}"); /* 65535 + 1 bytes */
    w = parse_text(big, &rc, &err);
    is_int(rc, 0, "64 KiB Binary accepted");
    json_decref(w);
    free(big);
    big = big_text("{\"b@odata.type\": \"Edm.Binary\", \"b\": \"", "AAAA", 65536 / 3,
                   "AAE=\"}"); /* 65535 + 2 bytes */
    parse_fails(big, -EFBIG, 1, "64 KiB", "64 KiB + 1 Binary");
    free(big);
}

static void test_parse_ok(void)
{
    static const char text[] =
        "\xEF\xBB\xBF{\n"
        "  \"odata.etag\": \"W/\\\"x\\\"\",\n"
        "  \"PartitionKey\": \"pk\",\n"
        "  \"RowKey\": \"rk\",\n"
        "  \"Timestamp\": \"2026-11-22T08:26:34.9118804Z\",\n"
        "  \"Timestamp@odata.type\": \"Edm.DateTime\",\n"
        "  \"i\": 42, \"big\": 3000000000, \"neg\": -3000000000,\n"
        "  \"d\": 2.5, \"d2\": 2, \"d2@odata.type\": \"Edm.Double\",\n"
        "  \"l\": 5, \"l@odata.type\": \"Edm.Int64\", \"l2\": \"-007\", \"l2@odata.type\": "
        "\"Edm.Int64\",\n"
        "  \"s\": \"x\", \"s@odata.type\": \"Edm.String\", \"i2\": 3, \"i2@odata.type\": "
        "\"Edm.Int32\",\n"
        "  \"b\": false, \"b@odata.type\": \"Edm.Boolean\", \"n\": null, \"n@odata.type\": "
        "\"Edm.Int64\",\n"
        "  \"t\": \"2020-01-02T03:04:05+00:00\", \"t@odata.type\": \"Edm.DateTime\",\n"
        "  \"inf\": \"-Infinity\", \"inf@odata.type\": \"Edm.Double\"\n"
        "}\n";
    struct entity_error err;
    json_t *w = NULL, *want;
    char *pk = NULL, *rk = NULL, *got, *exp;
    int rc = entity_parse(text, strlen(text), &w, &pk, &rk, &err);

    is_int(rc, 0, "lenient input parses (%s)", rc ? err.text : "ok");
    is_str(pk, "pk", "PartitionKey copied out");
    is_str(rk, "rk", "RowKey copied out");
    want = json_pack("{s:i, s:s, s:s, s:s, s:s, s:f, s:s, s:f, s:s, s:s, s:s, s:s, s:s,"
                     " s:s, s:i, s:b, s:s, s:s, s:s, s:s}",
                     "i", 42, "big", "3000000000", "big@odata.type", "Edm.Int64", "neg",
                     "-3000000000", "neg@odata.type", "Edm.Int64", "d", 2.5, "d@odata.type",
                     "Edm.Double", "d2", 2.0, "d2@odata.type", "Edm.Double", "l", "5",
                     "l@odata.type", "Edm.Int64", "l2", "-7", "l2@odata.type", "Edm.Int64", "s",
                     "x", "i2", 3, "b", 0, "t", "2020-01-02T03:04:05Z", "t@odata.type",
                     "Edm.DateTime", "inf", "-Infinity", "inf@odata.type", "Edm.Double");
    ok(json_equal(w, want), "wire object is canonical");
    got = json_dumps(w, JSON_SORT_KEYS);
    exp = json_dumps(want, JSON_SORT_KEYS);
    if (!json_equal(w, want))
        printf("#   got:  %s\n#   want: %s\n", got, exp);
    ok(json_is_real(json_object_get(w, "d2")), "Double sent as a JSON real");
    ok(json_is_integer(json_object_get(w, "i")), "Int32 sent as a JSON integer");
    free(got);
    free(exp);
    free(pk);
    free(rk);
    json_decref(w);
    json_decref(want);

    w = parse_text("{}", &rc, &err);
    is_int(rc, 0, "empty object parses");
    is_int(json_object_size(w), 0, "  to an empty wire object");
    json_decref(w);
    rc = entity_parse("{\"PartitionKey\": 1}", 19, &w, &pk, &rk, &err);
    ok(rc == 0 && pk == NULL && rk == NULL, "non-string keys are not copied out");
    json_decref(w);
}

/* xorshift64*: a fixed-seed PRNG so failures are reproducible. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* A random double: mixes tiny, huge, integral and ordinary values. */
static double random_double(uint64_t *s)
{
    uint64_t bits;
    double d;

    switch (rng_next(s) % 4) {
    case 0:
        return (double)(int64_t)(rng_next(s) % 2000001) - 1000000.0;
    case 1:
        return (double)(rng_next(s) % 1000) / 10.0;
    default:
        do {
            bits = rng_next(s);
            memcpy(&d, &bits, sizeof(d));
        } while (!isfinite(d));
        return d;
    }
}

static void test_roundtrip(void)
{
    static const char *fixed[] = {
        "{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}",
        "{\"PartitionKey\":\"\",\"RowKey\":\"\",\"Timestamp\":\"2026-11-22T08:26:34.9118804Z\"}",
        ("{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"s\":\"line1\\nline2\\t\\\"q\\\" \\\\ \\u0001 "
         "\\u00e9\","
         "\"n\":-5,\"b\":true,\"d\":0.1,\"z\":-0.0,\"big\":\"-9223372036854775808\","
         "\"big@odata.type\":\"Edm.Int64\",\"g\":\"0f8fad5b-d9cb-469f-a165-70867728950e\","
         "\"g@odata.type\":\"Edm.Guid\",\"t\":\"2020-01-02T03:04:05Z\",\"t@odata.type\":\"Edm."
         "DateTime\","
         "\"bin\":\"AAEC\",\"bin@odata.type\":\"Edm.Binary\",\"x\":\"Infinity\",\"x@odata.type\":"
         "\"Edm.Double\"}"),
        "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"nul\":\"a\\u0000b\",\"tiny\":5e-324,\"huge\":1."
        "7976931348623157e308}",
        ("{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"i\":2147483648,\"j\":-2147483648,\"d\":2,"
         "\"d@odata.type\":\"Edm.Double\",\"nan\":\"NaN\",\"nan@odata.type\":\"Edm.Double\"}"),
    };
    struct entity_error err;
    uint64_t s = 0xC0FFEE;
    int good = 0, n = 300;

    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
        json_t *w = json_loads(fixed[i], JSON_ALLOW_NUL, NULL);

        ok(w && roundtrips(w, &err), "round trip of fixed entity %zu", i);
        json_decref(w);
    }

    /* Random entities over every type. */
    for (int e = 0; e < n; e++) {
        json_t *w = json_pack("{s:s, s:s}", "PartitionKey", "p", "RowKey", "r");
        int props = (int)(rng_next(&s) % 20);

        for (int k = 0; k < props; k++) {
            char name[16], ann[32], str[48];
            uint64_t r = rng_next(&s);

            snprintf(name, sizeof(name), "p%d", (int)(rng_next(&s) % 1000));
            snprintf(ann, sizeof(ann), "%s@odata.type", name);
            json_object_del(w, ann);
            switch (r % 8) {
            case 0:
                for (size_t c = 0; c < sizeof(str) - 1; c++)
                    str[c] = (char)(1 + rng_next(&s) % 127);
                str[sizeof(str) - 1] = '\0';
                json_object_set_new(w, name, json_string(str));
                break;
            case 1:
                json_object_set_new(w, name, json_integer((int32_t)rng_next(&s)));
                break;
            case 2:
                snprintf(str, sizeof(str), "%lld", (long long)rng_next(&s));
                json_object_set_new(w, name, json_string(str));
                json_object_set_new(w, ann, json_string("Edm.Int64"));
                break;
            case 3:
                json_object_set_new(w, name, json_real(random_double(&s)));
                break;
            case 4:
                json_object_set_new(w, name, json_boolean(rng_next(&s) & 1));
                break;
            case 5:
                snprintf(str, sizeof(str), "%04d-%02d-%02dT%02d:%02d:%02dZ",
                         1601 + (int)(rng_next(&s) % 8000), 1 + (int)(rng_next(&s) % 12),
                         1 + (int)(rng_next(&s) % 28), (int)(rng_next(&s) % 24),
                         (int)(rng_next(&s) % 60), (int)(rng_next(&s) % 60));
                json_object_set_new(w, name, json_string(str));
                json_object_set_new(w, ann, json_string("Edm.DateTime"));
                break;
            case 6:
                snprintf(str, sizeof(str), "%08x-0000-4000-8000-%012llx", (unsigned)rng_next(&s),
                         (unsigned long long)(rng_next(&s) >> 16));
                json_object_set_new(w, name, json_string(str));
                json_object_set_new(w, ann, json_string("Edm.Guid"));
                break;
            default:
                json_object_set_new(w, name, json_string("AAECAwQF"));
                json_object_set_new(w, ann, json_string("Edm.Binary"));
            }
        }
        if (roundtrips(w, &err))
            good++;
        else
            printf("# random entity %d: %s\n", e, err.text);
        json_decref(w);
    }
    is_int(good, n, "%d random entities round-trip", n);
}

static void test_wire_sys(void)
{
    json_t *e = json_object();

    is_int(entity_wire_set_sys(e, "p", "r", NULL, "W/\"x\""), 0, "set keys and etag");
    is_str(entity_wire_sys(e, ENTITY_PK), "p", "PartitionKey");
    is_str(entity_wire_sys(e, ENTITY_RK), "r", "RowKey");
    ok(entity_wire_sys(e, ENTITY_TIMESTAMP) == NULL, "no Timestamp set");
    is_str(entity_wire_sys(e, ENTITY_ETAG), "W/\"x\"", "odata.etag");
    is_str(json_string_value(json_object_get(e, "odata.etag")), "W/\"x\"", "wire name");
    json_decref(e);
}

int main(void)
{
    test_wire_sys();
    test_parse_errors();
    test_parse_ok();
    test_roundtrip();
    return done_testing();
}
