/* test_path.c - unit tests for path parsing, table-name rules and inode numbers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "names/names.h"
#include "tap.h"

static void test_kinds(void)
{
    struct fspath fp;

    is_int(fspath_parse("/", &fp), 0, "root parses");
    is_int(fp.kind, FSP_ROOT, "root kind");
    fspath_free(&fp);

    is_int(fspath_parse("/Customers", &fp), 0, "table parses");
    is_int(fp.kind, FSP_TABLE, "table kind");
    is_str(fp.table, "Customers", "table name");
    is_str(fp.parent, "/", "table parent");
    fspath_free(&fp);

    is_int(fspath_parse("/Customers/a%25b", &fp), 0, "partition parses");
    is_int(fp.kind, FSP_PARTITION, "partition kind");
    is_str(fp.pk, "a%b", "partition key decoded");
    is_str(fp.parent, "/Customers", "partition parent");
    fspath_free(&fp);

    is_int(fspath_parse("/Customers/%/%2E..json", &fp), 0, "entity parses");
    is_int(fp.kind, FSP_ENTITY, "entity kind");
    is_str(fp.pk, "", "empty partition key");
    is_str(fp.rk, "..", "row key '..'");
    is_str(fp.file_name, "%2E..json", "file name kept");
    is_str(fp.parent, "/Customers/%", "entity parent");
    fspath_free(&fp);

    is_int(fspath_parse("/Customers/p/.r.json.swp", &fp), 0, "scratch parses");
    is_int(fp.kind, FSP_SCRATCH, "non-.json name is scratch");
    fspath_free(&fp);

    is_int(fspath_parse("/Customers/p/.json", &fp), -EINVAL,
           "bare .json is refused: neither scratch nor the empty key");
    ok(fspath_invalid_reason("/Customers/p/.json") != NULL &&
           strstr(fspath_invalid_reason("/Customers/p/.json"), "%.json") != NULL,
       "the reason names %%.json");
    is_int(fspath_parse("/Customers/p/%.json", &fp), 0, "%%.json parses");
    is_str(fp.rk, "", "%%.json is the empty row key");
    fspath_free(&fp);
    is_int(fspath_parse("/Customers/p/x.jso", &fp), 0, "x.jso parses");
    is_int(fp.kind, FSP_SCRATCH, "x.jso is scratch");
    fspath_free(&fp);
}

static void test_rejects(void)
{
    struct fspath fp;

    is_int(fspath_parse("/ab", &fp), -ENOENT, "table name too short");
    is_int(fspath_parse("/1abc", &fp), -ENOENT, "table name starts with digit");
    is_int(fspath_parse("/Tables", &fp), -ENOENT, "reserved table name");
    is_int(fspath_parse("/a-b-c", &fp), -ENOENT, "table name with dash");
    is_int(fspath_parse("/t12/p/r.json/x", &fp), -ENOENT, "too deep");
    is_int(fspath_parse("/t12/%2e", &fp), -ENOENT, "non-canonical partition name");
    is_int(fspath_parse("/t12/.hidden", &fp), -ENOENT, "literal leading dot");
    is_int(fspath_parse("/t12/p/%41.json", &fp), -ENOENT, "non-canonical file name");
}

/* PATH is refused with -EINVAL for the reason WHY. */
static void check_invalid(const char *path, const char *why, const char *label)
{
    struct fspath fp;

    is_int(fspath_parse(path, &fp), -EINVAL, "EINVAL: %s", label);
    is_str(fspath_invalid_reason(path), why, "reason: %s", label);
}

/* PATH parses as KIND, and fspath_invalid_reason has nothing to say. */
static void check_parses(const char *path, enum fsp_kind kind, const char *label)
{
    struct fspath fp;
    int rc = fspath_parse(path, &fp);

    is_int(rc, 0, "parses: %s", label);
    is_int(rc == 0 ? (long long)fp.kind : -1, kind, "kind: %s", label);
    ok(fspath_invalid_reason(path) == NULL, "no reason: %s", label);
    if (rc == 0)
        fspath_free(&fp);
}

