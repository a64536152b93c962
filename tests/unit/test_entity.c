/* test_entity.c - unit tests for entity rendering and parsing (TAP). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "tap.h"

/* Render the wire JSON text WIRE_TEXT; returns the malloc'd file text or NULL. */
static char *render_text(const char *wire_text, int *rc_out, struct entity_error *err)
{
    json_error_t jerr;
    json_t *w = json_loads(wire_text, JSON_ALLOW_NUL, &jerr);
    char *out = NULL;
    size_t len = 0;
    int rc;

    if (!w) {
        printf("# bad test JSON: %s\n", jerr.text);
        *rc_out = -999;
        return NULL;
    }
    rc = entity_render(w, &out, &len, err);
    if (rc == 0 && strlen(out) != len)
        rc = -998; /* length mismatch (no NUL in file text expected here) */
    *rc_out = rc;
    json_decref(w);
    return out;
}

/* Parse TEXT; returns the wire object (caller decrefs) or NULL; *rc_out set. */
static json_t *parse_text(const char *text, int *rc_out, struct entity_error *err)
{
    json_t *w = NULL;

    *rc_out = entity_parse(text, strlen(text), &w, NULL, NULL, err);
    return w;
}

/* Render {"PartitionKey":"p","RowKey":"r","v":VALUE[,"v@odata.type":TYPE]}
 * and return the line(s) after RowKey, without indentation, joined by '|'. */
static char *render_value(const char *value_json, const char *type)
{
    char wire[512], *text, *start, *end, *out, *o;
    struct entity_error err;
    int rc;

    if (type)
        snprintf(wire, sizeof(wire),
                 "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":%s,"
                 "\"v@odata.type\":\"%s\"}",
                 value_json, type);
    else
        snprintf(wire, sizeof(wire), "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":%s}",
                 value_json);
    text = render_text(wire, &rc, &err);
    if (rc != 0) {
        printf("# render failed (%d): %s\n", rc, rc == -999 ? "" : err.text);
        free(text);
        return NULL;
    }
    start = strstr(text, "\"RowKey\": \"r\",\n");
    if (!start) {
        free(text);
        return NULL;
    }
    start += strlen("\"RowKey\": \"r\",\n");
    end = strstr(start, "\n}\n");
    out = o = malloc(strlen(start) + 1);
    for (const char *s = start; s < end; s++) {
        if (*s == ',' && s[1] == '\n')
            continue;
        if (*s == '\n')
            *o++ = '|';
        else if (!(s[0] == ' ' && (s == start || s[-1] == '\n' || s[-1] == ' ')))
            *o++ = *s;
    }
    *o = '\0';
    free(text);
    return out;
}

static void test_example(void)
{
    static const char wire[] =
        "{\"odata.etag\":\"W/\\\"x\\\"\",\"PartitionKey\":\"p\",\"RowKey\":\"r\","
        "\"Timestamp\":\"2026-11-22T08:26:34.9118804Z\",\"b\":true,\"n\":42,\"d\":2.0,"
        "\"big\":\"9007199254740993\",\"big@odata.type\":\"Edm.Int64\","
        "\"s\":\"h\\u00e9llo \\\"q\\\"\\n\","
        "\"g\":\"0f8fad5b-d9cb-469f-a165-70867728950e\",\"g@odata.type\":\"Edm.Guid\","
        "\"t\":\"2020-01-02T03:04:05Z\",\"t@odata.type\":\"Edm.DateTime\","
        "\"bin\":\"AAEC\",\"bin@odata.type\":\"Edm.Binary\","
        "\"nan\":\"NaN\",\"nan@odata.type\":\"Edm.Double\"}";
    static const char want[] = "{\n"
                               "  \"PartitionKey\": \"p\",\n"
                               "  \"RowKey\": \"r\",\n"
                               "  \"Timestamp\": \"2026-11-22T08:26:34.9118804Z\",\n"
                               "  \"b\": true,\n"
                               "  \"big\": \"9007199254740993\",\n"
                               "  \"big@odata.type\": \"Edm.Int64\",\n"
                               "  \"bin\": \"AAEC\",\n"
                               "  \"bin@odata.type\": \"Edm.Binary\",\n"
                               "  \"d\": 2.0,\n"
                               "  \"d@odata.type\": \"Edm.Double\",\n"
                               "  \"g\": \"0f8fad5b-d9cb-469f-a165-70867728950e\",\n"
                               "  \"g@odata.type\": \"Edm.Guid\",\n"
                               "  \"n\": 42,\n"
                               "  \"nan\": \"NaN\",\n"
                               "  \"nan@odata.type\": \"Edm.Double\",\n"
                               "  \"s\": \"h\xC3\xA9llo \\\"q\\\"\\n\",\n"
                               "  \"t\": \"2020-01-02T03:04:05Z\",\n"
                               "  \"t@odata.type\": \"Edm.DateTime\"\n"
                               "}\n";
    struct entity_error err;
    int rc;
    char *out = render_text(wire, &rc, &err);

    is_int(rc, 0, "render the reference example");
    is_str(out, want, "reference example renders exactly");
    free(out);

    out = render_text("{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}", &rc, &err);
    is_str(out, "{\n  \"PartitionKey\": \"p\",\n  \"RowKey\": \"r\"\n}\n", "minimal entity");
    free(out);

    out = render_text("{\"odata.metadata\":\"m\",\"PartitionKey\":\"p\",\"RowKey\":\"r\","
                      "\"Timestamp\":\"2020-01-02T03:04:05Z\","
                      "\"Timestamp@odata.type\":\"Edm.DateTime\","
                      "\"s@odata.type\":\"Edm.String\",\"s\":\"x\","
                      "\"i\":7,\"i@odata.type\":\"Edm.Int32\","
                      "\"f\":false,\"f@odata.type\":\"Edm.Boolean\",\"z\":null,"
                      "\"orphan@odata.type\":\"Edm.Int64\"}",
                      &rc, &err);
    is_str(
        out,
        "{\n  \"PartitionKey\": \"p\",\n  \"RowKey\": \"r\",\n"
        "  \"Timestamp\": \"2020-01-02T03:04:05Z\",\n"
        "  \"f\": false,\n  \"i\": 7,\n  \"s\": \"x\"\n}\n",
        "full metadata: odata.*, Timestamp type, String/Int32/Boolean annotations, null dropped");
    free(out);
}

