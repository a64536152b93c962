/* test_render.c - src/entity/render.c: wire JSON -> file text, its digest, one line (TAP). */
/* The reference example, each type, byte order, escapes and what rendering
 * refuses; its fast paths against what they stand in for (strings and names
 * against jansson's own output, the listing's one-pass digest against
 * entity_wire_digest); entity_wire_digest itself; a page rendered ahead by
 * store_render_page (src/store/) as rendering on the spot would; one entity
 * on one line (entity_render_line). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "cache/cache.h"
#include "store/store.h"
#include "entity_util.h"
#include "tap.h"

/* A reproducible 64-bit generator (xorshift64*). */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* The file text of {"PartitionKey":"p","RowKey":"r", NAME: VALUE}, or NULL. */
static char *render_one(const char *name, size_t name_len, const char *value, size_t len)
{
    json_t *w = json_pack("{s:s, s:s}", "PartitionKey", "p", "RowKey", "r");
    char *key = strndup(name, name_len), *out = NULL;
    size_t out_len;

    if (!w || !key || json_object_set_new(w, key, json_stringn(value, len)) < 0 ||
        entity_render(w, &out, &out_len, NULL) < 0)
        out = NULL;
    free(key);
    json_decref(w);
    return out;
}

/* What the rendering of NAME: VALUE must hold: the line jansson writes. */
static char *expected_line(const char *name, size_t name_len, const char *value, size_t len)
{
    json_t *k = json_stringn(name, name_len), *v = json_stringn(value, len);
    char *ks = k ? json_dumps(k, JSON_ENCODE_ANY) : NULL;
    char *vs = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
    char *line = NULL;

    if (ks && vs && asprintf(&line, "  %s: %s\n}\n", ks, vs) < 0)
        line = NULL;
    free(ks);
    free(vs);
    json_decref(k);
    json_decref(v);
    return line;
}

/* A random string of LEN bytes into BUF: printable ASCII mostly, with
 * quotes, backslashes, control bytes, DEL and UTF-8 sequences mixed in. */
static size_t random_text(uint64_t *s, char *buf, size_t len, int control)
{
    static const char *const pieces[] = {
        "\"", "\\", "/",    "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
        "\n", "\t", "\x01", "\x1f"
    };
    size_t o = 0;

    while (o < len) {
        uint64_t r = next_rand(s);

        if (r % 4 == 0) {
            const char *p = pieces[(r >> 8) % (control ? 11 : 7)];

            if (o + strlen(p) > len)
                break;
            memcpy(buf + o, p, strlen(p));
            o += strlen(p);
        } else {
            buf[o++] = (char)(0x20 + (r >> 16) % 95);
        }
    }
    return o;
}

static void test_strings_as_jansson(void)
{
    uint64_t s = 42;
    char name[64], value[128];
    int bad = 0, n;

    for (n = 0; n < 20000 && bad < 5; n++) {
        size_t nl = 1 + random_text(&s, name + 1, next_rand(&s) % 40, 0);
        size_t vl = random_text(&s, value, next_rand(&s) % 100, 1);
        char *got, *want, *tail;

        name[0] = 'z'; /* sorts after PartitionKey/RowKey; never a system name */
        if (memchr(name, '@', nl))
            continue;
        got = render_one(name, nl, value, vl);
        want = expected_line(name, nl, value, vl);
        tail = got && want && strlen(got) >= strlen(want) ? got + strlen(got) - strlen(want) : NULL;
        if (!tail || strcmp(tail, want) != 0) {
            printf("# rendered %s\n# want tail %s\n", got ? got : "(failed)", want ? want : "?");
            bad++;
        }
        free(got);
        free(want);
    }
    is_int(bad, 0, "%d random names and strings rendered as jansson writes them", n);
}