static void test_invalid_keys(void)
{
    struct fspath fp;
    char path[300];

    /* characters the service forbids in keys, as they are or escaped */
    check_invalid("/tbl/a#b", KEYCODEC_WHY_CHAR, "number sign in a partition");
    check_invalid("/tbl/a?b", KEYCODEC_WHY_CHAR, "'?' in a partition");
    check_invalid("/tbl/a\\b", KEYCODEC_WHY_CHAR, "'\\' in a partition");
    check_invalid("/tbl/p/a#b.json", KEYCODEC_WHY_CHAR, "number sign in a file name");
    check_invalid("/tbl/p/what?.json", KEYCODEC_WHY_CHAR, "'?' in a file name");
    check_invalid("/tbl/p/a\\b.json", KEYCODEC_WHY_CHAR, "'\\' in a file name");
    check_invalid("/tbl/a%2Fb", KEYCODEC_WHY_CHAR, "%%2F in a partition");
    check_invalid("/tbl/p/a%2Fb.json", KEYCODEC_WHY_CHAR, "%%2F in a file name");
    check_invalid("/tbl/p/a%2fb.json", KEYCODEC_WHY_CHAR, "%%2f, lower case");
    check_invalid("/tbl/p/%5C.json", KEYCODEC_WHY_CHAR, "%%5C");
    check_invalid("/tbl/p/%23.json", KEYCODEC_WHY_CHAR, "%%23");
    check_invalid("/tbl/p/%3F.json", KEYCODEC_WHY_CHAR, "%%3F");
    check_invalid("/tbl/p/tab%09here.json", KEYCODEC_WHY_CHAR, "%%09");
    check_invalid("/tbl/p/a%0A.json", KEYCODEC_WHY_CHAR, "%%0A");
    check_invalid("/tbl/p/a%00.json", KEYCODEC_WHY_CHAR, "%%00");
    check_invalid("/tbl/p/%7F.json", KEYCODEC_WHY_CHAR, "%%7F");
    check_invalid("/tbl/p/a\tb.json", KEYCODEC_WHY_CHAR, "a raw tab");
    check_invalid("/tbl/p/a\nb.json", KEYCODEC_WHY_CHAR, "a raw newline");
    check_invalid("/tbl/p/\x7F.json", KEYCODEC_WHY_CHAR, "a raw DEL");
    check_invalid("/tbl/p/\xC2\x85.json", KEYCODEC_WHY_CHAR, "U+0085");
    check_invalid("/tbl/\xC2\x9F", KEYCODEC_WHY_CHAR, "U+009F");
    check_invalid("/tbl/p/%C2%80.json", KEYCODEC_WHY_CHAR, "U+0080 escaped");

    /* bytes that are not UTF-8 */
    check_invalid("/tbl/\xFF", KEYCODEC_WHY_UTF8, "0xFF in a partition");
    check_invalid("/tbl/p/\xFF.json", KEYCODEC_WHY_UTF8, "0xFF in a file name");
    check_invalid("/tbl/p/caf\xE9.json", KEYCODEC_WHY_UTF8, "Latin-1 e-acute");
    check_invalid("/tbl/p/caf%E9.json", KEYCODEC_WHY_UTF8, "escaped Latin-1 e-acute");
    check_invalid("/tbl/p/\xC0\xAF.json", KEYCODEC_WHY_UTF8, "overlong '/'");
    check_invalid("/tbl/p/\xED\xA0\x80.json", KEYCODEC_WHY_UTF8, "surrogate");
    check_invalid("/tbl/p/\xE6\x97.json", KEYCODEC_WHY_UTF8, "character cut short");

    /* a long-form name with a forbidden prefix */
    memset(path, 0, sizeof(path));
    strcpy(path, "/tbl/p/#");
    memset(path + strlen(path), 'a', 199);
    strcat(path, "%~0123456789abcdef0123456789abcdef.json");
    check_invalid(path, KEYCODEC_WHY_CHAR, "long form with a number sign in its prefix");

    /* the first fault from the top decides */
    is_int(fspath_parse("/ab/a#b", &fp), -ENOENT, "invalid table before invalid key");
    ok(fspath_invalid_reason("/ab/a#b") == NULL, "no reason for ENOENT");
    is_int(fspath_parse("/tbl/%2e/a#b.json", &fp), -ENOENT, "non-canonical partition first");
    check_invalid("/tbl/a#b/%2e.json", KEYCODEC_WHY_CHAR, "invalid partition first");
    is_int(fspath_parse("/tbl/p/r.json/a#b", &fp), -ENOENT, "too deep before invalid");
    is_int(fspath_parse("/tbl/%2e", &fp), -ENOENT, "non-canonical stays ENOENT");
    ok(fspath_invalid_reason("/tbl/%2e") == NULL, "non-canonical: no reason");

    /* scratch names never reach the service: only the length is checked */
    check_parses("/tbl/p/#r.json#", FSP_SCRATCH, "emacs auto-save name");
    check_parses("/tbl/p/a?b\\c", FSP_SCRATCH, "scratch with ? and \\");
    check_parses("/tbl/p/\xFF\xFE", FSP_SCRATCH, "scratch that is not UTF-8");
    check_invalid("/tbl/a#b/x.swp", KEYCODEC_WHY_CHAR, "scratch in an invalid partition");
}