static void test_types(void)
{
    static const struct {
        const char *value, *type, *want;
    } cases[] = {
        { "\"plain\"", NULL, "\"v\": \"plain\"" },
        { "\"plain\"", "Edm.String", "\"v\": \"plain\"" },
        { "-2147483648", NULL, "\"v\": -2147483648" },
        { "2147483647", "Edm.Int32", "\"v\": 2147483647" },
        { "2147483648", NULL, "\"v\": \"2147483648\"|\"v@odata.type\": \"Edm.Int64\"" },
        { "-2147483649", NULL, "\"v\": \"-2147483649\"|\"v@odata.type\": \"Edm.Int64\"" },
        { "\"-9223372036854775808\"", "Edm.Int64",
          "\"v\": \"-9223372036854775808\"|\"v@odata.type\": \"Edm.Int64\"" },
        { "\"007\"", "Edm.Int64", "\"v\": \"7\"|\"v@odata.type\": \"Edm.Int64\"" },
        { "5", "Edm.Int64", "\"v\": \"5\"|\"v@odata.type\": \"Edm.Int64\"" },
        { "true", NULL, "\"v\": true" },
        { "false", "Edm.Boolean", "\"v\": false" },
        { "2", "Edm.Double", "\"v\": 2.0|\"v@odata.type\": \"Edm.Double\"" },
        { "\"2020-01-02T03:04:05.1234567Z\"", "Edm.DateTime",
          "\"v\": \"2020-01-02T03:04:05.1234567Z\"|\"v@odata.type\": \"Edm.DateTime\"" },
        { "\"0F8FAD5B-D9CB-469F-A165-70867728950E\"", "Edm.Guid",
          "\"v\": \"0F8FAD5B-D9CB-469F-A165-70867728950E\"|\"v@odata.type\": \"Edm.Guid\"" },
        { "\"\"", "Edm.Binary", "\"v\": \"\"|\"v@odata.type\": \"Edm.Binary\"" },
        { "\"AA==\"", "Edm.Binary", "\"v\": \"AA==\"|\"v@odata.type\": \"Edm.Binary\"" },
        { "\"\"", NULL, "\"v\": \"\"" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got = render_value(cases[i].value, cases[i].type);

        is_str(got, cases[i].want, "render %s as %s", cases[i].value,
               cases[i].type ? cases[i].type : "(bare)");
        free(got);
    }
}

static void test_doubles(void)
{
    static const struct {
        const char *value, *want;
    } cases[] = {
        { "0.1", "0.1" },
        { "2.0", "2.0" },
        { "-2.5", "-2.5" },
        { "100.0", "100.0" },
        { "1e300", "1e+300" },
        { "1e21", "1e+21" },
        { "1e-7", "1e-07" },
        { "1e-6", "0.000001" },
        { "1.5e-6", "0.0000015" },
        { "1e20", "100000000000000000000.0" },
        { "1.2345678901234567e20", "123456789012345670000.0" },
        { "-1234.5", "-1234.5" },
        { "-0.0", "-0.0" },
        { "0.0", "0.0" },
        { "5e-324", "5e-324" },
        { "2.2250738585072014e-308", "2.2250738585072014e-308" },
        { "1.7976931348623157e308", "1.7976931348623157e+308" },
        { "0.30000000000000004", "0.30000000000000004" },
        { "123456789.125", "123456789.125" },
        { "9007199254740993.0", "9007199254740992.0" },
    };
    char want[128], *got;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(want, sizeof(want), "\"v\": %s|\"v@odata.type\": \"Edm.Double\"", cases[i].want);
        got = render_value(cases[i].value, NULL);
        is_str(got, want, "double %s", cases[i].value);
        free(got);
    }
    got = render_value("\"NaN\"", "Edm.Double");
    is_str(got, "\"v\": \"NaN\"|\"v@odata.type\": \"Edm.Double\"", "double NaN");
    free(got);
    got = render_value("\"Infinity\"", "Edm.Double");
    is_str(got, "\"v\": \"Infinity\"|\"v@odata.type\": \"Edm.Double\"", "double Infinity");
    free(got);
    got = render_value("\"-Infinity\"", "Edm.Double");
    is_str(got, "\"v\": \"-Infinity\"|\"v@odata.type\": \"Edm.Double\"", "double -Infinity");
    free(got);
}

