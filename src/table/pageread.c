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

/* Where the reading is in the text. */
struct rd {
    const char *p, *end;
};

static void skip_ws(struct rd *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

/* Is the next character C (after white space)? Taken when it is. */
static int take(struct rd *r, char c)
{
    skip_ws(r);
    if (r->p < r->end && *r->p == c) {
        r->p++;
        return 1;
    }
    return 0;
}

/* The string token at R (its opening quote): its characters in *S (*N
 * bytes, between the quotes), *ESCAPED when it holds a backslash. Returns
 * 0, or -1 when it is not a string token (no quote, a control character,
 * no closing quote). */
static int scan_string(struct rd *r, const char **s, size_t *n, int *escaped)
{
    const char *p;

    skip_ws(r);
    if (r->p >= r->end || *r->p != '"')
        return -1;
    *escaped = 0;
    for (p = r->p + 1; p < r->end; p++) {
        unsigned char c = (unsigned char)*p;

        if (c == '"') {
            *s = r->p + 1;
            *n = (size_t)(p - *s);
            r->p = p + 1;
            return 0;
        }
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            *escaped = 1;
            if (++p >= r->end)
                return -1;
        }
    }
    return -1;
}

/* Is [S, S+N) a JSON number (RFC 8259: -? (0 | [1-9][0-9]*) (.[0-9]+)?
 * ([eE][+-]?[0-9]+)?)? *INTEGRAL: without fraction and exponent. */
static int is_number(const char *s, size_t n, int *integral)
{
    size_t i = 0, d;

    *integral = 1;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && s[i] >= '1' && s[i] <= '9')
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    else
        return 0;
    if (i < n && s[i] == '.') {
        *integral = 0;
        for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            ;
        if (i == d)
            return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        *integral = 0;
        if (++i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            ;
        if (i == d)
            return 0;
    }
    return i == n;
}

/* The number token at R: a new reference, or NULL (not one). Integers of
 * up to 18 digits are read here (they fit in a json_int_t); the others go
 * through jansson's own number reading (its range errors included). */
static json_t *read_number(struct rd *r)
{
    const char *s = r->p;
    size_t n = 0;
    int integral;

    while (s + n < r->end && s[n] && strchr("0123456789+-.eE", s[n]))
        n++;
    if (n == 0 || !is_number(s, n, &integral))
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

/* The literal WORD at R (what follows it is the caller's to check). */
static int take_word(struct rd *r, const char *word)
{
    size_t n = strlen(word);

    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
        return 0;
    r->p += n;
    return 1;
}

/* The scalar value at R (string, number, true, false, null): a new
 * reference, or NULL when it is none of these or not one this reading
 * takes. */
static json_t *read_scalar(struct rd *r)
{
    const char *s, *q;
    size_t n;
    int escaped;

    skip_ws(r);
    if (r->p >= r->end)
        return NULL;
    if (*r->p == '"') {
        q = r->p;
        if (scan_string(r, &s, &n, &escaped) < 0)
            return NULL;
        /* json_stringn checks the bytes are UTF-8, as jansson's lexer does */
        return escaped ? json_loadb(q, n + 2, JSON_DECODE_ANY, NULL) : json_stringn(s, n);
    }
    if (take_word(r, "true"))
        return json_true();
    if (take_word(r, "false"))
        return json_false();
    if (take_word(r, "null"))
        return json_null();
    return read_number(r);
}

/* One "name": value member of an object at R into OBJ; a nested value
 * is read by NESTED (NULL: scalars only) when NESTED_NAME is the name.
 * Returns 0 or -1 (not taken). */
static int read_member(struct rd *r, json_t *obj, const char *nested_name,
                       json_t *(*nested)(struct rd *))
{
    const char *s;
    size_t n;
    int escaped;
    json_t *v;

    if (scan_string(r, &s, &n, &escaped) < 0 || escaped || !take(r, ':'))
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
static json_t *read_object(struct rd *r, const char *nested_name, json_t *(*nested)(struct rd *))
{
    json_t *obj;

    if (!take(r, '{') || !(obj = json_object()))
        return NULL;
    if (take(r, '}'))
        return obj;
    do {
        if (read_member(r, obj, nested_name, nested) < 0)
            goto fail;
    } while (take(r, ','));
    if (take(r, '}'))
        return obj;
fail:
    json_decref(obj);
    return NULL;
}

/* The "value" array of flat objects (entities) at R: a new reference or
 * NULL. */
static json_t *read_entities(struct rd *r)
{
    json_t *arr, *e;

    if (!take(r, '[') || !(arr = json_array()))
        return NULL;
    if (take(r, ']'))
        return arr;
    do {
        if (!(e = read_object(r, NULL, NULL)) || json_array_append_new(arr, e) < 0)
            goto fail;
    } while (take(r, ','));
    if (take(r, ']'))
        return arr;
fail:
    json_decref(arr);
    return NULL;
}

/* See pageread.h. */
json_t *page_read(const char *body, size_t len, json_error_t *jerr)
{
    struct rd r = { body, body + len };
    json_t *root = body ? read_object(&r, "value", read_entities) : NULL;

    if (root) {
        skip_ws(&r);
        if (r.p == r.end)
            return root;
        json_decref(root); /* text after it: jansson says what */
    }
    return json_loadb(body ? body : "", body ? len : 0, 0, jerr);
}
