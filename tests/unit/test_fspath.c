/* test_fspath.c - unit tests for path parsing, table-name rules and inode numbers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fspath.h"
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

    is_int(fspath_parse("/Customers/p/.json", &fp), 0, "bare .json parses");
    is_int(fp.kind, FSP_SCRATCH, "bare .json is scratch, not the empty key");
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

int main(void)
{
    test_kinds();
    test_rejects();
    test_long_names();
    test_table_names();
    test_ino();
    return done_testing();
}
