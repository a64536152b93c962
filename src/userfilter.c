/* userfilter.c - a user's OData $filter: limits and partition scope (userfilter.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tablereq.h"
#include "userfilter.h"

#define WHY_COMPARISONS "the filter has more than 15 comparisons (the service's limit)"
#define WHY_LENGTH "the filter is longer than 4096 bytes once URL-encoded"

/* Is C part of an OData word (a property name, an operator, a keyword)? */
static int word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* See userfilter.h. */
int userfilter_comparisons(const char *filter)
{
    static const char *const ops[] = { "eq", "ne", "gt", "ge", "lt", "le" };
    const char *p = filter;
    int n = 0;

    while (*p) {
        if (*p == '\'') {               /* a literal: to its closing quote */
            for (p++; *p; p++)
                if (*p == '\'' && *++p != '\'')
                    break;
            continue;
        }
        if (!word_char(*p)) {
            p++;
            continue;
        }
        size_t len = 0;

        while (word_char(p[len]))
            len++;
        for (size_t i = 0; len == 2 && i < sizeof(ops) / sizeof(ops[0]); i++)
            n += strncmp(p, ops[i], 2) == 0;
        p += len;
    }
    return n;
}

/* See userfilter.h. */
size_t userfilter_encoded_len(const char *filter)
{
    size_t n = 0;

    for (const char *p = filter; *p; p++)
        n += isalnum((unsigned char)*p) || strchr("-._~", *p) ? 1 : 3;
    return n;
}

/* See userfilter.h. */
int userfilter_build(const char *pk, const char *filter, char **out, const char **why)
{
    char *scope = NULL, *f = NULL;

    *out = NULL;
    *why = NULL;
    if (pk) {
        if (!(scope = table_filter_partition(pk)))
            return -ENOMEM;
        if (asprintf(&f, "%s and (%s)", scope, filter) < 0)
            f = NULL;
        free(scope);
    } else {
        f = strdup(filter);
    }
    if (!f)
        return -ENOMEM;
    if (userfilter_comparisons(f) > USERFILTER_MAX_COMPARISONS)
        *why = WHY_COMPARISONS;
    else if (userfilter_encoded_len(f) > USERFILTER_MAX_ENCODED)
        *why = WHY_LENGTH;
    if (*why) {
        free(f);
        return -EINVAL;
    }
    *out = f;
    return 0;
}
