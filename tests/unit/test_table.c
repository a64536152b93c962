/* test_table.c - unit tests for what the table protocol layer builds without the network: filters, ETag timestamps, URL escaping, wire system members. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "table/table.h"
#include "table/table_i.h"
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
    is_str(f = table_filter_from_row("a b", "r'1"), "PartitionKey eq 'a b' and RowKey ge 'r''1'",
           "rows from a key");
    free(f);
}

/* table_split_cuts(FIRST, LAST, HI, MAX) must give exactly WANT (a
 * space-separated list, "" for none). */
static void check_cuts(const char *first, const char *last, const char *hi, int max,
                       const char *want)
{
    char *cuts[8], got[256] = "";
    int n = table_split_cuts(first, last, hi, cuts, max);

    for (int i = 0; i < n; i++) {
        snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", i ? " " : "", cuts[i]);
        free(cuts[i]);
    }
    is_str(got, want, "cuts after %s..%s%s%s", first, last, hi ? " before " : "", hi ? hi : "");
}

static void test_split_cuts(void)
{
    /* numbers: a page of r00000..r00999 spans 1000; the next page's keys
     * (r01000..r01999) stay before the first cut */
    check_cuts("r00000", "r00999", NULL, 4, "r02000 r03000 r04000 r05000");
    check_cuts("r00000", "r00999", "r03500", 4, "r02000 r03000");
    check_cuts("r00000", "r00999", "r02000", 4, "");
    /* partitions: a page inside one steps one partition; one that spans
     * 25 steps 25 */
    check_cuts("p00", "p00", NULL, 3, "p02 p03 p04");
    check_cuts("p000", "p024", NULL, 2, "p050 p075");
    /* past the digits' width: no cut rather than a longer key */
    check_cuts("k0", "k9", NULL, 3, "");
    check_cuts("k98", "k98", NULL, 3, "");
    /* other keys: the characters spanned where FIRST and LAST differ */
    check_cuts("alpha", "apple", NULL, 4, "at ax a|");
    check_cuts("same", "same", NULL, 2, "samf samg");
    /* nothing to step: the empty key, a non-ASCII last character */
    check_cuts("", "", NULL, 3, "");
    check_cuts("\xc3\xa9", "\xc3\xa9", NULL, 3, "");
    /* whatever the keys, the cuts increase, follow LAST and precede HI */
    {
        const char *keys[] = { "a", "a1", "b 9", "x'y~z", "r0009", "r0010", "zz", "~~", "0" };
        int bad = 0;

        for (size_t i = 0; i < sizeof(keys) / sizeof(*keys); i++)
            for (size_t j = 0; j < sizeof(keys) / sizeof(*keys); j++) {
                const char *f = keys[i], *l = keys[j];
                char *cuts[8];
                int n;

                if (strcmp(f, l) > 0 || strcmp(l, "zz") >= 0)
                    continue; /* a page's keys are in order, before the bound */
                n = table_split_cuts(f, l, "zz", cuts, 8);
                for (int k = 0; k < n; k++) {
                    if (strcmp(cuts[k], k ? cuts[k - 1] : l) <= 0 || strcmp(cuts[k], "zz") >= 0)
                        bad++, printf("# %s..%s: cut %d is %s\n", f, l, k, cuts[k]);
                }
                while (n > 0)
                    free(cuts[--n]);
            }
        is_int(bad, 0, "every cut follows the one before and precedes the bound");
    }
}

static void test_etag_timestamp(void)
{
    char ts[64], small[8];

    is_int(table_etag_timestamp("W/\"datetime'2026-11-22T08%3A26%3A34.9118804Z'\"", ts, sizeof(ts)),
           0, "Azure ETag");
    is_str(ts, "2026-11-22T08:26:34.9118804Z", "timestamp unescaped");
    is_int(table_etag_timestamp("W/\"datetime'2026-11-22T08%3A26%3A34Z'\"", small, sizeof(small)),
           -EINVAL, "too small a buffer");
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
    test_split_cuts();
    test_etag_timestamp();
    test_escape();
    test_wire_sys();
    return done_testing();
}
