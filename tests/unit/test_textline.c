/* test_textline.c - entity_render_line_text and entity_render_text
 * (entity/textline.c) against json_loadb then entity_render_line or
 * entity_render_digest, which they stand in for: for every text, the same
 * line after what the buffer held, or the same error (code, property,
 * reason) and the buffer as it was; the same file text, digest and system
 * properties (entity_wire_sys), or the same error. Chosen texts (every type,
 * every way a value is refused, escapes, UTF-8, nesting, duplicates,
 * numbers at their edges), 20,000 random ones and the same damaged; and
 * that a service's entity is rendered without jansson making anything. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "entity/entity.h"
#include "util/util.h"
#include "tap.h"

/* jansson's allocations, counted (json_set_alloc_funcs). */
static size_t jansson_allocs;

static void *count_malloc(size_t n)
{
    jansson_allocs++;
    return malloc(n);
}

/* One rendering: its answer, its line after "held\n", its error. */
struct outcome {
    int rc;
    struct buf line;
    struct entity_error err;
};

static void by_text(const char *text, size_t len, struct outcome *o)
{
    buf_init(&o->line, 1 << 20);
    buf_adds(&o->line, "held\n");
    memset(&o->err, 0, sizeof(o->err));
    o->rc = entity_render_line_text(text, len, &o->line, &o->err);
}

static void by_tree(const char *text, size_t len, struct outcome *o)
{
    json_error_t jerr;
    json_t *wire = json_loadb(text, len, 0, &jerr);

    buf_init(&o->line, 1 << 20);
    buf_adds(&o->line, "held\n");
    memset(&o->err, 0, sizeof(o->err));
    if (wire) {
        o->rc = entity_render_line(wire, &o->line, &o->err);
    } else {
        o->rc = -EINVAL;
        snprintf(o->err.text, sizeof(o->err.text), "the entity is not JSON: %s", jerr.text);
    }
    json_decref(wire);
}

/* TEXT (LEN bytes) as printable ASCII for a TAP line, at most 70 bytes
 * (in a buffer the next call reuses): any other byte is '?'. TAP output
 * must be text, and a UTF-8 sequence cut short, or a control character,
 * is not (test_package.py reads the build's log as UTF-8). */
static const char *printable(const char *text, size_t len)
{
    static char out[71];
    size_t n = len < sizeof(out) - 1 ? len : sizeof(out) - 1;

    for (size_t i = 0; i < n; i++)
        out[i] = text[i] >= 0x20 && text[i] < 0x7f ? text[i] : '?';
    out[n] = '\0';
    return out;
}

/* A file rendering (entity_render_text, or its tree's way): its answer,
 * text, digest, system properties and error. */
struct file_outcome {
    int rc, has_digest;
    char *text;
    size_t len;
    unsigned char digest[ENTITY_DIGEST_LEN];
    const char *keys[4];
    struct entity_keys own;
    json_t *wire;
    struct entity_error err;
};

static void file_by_text(const char *text, size_t len, struct file_outcome *o)
{
    memset(o, 0, sizeof(*o));
    o->rc = entity_render_text(text, len, &o->text, &o->len, o->digest, &o->has_digest, &o->own,
                               &o->err);
    o->keys[0] = o->own.pk;
    o->keys[1] = o->own.rk;
    o->keys[2] = o->own.ts;
    o->keys[3] = o->own.etag;
}

static void file_by_tree(const char *text, size_t len, struct file_outcome *o)
{
    json_error_t jerr;

    memset(o, 0, sizeof(*o));
    if (!(o->wire = json_loadb(text, len, 0, &jerr))) {
        o->rc = -EINVAL;
        snprintf(o->err.text, sizeof(o->err.text), "the entity is not JSON: %s", jerr.text);
        return;
    }
    for (int k = 0; k < 4; k++)
        o->keys[k] = entity_wire_sys(o->wire, (enum entity_sys)k);
    o->rc = entity_render_digest(o->wire, &o->text, &o->len, o->digest, &o->has_digest, &o->err);
}

