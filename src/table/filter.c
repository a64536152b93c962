/* table/filter.c - a user's OData $filter: limits and partition scope (userfilter.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/table.h"

#define WHY_COMPARISONS "the filter has more than 15 comparisons (the service's limit)"
#define WHY_LENGTH "the filter is longer than 4096 bytes once URL-encoded"
#define WHY_LITERAL "the filter has a string literal without its closing quote"
#define WHY_PARENS "the filter's parentheses do not balance"

/* Is C part of an OData word (a property name, an operator, a keyword)? */
static int word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* P is at the opening quote of a literal ('...', with '' for a quote):
 * the byte after its closing quote, or NULL when it has none. */
static const char *skip_literal(const char *p)
{
    for (p++; *p; p++)
        if (*p == '\'' && *++p != '\'')
            return p;
    return NULL;
}

/* See table/table.h. */
int userfilter_comparisons(const char *filter)
{
    static const char *const ops[] = { "eq", "ne", "gt", "ge", "lt", "le" };
    const char *p = filter;
    int n = 0;

    while (*p) {
        if (*p == '\'') { /* a literal: to its closing quote */
            if (!(p = skip_literal(p)))
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

/* Why FILTER could reach outside the parentheses a partition view puts
 * it in (a literal left open, a ')' before its '(' or a '(' never closed,
 * outside literals), or NULL when it cannot. */
static const char *unscoped(const char *filter)
{
    const char *p = filter;
    long depth = 0;

    while (*p) {
        if (*p == '\'') {
            if (!(p = skip_literal(p)))
                return WHY_LITERAL;
            continue;
        }
        depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
        if (depth < 0)
            return WHY_PARENS;
        p++;
    }
    return depth ? WHY_PARENS : NULL;
}

/* See table/table.h. */
size_t userfilter_encoded_len(const char *filter)
{
    size_t n = 0;

    for (const char *p = filter; *p; p++)
        n += isalnum((unsigned char)*p) || strchr("-._~", *p) ? 1 : 3;
    return n;
}

/* See table/table.h. */
int userfilter_build(const char *pk, const char *filter, char **out, const char **why)
{
    char *scope = NULL, *f = NULL;

    *out = NULL;
    if ((*why = unscoped(filter)))
        return -EINVAL;
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

/* See table.h. */
int userfilter_build_for(const struct table_client *tc, const char *pk, const char *filter,
                         char **out, const char **why)
{
    *out = NULL;
    if ((*why = table_filter_problem(table_client_profile(tc), filter)))
        return -EINVAL;
    return userfilter_build(pk, filter, out, why);
}
