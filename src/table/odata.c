/* table/odata.c - OData as aztfs writes it and reads a user's: literals,
 * URL escaping, the filters the layers above ask for, entity paths and
 * bodies, ETag timestamps; a user's $filter held to the service's limits
 * and scoped to a partition. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "table/table.h"

#include "table/table_i.h"

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

/* Percent-encode everything outside the unreserved set (libcurl's escaping). */
char *table_url_encode(const char *s)
{
    return http_escape(s);
}

/* 'S' with every ' doubled. */
char *table_odata_literal(const char *s)
{
    size_t n = strlen(s), q = 0;
    char *out, *o;

    for (const char *p = s; *p; p++)
        q += *p == '\'';
    out = malloc(n + q + 3);
    if (!out)
        return NULL;
    o = out;
    *o++ = '\'';
    for (const char *p = s; *p; p++) {
        *o++ = *p;
        if (*p == '\'')
            *o++ = '\'';
    }
    *o++ = '\'';
    *o = '\0';
    return out;
}

/* See table/table_i.h. */
char *table_filter_cmp(const char *field, const char *op, const char *value, const char *rest)
{
    char *lit = table_odata_literal(value), *f = NULL;

    if (lit &&
        asprintf(&f, "%s %s %s%s%s", field, op, lit, rest ? " and " : "", rest ? rest : "") < 0)
        f = NULL;
    free(lit);
    return f;
}

/* See table/table.h. */
char *table_filter_partition(const char *pk)
{
    return table_filter_cmp("PartitionKey", "eq", pk, NULL);
}

/* See table/table.h. */
char *table_filter_after(const char *pk)
{
    return table_filter_cmp("PartitionKey", "gt", pk, NULL);
}

/* See table/table.h. */
char *table_filter_from_row(const char *pk, const char *rk)
{
    char *row = table_filter_cmp("RowKey", "ge", rk, NULL);
    char *f = row ? table_filter_cmp("PartitionKey", "eq", pk, row) : NULL;

    free(row);
    return f;
}

/* See table/table.h. */
const char *table_select_key(enum entity_sys which)
{
    return which == ENTITY_PK ? "PartitionKey" : "RowKey";
}

/* See table/table.h. */
const char *table_page_table_name(const json_t *t)
{
    return json_string_value(json_object_get(t, "TableName"));
}

int table_etag_timestamp(const char *etag, char *out, size_t outlen)
{
    const char *p = etag ? strstr(etag, "datetime'") : NULL, *end;
    char *raw, *dec;
    int rc = -EINVAL;

    if (!p || !(end = strchr(p += 9, '\'')))
        return -EINVAL;
    if (!(raw = strndup(p, (size_t)(end - p))))
        return -ENOMEM;
    dec = http_unescape(raw);
    if (dec && strlen(dec) < outlen) {
        memcpy(out, dec, strlen(dec) + 1);
        rc = 0;
    }
    free(dec);
    free(raw);
    return rc;
}

/* See table/table_i.h. */
char *table_entity_path(const char *table, const char *pk, const char *rk)
{
    char *lp, *lr, *ep = NULL, *er = NULL, *path = NULL;

    if (!pk || !rk)
        return NULL;
    lp = table_odata_literal(pk);
    lr = table_odata_literal(rk);
    if (lp && lr && (ep = table_url_encode(lp + 1)) && (er = table_url_encode(lr + 1))) {
        /* the encoded literal still ends in "%27": strip it and requote */
        ep[strlen(ep) - 3] = '\0';
        er[strlen(er) - 3] = '\0';
        if (asprintf(&path, "/%s(PartitionKey='%s',RowKey='%s')", table, ep, er) < 0)
            path = NULL;
    }
    free(lp);
    free(lr);
    free(ep);
    free(er);
    return path;
}

/* See table/table_i.h. */
char *table_entity_body(const json_t *entity, const char *pk, const char *rk)
{
    json_t *copy = entity ? json_deep_copy(entity) : json_object();
    char *body = NULL;

    if (!copy)
        return NULL;
    if (json_object_set_new(copy, "PartitionKey", json_string(pk)) == 0 &&
        json_object_set_new(copy, "RowKey", json_string(rk)) == 0)
        body = json_dumps(copy, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(copy);
    return body;
}
