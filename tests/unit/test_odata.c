/* test_odata.c - unit tests for table/odata.c: the filters aztfs writes,
 * ETag timestamps, URL escaping; a user's $filter: comparisons counted,
 * encoded length, the partition scope and the limits, and the filters
 * refused because they could reach outside that scope. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/table.h"
#include "table/table_i.h"
#include "tap.h"

static void test_count(void)
{
    is_int(userfilter_comparisons("Amount gt 100"), 1, "one comparison");
    is_int(userfilter_comparisons("a eq 1 and b ne 2 or not (c lt 3) and d le 4 and e ge 5"), 5,
           "five, with and/or/not");
    is_int(userfilter_comparisons("Name eq 'a eq b gt c'"), 1, "operators in a literal");
    is_int(userfilter_comparisons("Name eq 'it''s eq' and x gt 1"), 2, "a doubled quote");
    is_int(userfilter_comparisons("equal eq 1"), 1, "a property starting with eq");
    is_int(userfilter_comparisons("When ge datetime'2026-01-01T00:00:00Z'"), 1, "datetime");
    is_int(userfilter_comparisons("Name eq 'unterminated"), 1, "an open literal");
    is_int(userfilter_comparisons(""), 0, "empty");
}

static void test_build(void)
{
    char many[1024] = "", *f;
    const char *why;

    is_int(userfilter_build(NULL, "a eq 1", &f, &why), 0, "table scope");
    is_str(f, "a eq 1", "as written");
    free(f);
    is_int(userfilter_build("E'U", "a eq 1 or b eq 2", &f, &why), 0, "partition scope");
    is_str(f, "PartitionKey eq 'E''U' and (a eq 1 or b eq 2)", "key quoted, filter grouped");
    free(f);
    for (int i = 0; i < 15; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sa eq %d", i ? " or " : "", i);
    is_int(userfilter_build(NULL, many, &f, &why), 0, "15 comparisons pass");
    free(f);
    is_int(userfilter_build("p", many, &f, &why), -EINVAL, "16 with the scope do not");
    ok(f == NULL && why && strstr(why, "15"), "with a reason");
    is_int((int)userfilter_encoded_len("a b~/"), 9, "encoded length");
    {
        size_t n = USERFILTER_MAX_ENCODED / 3 + 1;
        char *big = malloc(n + 16);

        strcpy(big, "a eq '");
        memset(big + 6, '/', n);
        strcpy(big + 6 + n, "'");
        is_int(userfilter_build(NULL, big, &f, &why), -EINVAL, "too long once encoded");
        ok(why && strstr(why, "4096"), "with a reason");
        free(big);
    }
}

/* FILTER is refused, with or without a partition, for a reason that
 * holds WANT. */
static void refused(const char *filter, const char *want, const char *name)
{
    const char *pks[] = { NULL, "p" };
    const char *why;
    char *f;

    for (int i = 0; i < 2; i++) {
        is_int(userfilter_build(pks[i], filter, &f, &why), -EINVAL, "%s (%s)", name,
               pks[i] ? "partition" : "table");
        ok(f == NULL && why && strstr(why, want), "%s: %s", name, why ? why : "(no reason)");
    }
}

/* FILTER is taken, in a partition as "PartitionKey eq 'p' and (FILTER)". */
static void taken(const char *filter, const char *name)
{
    char *f, want[256];
    const char *why;

    snprintf(want, sizeof(want), "PartitionKey eq 'p' and (%s)", filter);
    is_int(userfilter_build("p", filter, &f, &why), 0, "%s", name);
    is_str(f, want, "%s: scoped", name);
    free(f);
}

static void test_scope(void)
{
    taken("(a eq 1 or b eq 2) and not (c eq 3)", "balanced groups");
    taken("((a eq 1))", "nested groups");
    taken("Name eq ')'", "a ')' in a literal");
    taken("Name eq '(' or Name eq 'x'", "a '(' in a literal");
    taken("Name eq 'it'') or (''s'", "a doubled quote keeps the literal open");
    taken("Name eq ''", "the empty literal");
    taken("Name eq ''''", "a literal of one quote");
    taken("When ge datetime'2026-01-01T00:00:00Z'", "a typed literal");
    refused("true) or (true", "parentheses", "a ')' before its '('");
    refused("a eq 1)", "parentheses", "a ')' never opened");
    refused("(a eq 1", "parentheses", "a '(' never closed");
    refused("Name ne '(') or (RowKey ne ')'", "parentheses",
            "literals that balance the parentheses for a count that ignores them");
    refused("Name eq 'x", "closing quote", "an open literal");
    refused("Name eq 'it''", "closing quote", "a doubled quote at the end");
    refused("Name eq 'a'' ) or (true", "closing quote", "a doubled quote opening the rest");
    refused("'", "closing quote", "a lone quote");
}

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

int main(void)
{
    test_filters();
    test_etag_timestamp();
    test_escape();
    test_count();
    test_build();
    test_scope();
    return done_testing();
}
