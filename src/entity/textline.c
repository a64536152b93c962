/* entity/textline.c - an entity's NDJSON line (entity_render_line_text) or
 * file text (entity_render_text) rendered from its JSON text, without a
 * jansson tree.
 *
 * Why: an export renders every entity of a table once, and a listing every
 * entity it shows, and the tree of a page (an object, a hash table and two
 * allocations a member) cost more than half of its CPU
 * (doc/PERFORMANCE.md, "Export streams", "Scale"). Here the
 * members are found as tokens (util/jsontok.c), their names and strings
 * copied once into one scratch buffer (a string with escapes or UTF-8
 * decoded by jansson first), and typed, checked and rendered by the very
 * code that does it for a tree (entity_prop_check, entity_line_of). Taken
 * here: names without escapes or bytes past 0x7F, strings, integers of up
 * to 18 digits, reals jansson reads, literals, every member name once,
 * every value good. Anything else (an escape in a name, nesting, a
 * duplicate name, a value its type refuses) is read by json_loadb and
 * rendered from the tree: the line or file text, or the error, is
 * entity_render_line's or entity_render_digest's in every case
 * (tests/unit/test_textline.c and the render_text fuzz target compare). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "entity/entity_i.h"
#include "util/util.h"

/* Entities of more members than this are read as trees. */
#define TEXT_MEMBERS_MAX 512
/* Members held on the stack; more are allocated. */
#define TEXT_MEMBERS_STACK 64
/* Text up to this long has its scratch on the stack. */
#define TEXT_SCRATCH_STACK 4096

/* A member found in the text: its name (NUL-terminated, in the scratch)
 * and its value (a string's bytes in the scratch, NUL after them). */
struct member {
    const char *name;
    struct scalar v;
};

/* Copy the N bytes at S to *AT in the scratch, a NUL after them; returns
 * the copy. */
static const char *scratch_copy(char **at, const char *s, size_t n)
{
    char *copy = *at;

    memcpy(copy, s, n);
    copy[n] = '\0';
    *at += n + 1;
    return copy;
}

/* The number token at R into V: an integer of up to 18 digits, or a real
 * as jansson reads it (strtod; an overflow is jansson's error). Returns 0,
 * or 1: not taken here. */
static int read_number(struct jtok *r, struct scalar *v)
{
    const char *s = r->p;
    char text[64];
    int integral;
    size_t n = jtok_number(r, &integral);

    if (n == 0 || n >= sizeof(text))
        return 1;
    r->p += n;
    if (integral) {
        long long i = 0;

        if (n - (s[0] == '-') > 18)
            return 1;
        for (size_t k = s[0] == '-'; k < n; k++)
            i = i * 10 + (s[k] - '0');
        v->kind = SC_INTEGER;
        v->i = s[0] == '-' ? -i : i;
        return 0;
    }
    memcpy(text, s, n);
    text[n] = '\0';
    v->kind = SC_REAL;
    v->d = strtod(text, NULL);
    return isinf(v->d) ? 1 : 0;
}

/* Decode the N bytes at S, a string token's with escapes, into *AT (a NUL
 * after them), as jansson decodes them, when they are ASCII and their
 * escapes are of one character (\" \\ \/ \b \f \n \r \t: the
 * service's ETags are full of \"). Returns the decoded length, or -1:
 * not done here (\u, a byte past 0x7F: jansson's). */
static long decode_simple(const char *s, size_t n, char *at)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        const char *e;

        if ((unsigned char)s[i] >= 0x80)
            return -1;
        if (s[i] != '\\') {
            at[k++] = s[i];
            continue;
        }
        if (++i == n || !(e = memchr(from, s[i], sizeof(from) - 1)))
            return -1;
        at[k++] = to[e - from];
    }
    at[k] = '\0';
    return (long)k;
}

/* The string token at R into V, decoded, in *AT. One without escapes or
 * bytes past 0x7F is copied, one with simple escapes decoded here, any
 * other read by jansson (its escapes and UTF-8 checked as in a tree).
 * Decoded, a string is no longer than its token. Returns 0, or 1: not
 * taken here (jansson refused it). */
