/* entity/render.c - wire JSON -> the canonical, lossless file text (entity_render). */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "util/util.h"
#include "entity/entity.h"
#include "entity/entity_i.h"

/* V in decimal at OUT (room for 21 bytes and the NUL), as "%lld" writes it,
 * without printf's machinery (an Int32 or Int64 in every other entity);
 * returns its length. */
static size_t int_text(long long v, char *out)
{
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    char rev[24];
    size_t n = 0, k = 0;

    do {
        rev[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        out[k++] = '-';
    while (n)
        out[k++] = rev[--n];
    out[k] = '\0';
    return k;
}

/* Feed property P, typed, to digest context MD: name, type and value in a
 * form that no other (name, type, value) shares. Strings, and the values
 * sent as strings (DateTime, Guid, Binary), as the service gave them: a
 * DateTime with an offset differs from its UTC form, so saving the UTC form
 * repairs it. Returns 1 or 0 (OpenSSL failed). */
static int digest_prop(EVP_MD_CTX *md, const struct prop *p)
{
    char num[64];
    const char *v = num;
    unsigned char type;
    size_t vlen;

    switch (p->type) {
    case EDM_INT32:
    case EDM_INT64:
        int_text(p->i, num);
        break;
    case EDM_DOUBLE:
        snprintf(num, sizeof(num), "%a", isnan(p->d) ? NAN : p->d);
        break;
    case EDM_BOOLEAN:
        v = p->v.kind == SC_TRUE ? "true" : "false";
        break;
    default: /* may hold NUL bytes: its length goes first */
        v = p->v.s;
    }
    if (!v)
        return 0;
    vlen = v == num || p->type == EDM_BOOLEAN ? strlen(v) : p->v.n;
    type = (unsigned char)p->type;
    return EVP_DigestUpdate(md, p->name, strlen(p->name) + 1) == 1 &&
        EVP_DigestUpdate(md, &type, 1) == 1 && EVP_DigestUpdate(md, &vlen, sizeof(vlen)) == 1 &&
        EVP_DigestUpdate(md, v, vlen) == 1;
}

/* Put in OUT the digest of the N typed properties PROPS (sorted by name).
 * Returns 0 or -EIO (OpenSSL failed). */
static int digest_props(const struct prop *props, size_t n, unsigned char out[ENTITY_DIGEST_LEN])
{
    unsigned int len = 0;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;

    for (size_t i = 0; ok && i < n; i++)
        ok = digest_prop(md, &props[i]);
    ok = ok && EVP_DigestFinal_ex(md, out, &len) == 1 && len == ENTITY_DIGEST_LEN;
    EVP_MD_CTX_free(md);
    return ok ? 0 : -EIO;
}

/* See entity.h. */
int entity_wire_digest(const json_t *e, unsigned char out[ENTITY_DIGEST_LEN])
{
    struct entity_error err;
    struct prop *props = NULL;
    const char *bad;
    size_t n = 0;
    int rc = entity_collect_props(e, MODE_WIRE, &props, &n, &bad, &err);

    if (rc == 0)
        rc = digest_props(props, n, out);
    free(props);
    return rc;
}

/* Largest rendered file: a 1 MiB entity, even with every byte escaped
 * (\u00XX) and every property annotated, stays well below it. */
#define ENTITY_RENDER_MAX (16 * 1024 * 1024)
/* json_dump_callback's sink: append to the struct buf DATA. */
static int add_dumped(const char *bytes, size_t size, void *data)
{
    return buf_add(data, bytes, size) < 0 ? -1 : 0;
}

/* Append JSON value V as jansson writes it. For a string that is the
 * canonical form: '"', '\\', \b \f \n \r \t escaped, other bytes below
 * 0x20 as \u00XX, everything else (UTF-8) raw. (Doubles are written by
 * entity_format_double: jansson's "%.17g" is not the shortest form.) A
 * failure (ENOMEM) is recorded in SB. */
static void sb_add_json(struct buf *sb, const json_t *v)
{
    if ((!v || json_dump_callback(v, add_dumped, sb, JSON_ENCODE_ANY) < 0) && !sb->err)
        sb->err = -ENOMEM; /* sticky, as a struct buf's own failures are */
}

/* Is S (N bytes) printable ASCII with nothing JSON escapes ('"', '\\')? */
static int plain_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c < 0x20 || c > 0x7E || c == '"' || c == '\\')
            return 0;
    }
    return 1;
}