static void test_boundary_names(void)
{
    struct fspath fp;

    check_parses("/tbl/p/caf\xC3\xA9.json", FSP_ENTITY, "non-ASCII");
    check_parses("/tbl/\xE6\x97\xA5\xE6\x9C\xAC", FSP_PARTITION, "CJK partition");
    check_parses("/tbl/p/\xF0\x9F\x98\x80.json", FSP_ENTITY, "emoji");
    check_parses("/tbl/p/\xC2\xA0.json", FSP_ENTITY, "U+00A0, just past C1");
    check_parses("/tbl/p/a b.json", FSP_ENTITY, "space");
    check_parses("/tbl/p/it's \"q\".json", FSP_ENTITY, "quotes");
    check_parses("/tbl/p/~*<>|:.json", FSP_ENTITY, "other punctuation");
    check_parses("/tbl/p/%252F.json", FSP_ENTITY, "the key '%%2F' (escaped '%%')");

    is_int(fspath_parse("/tbl/p/%25.json", &fp), 0, "%%25.json parses");
    is_str(fp.rk, "%", "%%25 is the key '%%'");
    fspath_free(&fp);
    is_int(fspath_parse("/tbl/%2E/%2E..json", &fp), 0, "%%2E names parse");
    is_str(fp.pk, ".", "%%2E is the key '.'");
    is_str(fp.rk, "..", "%%2E..json is the key '..'");
    fspath_free(&fp);
}

