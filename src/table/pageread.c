/* table/pageread.c - a Query Entities page read into jansson values without
 * jansson's lexer (table_i.h), and one read as entity texts.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "table/table.h"
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

/* An array at R of values read by ELEMENT: a new reference or NULL. */
static json_t *read_array(struct jtok *r, json_t *(*element)(struct jtok *))
{
    json_t *arr, *e;

    if (!jtok_take(r, '[') || !(arr = json_array()))
        return NULL;
    if (jtok_take(r, ']'))
        return arr;
    do {
        if (!(e = element(r)) || json_array_append_new(arr, e) < 0)
            goto fail;
    } while (jtok_take(r, ','));
    if (jtok_take(r, ']'))
        return arr;
fail:
    json_decref(arr);
    return NULL;
}

/* A flat object (an entity) at R: a new reference or NULL. */
static json_t *read_flat_object(struct jtok *r)
{
    return read_object(r, NULL, NULL);
}

/* The "value" array of flat objects (entities) at R. */
static json_t *read_entities(struct jtok *r)
{
    return read_array(r, read_flat_object);
}

/* The page BODY (LEN bytes) whose "value" array ENTITIES reads: a new
 * reference, or NULL when it is not of the service's shape (or no
 * memory). */
static json_t *read_page(const char *body, size_t len, json_t *(*entities)(struct jtok *))
{
    struct jtok r = { body, body + len };
    json_t *root = body ? read_object(&r, "value", entities) : NULL;

    if (root) {
        jtok_ws(&r);
        if (r.p == r.end)
            return root;
        json_decref(root); /* text after it */
    }
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

/* The entity object at R as its text: a new JSON string of its bytes;
 * NULL when it is not a flat object of plain member names, or no memory.
 * Its values are checked as tokens only (their reading is the
 * consumer's). */
static json_t *read_entity_text(struct jtok *r)
{
    const char *start, *name;
    size_t nlen;
    int flags, ascii = 1;

    jtok_ws(r);
    start = r->p;
    if (!jtok_take(r, '{'))
        return NULL;
    if (!jtok_take(r, '}')) {
        do {
            if (jtok_string(r, &name, &nlen, &flags) < 0 || flags || !jtok_take(r, ':') ||
                skip_scalar(r, &ascii) < 0)
                return NULL;
        } while (jtok_take(r, ','));
        if (!jtok_take(r, '}'))
            return NULL;
    }
    /* text of ASCII bytes only (names have none other) is valid UTF-8 */
    return ascii ? json_stringn_nocheck(start, (size_t)(r->p - start)) :
                   json_stringn(start, (size_t)(r->p - start));
}

/* See table/table.h. */
char *table_entity_key(const json_t *e, enum entity_sys which)
{
    const char *want = which == ENTITY_PK ? "PartitionKey" : "RowKey", *name, *v;
    struct jtok r = { json_string_value(e), NULL };
    size_t nlen, vn, wlen = strlen(want);
    char *key = NULL;
    int flags, vflags, ascii;

    if (!json_is_string(e)) {
        v = entity_wire_sys(e, which);
        return v ? strdup(v) : NULL;
    }
    r.end = r.p + json_string_length(e);
    if (!jtok_take(&r, '{') || jtok_take(&r, '}'))
        return NULL;
    do { /* the text was read once (read_entity_text): its tokens are good */
        if (jtok_string(&r, &name, &nlen, &flags) < 0 || !jtok_take(&r, ':'))
            break;
        jtok_ws(&r);
        v = r.p;
        if (skip_scalar(&r, &ascii) < 0)
            break;
        if (nlen != wlen || memcmp(name, want, wlen) != 0)
            continue;
        free(key); /* a name given twice: the last one counts, as in a tree */
        key = NULL;
        if (*v != '"' || jtok_string(&(struct jtok){ v, r.end }, &v, &vn, &vflags) < 0)
            continue;
        if (!(vflags & JTOK_ESCAPED)) {
            key = strndup(v, vn);
        } else { /* jansson decodes it */
            json_t *s = json_loadb(v - 1, vn + 2, JSON_DECODE_ANY, NULL);

            key = json_is_string(s) ? strdup(json_string_value(s)) : NULL;
            json_decref(s);
        }
    } while (jtok_take(&r, ','));
    return key;
}

/* The "value" array at R as entity texts (read_entity_text). */
static json_t *read_entity_texts(struct jtok *r)
{
    return read_array(r, read_entity_text);
}

/* See table_i.h. */
json_t *page_read_text(const char *body, size_t len, json_error_t *jerr)
{
    json_t *root = read_page(body, len, read_entity_texts), *value, *e;
    size_t i;

    if (root)
        return root;
    /* trees, or what is wrong with the page; an entity that is a string
     * (not an object) made null, so that it is never taken for a text:
     * read, it is "not a JSON object" all the same */
    root = page_read(body, len, jerr);
    value = json_object_get(root, "value");
    json_array_foreach (value, i, e)
        if (json_is_string(e) && json_array_set_new(value, i, json_null()) < 0) {
            json_decref(root);
            if (jerr)
                snprintf(jerr->text, sizeof(jerr->text), "out of memory");
            return NULL;
        }
    return root;
}

/* See table_i.h. */
json_t *page_read(const char *body, size_t len, json_error_t *jerr)
{
    json_t *root = read_page(body, len, read_entities);

    /* not of the service's shape: jansson reads it, or says what is wrong */
    return root ? root : json_loadb(body ? body : "", body ? len : 0, 0, jerr);
}