/* Append the JSON string S (N bytes) + SUFFIX (plain ASCII, may be "") as
 * jansson writes it. Most names and values are plain ASCII, which jansson
 * copies as is between quotes: those are copied here instead of making a
 * jansson string and dumping it, some 15 times an entity (with the other
 * changes of that commit, listing an entity went from 9.9 to 4.7 us:
 * bench/listcost.py); anything else goes through jansson. */
static void sb_add_string(struct buf *sb, const char *s, size_t n, const char *suffix)
{
    size_t slen = strlen(suffix), at = sb->len;
    char text[ANNOTATION_KEY_MAX];
    json_t *str;

    if (plain_ascii(s, n)) { /* one growth for the four pieces */
        if (buf_setlen(sb, at + n + slen + 2) == 0) {
            char *p = sb->ptr + at;

            *p++ = '"';
            memcpy(p, s, n);
            memcpy(p + n, suffix, slen);
            p[n + slen] = '"';
        }
        return;
    }
    if (slen == 0) {
        str = json_stringn_nocheck(s, n);
    } else {
        /* a name with a suffix: names come from jansson (valid UTF-8) and
         * are at most 255 bytes (entity_collect_props), so this fits */
        if (n + slen >= sizeof(text)) {
            if (!sb->err)
                sb->err = -ENOMEM;
            return;
        }
        memcpy(text, s, n);
        memcpy(text + n, suffix, slen);
        str = json_stringn_nocheck(text, n + slen);
    }
    sb_add_json(sb, str);
    json_decref(str);
}

/* Append the string V (a key or a string-typed value). */
static void sb_add_string_value(struct buf *sb, const struct scalar *v)
{
    sb_add_string(sb, v->s, v->n, "");
}

/* How a rendered object is laid out: what opens it, what comes before its
 * first member and between members, after a member's name, and what closes
 * it. Only the whitespace between tokens differs between layouts: every
 * name and value is spelled the same. */
struct piece {
    const char *s;
    size_t n;
};
#define PIECE(lit)           \
    {                        \
        lit, sizeof(lit) - 1 \
    }
struct layout {
    struct piece open, first, sep, colon, close;
};

/* The file's: two-space indent, one member per line, a trailing newline. */
static const struct layout FILE_LAYOUT = { PIECE("{\n"), PIECE("  "), PIECE(",\n  "), PIECE(": "),
                                           PIECE("\n}\n") };
/* An NDJSON line's: no whitespace between tokens, one newline at its end. */
static const struct layout LINE_LAYOUT = { PIECE("{"), PIECE(""), PIECE(","), PIECE(":"),
                                           PIECE("}\n") };

/* Append piece P of a layout. */
static void sb_piece(struct buf *sb, const struct piece *p)
{
    buf_add(sb, p->s, p->n);
}

/* A rendering under way: the text, its layout, whether a member was added. */
struct out {
    struct buf *sb;
    const struct layout *lay;
    int first;
};

/* Start the member NAME (+ SUFFIX, may be "") of the rendered object: the
 * layout's separator (or what goes before the first), the quoted name and
 * what follows a name. */
static void sb_member(struct out *o, const char *name, const char *suffix)
{
    sb_piece(o->sb, o->first ? &o->lay->first : &o->lay->sep);
    o->first = 0;
    sb_add_string(o->sb, name, strlen(name), suffix);
    sb_piece(o->sb, &o->lay->colon);
}

/* Append the value of P as file text, and its annotation line if its type
 * is not String, Int32 or Boolean. */
