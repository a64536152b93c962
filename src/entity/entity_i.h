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

/* One custom property, as found in a wire object or in file text. NAME and
 * VALUE are borrowed from the JSON object they came from. */
struct prop {
    const char *name;
    const json_t *value;
    enum edm_type type;
    long long i;                   /* Int32 and Int64 value */
    double d;                      /* Double value (may be NaN or infinite) */
    char dt[ENTITY_DATETIME_SIZE]; /* DateTime value, canonical UTC form */
};

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

/* Format finite D as the shortest decimal that reads back to the same double
 * (entity/number.c). OUT must hold 32 bytes. */
void entity_format_double(double d, char out[32]);

#endif
