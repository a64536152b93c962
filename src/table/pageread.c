/* table/pageread.c - a Query Entities page read into jansson values without
 * jansson's lexer (pageread.h).
 *
 * Why: a listing parses one page of 1,000 entities per request, and
 * jansson's json_loadb spent 6.5 us an entity on it, 40% of the mount's
 * CPU during a walk; most of that is its lexer (a stream read a byte at a
 * time, each token copied into a growing buffer). The service sends one
 * shape: {"odata.metadata":"...","value":[{flat entity},...]}. This file
 * only finds the tokens of that shape; jansson makes every value, with
 * the same checks (UTF-8, escapes, number ranges), so the tree is the one
 * json_loadb would make, and whatever this reading does not take is read
 * by json_loadb whole (tests/unit/test_pageread.c and the page_read fuzz
 * target compare the two). */
#include <string.h>

#include "table/table_i.h"

/* The number token at R: a new reference, or NULL (not one). Integers of
 * up to 18 digits are read here (they fit in a json_int_t); the others go
 * through jansson's own number reading (its range errors included). */
static json_t *read_number(struct jtok *r)
{
    const char *s = r->p;
    int integral;
    size_t n = jtok_number(r, &integral);

    if (n == 0)
        return NULL;
    r->p = s + n;
    if (integral && n - (s[0] == '-') <= 18) {
        json_int_t v = 0; /* the slice is not NUL-terminated: no strtoll */

        for (size_t i = s[0] == '-'; i < n; i++)
            v = v * 10 + (s[i] - '0');
        return json_integer(s[0] == '-' ? -v : v);
    }
    return json_loadb(s, n, JSON_DECODE_ANY, NULL);
}

/* The scalar value at R (string, number, true, false, null): a new
 * reference, or NULL when it is none of these or not one this reading
 * takes. */
static json_t *read_scalar(struct jtok *r)
{
    const char *s, *q;
    size_t n;
    int flags;

    jtok_ws(r);
    if (r->p >= r->end)
        return NULL;
    if (*r->p == '"') {
        q = r->p;
        if (jtok_string(r, &s, &n, &flags) < 0)
            return NULL;
        /* json_stringn checks the bytes are UTF-8, as jansson's lexer does */
        return flags & JTOK_ESCAPED ? json_loadb(q, n + 2, JSON_DECODE_ANY, NULL) :
                                      json_stringn(s, n);
    }
    if (jtok_word(r, "true"))
        return json_true();
    if (jtok_word(r, "false"))
        return json_false();
    if (jtok_word(r, "null"))
        return json_null();
    return read_number(r);
}

/* One "name": value member of an object at R into OBJ; a nested value
 * is read by NESTED (NULL: scalars only) when NESTED_NAME is the name.
 * Returns 0 or -1 (not taken). */
static int read_member(struct jtok *r, json_t *obj, const char *nested_name,
                       json_t *(*nested)(struct jtok *))
{
    const char *s;
    size_t n;
    int flags;
    json_t *v;

    if (jtok_string(r, &s, &n, &flags) < 0 || (flags & JTOK_ESCAPED) || !jtok_take(r, ':'))
        return -1;
    if (nested && strlen(nested_name) == n && memcmp(s, nested_name, n) == 0)
        v = nested(r);
    else
        v = read_scalar(r);
    /* json_object_setn_new checks the name is UTF-8 and takes V in any
     * case; a name given twice keeps the last value, as jansson does */
    return v && json_object_setn_new(obj, s, n, v) == 0 ? 0 : -1;
}

/* An object at R of members read by read_member: a new reference or NULL. */
static json_t *read_object(struct jtok *r, const char *nested_name,
                           json_t *(*nested)(struct jtok *))
{
    json_t *obj;

    if (!jtok_take(r, '{') || !(obj = json_object()))
        return NULL;
    if (jtok_take(r, '}'))
        return obj;
    do {
        if (read_member(r, obj, nested_name, nested) < 0)
            goto fail;
    } while (jtok_take(r, ','));
    if (jtok_take(r, '}'))
        return obj;
fail:
    json_decref(obj);
    return NULL;
}

/* The "value" array of flat objects (entities) at R: a new reference or
 * NULL. */
static json_t *read_entities(struct jtok *r)
{
    json_t *arr, *e;

    if (!jtok_take(r, '[') || !(arr = json_array()))
        return NULL;
    if (jtok_take(r, ']'))
        return arr;
    do {
        if (!(e = read_object(r, NULL, NULL)) || json_array_append_new(arr, e) < 0)
            goto fail;
    } while (jtok_take(r, ','));
    if (jtok_take(r, ']'))
        return arr;
fail:
    json_decref(arr);
    return NULL;
}