/* Digest of the wire text W both ways; 1 when they agree. */
static int digests_agree(const char *w)
{
    unsigned char a[ENTITY_DIGEST_LEN], b[ENTITY_DIGEST_LEN];
    json_t *e = json_loads(w, JSON_ALLOW_NUL, NULL);
    char *text = NULL;
    size_t len;
    int has = 0, ok;

    ok = e && entity_render_digest(e, &text, &len, a, &has, NULL) == 0 && has &&
        entity_wire_digest(e, b) == 0 && memcmp(a, b, sizeof(a)) == 0;
    free(text);
    json_decref(e);
    return ok;
}

static void test_render_digest(void)
{
    char *text = NULL;
    size_t len;
    json_t *e = json_loads("{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"a\":1}", 0, NULL);
    char *plain = NULL;
    size_t plain_len;
    unsigned char d[ENTITY_DIGEST_LEN];
    int has = -1;

    ok(digests_agree(
           "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"Timestamp\":\"2026-01-01T00:00:00Z\","
           "\"s\":\"x\\u0000y\",\"n\":5,\"big\":\"12\",\"big@odata.type\":\"Edm.Int64\","
           "\"d\":1.5,\"t\":\"2020-01-02T03:04:05+05:30\",\"t@odata.type\":\"Edm.DateTime\","
           "\"b\":true,\"z\":null}"),
       "the listing's digest is entity_wire_digest's (every type)");
    ok(digests_agree("{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}"),
       "the listing's digest is entity_wire_digest's (no property)");
    is_int(e ? entity_render_digest(e, &text, &len, d, &has, NULL) : -1, 0,
           "render with a digest succeeds");
    is_int(has, 1, "and says it made the digest");
    is_int(e ? entity_render(e, &plain, &plain_len, NULL) : -1, 0, "render without one succeeds");
    ok(text && plain && len == plain_len && memcmp(text, plain, len) == 0,
       "the text is the same either way");
    free(text);
    free(plain);
    json_decref(e);
}

/* A page rendered ahead by a split listing's workers (store_render_page)
 * lists and caches what rendering on the spot does, without the page's
 * JSON (the worker frees it); an entity that cannot be rendered is left
 * out, and why is kept for the reader's log line. */
static void test_rendered_ahead(void)
{
    static const char page[] =
        "[{\"PartitionKey\":\"p\",\"RowKey\":\"r1\",\"odata.etag\":\"W/1\",\"a\":1.5},"
        " {\"PartitionKey\":\"p\",\"RowKey\":\"r2\",\"n\":\"x\",\"n@odata.type\":\"Edm.Int64\"},"
        " {\"PartitionKey\":\"p\",\"RowKey\":\"r3\",\"s\":\"\\u00e9\\n\"}]";
    struct store s = { .log = { .level = LOG_LVL_QUIET },
                       .cache_timeout = 30,
                       .negative_timeout = 1 };
    json_t *value = json_loads(page, 0, NULL);
    struct store_page_render *pr = value ? store_render_page(value) : NULL;
    struct listing *l = listing_new();
    unsigned char want_digest[ENTITY_DIGEST_LEN];
    struct cache_file f = { 0 };
    char *want = NULL;
    size_t want_len = 0;
    int rcs[3] = { -1, -1, -1 };

    s.cache = cache_new(1u << 20, 30);
    ok(pr && pr->n == 3 && pr->e[0].text && !pr->e[1].text && pr->e[2].text,
       "rendered ahead: the good entities, not the one whose Int64 is \"x\"");
    if (!pr || !l || !s.cache) {
        store_render_page_free(pr);
        json_decref(value);
        listing_unref(l);
        cache_free(s.cache);
        return;
    }
    entity_render(json_array_get(value, 0), &want, &want_len, NULL);
    entity_wire_digest(json_array_get(value, 0), want_digest);
    json_decref(value); /* what the worker does: the reader lists without it */
    ok(want && pr->e[0].len == want_len && memcmp(pr->e[0].text, want, want_len) == 0 &&
           pr->e[0].has_digest && memcmp(pr->e[0].digest, want_digest, ENTITY_DIGEST_LEN) == 0,
       "rendered ahead: the text and digest of rendering on the spot");
    ok(pr->e[0].pk && strcmp(pr->e[0].pk, "p") == 0 && strcmp(pr->e[0].rk, "r1") == 0 &&
           pr->e[0].etag && strcmp(pr->e[0].etag, "W/1") == 0 && !pr->e[0].ts && pr->e[2].rk &&
           strcmp(pr->e[2].rk, "r3") == 0 && !pr->e[2].etag,
       "rendered ahead: each entity's keys and etag kept, absent ones NULL");
    ok(pr->e[1].rc < 0 && pr->e[1].why && strstr(pr->e[1].why, "Int64"),
       "rendered ahead: why the bad one cannot be shown is kept (%s)",
       pr->e[1].why ? pr->e[1].why : "none");
    for (size_t i = 0; i < 3; i++)
        rcs[i] = store_list_entity(&s, "/t/p", NULL, l, NULL, &pr->e[i]);
    ok(rcs[0] == 0 && rcs[1] == 1 && rcs[2] == 0,
       "listed: the good entities, the bad one left out (got %d %d %d)", rcs[0], rcs[1], rcs[2]);
    is_int((int)listing_count(l), 2, "the listing holds the two good entities");
    ok(!pr->e[0].text && !pr->e[2].text, "their texts were taken, not copied");
    ok(cache_get_file(s.cache, "/t/p/r1.json", &f) == 0 && want && f.len == want_len &&
           memcmp(f.data, want, want_len) == 0 && f.has_digest &&
           memcmp(f.digest, want_digest, ENTITY_DIGEST_LEN) == 0 && f.etag &&
           strcmp(f.etag, "W/1") == 0,
       "the cached file is the text, digest and etag rendered ahead");
    cache_file_clear(&f);
    free(want);
    store_render_page_free(pr);
    listing_unref(l);
    cache_free(s.cache);
}

