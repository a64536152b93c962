/* test_table.c - unit tests for what the table protocol layer builds without the network: filters, ETag timestamps, URL escaping, wire system members. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "entity.h"
#include "table.h"
#include "tap.h"

static void test_filters(void)
{
    char *f;

    is_str(f = table_filter_partition("p"), "PartitionKey eq 'p'", "partition filter");
    free(f);
    is_str(f = table_filter_partition("it's"), "PartitionKey eq 'it''s'", "quote doubled");
    free(f);
    is_str(f = table_filter_after(""), "PartitionKey gt ''", "after the empty key");
    free(f);
    is_str(f = table_filter_from_row("a b", "r'1"),
           "PartitionKey eq 'a b' and RowKey ge 'r''1'", "rows from a key");
    free(f);
}

static void test_etag_timestamp(void)
{
    char ts[64], small[8];

    is_int(table_etag_timestamp("W/\"datetime'2026-11-22T08%3A26%3A34.9118804Z'\"", ts,
                                sizeof(ts)), 0, "Azure ETag");
    is_str(ts, "2026-11-22T08:26:34.9118804Z", "timestamp unescaped");
    is_int(table_etag_timestamp("W/\"datetime'2026-11-22T08%3A26%3A34Z'\"", small,
                                sizeof(small)), -EINVAL, "too small a buffer");
    is_int(table_etag_timestamp("\"00000000-0000-0000-0000-000000000000\"", ts, sizeof(ts)),
           -EINVAL, "an ETag without a timestamp (Cosmos DB)");
    is_int(table_etag_timestamp("W/\"datetime'unterminated", ts, sizeof(ts)), -EINVAL,
           "no closing quote");
    is_int(table_etag_timestamp(NULL, ts, sizeof(ts)), -EINVAL, "no ETag");
}

static void test_escape(void)
{
    char *e;

    is_str(e = table_url_encode("a b/c'd~-._%é"), "a%20b%2Fc%27d~-._%25%C3%A9",
           "everything but the unreserved set is escaped");
    free(e);
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
    test_filters();
    test_etag_timestamp();
    test_escape();
    test_wire_sys();
    return done_testing();
}