static void test_order_and_escapes(void)
{
    struct entity_error err;
    json_t *w = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i}", "PartitionKey", "p", "RowKey", "r",
                          "b", 1, "a", 2, "_x", 3, "Z1", 4, "B", 5);
    char *out = NULL;
    size_t len;

    entity_render(w, &out, &len, &err);
    is_str(out,
           "{\n  \"PartitionKey\": \"p\",\n  \"RowKey\": \"r\",\n  \"B\": 5,\n  \"Z1\": 4,\n"
           "  \"_x\": 3,\n  \"a\": 2,\n  \"b\": 1\n}\n",
           "properties sorted by byte order");
    free(out);
    json_decref(w);

    /* Escapes, including an embedded NUL (JSON_ALLOW_NUL wire strings). */
    w = json_pack("{s:s, s:s, s:s%}", "PartitionKey", "p\"k", "RowKey", "r\\k", "s",
                  "q\" b\\ \b\f\n\r\t \x01\x1F/\x7F \xC3\xA9\xF0\x9F\x98\x80 \0z", (size_t)26);
    out = NULL;
    entity_render(w, &out, &len, &err);
    is_str(out,
           "{\n  \"PartitionKey\": \"p\\\"k\",\n  \"RowKey\": \"r\\\\k\",\n"
           "  \"s\": \"q\\\" b\\\\ \\b\\f\\n\\r\\t \\u0001\\u001F/\x7F \xC3\xA9\xF0\x9F\x98\x80"
           " \\u0000z\"\n}\n",
           "string escapes: only quote, backslash and controls");
    free(out);
    json_decref(w);
}

static void test_render_errors(void)
{
    static const struct {
        const char *wire, *label;
    } cases[] = {
        { "{\"RowKey\":\"r\"}", "missing PartitionKey" },
        { "{\"PartitionKey\":1,\"RowKey\":\"r\"}", "PartitionKey not a string" },
        { "{\"PartitionKey\":\"p\"}", "missing RowKey" },
        { "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"Timestamp\":5}", "Timestamp a number" },
        { "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":\"abc\",\"v@odata.type\":\"Edm.Int64\"}",
          "Int64 not a number" },
        { "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":\"9223372036854775808\","
          "\"v@odata.type\":\"Edm.Int64\"}",
          "Int64 out of range" },
        { "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":\"1.5\",\"v@odata.type\":\"Edm.Double\"}",
          "Double from a numeric string" },
        { "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":\"nan\",\"v@odata.type\":\"Edm.Double\"}",
          "Double lower-case nan" },
        { "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":\"x\",\"v@odata.type\":\"Edm.Guid\"}",
          "bad Guid" },
        { "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":\"2020\",\"v@odata.type\":\"Edm."
          "DateTime\"}",
          "bad DateTime" },
        { "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":\"A\",\"v@odata.type\":\"Edm.Binary\"}",
          "bad Binary" },
        { "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":1,\"v@odata.type\":\"Edm.Single\"}",
          "unknown type" },
        { "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":2147483648,\"v@odata.type\":\"Edm."
          "Int32\"}",
          "Int32 out of range" },
        { "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":{}}", "nested object" },
        { "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":[1]}", "nested array" },
        { "[1]", "not an object" },
    };
    struct entity_error err;
    int rc;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *out = render_text(cases[i].wire, &rc, &err);

        is_int(rc, -EINVAL, "render rejects: %s", cases[i].label);
        ok(out == NULL && err.text[0] != '\0', "  no output, reason: %s", err.text);
        free(out);
    }
}

/* Expect TEXT to fail with RC; optionally check the line and a substring of the reason. */
static void parse_fails(const char *text, int want_rc, int want_line, const char *want_text,
                        const char *label)
{
    struct entity_error err;
    int rc;
    json_t *w = parse_text(text, &rc, &err);

    is_int(rc, want_rc, "parse rejects: %s", label);
    ok(w == NULL, "  no object (%s, line %d)", err.text, err.line);
    if (want_line >= 0)
        is_int(err.line, want_line, "  error line for %s", label);
    if (want_text)
        ok(strstr(err.text, want_text) != NULL, "  reason mentions '%s'", want_text);
    json_decref(w);
}

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

/* Render WIRE, parse the text, put the keys and Timestamp back, render
 * again: the two texts must be identical. Returns 1 on success. */
