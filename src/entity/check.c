/* entity/check.c - Edm types, error details, a property's type and the
 * check of its value (entity_i.h), on a scalar taken from jansson (a wire
 * or file object) or found in text (entity/textline.c): one set of rules
 * for both; and the service's limits on a whole entity (entity.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "entity/entity_i.h"
#include "names/names.h"
#include "util/util.h"

static const char *const edm_names[] = {
    [EDM_STRING] = "Edm.String", [EDM_INT32] = "Edm.Int32",     [EDM_INT64] = "Edm.Int64",
    [EDM_DOUBLE] = "Edm.Double", [EDM_BOOLEAN] = "Edm.Boolean", [EDM_DATETIME] = "Edm.DateTime",
    [EDM_GUID] = "Edm.Guid",     [EDM_BINARY] = "Edm.Binary",
};
#define EDM_COUNT (sizeof(edm_names) / sizeof(edm_names[0]))

/* See entity.h. */
const struct entity_limits entity_limits_storage = {
    .key_bytes = 1024,
    .entity_bytes = ENTITY_MAX_BYTES,
    .properties = ENTITY_MAX_PROPERTIES,
    .name_chars = ENTITY_MAX_PROPNAME,
    .string_bytes = ENTITY_MAX_STRING_BYTES,
    .binary_bytes = ENTITY_MAX_BINARY_BYTES,
};

/* See entity.h. */
const struct entity_limits entity_limits_cosmos = {
    .key_bytes = SIZE_MAX,
    .entity_bytes = 2 * 1024 * 1024,
    .properties = ENTITY_MAX_PROPERTIES,
    .name_chars = ENTITY_MAX_PROPNAME,
    .string_bytes = ENTITY_MAX_STRING_BYTES,
    .binary_bytes = ENTITY_MAX_BINARY_BYTES,
};

/* edm_type_name: see entity.h. */
const char *edm_type_name(enum edm_type t)
{
    return (size_t)t < EDM_COUNT ? edm_names[t] : "Edm.Unknown";
}

/* edm_type_parse: see entity.h. */
int edm_type_parse(const char *name, enum edm_type *out)
{
    for (size_t i = 0; i < EDM_COUNT; i++) {
        if (strcmp(name, edm_names[i]) == 0) {
            *out = (enum edm_type)i;
            return 0;
        }
    }
    return -EINVAL;
}

/* Fill ERR (which may be NULL) with PROP and a formatted reason; return RC. */
int entity_set_err(struct entity_error *err, int rc, const char *prop, const char *fmt, ...)
{
    va_list ap;

    if (!err)
        return rc;
    snprintf(err->property, sizeof(err->property), "%s", prop ? prop : "");
    va_start(ap, fmt);
    vsnprintf(err->text, sizeof(err->text), fmt, ap);
    va_end(ap);
    return rc;
}

void entity_clear_err(struct entity_error *err)
{
    if (err)
        memset(err, 0, sizeof(*err));
}

/* See entity_i.h. */
void scalar_of_json(const json_t *v, struct scalar *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = SC_NULL;
    if (!v)
        return;
    switch (json_typeof(v)) {
    case JSON_STRING:
        out->kind = SC_STRING;
        out->s = json_string_value(v);
        out->n = json_string_length(v);
        break;
    case JSON_INTEGER:
        out->kind = SC_INTEGER;
        out->i = json_integer_value(v);
        break;
    case JSON_REAL:
        out->kind = SC_REAL;
        out->d = json_real_value(v);
        break;
    case JSON_TRUE:
        out->kind = SC_TRUE;
        break;
    case JSON_FALSE:
        out->kind = SC_FALSE;
        break;
    case JSON_NULL:
        out->kind = SC_NULL;
        break;
    default:
        out->kind = SC_NESTED;
    }
}

/* Is the string V exactly LIT (embedded NULs taken into account)? */
static int str_is(const struct scalar *v, const char *lit)
{
    return v->kind == SC_STRING && v->n == strlen(lit) && memcmp(v->s, lit, v->n) == 0;
}

/* Parse the N bytes of S (NUL after them) as a decimal Int64 ("-" and
 * digits only). */
static int parse_int64(const char *s, size_t n, long long *out)
{
    size_t i = (n > 0 && s[0] == '-') ? 1 : 0;

    if (i == n || n > 64)
        return -EINVAL;
    for (size_t k = i; k < n; k++)
        if (s[k] < '0' || s[k] > '9')
            return -EINVAL;
    errno = 0;
    *out = strtoll(s, NULL, 10);
    return errno == ERANGE ? -EINVAL : 0;
}