static void file_clear(struct file_outcome *o)
{
    free(o->text);
    free(o->own.block);
    json_decref(o->wire);
}

static int same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Do both file renderings of TEXT agree: answer, text, digest, keys and
 * error? */
static int agree_file(const char *text, size_t len, int show)
{
    struct file_outcome a, b;
    int same;

    file_by_text(text, len, &a);
    file_by_tree(text, len, &b);
    same = a.rc == b.rc && a.len == b.len && (!a.len || memcmp(a.text, b.text, a.len) == 0) &&
        a.has_digest == b.has_digest && memcmp(a.digest, b.digest, sizeof(a.digest)) == 0 &&
        strcmp(a.err.text, b.err.text) == 0 && strcmp(a.err.property, b.err.property) == 0;
    for (int k = 0; k < 4; k++)
        same = same && same_str(a.keys[k], b.keys[k]);
    if (!same && show) {
        printf("# file parted on %s\n", printable(text, len));
        printf("#   text: %d '%s'\n", a.rc, printable(a.err.text, strlen(a.err.text)));
        printf("#   tree: %d '%s'\n", b.rc, printable(b.err.text, strlen(b.err.text)));
    }
    file_clear(&a);
    file_clear(&b);
    return same;
}

/* Do both readings of TEXT (LEN bytes) agree, as a line and as a file?
 * Says how when they do not and SHOW. */
static int agree(const char *text, size_t len, int show)
{
    struct outcome a, b;
    int same;

    by_text(text, len, &a);
    by_tree(text, len, &b);
    same = a.rc == b.rc && a.line.len == b.line.len &&
        memcmp(a.line.ptr, b.line.ptr, a.line.len) == 0 && strcmp(a.err.text, b.err.text) == 0 &&
        strcmp(a.err.property, b.err.property) == 0;
    if (!same && show) { /* TAP output must be text: each piece made printable */
        printf("# parted on %s\n", printable(text, len));
        printf("#   text: %d '%s'\n", a.rc, printable(a.err.text, strlen(a.err.text)));
        printf("#   tree: %d '%s'\n", b.rc, printable(b.err.text, strlen(b.err.text)));
    }
    buf_free(&a.line);
    buf_free(&b.line);
    return same && agree_file(text, len, show);
}

/* A service's entity: every type, the ETag's escapes, a Timestamp. */
#define SERVICE_ENTITY                                                                             \
    "{\"odata.etag\":\"W/\\\"datetime'2026-11-25T17%3A00%3A00.1234567Z'\\\"\","                    \
    "\"PartitionKey\":\"p1\",\"RowKey\":\"r 001\",\"Timestamp\":\"2026-11-25T17:00:00.1234567Z\"," \
    "\"Name\":\"Ada\",\"Count\":42,\"Big@odata.type\":\"Edm.Int64\",\"Big\":\"9007199254740993\"," \
    "\"Ratio\":0.1,\"Whole@odata.type\":\"Edm.Double\",\"Whole\":2.0,\"On\":true,"                 \
    "\"When@odata.type\":\"Edm.DateTime\",\"When\":\"2026-01-02T03:04:05.5Z\","                    \
    "\"Id@odata.type\":\"Edm.Guid\",\"Id\":\"0f8fad5b-d9cb-469f-a165-70867728950e\","              \
    "\"Blob@odata.type\":\"Edm.Binary\",\"Blob\":\"AQID\",\"Gone\":null}"