static int roundtrips(json_t *wire, struct entity_error *err)
{
    char *t1 = NULL, *t2 = NULL;
    size_t l1, l2;
    json_t *back = NULL;
    int rc;

    rc = entity_render(wire, &t1, &l1, err);
    if (rc == 0)
        rc = entity_parse(t1, l1, &back, NULL, NULL, err);
    if (rc == 0) {
        json_object_set(back, "PartitionKey", json_object_get(wire, "PartitionKey"));
        json_object_set(back, "RowKey", json_object_get(wire, "RowKey"));
        if (json_object_get(wire, "Timestamp"))
            json_object_set(back, "Timestamp", json_object_get(wire, "Timestamp"));
        rc = entity_render(back, &t2, &l2, err);
    }
    if (rc == 0 && (l1 != l2 || memcmp(t1, t2, l1) != 0)) {
        printf("# first:  %s# second: %s", t1, t2);
        rc = -1;
    }
    free(t1);
    free(t2);
    json_decref(back);
    return rc == 0;
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

static void test_datetime(void)
{
    static const struct {
        const char *s;
        long long sec;
        long nsec;
    } good[] = {
        { "2020-01-02T03:04:05Z", 1577934245LL, 0 },
        { "2020-01-02T03:04:05+00:00", 1577934245LL, 0 },
        { "2026-11-22T08:26:34.9118804Z", 1795335994LL, 911880400 },
        { "2026-11-22T08:26:34.5Z", 1795335994LL, 500000000 },
        { "0001-01-01T00:00:00Z", -62135596800LL, 0 },
        { "2024-02-29T00:00:00Z", 1709164800LL, 0 },
        { "1969-12-31T23:59:59Z", -1LL, 0 },
        { "2020-01-02t03:04:05z", 1577934245LL, 0 },
        { "2020-01-02T04:04:05+01:00", 1577934245LL, 0 },
        { "2020-01-01T21:34:05.25-05:30", 1577934245LL, 250000000 },
        { "2020-01-02T03:04:05.123456700Z", 1577934245LL, 123456700 },
        { "9999-12-31T23:59:59.9999999Z", 253402300799LL, 999999900 },
    };
    static const char *bad[] = {
        "",
        "2020-01-02",
        "2020-01-02T03:04:05",
        "2020-01-02 03:04:05Z",
        "2020-1-02T03:04:05Z",
        "2020-02-30T00:00:00Z",
        "2021-02-29T00:00:00Z",
        "2020-01-02T24:00:00Z",
        "2020-01-02T03:60:00Z",
        "2020-01-02T03:04:60Z",
        "2020-01-02T03:04:05.Z",
        "2020-01-02T03:04:05.12345678Z",
        "2020-01-02T03:04:05+0100",
        "2020-01-02T03:04:05Zjunk",
        "0000-01-01T00:00:00Z",
        "2020-00-10T00:00:00Z",
        "0001-01-01T00:30:00+01:00",
        "9999-12-31T23:30:00-01:00",
    };
    struct timespec ts;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        int rc = entity_parse_datetime(good[i].s, &ts);

        ok(rc == 0 && ts.tv_sec == good[i].sec && ts.tv_nsec == good[i].nsec, "datetime %s",
           good[i].s);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        is_int(entity_parse_datetime(bad[i], &ts), -EINVAL, "datetime rejects '%s'", bad[i]);
}

/* Parse {"When": VALUE, "When@odata.type": "Edm.DateTime"}: the DateTime
 * string sent on the wire (malloc'd), or NULL with *rc_out and ERR set. */
static char *parse_datetime_value(const char *value_json, int *rc_out, struct entity_error *err)
{
    char text[256];
    const char *type;
    const json_t *v;
    char *out = NULL;
    json_t *w;

    snprintf(text, sizeof(text), "{\"When\": %s, \"When@odata.type\": \"Edm.DateTime\"}",
             value_json);
    w = parse_text(text, rc_out, err);
    v = json_object_get(w, "When");
    type = json_string_value(json_object_get(w, "When@odata.type"));
    if (*rc_out == 0 && json_is_string(v) && type && strcmp(type, "Edm.DateTime") == 0 &&
        json_object_size(w) == 2)
        out = strdup(json_string_value(v));
    json_decref(w);
    return out;
}

/* Every accepted spelling: the canonical UTC form sent (entity_parse), shown
 * in the file (entity_render of a wire value) and returned by
 * entity_datetime_canonical. */
static void test_datetime_canonical(void)
{
    static const struct {
        const char *in, *want, *label;
    } cases[] = {
        { "2020-01-02T03:04:05Z", "2020-01-02T03:04:05Z", "Z" },
        { "2020-01-02T03:04:05+00:00", "2020-01-02T03:04:05Z", "+00:00" },
        { "2020-01-02T03:04:05-00:00", "2020-01-02T03:04:05Z", "-00:00" },
        { "2020-01-02t03:04:05z", "2020-01-02T03:04:05Z", "lower-case t and z" },
        { "2020-01-02T03:04:05+05:30", "2020-01-01T21:34:05Z", "+05:30 back over midnight" },
        { "2020-01-02T20:00:00-08:00", "2020-01-03T04:00:00Z", "-08:00 over midnight" },
        { "2020-01-01T02:00:00+05:30", "2019-12-31T20:30:00Z", "back over the new year" },
        { "2019-12-31T20:00:00-08:00", "2020-01-01T04:00:00Z", "over the new year" },
        { "2020-04-30T23:59:59-00:01", "2020-05-01T00:00:59Z", "over a 30-day month end" },
        { "2020-02-28T23:30:00-01:00", "2020-02-29T00:30:00Z", "into Feb 29 of a leap year" },
        { "2021-02-28T23:30:00-01:00", "2021-03-01T00:30:00Z", "Feb 28 to Mar 1, common year" },
        { "2020-03-01T00:30:00+01:00", "2020-02-29T23:30:00Z", "back into Feb 29" },
        { "2100-03-01T00:30:00+01:00", "2100-02-28T23:30:00Z", "2100 is not a leap year" },
        { "2000-03-01T00:30:00+01:00", "2000-02-29T23:30:00Z", "2000 is a leap year" },
        { "2024-02-29T12:00:00+14:00", "2024-02-28T22:00:00Z", "+14:00" },
        { "2020-06-15T12:00:00+23:59", "2020-06-14T12:01:00Z", "largest offset" },
        { "2020-06-15T12:00:00-23:59", "2020-06-16T11:59:00Z", "smallest offset" },
        { "1970-01-01T00:59:59+01:00", "1969-12-31T23:59:59Z", "to the second before the epoch" },
        { "1969-12-31T23:59:59Z", "1969-12-31T23:59:59Z", "the second before the epoch" },
        { "1601-01-01T00:00:00Z", "1601-01-01T00:00:00Z", "Windows epoch" },
        { "0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "first instant" },
        { "0001-01-01T05:00:00+04:59", "0001-01-01T00:01:00Z", "offset down to year 0001" },
        { "9999-12-31T23:59:59.9999999Z", "9999-12-31T23:59:59.9999999Z", "last instant" },
        { "9999-12-31T20:00:00-03:59", "9999-12-31T23:59:00Z", "offset up to year 9999" },
        { "2020-01-02T03:04:05.1Z", "2020-01-02T03:04:05.1Z", "1 fraction digit" },
        { "2020-01-02T03:04:05.12Z", "2020-01-02T03:04:05.12Z", "2 fraction digits" },
        { "2020-01-02T03:04:05.123Z", "2020-01-02T03:04:05.123Z", "3 fraction digits" },
        { "2020-01-02T03:04:05.1234Z", "2020-01-02T03:04:05.1234Z", "4 fraction digits" },
        { "2020-01-02T03:04:05.12345Z", "2020-01-02T03:04:05.12345Z", "5 fraction digits" },
        { "2020-01-02T03:04:05.123456Z", "2020-01-02T03:04:05.123456Z", "6 fraction digits" },
        { "2020-01-02T03:04:05.1234567Z", "2020-01-02T03:04:05.1234567Z", "7 fraction digits" },
        { "2020-01-02T03:04:05.000000Z", "2020-01-02T03:04:05.000000Z",
          "zero fraction kept as written (the SDK's form)" },
        { "2020-01-02T03:04:05.5000000Z", "2020-01-02T03:04:05.5000000Z", "trailing zeros kept" },
        { "2020-01-02T03:04:05.12345670Z", "2020-01-02T03:04:05.1234567Z", "8th digit 0 dropped" },
        { "2020-01-02T03:04:05.123456700Z", "2020-01-02T03:04:05.1234567Z",
          "9 digits ending in 00 (nanoseconds)" },
        { "2020-01-02T03:04:05.0000000000Z", "2020-01-02T03:04:05.0000000Z", "10 zero digits" },
        { "2020-01-02T03:04:05.1234567+05:30", "2020-01-01T21:34:05.1234567Z",
          "fraction with an offset" },
        { "2020-01-02T03:04:05.9-00:30", "2020-01-02T03:34:05.9Z", "fraction with -00:30" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[128], canon[ENTITY_DATETIME_SIZE] = "", want_line[160], *got, *line;
        const char *why = "";
        struct entity_error err;
        int rc;

        snprintf(json, sizeof(json), "\"%s\"", cases[i].in);
        got = parse_datetime_value(json, &rc, &err);
        is_str(got, cases[i].want, "parse DateTime %s (%s)%s%s", cases[i].in, cases[i].label,
               rc ? ": " : "", rc ? err.text : "");
        free(got);
        snprintf(want_line, sizeof(want_line), "\"v\": \"%s\"|\"v@odata.type\": \"Edm.DateTime\"",
                 cases[i].want);
        line = render_value(json, "Edm.DateTime");
        is_str(line, want_line, "  render shows it as %s", cases[i].want);
        free(line);
        rc = entity_datetime_canonical(cases[i].in, canon, &why);
        ok(rc == 0 && strcmp(canon, cases[i].want) == 0,
           "  entity_datetime_canonical gives %s (rc %d, '%s')", canon, rc, rc ? why : "");
    }
}

/* Every refused spelling: EINVAL, no wire object, the reason in the text. */
static void test_datetime_refused(void)
{
    static const struct {
        const char *json, *why;
    } cases[] = {
        { "\"2020-01-02T03:04:05\"", "no time zone" },
        { "\"2020-01-02T03:04:05.123\"", "no time zone" },
        { "\"2020-01-02\"", "wrong layout" },
        { "\"\"", "wrong layout" },
        { "\"yesterday\"", "wrong layout" },
        { "\"2020-01-02 03:04:05Z\"", "wrong layout" },
        { "\"2020-1-02T03:04:05Z\"", "wrong layout" },
        { "\"2020-01-02T3:04:05Z\"", "wrong layout" },
        { "\"2020-01-02T03:04Z\"", "wrong layout" },
        { "\"20200102T030405Z\"", "wrong layout" },
        { "\"+2020-01-02T03:04:05Z\"", "wrong layout" },
        { "\"12020-01-02T03:04:05Z\"", "wrong layout" },
        { "\"2020-01-02T03:04:05.Z\"", "no digit after the '.'" },
        { "\"2020-01-02T03:04:05,5Z\"", "bad time zone" },
        { "\"2020-01-02T03:04:05.12345678Z\"", "more than 7 fraction digits" },
        { "\"2020-01-02T03:04:05.123456789Z\"", "more than 7 fraction digits" },
        { "\"2020-01-02T03:04:05.00000001Z\"", "more than 7 fraction digits" },
        { "\"2020-01-02T03:04:05+0530\"", "bad time zone" },
        { "\"2020-01-02T03:04:05+05\"", "bad time zone" },
        { "\"2020-01-02T03:04:05+5:30\"", "bad time zone" },
        { "\"2020-01-02T03:04:05 Z\"", "bad time zone" },
        { "\"2020-01-02T03:04:05Z \"", "bad time zone" },
        { "\"2020-01-02T03:04:05UTC\"", "bad time zone" },
        { "\"2020-01-02T03:04:05GMT+1\"", "bad time zone" },
        { "\"2020-01-02T03:04:05Zjunk\"", "bad time zone" },
        { "\"2020-01-02T03:04:05+00:00Z\"", "bad time zone" },
        { "\"2020-01-02T03:04:05+24:00\"", "offset beyond 23:59" },
        { "\"2020-01-02T03:04:05-05:60\"", "offset beyond 23:59" },
        { "\"2020-02-30T00:00:00Z\"", "no such date" },
        { "\"2021-02-29T00:00:00Z\"", "no such date" },
        { "\"2100-02-29T00:00:00Z\"", "no such date" },
        { "\"2020-04-31T00:00:00Z\"", "no such date" },
        { "\"2020-13-01T00:00:00Z\"", "no such date" },
        { "\"2020-00-10T00:00:00Z\"", "no such date" },
        { "\"2020-01-00T00:00:00Z\"", "no such date" },
        { "\"2020-01-02T24:00:00Z\"", "no such time of day" },
        { "\"2020-01-02T03:60:00Z\"", "no such time of day" },
        { "\"2016-12-31T23:59:60Z\"", "no such time of day" },
        { "\"0000-01-01T00:00:00Z\"", "year 0000" },
        { "\"0000-12-31T23:00:00-01:00\"", "year 0000" },
        { "\"0001-01-01T00:30:00+01:00\"", "year outside 0001-9999 once in UTC" },
        { "\"9999-12-31T23:30:00-01:00\"", "year outside 0001-9999 once in UTC" },
        { "\"2020-01-02T03:04:05Z\\u0000\"", "a NUL character" },
        { "1577934245", "not a string" },
        { "true", "not a string" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct entity_error err;
        int rc;
        char *got = parse_datetime_value(cases[i].json, &rc, &err);

        is_int(rc, -EINVAL, "DateTime %s refused", cases[i].json);
        ok(got == NULL && strstr(err.text, cases[i].why) != NULL &&
               strstr(err.text, "expected YYYY-MM-DDThh:mm:ss[.fffffff] then Z or +hh:mm") !=
                   NULL &&
               strcmp(err.property, "When") == 0 && err.line == 1,
           "  reason '%s' and the expected spelling: %s", cases[i].why, err.text);
        free(got);
    }
}

/* The exact error text, render's handling of bad wire values, round trips. */
static void test_datetime_errors_and_roundtrip(void)
{
    static const char *wires[] = {
        ("{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"a\":\"2020-01-02T03:04:05+05:30\","
         "\"a@odata.type\":\"Edm.DateTime\",\"b\":\"2020-01-02T03:04:05.000000Z\","
         "\"b@odata.type\":\"Edm.DateTime\",\"c\":\"2020-01-02t03:04:05.1234567-08:00\","
         "\"c@odata.type\":\"Edm.DateTime\"}"),
    };
    const char *why = NULL;
    char canon[ENTITY_DATETIME_SIZE];
    struct entity_error err;
    char *out;
    int rc;

    parse_fails("{\n  \"x\": 1,\n  \"When\": \"2020-02-30T00:00:00Z\",\n"
                "  \"When@odata.type\": \"Edm.DateTime\"\n}\n",
                -EINVAL, 3,
                "property 'When': value \"2020-02-30T00:00:00Z\" is not an Edm.DateTime "
                "(no such date); expected YYYY-MM-DDThh:mm:ss[.fffffff] then Z or +hh:mm",
                "DateTime Feb 30: exact reason");
    out = render_text("{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":\"2020-01-02T03:04:05\","
                      "\"v@odata.type\":\"Edm.DateTime\"}",
                      &rc, &err);
    is_int(rc, -EINVAL, "render refuses a DateTime without a time zone");
    ok(out == NULL && strstr(err.text, "no time zone") != NULL, "  reason: %s", err.text);
    free(out);
    is_int(entity_datetime_canonical("2020-02-30T00:00:00Z", canon, NULL), -EINVAL,
           "entity_datetime_canonical: WHY may be NULL");
    is_int(entity_datetime_canonical("2020-02-30T00:00:00Z", canon, &why), -EINVAL,
           "entity_datetime_canonical refuses Feb 30");
    is_str(why, "no such date", "  and says why");
    for (size_t i = 0; i < sizeof(wires) / sizeof(wires[0]); i++) {
        json_t *w = json_loads(wires[i], 0, NULL);

        ok(w && roundtrips(w, &err), "DateTime spellings on the wire round-trip (%zu)", i);
        json_decref(w);
    }
}

/* Days since 1970-01-01 of Y-M-D in the proleptic Gregorian calendar, and
 * back (H. Hinnant's algorithms): an oracle independent of timegm. */
static long long days_from_civil(long long y, int m, int d)
{
    long long era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(long long z, int *y, int *m, int *d)
{
    long long era, doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

/* Random valid dates with random offsets and fractions: the canonical form
 * matches the oracle, and entity_parse_datetime agrees on the instant. */
static void test_datetime_random(void)
{
    static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    uint64_t s = 0xDA7E;
    int good = 0, n = 3000;

    for (int i = 0; i < n; i++) {
        int y = 1 + (int)(rng_next(&s) % 9999), mo = 1 + (int)(rng_next(&s) % 12);
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        int d = 1 + (int)(rng_next(&s) % (uint64_t)(mdays[mo - 1] + (mo == 2 && leap)));
        int h = (int)(rng_next(&s) % 24), mi = (int)(rng_next(&s) % 60);
        int sec = (int)(rng_next(&s) % 60), off = (int)(rng_next(&s) % (2 * 1439 + 1)) - 1439;
        int nfrac = (int)(rng_next(&s) % 8), uy, um, ud;
        char in[64], want[64], frac[9] = "", got[ENTITY_DATETIME_SIZE] = "";
        long long t, ut;
        struct timespec ts, ts2;

        for (int k = 0; k < nfrac; k++)
            frac[k] = (char)('0' + rng_next(&s) % 10);
        frac[nfrac] = '\0';
        snprintf(in, sizeof(in), "%04d-%02d-%02dT%02d:%02d:%02d%s%s%c%02d:%02d", y, mo, d, h, mi,
                 sec, nfrac ? "." : "", frac, off < 0 ? '-' : '+', abs(off) / 60, abs(off) % 60);
        t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
        ut = t - off * 60LL;
        civil_from_days(ut >= 0 ? ut / 86400 : (ut - 86399) / 86400, &uy, &um, &ud);
        ut -= (ut >= 0 ? ut / 86400 : (ut - 86399) / 86400) * 86400;
        snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d%s%sZ", uy, um, ud,
                 (int)(ut / 3600), (int)(ut / 60 % 60), (int)(ut % 60), nfrac ? "." : "", frac);
        if (uy < 1 || uy > 9999) {
            if (entity_datetime_canonical(in, got, NULL) == -EINVAL)
                good++;
            else
                printf("# %s: want a refusal (year %d), got %s\n", in, uy, got);
            continue;
        }
        if (entity_datetime_canonical(in, got, NULL) == 0 && strcmp(got, want) == 0 &&
            entity_parse_datetime(in, &ts) == 0 && entity_parse_datetime(got, &ts2) == 0 &&
            ts.tv_sec == ts2.tv_sec && ts.tv_nsec == ts2.tv_nsec && ts.tv_sec == t - off * 60LL)
            good++;
        else
            printf("# %s: got '%s', want '%s'\n", in, got, want);
    }
    is_int(good, n, "%d random DateTimes with offsets normalise like the oracle", n);
}

static void test_type_names(void)
{
    enum edm_type t = EDM_STRING;

    is_str(edm_type_name(EDM_INT64), "Edm.Int64", "edm_type_name(Int64)");
    is_str(edm_type_name(EDM_BINARY), "Edm.Binary", "edm_type_name(Binary)");
    ok(edm_type_parse("Edm.Guid", &t) == 0 && t == EDM_GUID, "edm_type_parse(Edm.Guid)");
    is_int(edm_type_parse("edm.guid", &t), -EINVAL, "edm_type_parse is case-sensitive");
    is_int(edm_type_parse("Edm.Single", &t), -EINVAL, "edm_type_parse rejects unknown types");
}

/* Digest of the wire entity in JSON text W (service's or parsed file's). */
static int digest_of(const char *w, unsigned char out[ENTITY_DIGEST_LEN])
{
    json_t *e = json_loads(w, JSON_ALLOW_NUL, NULL);
    int rc = e ? entity_wire_digest(e, out) : -EINVAL;

    json_decref(e);
    return rc;
}

/* Do the wire entities A and B have the same digest? 1, 0, or -1 on error. */
static int same_digest(const char *a, const char *b)
{
    unsigned char da[ENTITY_DIGEST_LEN], db[ENTITY_DIGEST_LEN];

    if (digest_of(a, da) < 0 || digest_of(b, db) < 0)
        return -1;
    return memcmp(da, db, sizeof(da)) == 0;
}

static void test_wire_digest(void)
{
    const char *svc = "{\"odata.etag\":\"W/x\",\"PartitionKey\":\"p\",\"RowKey\":\"r\","
                      "\"Timestamp\":\"2026-01-01T00:00:00Z\",\"d\":1.0,\"n\":5,"
                      "\"s\":\"x\",\"z\":null}";

    is_int(same_digest(svc, "{\"n\":5,\"s\":\"x\",\"d@odata.type\":\"Edm.Double\",\"d\":1.0}"), 1,
           "digest: system members, null and the Double annotation change nothing");
    is_int(same_digest(svc, "{\"n\":\"5\",\"n@odata.type\":\"Edm.Int64\",\"s\":\"x\",\"d\":1.0}"),
           0, "digest: Int32 5 and Int64 5 differ");
    is_int(same_digest(svc, "{\"n\":5,\"s\":\"x\",\"d\":1.5}"), 0, "digest: values differ");
    is_int(same_digest(svc, "{\"n\":5,\"s\":\"x\"}"), 0, "digest: a property fewer differs");
    is_int(same_digest(svc, "{\"n\":5,\"s\":\"x\",\"d\":1.0,\"RowKeyCopy\":\"r\"}"), 0,
           "digest: a property named like a key counts");
    is_int(same_digest("{\"t\":\"2020-01-02T03:04:05+05:30\",\"t@odata.type\":\"Edm.DateTime\"}",
                       "{\"t\":\"2020-01-01T21:34:05Z\",\"t@odata.type\":\"Edm.DateTime\"}"),
           0, "digest: a DateTime held with an offset differs from its UTC form");
    is_int(same_digest("{\"a\":\"b\",\"ab\":\"\"}", "{\"a\":\"\",\"ab\":\"b\"}"), 0,
           "digest: names and values do not run together");
    is_int(same_digest("{\"a\":\"x\\u0000y\"}", "{\"a\":\"x\"}"), 0,
           "digest: a NUL inside a string counts");
}

/* entity_check_limits: keys, the service's count of an entity's size, and
 * a mount's own limits (another service's) taken from the struct. */
static void test_limits(void)
{
    const char *text = "{\"a\":\"xyz\",\"b\":5,\"c@odata.type\":\"Edm.Int64\",\"c\":\"1\","
                       "\"d\":true,\"g@odata.type\":\"Edm.Guid\",\"g\":"
                       "\"00000000-0000-4000-8000-000000000000\",\"bin@odata.type\":"
                       "\"Edm.Binary\",\"bin\":\"AAE=\",\"z\":null}";
    struct entity_limits lim = entity_limits_storage;
    struct entity_error err;
    char key[600];
    int rc;
    json_t *w = parse_text(text, &rc, &err);

    is_int(rc, 0, "limits: the entity parses");
    is_int(entity_check_limits(&lim, w, "p", "r", &err), 0, "limits: within Storage's");
    /* 4 + keys 2 x 2 + a 8+2+3x2+4 + b 8+2+4 + c 8+2+8 + d 8+2+1 + g 8+2+16 + bin 8+6+2+4 */
    lim.entity_bytes = 117;
    is_int(entity_check_limits(&lim, w, "p", "r", &err), 0, "limits: 117 bytes as counted");
    lim.entity_bytes = 116;
    is_int(entity_check_limits(&lim, w, "p", "r", &err), -EFBIG, "limits: one byte more: EFBIG");
    ok(strstr(err.text, "the entity is 117 bytes as the service counts it") != NULL,
       "  the reason: %s", err.text);
    lim = entity_limits_storage;
    memset(key, 'k', 512);
    key[512] = '\0';
    is_int(entity_check_limits(&lim, w, key, "r", &err), 0, "limits: a 512-character key (1 KiB)");
    strcpy(key + 510, "\xC3\xA9"); /* 511 characters, one of 2 bytes in UTF-8: 1022 in UTF-16 */
    is_int(entity_check_limits(&lim, w, "p", key, &err), 0, "limits: keys counted in UTF-16");
    strcpy(key + 510, "kk\xF0\x9F\x98\x80"); /* an emoji: 2 UTF-16 units */
    is_int(entity_check_limits(&lim, w, "p", key, &err), -EINVAL,
           "limits: 514 UTF-16 units: EINVAL");
    ok(strstr(err.text, "the RowKey is 1028 bytes in UTF-16") && !strcmp(err.property, "RowKey"),
       "  the reason: %s", err.text);
    is_int(entity_check_limits(&lim, w, "a#b", "r", &err), -EINVAL, "limits: '#' in a key");
    ok(strstr(err.text, "a key the service refuses") != NULL, "  the reason: %s", err.text);
    lim.key_bytes = 255; /* Cosmos DB's RowKey, say */
    memset(key, 'k', 128);
    key[128] = '\0';
    is_int(entity_check_limits(&lim, w, "p", key, &err), -EINVAL, "limits: the struct's own");
    lim = entity_limits_storage;
    lim.string_bytes = 4;
    is_int(entity_check_limits(&lim, w, "p", "r", &err), -EFBIG, "limits: a String over its");
    lim = entity_limits_storage;
    lim.properties = 5;
    is_int(entity_check_limits(&lim, w, "p", "r", &err), -EINVAL, "limits: 6 properties over 5");
    json_decref(w);
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
    test_example();
    test_types();
    test_doubles();
    test_order_and_escapes();
    test_render_errors();
    test_parse_errors();
    test_parse_ok();
    test_roundtrip();
    test_datetime();
    test_datetime_canonical();
    test_datetime_refused();
    test_datetime_errors_and_roundtrip();
    test_datetime_random();
    test_type_names();
    test_wire_digest();
    test_limits();
    return done_testing();
}