static void test_name_length(void)
{
    struct fspath fp;
    char path[1200], *key, *name;

    /* 255 bytes: the longest name; 250 bytes + ".json" is a short-form name */
    strcpy(path, "/tbl/p/");
    memset(path + 7, 'x', 250);
    strcpy(path + 257, ".json");
    is_int(fspath_parse(path, &fp), 0, "255-byte file name parses");
    ok(fp.rk && strlen(fp.rk) == 250, "its row key has 250 bytes");
    fspath_free(&fp);
    memset(path + 7, 'x', 255);
    path[262] = '\0';
    check_parses(path, FSP_SCRATCH, "255-byte scratch name");
    strcpy(path, "/tbl/");
    memset(path + 5, 'x', 255);
    path[260] = '\0';
    is_int(fspath_parse(path, &fp), -ENOENT, "255-byte partition name: no key has it");
    ok(fspath_invalid_reason(path) == NULL, "... and it is not invalid");

    /* 256 bytes: too long, in any position */
    strcpy(path, "/tbl/p/");
    memset(path + 7, 'x', 251);
    strcpy(path + 258, ".json");
    is_int(fspath_parse(path, &fp), -ENAMETOOLONG, "256-byte file name");
    is_str(fspath_invalid_reason(path), "a name is at most 255 bytes", "reason: too long");
    memset(path + 7, 'x', 256);
    path[263] = '\0';
    is_int(fspath_parse(path, &fp), -ENAMETOOLONG, "256-byte scratch name");
    strcpy(path, "/tbl/");
    memset(path + 5, 'x', 256);
    strcpy(path + 261, "/r.json");
    is_int(fspath_parse(path, &fp), -ENAMETOOLONG, "256-byte partition name");
    strcpy(path, "/a");
    memset(path + 2, 'x', 255);
    path[257] = '\0';
    is_int(fspath_parse(path, &fp), -ENAMETOOLONG, "256-byte table name");
    strcpy(path, "/tbl/p/r.json/x/");
    memset(path + 16, '#', 256);
    path[272] = '\0';
    is_int(fspath_parse(path, &fp), -ENAMETOOLONG, "too long comes before too deep");
    strcpy(path, "/tbl/p/");
    memset(path + 7, 0xFF, 300);
    path[307] = '\0';
    is_int(fspath_parse(path, &fp), -ENAMETOOLONG, "too long comes before not UTF-8");

    /* every name the codec makes for a 1 KiB key fits and parses */
    key = malloc(1025);
    if (!key)
        return;
    memset(key, 'k', 1024);
    key[1024] = '\0';
    name = keycodec_file_encode(key);
    snprintf(path, sizeof(path), "/tbl/p/%s", name ? name : "");
    is_int(fspath_parse(path, &fp), 0, "long-form name of a 1 KiB key parses");
    fspath_free(&fp);
    free(name);
    for (int i = 0; i < 1023; i += 3)
        memcpy(key + i, "\xE6\x97\xA5", 3);
    key[1023] = '\0';
    name = keycodec_encode(key);
    snprintf(path, sizeof(path), "/tbl/%s", name ? name : "");
    is_int(fspath_parse(path, &fp), 0, "long-form name of 341 CJK characters parses");
    fspath_free(&fp);
    free(name);
    free(key);
}