static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Is S (N bytes) a GUID in 8-4-4-4-12 hex form? */
static int is_guid(const char *s, size_t n)
{
    if (n != 36)
        return 0;
    for (size_t i = 0; i < n; i++) {
        int dash = (i == 8 || i == 13 || i == 18 || i == 23);

        if (dash ? s[i] != '-' : !is_hex(s[i]))
            return 0;
    }
    return 1;
}

/* Check that S (N bytes, NUL after them) is canonical standard base64 (the
 * strict rules of b64_decode). Returns 0 with *decoded = the decoded size,
 * -EINVAL, or -ENOMEM. */
static int b64_check(const char *s, size_t n, size_t *decoded)
{
    unsigned char *bytes = NULL;
    int rc;

    if (strlen(s) != n)
        return -EINVAL; /* an embedded NUL */
    rc = b64_decode(s, &bytes, decoded);
    free(bytes);
    return rc == -ENOMEM ? rc : rc < 0 ? -EINVAL : 0;
}

/* Size of the UTF-8 string S (N bytes) in UTF-16 code units. */
static size_t utf16_units(const char *s, size_t n)
{
    size_t units = 0;

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if ((c & 0xC0) != 0x80)
            units += (c >= 0xF0) ? 2 : 1;
    }
    return units;
}

/* Describe V for an error message: a short printable excerpt of a string
 * (quoted, control bytes as '?', cut at 40 bytes), or the JSON kind. */
static void describe_value(const struct scalar *v, char *out, size_t size)
{
    char tmp[64];
    size_t n, k;

    switch (v->kind) {
    case SC_STRING:
        n = v->n;
        k = n < 40 ? n : 40;
        while (k < n && k > 0 && ((unsigned char)v->s[k] & 0xC0) == 0x80)
            k--; /* do not cut a UTF-8 sequence */
        for (size_t i = 0; i < k; i++)
            tmp[i] = ((unsigned char)v->s[i] < 0x20) ? '?' : v->s[i];
        tmp[k] = '\0';
        snprintf(out, size, "\"%s%s\"", tmp, k < n ? "..." : "");
        break;
    case SC_INTEGER:
        snprintf(out, size, "%lld", v->i);
        break;
    case SC_REAL:
        entity_format_double(v->d, tmp);
        snprintf(out, size, "%s", tmp);
        break;
    case SC_TRUE:
    case SC_FALSE:
        snprintf(out, size, "%s", v->kind == SC_TRUE ? "true" : "false");
        break;
    default:
        snprintf(out, size, "of the wrong kind");
    }
}

/* The type of property P (its value P->v, not null): its annotation ANN if
 * there is one (NULL: none), else inferred from the JSON kind (string:
 * String, boolean: Boolean, integer: Int32 or, outside its range, Int64,
 * real: Double). Returns 0, or -EINVAL (err filled) for a nested value, a
 * bad annotation or a name too long to annotate. */
static int prop_type(struct prop *p, const struct scalar *ann, struct entity_error *err)
{
    const struct scalar *v = &p->v;

    if (v->kind == SC_NESTED)
        return entity_set_err(err, -EINVAL, p->name,
                              "property '%.60s': nested objects and arrays "
                              "are not supported",
                              p->name);
    if (strlen(p->name) > ENTITY_MAX_PROPNAME)
        return entity_set_err(err, -EINVAL, p->name,
                              "property name '%.40s...' is longer than %d characters", p->name,
                              ENTITY_MAX_PROPNAME);
    if (ann) {
        if (ann->kind != SC_STRING)
            return entity_set_err(err, -EINVAL, p->name,
                                  "property '%.60s': its type annotation must be "
                                  "a string such as \"Edm.Int64\"",
                                  p->name);
        if (edm_type_parse(ann->s, &p->type) < 0)
            return entity_set_err(err, -EINVAL, p->name,
                                  "property '%.60s': \"%.40s\" is not an Edm type "
                                  "name",
                                  p->name, ann->s);
        return 0;
    }
    switch (v->kind) {
    case SC_STRING:
        p->type = EDM_STRING;
        return 0;
    case SC_TRUE:
    case SC_FALSE:
        p->type = EDM_BOOLEAN;
        return 0;
    case SC_INTEGER:
        p->type = v->i >= INT32_MIN && v->i <= INT32_MAX ? EDM_INT32 : EDM_INT64;
        return 0;
    default:
        p->type = EDM_DOUBLE; /* SC_REAL: nested values and null never get here */
        return 0;
    }
}

