/* entity_i.h - what the entity modules share (entity/parse.c: types, checks and
 * parsing; entity/render.c: the canonical file text); not for other modules. */
#ifndef AZTFS_ENTITY_ENTITY_I_H
#define AZTFS_ENTITY_ENTITY_I_H

#include <jansson.h>

#include "entity/entity.h"

#define TYPE_SUFFIX "@odata.type"
#define TYPE_SUFFIX_LEN (sizeof(TYPE_SUFFIX) - 1)
/* Room for "Name@odata.type" and its NUL, for any valid property name. */
#define ANNOTATION_KEY_MAX (ENTITY_MAX_PROPNAME + sizeof(TYPE_SUFFIX))

/* A scalar JSON value as a property's checks and rendering need it: taken
 * from a jansson value (scalar_of_json) or found in text
 * (entity/textline.c). */
enum scalar_kind { SC_STRING, SC_INTEGER, SC_REAL, SC_TRUE, SC_FALSE, SC_NULL, SC_NESTED };
struct scalar {
    enum scalar_kind kind;
    const char *s; /* SC_STRING: its N bytes (valid UTF-8, may hold NULs), a NUL after them */
    size_t n;
    long long i; /* SC_INTEGER */
    double d;    /* SC_REAL */
};

/* V (borrowed: OUT's string is V's) as a scalar; an object or array is
 * SC_NESTED, NULL (no such member) SC_NULL. */
void scalar_of_json(const json_t *v, struct scalar *out);

/* One custom property, as found in a wire object, in file text or in an
 * entity's text. NAME (NUL-terminated) and V's string are borrowed from
 * where they were found. */
struct prop {
    const char *name;
    struct scalar v;
    enum edm_type type;
    long long i;                   /* Int32 and Int64 value */
    double d;                      /* Double value (may be NaN or infinite) */
    char dt[ENTITY_DATETIME_SIZE]; /* DateTime value, canonical UTC form */
};

/* What a member of an entity object is: a system or "odata.*" member
 * (never a property), a type annotation ("NAME@odata.type"), or a custom
 * property. NAME is N bytes. */
enum member_role { MEMBER_SKIP, MEMBER_ANNOTATION, MEMBER_PROP };
enum member_role entity_member_role(const char *name, size_t n);

/* Type property P (P->name and P->v set; P->v not null) from its annotation
 * ANN (NULL: none; inferred from the JSON kind) and check its value (an
 * integer taken for Int64 or Double), filling P->type and P->i, P->d or
 * P->dt. With LIMITS, String and Binary sizes are checked too. Returns 0,
 * or -EINVAL / -EFBIG with ERR saying why (entity/check.c). */
int entity_prop_check(struct prop *p, const struct scalar *ann, int limits,
                      struct entity_error *err);

/* How entity_collect_props() treats its input. */
enum mode {
    MODE_WIRE, /* entity_render: trust names, no size limits */
    MODE_FILE, /* entity_parse: check names, annotations and limits */
};

/* Fill ERR (which may be NULL) with PROP and a formatted reason; return RC. */
int entity_set_err(struct entity_error *err, int rc, const char *prop, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Zero ERR (which may be NULL). */
void entity_clear_err(struct entity_error *err);

/* The custom properties of wire or file object OBJ, checked as MODE says,
 * sorted by name, in a malloc'd array *OUT of *N (caller frees). Returns 0,
 * or -EINVAL/-EFBIG/-ENOMEM with *BAD_KEY and ERR saying which and why. */
int entity_collect_props(const json_t *obj, enum mode mode, struct prop **out, size_t *n,
                         const char **bad_key, struct entity_error *err);

/* Append to LINE the NDJSON line (entity_render_line) of the entity of
 * keys PK and RK (strings), Timestamp TS (a string; NULL: none) and the N
 * properties PROPS (checked, sorted by name): entity_render_line's own
 * rendering, for a reader that found them elsewhere (entity/textline.c).
 * Returns as entity_render_line. */
struct buf;
int entity_line_of(struct buf *line, const struct scalar *pk, const struct scalar *rk,
                   const struct scalar *ts, const struct prop *props, size_t n,
                   struct entity_error *err);

/* The file text (entity_render_digest) of the entity of keys PK and RK
 * (strings), Timestamp TS (a string; NULL: none) and the N properties
 * PROPS (checked, sorted by name) into malloc'd *OUT of *OUT_LEN, and its
 * digest into DIGEST (may be NULL; *HAS_DIGEST: made or not), for a reader
 * that found them elsewhere (entity/textline.c). Returns as
 * entity_render_digest. */
int entity_file_of(const struct scalar *pk, const struct scalar *rk, const struct scalar *ts,
                   const struct prop *props, size_t n, char **out, size_t *out_len,
                   unsigned char digest[ENTITY_DIGEST_LEN], int *has_digest,
                   struct entity_error *err);

/* Format finite D as the shortest decimal that reads back to the same double
 * (entity/number.c). OUT must hold 32 bytes. */
void entity_format_double(double d, char out[32]);

#endif