static const char *const chosen[] = {
    SERVICE_ENTITY,
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\"}",
    " { \"PartitionKey\" : \"p\" , \"RowKey\" : \"r\" , \"A\" : 1 } \n",
    "{}",
    "[]",
    "1",
    "",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\"} x",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\"",
    "{\"PartitionKey\":\"p\"}",
    "{\"PartitionKey\":1,\"RowKey\":\"r\"}",
    "{\"PartitionKey\":null,\"RowKey\":\"r\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"PartitionKey\":\"q\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"PartitionKey\":7}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"A\":1,\"A\":\"two\"}",
    "{\"PartitionKey\":\"p\\u00e9\",\"RowKey\":\"r\\\"q\\\\/\\/\\b\\f\\n\\r\\t\"}",
    "{\"PartitionKey\":\"p\xc3\xa9\",\"RowKey\":\"\xe2\x82\xac\",\"S\":\"\xf0\x9f\x98\x80\"}",
    "{\"PartitionKey\":\"p\xc3\",\"RowKey\":\"r\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"S\":\"\xff\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"S\":\"\\ud83d\\ude00\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"S\":\"\\ud83d\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"S\":\"\\u0000\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"S\":\"\\x\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"S\":\"a\tb\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"S\":\"\x7f\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"N\\u0041me\":\"x\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"N\xc3\xa9\":\"x\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"Timestamp\":null}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"Timestamp\":5}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"Timestamp\":{}}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"O\":{\"a\":1}}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"O\":[1]}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"I\":2147483647,\"J\":2147483648}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"I\":-2147483648,\"J\":-2147483649}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"I\":999999999999999999,\"J\":-999999999999999999}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"I\":9223372036854775807}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"I\":9223372036854775808}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"I\":-0,\"D\":-0.0,\"E\":0e0,\"F\":1E+2}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"D\":1e308,\"E\":1e-400,\"F\":4.9e-324}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"D\":1e309}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"D\":-1e309}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"D\":01}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"D\":1.}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"D\":.5}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"D\":+1}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"D\":0.1000000000000000055511151231257827}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"D\":123456789012345678901234567890.5}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"D@odata.type\":\"Edm.Double\",\"D\":5}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"D@odata.type\":\"Edm.Double\",\"D\":\"NaN\","
    "\"E@odata.type\":\"Edm.Double\",\"E\":\"Infinity\",\"F@odata.type\":\"Edm.Double\","
    "\"F\":\"-Infinity\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"D@odata.type\":\"Edm.Double\",\"D\":\"nan\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"D@odata.type\":\"Edm.Double\",\"D\":true}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"L@odata.type\":\"Edm.Int64\",\"L\":\"007\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"L@odata.type\":\"Edm.Int64\",\"L\":\"-0\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"L@odata.type\":\"Edm.Int64\","
    "\"L\":\"9223372036854775807\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"L@odata.type\":\"Edm.Int64\","
    "\"L\":\"9223372036854775808\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"L@odata.type\":\"Edm.Int64\",\"L\":\"\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"L@odata.type\":\"Edm.Int64\",\"L\":\"1a\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"L@odata.type\":\"Edm.Int64\",\"L\":12}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"L@odata.type\":\"Edm.Int64\",\"L\":1.5}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"L@odata.type\":\"Edm.Int32\",\"L\":\"12\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"L@odata.type\":\"Edm.Int32\",\"L\":3000000000}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"B@odata.type\":\"Edm.Boolean\",\"B\":1}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"S@odata.type\":\"Edm.String\",\"S\":5}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"T@odata.type\":\"Edm.DateTime\","
    "\"T\":\"2026-01-02T03:04:05+01:30\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"T@odata.type\":\"Edm.DateTime\",\"T\":"
    "\"yesterday\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"T@odata.type\":\"Edm.DateTime\","
    "\"T\":\"2026-02-30T00:00:00Z\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"T@odata.type\":\"Edm.DateTime\",\"T\":17}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"G@odata.type\":\"Edm.Guid\",\"G\":\"not-a-guid\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"G@odata.type\":\"Edm.Guid\","
    "\"G\":\"0F8FAD5B-D9CB-469F-A165-70867728950E\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"X@odata.type\":\"Edm.Binary\",\"X\":\"AQI\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"X@odata.type\":\"Edm.Binary\",\"X\":\"\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"X@odata.type\":\"Edm.Binary\",\"X\":\"A\\/==\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"X@odata.type\":\"Edm.Nope\",\"X\":\"a\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"X@odata.type\":7,\"X\":\"a\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"X@odata.type\":null,\"X\":\"a\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"X@odata.type\":\"Edm.Int64\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"X@odata.type\":\"Edm.Nope\",\"X\":null}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"@odata.type\":\"Edm.Int64\",\"\":\"5\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"PartitionKey@odata.type\":\"Edm.Int64\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"odata.type\":\"x\",\"odata.id\":5}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"z\":1,\"Z\":2,\"_\":3,\"a\":4,\"A\":5,\"a1\":6}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"A\":\"\\\"quoted\\\" and \\\\ slash\"}",
    "{\"PartitionKey\":\"\",\"RowKey\":\"\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"X\":\"5\",\"X1\":1,\"X@a\":2,\"X_\":3,"
    "\"X@odata.type\":\"Edm.Int64\",\"X1@odata.type\":\"Edm.Double\"}",
    "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"X@odata.typf\":1,\"X@odata.type\":\"Edm.Int64\","
    "\"X\":\"7\",\"X@odata.typd\":2}",
};