/* A wire member named "@odata.type" alone annotates the property "": it
 * is not rendered as a property of its own beside that annotation, which
 * made the text hold one member twice (found by the entity_render fuzz
 * target; its input is kept in tests/fuzz/regressions/entity_render/). */
static void test_bare_annotation(void)
{
    json_t *e = json_loads("{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"\":-5,"
                           "\"@odata.type\":\"Edm.Int64\"}",
                           0, NULL);
    char *text = NULL;
    size_t len = 0;
    json_t *back;

    is_int(e ? entity_render(e, &text, &len, NULL) : -1, 0,
           "an entity with \"@odata.type\" renders");
    back = text ? json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL) : NULL;
    ok(back != NULL, "its text is JSON without a member twice");
    ok(back && json_object_size(back) == 4 && json_is_string(json_object_get(back, "")) &&
           strcmp(json_string_value(json_object_get(back, "")), "-5") == 0 &&
           strcmp(json_string_value(json_object_get(back, "@odata.type")), "Edm.Int64") == 0,
       "the property \"\" as Int64 with its one annotation");
    json_decref(back);
    free(text);
    json_decref(e);
}

/* The file text TEXT (one member a line) laid out as an NDJSON line into
 * OUT: "{\n  " -> "{", ",\n  " -> ",", the ": " after each name -> ":",
 * "\n}\n" -> "}\n". Done on the text, by its lines, so that it checks the
 * line against the file without sharing the renderer's code. 0, or -1 when
 * TEXT is not laid out so. */
static int file_to_line(const char *text, struct buf *out)
{
    const char *p = text;

    if (strncmp(p, "{\n", 2) != 0)
        return -1;
    buf_adds(out, "{");
    for (p += 2; strncmp(p, "  \"", 3) == 0;) {
        const char *q = p + 3, *eol;

        while (*q && *q != '"') /* the name's end: past each escape */
            q += *q == '\\' ? 2 : 1;
        if (strncmp(q, "\": ", 3) != 0 || !(eol = strchr(q, '\n')))
            return -1;
        buf_add(out, p + 2, (size_t)(q + 1 - (p + 2)));
        buf_adds(out, ":");
        buf_add(out, q + 3, (size_t)(eol - (q + 3)));
        p = eol + 1;
    }
    if (strcmp(p, "}\n") != 0)
        return -1;
    buf_adds(out, "}\n");
    return out->err;
}