/* Check the DateTime P->v and put its canonical form in P->dt.
 * Returns 0, or -EINVAL with err filled (what is wrong, what is expected). */
static int check_datetime(struct prop *p, struct entity_error *err)
{
    const struct scalar *v = &p->v;
    const char *why = "not a string";
    char desc[96];

    if (v->kind == SC_STRING) {
        why = "a NUL character";
        if (strlen(v->s) == v->n && entity_datetime_canonical(v->s, p->dt, &why) == 0)
            return 0;
    }
    describe_value(v, desc, sizeof(desc));
    return entity_set_err(err, -EINVAL, p->name,
                          "property '%.40s': value %s is not an Edm.DateTime "
                          "(%s); expected YYYY-MM-DDThh:mm:ss[.fffffff] then Z or +hh:mm",
                          p->name, desc, why);
}

/* Check P->v against P->type and fill P->i / P->d / P->dt. Values are
 * accepted leniently where unambiguous (an integer for Int64 or Double);
 * with LIMITS, String and Binary sizes are checked too (-EFBIG). Returns 0,
 * -EINVAL or -EFBIG with err filled. */
static int prop_value(struct prop *p, int limits, struct entity_error *err)
{
    const struct scalar *v = &p->v;
    const char *s = v->kind == SC_STRING ? v->s : NULL;
    size_t n = v->n, size;
    char desc[96];
    int good = 0;

    switch (p->type) {
    case EDM_STRING:
        good = s != NULL;
        if (good && limits && utf16_units(s, n) * 2 > ENTITY_MAX_STRING_BYTES)
            return entity_set_err(err, -EFBIG, p->name,
                                  "property '%.60s': string is longer than "
                                  "64 KiB (UTF-16)",
                                  p->name);
        break;
    case EDM_BOOLEAN:
        good = v->kind == SC_TRUE || v->kind == SC_FALSE;
        break;
    case EDM_INT32:
        good = v->kind == SC_INTEGER && v->i >= INT32_MIN && v->i <= INT32_MAX;
        p->i = good ? v->i : 0;
        break;
    case EDM_INT64:
        if (v->kind == SC_INTEGER) {
            p->i = v->i;
            good = 1;
        } else {
            good = s && parse_int64(s, n, &p->i) == 0;
        }
        break;
    case EDM_DOUBLE:
        good = 1;
        if (v->kind == SC_REAL)
            p->d = v->d;
        else if (v->kind == SC_INTEGER)
            p->d = (double)v->i;
        else if (str_is(v, "NaN"))
            p->d = NAN;
        else if (str_is(v, "Infinity"))
            p->d = INFINITY;
        else if (str_is(v, "-Infinity"))
            p->d = -INFINITY;
        else
            good = 0;
        break;
    case EDM_DATETIME:
        return check_datetime(p, err);
    case EDM_GUID:
        good = s && is_guid(s, n);
        break;
    case EDM_BINARY:
        good = s && b64_check(s, n, &size) == 0;
        if (good && limits && size > ENTITY_MAX_BINARY_BYTES)
            return entity_set_err(err, -EFBIG, p->name,
                                  "property '%.60s': binary value is larger "
                                  "than 64 KiB",
                                  p->name);
        break;
    }
    if (good)
        return 0;
    describe_value(v, desc, sizeof(desc));
    return entity_set_err(err, -EINVAL, p->name, "property '%.60s': value %s is not an %s", p->name,
                          desc, edm_type_name(p->type));
}

/* See entity_i.h. */
int entity_prop_check(struct prop *p, const struct scalar *ann, int limits,
                      struct entity_error *err)
{
    int rc = prop_type(p, ann, err);

    return rc < 0 ? rc : prop_value(p, limits, err);
}

/* See entity_i.h. */
enum member_role entity_member_role(const char *name, size_t n)
{
    if ((n >= 6 && memcmp(name, "odata.", 6) == 0) ||
        (n == 12 && memcmp(name, "PartitionKey", 12) == 0) ||
        (n == 6 && memcmp(name, "RowKey", 6) == 0) || (n == 9 && memcmp(name, "Timestamp", 9) == 0))
        return MEMBER_SKIP;
    /* "@odata.type" alone annotates the name "": an annotation, never a
     * property (rendered, it would be the annotation of a property "" a
     * second time) */
    if (n >= TYPE_SUFFIX_LEN &&
        memcmp(name + n - TYPE_SUFFIX_LEN, TYPE_SUFFIX, TYPE_SUFFIX_LEN) == 0)
        return MEMBER_ANNOTATION;
    return MEMBER_PROP;
}