/* Skip the scalar value at R, checked as a token only; *ASCII becomes 0
 * when it is a string with a byte past 0x7F. Returns 0 or -1. */
static int skip_scalar(struct jtok *r, int *ascii)
{
    const char *s;
    size_t n;
    int flags, integral;

    jtok_ws(r);
    if (r->p < r->end && *r->p == '"') {
        if (jtok_string(r, &s, &n, &flags) < 0)
            return -1;
        if (flags & JTOK_NONASCII)
            *ascii = 0;
        return 0;
    }
    if (jtok_word(r, "true") || jtok_word(r, "false") || jtok_word(r, "null"))
        return 0;
    if ((n = jtok_number(r, &integral)) == 0)
        return -1;
    r->p += n;
    return 0;
}

/* The entity object at R as its text: a new object of its PartitionKey and
 * RowKey (when strings: what a split and a log line need) and its whole
 * text under TABLE_ENTITY_TEXT; NULL when it is not a flat object of
 * plain member names, or no memory. Values other than the keys are
 * checked as tokens only (their reading is the consumer's). */
static json_t *read_entity_text(struct jtok *r)
{
    const char *start, *name, *vs;
    size_t nlen, vn;
    int flags, vflags, ascii = 1;
    json_t *e, *v;

    jtok_ws(r);
    start = r->p;
    if (!jtok_take(r, '{') || !(e = json_object()))
        return NULL;
    if (jtok_take(r, '}'))
        goto done;
    do {
        if (jtok_string(r, &name, &nlen, &flags) < 0 || flags || !jtok_take(r, ':'))
            goto fail;
        jtok_ws(r);
        vs = r->p;
        if (skip_scalar(r, &ascii) < 0)
            goto fail;
        if ((nlen == 12 && memcmp(name, "PartitionKey", 12) == 0) ||
            (nlen == 6 && memcmp(name, "RowKey", 6) == 0)) {
            struct jtok key = { vs, r->end };

            if (jtok_string(&key, &vs, &vn, &vflags) < 0) { /* the last one counts */
                json_object_deln(e, name, nlen);
                continue;
            }
            v = vflags & JTOK_ESCAPED ? json_loadb(vs - 1, vn + 2, JSON_DECODE_ANY, NULL) :
                                        json_stringn(vs, vn);
            if (!v || json_object_setn_new(e, name, nlen, v) < 0)
                goto fail; /* bad UTF-8 or escapes: jansson says what */
        }
    } while (jtok_take(r, ','));
    if (!jtok_take(r, '}'))
        goto fail;
done:
    /* text of ASCII bytes only (names have none other) is valid UTF-8 */
    v = ascii ? json_stringn_nocheck(start, (size_t)(r->p - start)) :
                json_stringn(start, (size_t)(r->p - start));
    if (v && json_object_set_new(e, TABLE_ENTITY_TEXT, v) == 0)
        return e;
fail:
    json_decref(e);
    return NULL;
}

/* The "value" array at R as entity texts (read_entity_text). */
static json_t *read_entity_texts(struct jtok *r)
{
    json_t *arr, *e;

    if (!jtok_take(r, '[') || !(arr = json_array()))
        return NULL;
    if (jtok_take(r, ']'))
        return arr;
    do {
        if (!(e = read_entity_text(r)) || json_array_append_new(arr, e) < 0)
            goto fail;
    } while (jtok_take(r, ','));
    if (jtok_take(r, ']'))
        return arr;
fail:
    json_decref(arr);
    return NULL;
}

/* See table_i.h. */
json_t *page_read_text(const char *body, size_t len, json_error_t *jerr)
{
    struct jtok r = { body, body + len };
    json_t *root = body ? read_object(&r, "value", read_entity_texts) : NULL;

    if (root) {
        jtok_ws(&r);
        if (r.p == r.end)
            return root;
        json_decref(root);
    }
    return page_read(body, len, jerr); /* trees, or what is wrong with the page */
}

/* See pageread.h. */
json_t *page_read(const char *body, size_t len, json_error_t *jerr)
{
    struct jtok r = { body, body + len };
    json_t *root = body ? read_object(&r, "value", read_entities) : NULL;

    if (root) {
        jtok_ws(&r);
        if (r.p == r.end)
            return root;
        json_decref(root); /* text after it: jansson says what */
    }
    return json_loadb(body ? body : "", body ? len : 0, 0, jerr);
}
