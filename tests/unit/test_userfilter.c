/* test_userfilter.c - unit tests for a user's $filter: comparisons counted,
 * encoded length, the partition scope and the limits. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "userfilter.h"
#include "tap.h"

static void test_count(void)
{
    is_int(userfilter_comparisons("Amount gt 100"), 1, "one comparison");
    is_int(userfilter_comparisons("a eq 1 and b ne 2 or not (c lt 3) and d le 4 and e ge 5"),
           5, "five, with and/or/not");
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
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%sa eq %d",
                 i ? " or " : "", i);
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

int main(void)
{
    test_count();
    test_build();
    return done_testing();
}