/* entity_render_line: the file's text on one line, byte for byte; appended
 * after what the buffer holds; an entity that cannot be shown, or one that
 * does not fit, leaves the buffer as it was. */
static void test_render_line(void)
{
    static const char *const wires[] = {
        "{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}",
        "{\"PartitionKey\":\"\",\"RowKey\":\"\",\"Timestamp\":\"2026-01-02T03:04:05.1234567Z\","
        "\"odata.etag\":\"W/1\",\"s\":\"a\\n\\\"b\\\" \\\\ \\u00e9\\u65e5: x, y\","
        "\"i\":-5,\"b\":true,\"d\":2.0,\"d@odata.type\":\"Edm.Double\",\"n\":\"NaN\","
        "\"n@odata.type\":\"Edm.Double\",\"l\":\"9007199254740993\",\"l@odata.type\":"
        "\"Edm.Int64\",\"t\":\"2021-03-04T05:06:07Z\",\"t@odata.type\":\"Edm.DateTime\","
        "\"g\":\"0f8fad5b-d9cb-469f-a165-70867728950e\",\"g@odata.type\":\"Edm.Guid\","
        "\"x\":\"AAH+/2hl\",\"x@odata.type\":\"Edm.Binary\",\"a\\\"b\":1,\"z\":null}",
        "{\"PartitionKey\":\"p: q\",\"RowKey\":\"{\\\"r\\\": 1}\",\"e\":1e300,"
        "\"e@odata.type\":\"Edm.Double\"}",
    };
    struct entity_error err;
    struct buf line = BUF_INIT(1 << 20), want = BUF_INIT(1 << 20), small = BUF_INIT(40);
    json_t *bad = json_loads("{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"l\":\"x\","
                             "\"l@odata.type\":\"Edm.Int64\"}",
                             0, NULL),
           *e;
    size_t before;

    for (size_t i = 0; i < sizeof(wires) / sizeof(wires[0]); i++) {
        char *text = NULL;
        size_t len = 0;

        e = json_loads(wires[i], JSON_DECODE_ANY, NULL);
        buf_reset(&line);
        buf_reset(&want);
        buf_adds(&line, "held\n");
        buf_adds(&want, "held\n");
        ok(e && entity_render(e, &text, &len, NULL) == 0 && file_to_line(text, &want) == 0,
           "entity %zu renders as a file of one member a line", i);
        is_int(e ? entity_render_line(e, &line, &err) : -1, 0, "entity %zu renders as a line", i);
        ok(line.len == want.len && memcmp(line.ptr, want.ptr, want.len) == 0,
           "entity %zu: the line is its file's text on one line, after what was held", i);
        ok(line.ptr && !memchr(line.ptr + 5, '\n', line.len - 6),
           "entity %zu: one newline, at its end", i);
        free(text);
        json_decref(e);
    }
    before = line.len;
    is_int(bad ? entity_render_line(bad, &line, &err) : 0, -EINVAL,
           "an entity that cannot be shown is refused");
    ok(line.len == before && line.err == 0 && strstr(err.text, "Int64"),
       "the line buffer is as it was, its failure cleared (%s)", err.text);
    e = json_loads(wires[1], 0, NULL);
    is_int(e ? entity_render_line(e, &small, &err) : 0, -EFBIG,
           "an entity over the buffer's cap: EFBIG");
    ok(small.len == 0 && small.err == 0, "the small buffer is as it was");
    json_decref(e);
    e = json_loads(wires[0], 0, NULL);
    is_int(e ? entity_render_line(e, &small, &err) : -1, 0, "a smaller one still fits");
    is_str(small.ptr, "{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}\n", "the smallest line");
    json_decref(e);
    json_decref(bad);
    buf_free(&line);
    buf_free(&want);
    buf_free(&small);
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

int main(void)
{
    test_example();
    test_types();
    test_order_and_escapes();
    test_render_errors();
    test_wire_digest();
    test_strings_as_jansson();
    test_render_digest();
    test_rendered_ahead();
    test_bare_annotation();
    test_render_line();
    return done_testing();
}