static int read_string(struct jtok *r, struct scalar *v, char **at)
{
    const char *s;
    size_t n;
    long k;
    int flags;
    json_t *str;

    if (jtok_string(r, &s, &n, &flags) < 0)
        return 1;
    v->kind = SC_STRING;
    if (!flags) {
        v->s = scratch_copy(at, s, n);
        v->n = n;
        return 0;
    }
    if (!(flags & JTOK_NONASCII) && (k = decode_simple(s, n, *at)) >= 0) {
        v->s = *at;
        v->n = (size_t)k;
        *at += k + 1;
        return 0;
    }
    if (!(str = json_loadb(s - 1, n + 2, JSON_DECODE_ANY, NULL)))
        return 1;
    v->n = json_string_length(str);
    v->s = scratch_copy(at, json_string_value(str), v->n);
    json_decref(str);
    return 0;
}

/* The value at R into V (strings decoded into *AT). Returns 0, or 1: not
 * taken here. */
static int read_value(struct jtok *r, struct scalar *v, char **at)
{
    memset(v, 0, sizeof(*v));
    jtok_ws(r);
    if (r->p < r->end && *r->p == '"')
        return read_string(r, v, at);
    if (jtok_word(r, "true"))
        v->kind = SC_TRUE;
    else if (jtok_word(r, "false"))
        v->kind = SC_FALSE;
    else if (jtok_word(r, "null"))
        v->kind = SC_NULL;
    else
        return read_number(r, v);
    return 0;
}

/* The members of the object TEXT (LEN bytes) into M (room for MAX), names
 * and strings copied into SCRATCH (LEN + 1 bytes). Returns how many, -1:
 * not taken here, or -2: more than MAX. */
static int read_members(const char *text, size_t len, struct member *m, int max, char *scratch)
{
    struct jtok r = { text, text + len };
    char *at = scratch;
    const char *s;
    size_t n;
    int count = 0, flags;

    if (!jtok_take(&r, '{'))
        return -1;
    if (jtok_take(&r, '}'))
        goto end;
    do {
        if (count == max)
            return -2;
        if (jtok_string(&r, &s, &n, &flags) < 0 || flags || !jtok_take(&r, ':'))
            return -1;
        m[count].name = scratch_copy(&at, s, n);
        if (read_value(&r, &m[count].v, &at) != 0)
            return -1;
        count++;
    } while (jtok_take(&r, ','));
    if (!jtok_take(&r, '}'))
        return -1;
end:
    jtok_ws(&r);
    return r.p == r.end ? count : -1;
}

/* Sort the N members M by name (byte order, as strcmp). Entities come
 * with few members, mostly in order: an insertion sort. */
static void sort_members(struct member *m, int n)
{
    for (int i = 1; i < n; i++) {
        struct member x = m[i];
        int j = i;

        for (; j > 0 && strcmp(m[j - 1].name, x.name) > 0; j--)
            m[j] = m[j - 1];
        m[j] = x;
    }
}