/* Names longer than a property's may be, and entities of many members. */
static void test_sizes(void)
{
    char text[40000], name[300];
    size_t at;

    memset(name, 'n', 256);
    name[256] = '\0';
    snprintf(text, sizeof(text), "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"%s\":1}", name);
    ok(agree(text, strlen(text), 1), "a name of 256 characters");
    name[255] = '\0';
    snprintf(text, sizeof(text),
             "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"%s\":1,\"%s@odata.type\":\"Edm.Int64\"}",
             name, name);
    ok(agree(text, strlen(text), 1), "a name of 255 characters, annotated");
    for (int count = 60; count <= 600; count += 30) {
        at = (size_t)snprintf(text, sizeof(text), "{\"PartitionKey\":\"p\",\"RowKey\":\"r\"");
        for (int i = 0; i < count; i++)
            at +=
                (size_t)snprintf(text + at, sizeof(text) - at, ",\"P%03d\":\"v%d\"", count - i, i);
        at += (size_t)snprintf(text + at, sizeof(text) - at, "}");
        ok(agree(text, at, 1), "%d properties (members beyond the stack's room)", count);
    }
}

/* The service's entity is rendered with nothing made by jansson; one with
 * a \u escape in a value, with what that string needs. */
static void test_no_tree(void)
{
    static const char esc[] = "{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"S\":\"caf\\u00e9\"}";
    struct outcome o;
    size_t tree;

    jansson_allocs = 0;
    by_text(SERVICE_ENTITY, strlen(SERVICE_ENTITY), &o);
    is_int(o.rc, 0, "the service's entity renders");
    is_int((int)jansson_allocs, 0, "without anything made by jansson");
    buf_free(&o.line);
    {
        struct file_outcome f;

        jansson_allocs = 0;
        file_by_text(SERVICE_ENTITY, strlen(SERVICE_ENTITY), &f);
        ok(f.rc == 0 && f.has_digest && f.own.etag && strncmp(f.own.etag, "W/\"", 3) == 0,
           "its file renders, with its digest and its ETag unescaped");
        is_int((int)jansson_allocs, 0, "its file without anything made by jansson");
        file_clear(&f);
    }
    jansson_allocs = 0;
    by_tree(esc, strlen(esc), &o);
    tree = jansson_allocs;
    buf_free(&o.line);
    jansson_allocs = 0;
    by_text(esc, strlen(esc), &o);
    ok(o.rc == 0 && jansson_allocs > 0 && jansson_allocs < tree,
       "a \\u escape is jansson's to decode: %zu allocations, a tree's %zu", jansson_allocs, tree);
    buf_free(&o.line);
}