static void render_prop(struct out *o, const struct prop *p)
{
    struct buf *sb = o->sb;
    const char *type;
    char num[32];
    size_t n;

    sb_member(o, p->name, "");
    switch (p->type) {
    case EDM_STRING:
    case EDM_GUID:
    case EDM_BINARY:
        sb_add_string_value(sb, &p->v);
        break;
    case EDM_DATETIME: /* canonical: digits and "-:.TZ", nothing to escape */
        sb_add_string(sb, p->dt, strlen(p->dt), "");
        break;
    case EDM_BOOLEAN:
        buf_adds(sb, p->v.kind == SC_TRUE ? "true" : "false");
        break;
    case EDM_INT32:
        buf_add(sb, num, int_text(p->i, num));
        break;
    case EDM_INT64: /* a string: JSON numbers lose digits past 2^53 */
        num[0] = '"';
        n = int_text(p->i, num + 1) + 1;
        num[n++] = '"';
        buf_add(sb, num, n);
        break;
    case EDM_DOUBLE:
        if (isnan(p->d))
            buf_adds(sb, "\"NaN\"");
        else if (isinf(p->d))
            buf_adds(sb, p->d > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        else {
            entity_format_double(p->d, num);
            buf_adds(sb, num);
        }
        break;
    }
    if (p->type == EDM_STRING || p->type == EDM_INT32 || p->type == EDM_BOOLEAN)
        return;
    sb_member(o, p->name, TYPE_SUFFIX);
    type = edm_type_name(p->type);
    sb_add_string(sb, type, strlen(type), "");
}

/* Render into O the entity of keys PK and RK (strings), Timestamp TS (a
 * string; NULL: none) and the N properties PROPS (sorted by name). */
static void render_members(struct out *o, const struct scalar *pk, const struct scalar *rk,
                           const struct scalar *ts, const struct prop *props, size_t n)
{
    sb_piece(o->sb, &o->lay->open);
    sb_member(o, "PartitionKey", "");
    sb_add_string_value(o->sb, pk);
    sb_member(o, "RowKey", "");
    sb_add_string_value(o->sb, rk);
    if (ts) {
        sb_member(o, "Timestamp", "");
        sb_add_string_value(o->sb, ts);
    }
    for (size_t i = 0; i < n; i++)
        render_prop(o, &props[i]);
    sb_piece(o->sb, &o->lay->close);
}

/* Render WIRE into O (its layout) and, when DIGEST is not NULL, its digest
 * (*HAS_DIGEST: made or not). Returns 0, or -EINVAL/-ENOMEM with ERR filled
 * (O's text then holds part of the entity, or O's buffer has failed). */
static int render(const json_t *wire, struct out *o, unsigned char digest[ENTITY_DIGEST_LEN],
                  int *has_digest, struct entity_error *err)
{
    struct scalar pk, rk, ts;
    struct prop *props = NULL;
    const char *bad_key;
    size_t n = 0;
    int rc;

    entity_clear_err(err);
    if (!json_is_object(wire))
        return entity_set_err(err, -EINVAL, NULL, "the entity is not a JSON object");
    scalar_of_json(json_object_get(wire, "PartitionKey"), &pk);
    scalar_of_json(json_object_get(wire, "RowKey"), &rk);
    scalar_of_json(json_object_get(wire, "Timestamp"), &ts);
    if (pk.kind != SC_STRING || rk.kind != SC_STRING)
        return entity_set_err(err, -EINVAL, NULL,
                              "the entity lacks a string PartitionKey or RowKey");
    if (ts.kind != SC_NULL && ts.kind != SC_STRING)
        return entity_set_err(err, -EINVAL, "Timestamp", "the entity's Timestamp is not a string");
    rc = entity_collect_props(wire, MODE_WIRE, &props, &n, &bad_key, err);
    if (rc < 0)
        return rc;
    render_members(o, &pk, &rk, ts.kind == SC_STRING ? &ts : NULL, props, n);
    if (digest)
        *has_digest = digest_props(props, n, digest) == 0;
    free(props);
    return 0;
}

/* The end of a file's rendering into SB that returned RC: its text into
 * *OUT and *OUT_LEN, or SB's failure said. */
static int file_end(struct buf *sb, int rc, char **out, size_t *out_len, struct entity_error *err)
{
    if (rc < 0) {
        buf_free(sb);
        return rc;
    }
    rc = sb->err;
    if (!(*out = buf_take(sb, out_len)))
        return rc == -EFBIG ? entity_set_err(err, rc, NULL, "the rendered entity is over %d bytes",
                                             ENTITY_RENDER_MAX) :
                              entity_set_err(err, -ENOMEM, NULL, "out of memory");
    return 0;
}

/* entity_render_digest: see entity.h. Also -EINVAL for a Timestamp that is
 * neither a string nor null, and for a property name over 255 bytes. */
int entity_render_digest(const json_t *wire, char **out, size_t *out_len,
                         unsigned char digest[ENTITY_DIGEST_LEN], int *has_digest,
                         struct entity_error *err)
{
    struct buf sb = BUF_INIT(ENTITY_RENDER_MAX);
    struct out o = { &sb, &FILE_LAYOUT, 1 };

    *out = NULL;
    *out_len = 0;
    return file_end(&sb, render(wire, &o, digest, has_digest, err), out, out_len, err);
}

/* See entity_i.h. */
int entity_file_of(const struct scalar *pk, const struct scalar *rk, const struct scalar *ts,
                   const struct prop *props, size_t n, char **out, size_t *out_len,
                   unsigned char digest[ENTITY_DIGEST_LEN], int *has_digest,
                   struct entity_error *err)
{
    struct buf sb = BUF_INIT(ENTITY_RENDER_MAX);
    struct out o = { &sb, &FILE_LAYOUT, 1 };

    *out = NULL;
    *out_len = 0;
    entity_clear_err(err);
    render_members(&o, pk, rk, ts, props, n);
    if (digest)
        *has_digest = digest_props(props, n, digest) == 0;
    return file_end(&sb, 0, out, out_len, err);
}

/* See entity.h. */
int entity_render(const json_t *wire, char **out, size_t *out_len, struct entity_error *err)
{
    return entity_render_digest(wire, out, out_len, NULL, NULL, err);
}

/* The end of a line's rendering into LINE (LEN bytes long before it) that
 * returned RC: LINE's failure becomes the line's, and a failed line is
 * taken out. */
static int line_end(struct buf *line, size_t len, int rc, struct entity_error *err)
{
    if (rc == 0 && line->err)
        rc = line->err == -EFBIG ?
            entity_set_err(err, -EFBIG, NULL, "the line does not fit its buffer") :
            entity_set_err(err, -ENOMEM, NULL, "out of memory");
    if (rc < 0) { /* as it was: a later, smaller entity may still fit */
        buf_clearerr(line);
        (void)buf_setlen(line, len);
    }
    return rc;
}

/* See entity.h. */
int entity_render_line(const json_t *wire, struct buf *line, struct entity_error *err)
{
    struct out o = { line, &LINE_LAYOUT, 1 };
    size_t len = line->len;
    int rc;

    if (line->err) /* a failure from before: nothing of this entity is added */
        return entity_set_err(err, line->err, NULL, "the output has failed");
    rc = render(wire, &o, NULL, NULL, err);
    return line_end(line, len, rc, err);
}

/* See entity_i.h. */
int entity_line_of(struct buf *line, const struct scalar *pk, const struct scalar *rk,
                   const struct scalar *ts, const struct prop *props, size_t n,
                   struct entity_error *err)
{
    struct out o = { line, &LINE_LAYOUT, 1 };
    size_t len = line->len;

    entity_clear_err(err);
    if (line->err)
        return entity_set_err(err, line->err, NULL, "the output has failed");
    render_members(&o, pk, rk, ts, props, n);
    return line_end(line, len, 0, err);
}