static void test_long_names(void)
{
    struct fspath fp;
    char name[300];

    /* a well-formed long-form name: prefix + "%~" + 32 hex digits */
    snprintf(name, sizeof(name), "/tbl/%s%%~0123456789abcdef0123456789abcdef.json",
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    is_int(fspath_parse(name, &fp), -ENOENT, "long-form file name at partition depth is a dir");
    snprintf(name, sizeof(name), "/tbl/p/%s%%~0123456789abcdef0123456789abcdef.json",
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    is_int(fspath_parse(name, &fp), 0, "long-form entity name parses");
    is_int(fp.kind, FSP_ENTITY, "long-form entity kind");
    ok(fp.rk == NULL, "long-form row key left for listing lookup");
    fspath_free(&fp);
}

static void test_table_names(void)
{
    ok(fspath_valid_table_name("abc"), "3 letters");
    ok(fspath_valid_table_name("a12"), "letter then digits");
    ok(!fspath_valid_table_name("tables"), "reserved, any case");
    ok(!fspath_valid_table_name("ab"), "too short");
    ok(fspath_valid_table_name("a23456789012345678901234567890123456789012345678901234567890123"),
       "63 characters");
    ok(!fspath_valid_table_name("a234567890123456789012345678901234567890123456789012345678901234"),
       "64 characters");
}

static void test_ino(void)
{
    is_int(fspath_ino("/"), 1, "root inode 1");
    ok(fspath_ino("/t/p/a.json") == fspath_ino("/t/p/a.json"), "stable");
    ok(fspath_ino("/t/p/a.json") != fspath_ino("/t/p/b.json"), "distinct");
    ok(fspath_ino("/t") > 1, "never 0 or 1");
}

/* Query views: ".where" under a table or a partition, a filter name, the
 * table's layout below it. */
static void test_views(void)
{
    struct fspath fp;
    char *n;

    is_int(fspath_parse("/t12/.where", &fp), 0, "table .where parses");
    is_int(fp.kind, FSP_WHERE, ".where kind");
    is_int(fp.scoped, 0, "not under a partition");
    ok(!fp.filter && !fp.view, "no filter yet");
    fspath_free(&fp);

    is_int(fspath_parse("/t12/EU/.where", &fp), 0, "partition .where parses");
    is_int(fp.kind, FSP_WHERE, "partition .where kind");
    is_int(fp.scoped, 1, "under a partition");
    is_str(fp.pk, "EU", "its partition");
    is_str(fp.parent, "/t12/EU", "its parent");
    fspath_free(&fp);

    is_int(fspath_parse("/t12/.where/Amount gt 100", &fp), 0, "table view parses");
    is_int(fp.kind, FSP_VIEW, "view kind");
    is_str(fp.filter, "Amount gt 100", "filter as written");
    is_str(fp.view, "/t12/.where/Amount gt 100", "view path");
    ok(!fp.pk_name, "no partition");
    fspath_free(&fp);

    is_int(fspath_parse("/t12/.where/a eq 'x%2Fy' and b eq '50%25'/P%25/r.json", &fp), 0,
           "view entity parses");
    is_int(fp.kind, FSP_VIEW_ENTITY, "view entity kind");
    is_str(fp.filter, "a eq 'x/y' and b eq '50%'", "escapes of slash and percent decoded");
    is_str(fp.pk, "P%", "partition key decoded");
    is_str(fp.rk, "r", "row key decoded");
    is_str(fp.parent, "/t12/.where/a eq 'x%2Fy' and b eq '50%25'/P%25", "entity parent");
    n = fspath_normal(&fp);
    is_str(n, "/t12/P%25/r.json", "normal path of a view entity");
    free(n);
    fspath_free(&fp);

    is_int(fspath_parse("/t12/.where/F/EU", &fp), 0, "view partition parses");
    is_int(fp.kind, FSP_VIEW_PARTITION, "view partition kind");
    n = fspath_normal(&fp);
    is_str(n, "/t12/EU", "normal path of a view partition");
    free(n);
    fspath_free(&fp);

    is_int(fspath_parse("/t12/EU/.where/Status eq 'failed'/%2Er.json", &fp), 0,
           "partition view entity parses");
    is_int(fp.kind, FSP_VIEW_ENTITY, "partition view entity kind");
    is_str(fp.view, "/t12/EU/.where/Status eq 'failed'", "partition view path");
    is_str(fp.pk, "EU", "scope partition");
    n = fspath_normal(&fp);
    is_str(n, "/t12/EU/%2Er.json", "normal path under a partition view");
    free(n);
    fspath_free(&fp);

    is_int(fspath_parse("/t12/EU/.where/F", &fp), 0, "partition view parses");
    is_int(fp.kind, FSP_VIEW, "partition view kind");
    fspath_free(&fp);

    is_int(fspath_parse("/t12/EU/.where/F/x/r.json", &fp), -ENOENT,
           "no partitions under a partition's view");
    is_int(fspath_parse("/t12/.where/F/EU/r.json/x", &fp), -ENOENT, "six components");
    is_int(fspath_parse("/t12/.where/F/EU/notes.txt", &fp), -ENOENT, "no scratch files in a view");
    is_int(fspath_parse("/t12/.where/50%", &fp), -EINVAL, "a bare percent in a filter");
    ok(fspath_invalid_reason("/t12/.where/50%") != NULL, "with a reason");
    is_int(fspath_parse("/t12/.where/%", &fp), -EINVAL, "the empty filter (a lone percent)");
    is_int(fspath_parse("/t12/.where/a%2fb", &fp), -EINVAL, "lower-case escape");
    is_int(fspath_parse("/t12/.where/F/a#b", &fp), -EINVAL, "a key no entity has");
    is_int(fspath_parse("/t12/x/y/.where", &fp), -ENOENT, "not deeper than a partition");

    ok(fspath_in_view("/t12/.where"), "in view: .where");
    ok(fspath_in_view("/t12/.where/F/P/r.json"), "in view: entity");
    ok(fspath_in_view("/t12/P/.where/F"), "in view: partition view");
    ok(!fspath_in_view("/t12/P/r.json"), "not in view: entity");
    ok(!fspath_in_view("/.where"), "not in view: a top-level name");
    ok(!fspath_in_view("/t12/P/x/.where"), "not in view: deeper");
    ok(!fspath_in_view("/t12/.wherever"), "not in view: a longer name");
}

/* Export streams: ".ndjson" last, after a table, a partition, a view or a
 * view's partition; a scratch name nowhere; named so by fspath_is_stream. */
static void test_streams(void)
{
    static const struct {
        const char *path;
        enum fsp_kind kind;
        const char *pk, *filter, *parent;
        int scoped;
    } cases[] = {
        { "/t12/.ndjson", FSP_STREAM, NULL, NULL, "/t12", 0 },
        { "/t12/EU/.ndjson", FSP_STREAM, "EU", NULL, "/t12/EU", 0 },
        { "/t12/%25/.ndjson", FSP_STREAM, "%", NULL, "/t12/%25", 0 },
        { "/t12/.where/a eq 1/.ndjson", FSP_VIEW_STREAM, NULL, "a eq 1", "/t12/.where/a eq 1", 0 },
        { "/t12/EU/.where/a eq 1/.ndjson", FSP_VIEW_STREAM, "EU", "a eq 1", "/t12/EU/.where/a eq 1",
          1 },
        { "/t12/.where/a eq 1/EU/.ndjson", FSP_VIEW_STREAM, "EU", "a eq 1", "/t12/.where/a eq 1/EU",
          0 },
    };
    struct fspath fp;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *p = cases[i].path;

        if (fspath_parse(p, &fp) != 0) {
            ok(0, "%s parses", p);
            continue;
        }
        is_int(fp.kind, cases[i].kind, "%s: its kind", p);
        is_str(fp.table, "t12", "%s: its table", p);
        is_str(fp.pk, cases[i].pk, "%s: its partition", p);
        ok(!cases[i].pk == !fp.pk_name, "%s: a partition's name only with a partition", p);
        is_str(fp.filter, cases[i].filter, "%s: its filter", p);
        is_str(fp.parent, cases[i].parent, "%s: its parent", p);
        is_int(fp.scoped, cases[i].scoped, "%s: scoped", p);
        ok(fspath_is_stream(p), "%s: a stream by its names", p);
        is_int(fspath_in_view(p), cases[i].kind == FSP_VIEW_STREAM, "%s: in a view", p);
        fspath_free(&fp);
    }
    is_int(fspath_parse("/.ndjson", &fp), -ENOENT, "no stream of the account");
    ok(!fspath_is_stream("/.ndjson") && !fspath_is_stream("/t12/EU/x.ndjson") &&
           !fspath_is_stream("/t12/.ndjsonx") && !fspath_is_stream("/t12"),
       "other names are no stream");
    is_int(fspath_parse("/t12/EU/x.ndjson", &fp), 0, "another name in a partition parses");
    is_int(fp.kind, FSP_SCRATCH, "as a scratch file");
    fspath_free(&fp);
    is_int(fspath_parse("/t12/EU/.ndjson/x", &fp), -ENOENT, "nothing below a stream");
    is_int(fspath_parse("/t12/.where/F/EU/r.json/.ndjson", &fp), -ENOENT,
           "no stream below a view's entity");
}

int main(void)
{
    test_views();
    test_streams();
    test_kinds();
    test_rejects();
    test_invalid_keys();
    test_boundary_names();
    test_name_length();
    test_long_names();
    test_table_names();
    test_ino();
    return done_testing();
}
