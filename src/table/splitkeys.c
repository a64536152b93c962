/* table/splitkeys.c - where a split cuts a key range (table_i.h): keys
 * guessed a page apart from a page's first and last keys, and whether a
 * continuation token seems to name a partition. Pure functions of strings:
 * no I/O, no locks; tests/unit/test_split.c checks them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "table/table.h"
#include "table/table_i.h"

/* The trailing run of digits of KEY: its start in *PRE and value (at most
 * 18 digits), or -1 when KEY does not end in a digit. */
static long long digit_run(const char *key, size_t *pre)
{
    size_t len = strlen(key), i = len;
    long long v = 0;

    while (i > 0 && len - i < 18 && key[i - 1] >= '0' && key[i - 1] <= '9')
        i--;
    if (i == len)
        return -1;
    for (size_t j = i; j < len; j++)
        v = v * 10 + (key[j] - '0');
    *pre = i;
    return v;
}

/* See table/table_i.h. */
int table_split_cuts(const char *first, const char *last, const char *hi, char **cuts, int max)
{
    size_t pre = 0, fpre = 0, len = strlen(last), p = 0;
    long long vl = digit_run(last, &pre), vf = digit_run(first, &fpre), step = 1;
    int n = 0;

    if (len == 0)
        return 0;
    if (vl >= 0) {
        if (vf >= 0 && fpre == pre && strlen(first) == len && strncmp(first, last, pre) == 0 &&
            vf <= vl)
            step = vl - vf + 1;
        for (; n < max; n++) {
            long long v = vl + 1 + step * (n + 1);
            char *k = NULL;

            if (asprintf(&k, "%.*s%0*lld", (int)pre, last, (int)(len - pre), v) < 0)
                goto nomem;
            if (strlen(k) != len || (hi && strcmp(k, hi) >= 0)) {
                free(k);
                break; /* past the digits' width, or past HI */
            }
            cuts[n] = k;
        }
        return n;
    }
    while (first[p] && first[p] == last[p])
        p++;
    if (p == len)
        p = len - 1; /* LAST is FIRST or starts with it: its last character */
    if (first[p] && (unsigned char)last[p] > (unsigned char)first[p])
        step = (unsigned char)last[p] - (unsigned char)first[p];
    for (; n < max; n++) {
        long long c = (unsigned char)last[p] + step * (n + 1);
        char *k = NULL;

        if ((unsigned char)last[p] < 0x20 || c > 0x7e)
            break;
        if (asprintf(&k, "%.*s%c", (int)p, last, (int)c) < 0)
            goto nomem;
        if (hi && strcmp(k, hi) >= 0) {
            free(k);
            break;
        }
        cuts[n] = k;
    }
    return n;
nomem:
    while (n > 0)
        free(cuts[--n]);
    return -ENOMEM;
}

/* See table_i.h. */
int table_page_in_order(const json_t *value)
{
    char *ppk = NULL, *prk = NULL, *pk, *rk;
    size_t i;
    int c, ok = 1;

    for (i = 0; ok && i < json_array_size(value); i++) {
        pk = table_entity_key(json_array_get(value, i), ENTITY_PK);
        rk = table_entity_key(json_array_get(value, i), ENTITY_RK);
        if (!pk || !rk) { /* no key to tell by (or no memory): not a proof */
            free(pk);
            free(rk);
            continue;
        }
        c = ppk ? strcmp(ppk, pk) : -1;
        ok = c < 0 || (c == 0 && strcmp(prk, rk) < 0);
        free(ppk);
        free(prk);
        ppk = pk;
        prk = rk;
    }
    free(ppk);
    free(prk);
    return ok;
}

/* See table/table_i.h. */
int table_token_names(const char *tok, const char *pk)
{
    size_t len, pad = 0, want = strlen(pk);
    unsigned char *out;
    char *in;
    int n, same;

    if (!tok)
        return 0;
    if (tok[0] >= '0' && tok[0] <= '9' && strchr(tok, '!') && strchr(strchr(tok, '!') + 1, '!'))
        tok = strchr(strchr(tok, '!') + 1, '!') + 1; /* Azure's "1!N!" */
    len = strlen(tok);
    if (len == 0 || len % 4 || len > 4 * (want / 3 + 2) || !(in = strdup(tok)))
        return 0;
    for (size_t i = 0; i < len; i++)
        if (in[i] == '-')
            in[i] = '=';
    while (pad < 2 && in[len - 1 - pad] == '=')
        pad++;
    out = malloc(len / 4 * 3 + 1);
    n = out ? EVP_DecodeBlock(out, (const unsigned char *)in, (int)len) : -1;
    same = n >= 0 && (size_t)n - pad == want && memcmp(out, pk, want) == 0;
    free(out);
    free(in);
    return same;
}