/* Check key KEY (which: "PartitionKey" or "RowKey") against LIM; add its
 * size to *SIZE. */
static int key_check(const struct entity_limits *lim, const char *which, const char *key,
                     size_t *size, struct entity_error *err)
{
    size_t n = strlen(key), bytes = utf16_units(key, n) * 2;
    const char *problem = keycodec_key_problem(key, n);

    if (problem)
        return entity_set_err(err, -EINVAL, which, "a key the service refuses: %s", problem);
    if (bytes > lim->key_bytes)
        return entity_set_err(err, -EINVAL, which,
                              "a key the service refuses: the %s is %zu bytes in UTF-16 "
                              "(%zu characters), more than the %zu it takes",
                              which, bytes, bytes / 2, lim->key_bytes);
    *size += bytes;
    return 0;
}

/* What the value V of property NAME (type ANN, NULL: its JSON kind's)
 * counts for in the service's entity size (entity.h); -1 (ERR filled) when
 * it is over LIM's limit for its kind. */
static long long value_size(const struct entity_limits *lim, const char *name, const json_t *v,
                            const char *ann, struct entity_error *err)
{
    const char *s = json_string_value(v);
    size_t n = s ? json_string_length(v) : 0, bytes;

    if (!ann && json_is_string(v))
        ann = "Edm.String";
    if (!ann)
        return json_is_boolean(v) ? 1 : json_is_real(v) ? 8 : 4;
    if (strcmp(ann, "Edm.String") == 0) {
        bytes = utf16_units(s ? s : "", n) * 2;
        if (bytes > lim->string_bytes)
            return entity_set_err(err, -1, name,
                                  "property '%.60s': string is %zu bytes in UTF-16, more "
                                  "than the %zu the service takes",
                                  name, bytes, lim->string_bytes);
        return (long long)bytes + 4;
    }
    if (strcmp(ann, "Edm.Binary") == 0) { /* canonical base64: 3 bytes in 4 */
        bytes = n / 4 * 3 - (n > 0 && s[n - 1] == '=') - (n > 1 && s[n - 2] == '=');
        if (bytes > lim->binary_bytes)
            return entity_set_err(err, -1, name,
                                  "property '%.60s': binary value is %zu bytes, more than "
                                  "the %zu the service takes",
                                  name, bytes, lim->binary_bytes);
        return (long long)bytes + 4;
    }
    if (strcmp(ann, "Edm.Guid") == 0)
        return 16;
    if (strcmp(ann, "Edm.Boolean") == 0)
        return 1;
    if (strcmp(ann, "Edm.Int32") == 0)
        return 4;
    return 8; /* Int64, Double, DateTime */
}

/* See entity.h. */
int entity_check_limits(const struct entity_limits *lim, const json_t *wire, const char *pk,
                        const char *rk, struct entity_error *err)
{
    char ann_key[4 * ENTITY_MAX_PROPNAME + sizeof(TYPE_SUFFIX)]; /* a UTF-8 name's bytes */
    size_t size = 4, props = 0;
    const char *name;
    json_t *v;
    int rc;

    entity_clear_err(err);
    if ((pk && (rc = key_check(lim, "PartitionKey", pk, &size, err)) < 0) ||
        (rk && (rc = key_check(lim, "RowKey", rk, &size, err)) < 0))
        return rc;
    json_object_foreach ((json_t *)wire, name, v) {
        size_t len = strlen(name), chars = utf16_units(name, len);
        long long value;

        if (entity_member_role(name, len) != MEMBER_PROP || json_is_null(v))
            continue;
        if (chars > lim->name_chars)
            return entity_set_err(err, -EINVAL, name,
                                  "property name '%.40s...' is longer than %zu characters", name,
                                  lim->name_chars);
        snprintf(ann_key, sizeof(ann_key), "%s%s", name, TYPE_SUFFIX);
        value = value_size(lim, name, v, json_string_value(json_object_get(wire, ann_key)), err);
        if (value < 0)
            return -EFBIG;
        props++;
        size += 8 + chars * 2 + (size_t)value;
    }
    if (props > lim->properties)
        return entity_set_err(err, -EINVAL, NULL,
                              "the entity has %zu properties, more than the %zu allowed", props,
                              lim->properties);
    if (size > lim->entity_bytes)
        return entity_set_err(err, -EFBIG, NULL,
                              "the entity is %zu bytes as the service counts it, more than "
                              "the %zu it takes",
                              size, lim->entity_bytes);
    return 0;
}