/* A buffer that has failed, and one too small for the line. */
static void test_buffer(void)
{
    struct buf small;
    struct entity_error err;

    buf_init(&small, 8);
    is_int(entity_render_line_text(SERVICE_ENTITY, strlen(SERVICE_ENTITY), &small, &err), -EFBIG,
           "a line over the buffer's cap: EFBIG");
    ok(small.len == 0 && small.err == 0, "the buffer is as it was, its failure cleared");
    buf_free(&small);
}

static const char *const pieces[] = {
    "\"PartitionKey\":\"p\"",
    "\"RowKey\":\"r\"",
    "\"RowKey\":\"r\\\"2\"",
    "\"Timestamp\":\"t\"",
    "\"Timestamp\":null",
    "\"odata.etag\":\"W/\\\"x\\\"\"",
    "\"A\":1",
    "\"A\":-7",
    "\"B\":1.5",
    "\"B\":-0.0",
    "\"C\":\"text\"",
    "\"C\":\"caf\xc3\xa9\"",
    "\"C\":\"\\u00e9\\n\"",
    "\"D\":true",
    "\"D\":false",
    "\"E\":null",
    "\"F\":4294967296",
    "\"A@odata.type\":\"Edm.Int64\"",
    "\"B@odata.type\":\"Edm.Double\"",
    "\"C@odata.type\":\"Edm.Guid\"",
    "\"C@odata.type\":\"Edm.Binary\"",
    "\"C@odata.type\":\"Edm.DateTime\"",
    "\"G\":\"2026-01-02T03:04:05Z\"",
    "\"G@odata.type\":\"Edm.DateTime\"",
    "\"H\":\"AQID\"",
    "\"H@odata.type\":\"Edm.Binary\"",
    "\"I\":\"-12\"",
    "\"I@odata.type\":\"Edm.Int64\"",
    "\"J\":{}",
    "\"K\":[]",
    " ",
    "\n",
};

/* 20,000 entities of random pieces, and each damaged: a byte taken out,
 * put in or changed. */
static void test_random(void)
{
    size_t npieces = sizeof(pieces) / sizeof(pieces[0]), bad = 0, dbad = 0;
    char text[4096];

    srand(7);
    for (int round = 0; round < 20000; round++) {
        size_t at = 0, n;
        int members = rand() % 12;

        text[at++] = '{';
        for (int i = 0; i < members; i++) {
            const char *p = pieces[(size_t)rand() % npieces];

            if (i > 0)
                text[at++] = ',';
            n = strlen(p);
            memcpy(text + at, p, n);
            at += n;
        }
        text[at++] = '}';
        if (!agree(text, at, bad < 3))
            bad++;
        n = (size_t)rand() % at;
        switch (rand() % 3) {
        case 0:
            memmove(text + n, text + n + 1, at - n - 1);
            at--;
            break;
        case 1:
            memmove(text + n + 1, text + n, at - n);
            text[n] = "{}[],:\"\\ 0e.-\x80"[rand() % 15];
            at++;
            break;
        default:
            text[n] = (char)(rand() % 256);
        }
        if (!agree(text, at, dbad < 3))
            dbad++;
    }
    is_int((int)bad, 0, "20,000 random entities: the text's line and file are the tree's");
    is_int((int)dbad, 0, "the same damaged: the same line or the same error");
}

int main(void)
{
    json_set_alloc_funcs(count_malloc, free);
    for (size_t i = 0; i < sizeof(chosen) / sizeof(chosen[0]); i++)
        ok(agree(chosen[i], strlen(chosen[i]), 1), "chosen %zu: %s", i,
           printable(chosen[i], strlen(chosen[i])));
    test_sizes();
    test_no_tree();
    test_buffer();
    test_random();
    return done_testing();
}