/* The value of member NAME among the N sorted members M, or NULL. */
static const struct scalar *find(const struct member *m, int n, const char *name)
{
    int lo = 0, hi = n;

    while (lo < hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(m[mid].name, name);

        if (c == 0)
            return &m[mid].v;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The annotation ("NAME@odata.type", AKEY) of member I (its name LEN
 * bytes) among the N sorted members M: it sorts after it, among the
 * names that start with it (a block right after it), usually the next. */
static const struct scalar *annotation(const struct member *m, int n, int i, size_t len,
                                       const char *akey)
{
    for (int j = i + 1; j < n && strncmp(m[j].name, m[i].name, len) == 0; j++) {
        int c = strcmp(m[j].name, akey);

        if (c == 0)
            return &m[j].v;
        if (c > 0)
            break;
    }
    return NULL;
}

/* The properties of the N sorted members M into PROPS (in name order);
 * *COUNT how many. Returns 0, or 1: not taken here (a name too long to
 * annotate, or a value its type refuses: the tree's way says why). */
static int collect(const struct member *m, int n, struct prop *props, int *count)
{
    char akey[ANNOTATION_KEY_MAX];
    struct entity_error ignored;

    *count = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(m[i].name);
        struct prop *p = &props[*count];

        if (entity_member_role(m[i].name, len) != MEMBER_PROP || m[i].v.kind == SC_NULL)
            continue;
        if (len > ENTITY_MAX_PROPNAME)
            return 1;
        memcpy(akey, m[i].name, len);
        memcpy(akey + len, TYPE_SUFFIX, sizeof(TYPE_SUFFIX));
        memset(p, 0, sizeof(*p));
        p->name = m[i].name;
        p->v = m[i].v;
        if (entity_prop_check(p, annotation(m, n, i, len, akey), 0, &ignored) < 0)
            return 1;
        (*count)++;
    }
    return 0;
}

/* An entity as its text holds it: keys, Timestamp (NULL: none), ETag (NULL:
 * none, or not a string) and properties, all pointing into the reader's
 * scratch; what is made of it. */
struct found {
    const struct scalar *pk, *rk, *ts, *etag;
    const struct prop *props;
    size_t n;
};
typedef int (*found_fn)(const struct found *f, void *ctx, struct entity_error *err);

/* FN of the entity TEXT holds, when all of it is taken here; 1 when it is
 * not (FN not called), 2 when it has more than MAX members. M and PROPS
 * have room for MAX, SCRATCH for LEN + 1 bytes. */
static int read_text(const char *text, size_t len, struct member *m, struct prop *props, int max,
                     char *scratch, found_fn fn, void *ctx, struct entity_error *err)
{
    struct found f;
    int n = read_members(text, len, m, max, scratch), count;

    if (n < 0)
        return n == -2 ? 2 : 1;
    sort_members(m, n);
    for (int i = 1; i < n; i++)
        if (strcmp(m[i - 1].name, m[i].name) == 0)
            return 1; /* the last one counts: jansson's way */
    f.pk = find(m, n, "PartitionKey");
    f.rk = find(m, n, "RowKey");
    f.ts = find(m, n, "Timestamp");
    f.etag = find(m, n, "odata.etag");
    if (!f.pk || f.pk->kind != SC_STRING || !f.rk || f.rk->kind != SC_STRING ||
        (f.ts && f.ts->kind != SC_STRING && f.ts->kind != SC_NULL))
        return 1;
    if (collect(m, n, props, &count) != 0)
        return 1;
    if (f.ts && f.ts->kind != SC_STRING)
        f.ts = NULL;
    if (f.etag && f.etag->kind != SC_STRING)
        f.etag = NULL;
    f.props = props;
    f.n = (size_t)count;
    return fn(&f, ctx, err);
}

/* read_text with room for the members of any entity it takes: FN's
 * answer, 1 when the text is not taken here (FN not called), or -ENOMEM
 * (ERR said). */
static int from_text(const char *text, size_t len, found_fn fn, void *ctx, struct entity_error *err)
{
    struct member mstack[TEXT_MEMBERS_STACK], *m = mstack;
    struct prop pstack[TEXT_MEMBERS_STACK], *props = pstack;
    char sstack[TEXT_SCRATCH_STACK], *scratch = sstack;
    int max = TEXT_MEMBERS_STACK, rc;

    if (len >= sizeof(sstack) && !(scratch = malloc(len + 1)))
        return entity_set_err(err, -ENOMEM, NULL, "out of memory");
    rc = read_text(text, len, m, props, max, scratch, fn, ctx, err);
    if (rc == 2) { /* more members than the stack holds */
        max = TEXT_MEMBERS_MAX;
        m = malloc(sizeof(*m) * (size_t)max);
        props = malloc(sizeof(*props) * (size_t)max);
        rc = m && props ? read_text(text, len, m, props, max, scratch, fn, ctx, err) :
                          entity_set_err(err, -ENOMEM, NULL, "out of memory");
        free(m);
        free(props);
    }
    if (scratch != sstack)
        free(scratch);
    return rc == 2 ? 1 : rc;
}

/* TEXT as a tree, or ERR saying it is not JSON (NULL). */
static json_t *tree_of(const char *text, size_t len, struct entity_error *err)
{
    json_error_t jerr;
    json_t *wire = json_loadb(text, len, 0, &jerr);

    if (!wire)
        entity_set_err(err, -EINVAL, NULL, "the entity is not JSON: %s", jerr.text);
    return wire;
}

static int line_found(const struct found *f, void *ctx, struct entity_error *err)
{
    return entity_line_of(ctx, f->pk, f->rk, f->ts, f->props, f->n, err);
}

/* See entity.h. */
int entity_render_line_text(const char *text, size_t len, struct buf *line,
                            struct entity_error *err)
{
    json_t *wire;
    int rc;

    if (line->err)
        return entity_set_err(err, line->err, NULL, "the output has failed");
    if ((rc = from_text(text, len, line_found, line, err)) != 1)
        return rc;
    if (!(wire = tree_of(text, len, err)))
        return -EINVAL;
    rc = entity_render_line(wire, line, err);
    json_decref(wire);
    return rc;
}

/* Copy the system properties S (NULL: absent) into KEYS, one block.
 * Returns 0, or -ENOMEM (ERR said; KEYS all NULL). */
static int keys_fill(struct entity_keys *keys, const char *const s[4], struct entity_error *err)
{
    const char **slot[4] = { &keys->pk, &keys->rk, &keys->ts, &keys->etag };
    size_t room = 0, at = 0;

    memset(keys, 0, sizeof(*keys));
    for (int k = 0; k < 4; k++)
        room += s[k] ? strlen(s[k]) + 1 : 0;
    if (room == 0)
        return 0;
    if (!(keys->block = malloc(room)))
        return entity_set_err(err, -ENOMEM, NULL, "out of memory");
    for (int k = 0; k < 4; k++) {
        if (s[k]) {
            size_t n = strlen(s[k]) + 1;

            memcpy(keys->block + at, s[k], n);
            *slot[k] = keys->block + at;
            at += n;
        }
    }
    return 0;
}

/* Where entity_render_text puts what it makes. */
struct file_out {
    char **out;
    size_t *out_len;
    unsigned char *digest;
    int *has_digest;
    struct entity_keys *keys;
};

static int file_found(const struct found *f, void *ctx, struct entity_error *err)
{
    struct file_out *o = ctx;
    const char *s[4] = { f->pk->s, f->rk->s, f->ts ? f->ts->s : NULL, f->etag ? f->etag->s : NULL };
    int rc;

    if ((rc = keys_fill(o->keys, s, err)) < 0)
        return rc;
    return entity_file_of(f->pk, f->rk, f->ts, f->props, f->n, o->out, o->out_len, o->digest,
                          o->has_digest, err);
}

/* See entity.h. */
int entity_render_text(const char *text, size_t len, char **out, size_t *out_len,
                       unsigned char digest[ENTITY_DIGEST_LEN], int *has_digest,
                       struct entity_keys *keys, struct entity_error *err)
{
    struct file_out o = { out, out_len, digest, has_digest, keys };
    const char *s[4];
    json_t *wire;
    int rc;

    *out = NULL;
    *out_len = 0;
    memset(keys, 0, sizeof(*keys));
    if ((rc = from_text(text, len, file_found, &o, err)) != 1)
        return rc;
    if (!(wire = tree_of(text, len, err)))
        return -EINVAL;
    s[0] = entity_wire_sys(wire, ENTITY_PK);
    s[1] = entity_wire_sys(wire, ENTITY_RK);
    s[2] = entity_wire_sys(wire, ENTITY_TIMESTAMP);
    s[3] = entity_wire_sys(wire, ENTITY_ETAG);
    if ((rc = keys_fill(keys, s, err)) == 0)
        rc = entity_render_digest(wire, out, out_len, digest, has_digest, err);
    json_decref(wire);
    return rc;
}
