/* entity/parse.c - entities: Edm types, the checks of property values, and file text -> wire JSON. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "entity/entity.h"
#include "entity/entity_i.h"
#include "util/util.h"

static const char *const edm_names[] = {
    [EDM_STRING] = "Edm.String", [EDM_INT32] = "Edm.Int32",     [EDM_INT64] = "Edm.Int64",
    [EDM_DOUBLE] = "Edm.Double", [EDM_BOOLEAN] = "Edm.Boolean", [EDM_DATETIME] = "Edm.DateTime",
    [EDM_GUID] = "Edm.Guid",     [EDM_BINARY] = "Edm.Binary",
};
#define EDM_COUNT (sizeof(edm_names) / sizeof(edm_names[0]))

static const char *const sys_names[] = {
    [ENTITY_PK] = "PartitionKey",
    [ENTITY_RK] = "RowKey",
    [ENTITY_TIMESTAMP] = "Timestamp",
    [ENTITY_ETAG] = "odata.etag",
};

/* entity_wire_sys: see entity.h. */
const char *entity_wire_sys(const json_t *e, enum entity_sys which)
{
    return json_string_value(json_object_get(e, sys_names[which]));
}

/* entity_wire_set_sys: see entity.h. */
int entity_wire_set_sys(json_t *e, const char *pk, const char *rk, const char *ts, const char *etag)
{
    const char *v[] = {
        [ENTITY_PK] = pk, [ENTITY_RK] = rk, [ENTITY_TIMESTAMP] = ts, [ENTITY_ETAG] = etag
    };

    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        if (v[i] && json_object_set_new(e, sys_names[i], json_string(v[i])) < 0)
            return -ENOMEM;
    }
    return 0;
}

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

/* Is the JSON string V exactly LIT (embedded NULs taken into account)? */
static int str_is(const json_t *v, const char *lit)
{
    return json_string_length(v) == strlen(lit) &&
        memcmp(json_string_value(v), lit, strlen(lit)) == 0;
}

/* Parse the N bytes of S as a decimal Int64 ("-" and digits only). */
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

/* Check that S (N bytes) is canonical standard base64 (the strict rules of
 * b64_decode). Returns 0 with *decoded = the decoded size, -EINVAL,
 * or -ENOMEM. */
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

/* Is NAME a valid property name: a C# identifier in ASCII (letter or '_',
 * then letters, digits, '_'), at most ENTITY_MAX_PROPNAME characters? */
static int valid_name(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n > ENTITY_MAX_PROPNAME)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';

        if (!alpha && (i == 0 || c < '0' || c > '9'))
            return 0;
    }
    return 1;
}

/* Describe V for an error message: a short printable excerpt of a string
 * (quoted, control bytes as '?', cut at 40 bytes), or the JSON kind. */
static void describe_value(const json_t *v, char *out, size_t size)
{
    char tmp[64];
    const char *s;
    size_t n, k;

    switch (json_typeof(v)) {
    case JSON_STRING:
        s = json_string_value(v);
        n = json_string_length(v);
        k = n < 40 ? n : 40;
        while (k < n && k > 0 && ((unsigned char)s[k] & 0xC0) == 0x80)
            k--; /* do not cut a UTF-8 sequence */
        for (size_t i = 0; i < k; i++)
            tmp[i] = ((unsigned char)s[i] < 0x20) ? '?' : s[i];
        tmp[k] = '\0';
        snprintf(out, size, "\"%s%s\"", tmp, k < n ? "..." : "");
        break;
    case JSON_INTEGER:
        snprintf(out, size, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        entity_format_double(json_real_value(v), tmp);
        snprintf(out, size, "%s", tmp);
        break;
    case JSON_TRUE:
    case JSON_FALSE:
        snprintf(out, size, "%s", json_is_true(v) ? "true" : "false");
        break;
    default:
        snprintf(out, size, "of the wrong kind");
    }
}

/* Find the type of property NAME with value V (not null) in OBJ: its
 * "NAME@odata.type" annotation if present, else inferred from the JSON kind
 * (string: String, boolean: Boolean, integer: Int32 or, outside its range,
 * Int64, real: Double). Returns 0, or -EINVAL (err filled) for a nested
 * value, a bad annotation or a name too long to annotate. */
static int prop_type(const json_t *obj, const char *name, const json_t *v, enum edm_type *type,
                     struct entity_error *err)
{
    char akey[ANNOTATION_KEY_MAX];
    size_t nlen = strlen(name);
    const json_t *ann;

    if (json_is_object(v) || json_is_array(v))
        return entity_set_err(err, -EINVAL, name,
                              "property '%.60s': nested objects and arrays "
                              "are not supported",
                              name);
    if (nlen > ENTITY_MAX_PROPNAME)
        return entity_set_err(err, -EINVAL, name,
                              "property name '%.40s...' is longer than %d characters", name,
                              ENTITY_MAX_PROPNAME);
    memcpy(akey, name, nlen); /* fits: checked just above */
    memcpy(akey + nlen, TYPE_SUFFIX, sizeof(TYPE_SUFFIX));
    ann = json_object_get(obj, akey);
    if (ann) {
        if (!json_is_string(ann))
            return entity_set_err(err, -EINVAL, name,
                                  "property '%.60s': its type annotation must be "
                                  "a string such as \"Edm.Int64\"",
                                  name);
        if (edm_type_parse(json_string_value(ann), type) < 0)
            return entity_set_err(err, -EINVAL, name,
                                  "property '%.60s': \"%.40s\" is not an Edm type "
                                  "name",
                                  name, json_string_value(ann));
        return 0;
    }
    switch (json_typeof(v)) {
    case JSON_STRING:
        *type = EDM_STRING;
        return 0;
    case JSON_TRUE:
    case JSON_FALSE:
        *type = EDM_BOOLEAN;
        return 0;
    case JSON_INTEGER:
        *type = (json_integer_value(v) >= INT32_MIN && json_integer_value(v) <= INT32_MAX) ?
            EDM_INT32 :
            EDM_INT64;
        return 0;
    default:
        *type = EDM_DOUBLE; /* JSON_REAL: objects, arrays and null never get here */
        return 0;
    }
}

/* Check the DateTime P->value and put its canonical form in P->dt.
 * Returns 0, or -EINVAL with err filled (what is wrong, what is expected). */
static int check_datetime(struct prop *p, struct entity_error *err)
{
    const json_t *v = p->value;
    const char *why = "not a string";
    char desc[96];

    if (json_is_string(v)) {
        why = "a NUL character";
        if (strlen(json_string_value(v)) == json_string_length(v) &&
            entity_datetime_canonical(json_string_value(v), p->dt, &why) == 0)
            return 0;
    }
    describe_value(v, desc, sizeof(desc));
    return entity_set_err(err, -EINVAL, p->name,
                          "property '%.40s': value %s is not an Edm.DateTime "
                          "(%s); expected YYYY-MM-DDThh:mm:ss[.fffffff] then Z or +hh:mm",
                          p->name, desc, why);
}

/* Check P->value against P->type and fill P->i / P->d / P->dt. Values are accepted
 * leniently where unambiguous (an integer for Int64 or Double); with LIMITS,
 * String and Binary sizes are checked too (-EFBIG).
 * Returns 0, -EINVAL or -EFBIG with err filled. */
static int prop_check(struct prop *p, int limits, struct entity_error *err)
{
    const json_t *v = p->value;
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    size_t n = s ? json_string_length(v) : 0, size;
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
        good = json_is_boolean(v);
        break;
    case EDM_INT32:
        good = json_is_integer(v) && json_integer_value(v) >= INT32_MIN &&
            json_integer_value(v) <= INT32_MAX;
        p->i = good ? json_integer_value(v) : 0;
        break;
    case EDM_INT64:
        if (json_is_integer(v)) {
            p->i = json_integer_value(v);
            good = 1;
        } else {
            good = s && parse_int64(s, n, &p->i) == 0;
        }
        break;
    case EDM_DOUBLE:
        good = 1;
        if (json_is_real(v))
            p->d = json_real_value(v);
        else if (json_is_integer(v))
            p->d = (double)json_integer_value(v);
        else if (s && str_is(v, "NaN"))
            p->d = NAN;
        else if (s && str_is(v, "Infinity"))
            p->d = INFINITY;
        else if (s && str_is(v, "-Infinity"))
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

/* Is KEY one of the system properties that never become custom ones? */
static int is_system(const char *key)
{
    return strcmp(key, "PartitionKey") == 0 || strcmp(key, "RowKey") == 0 ||
        strcmp(key, "Timestamp") == 0;
}

/* Check an annotation member KEY ("X@odata.type", KLEN bytes) of OBJ in file
 * mode: X must be present (a system property's annotation is ignored).
 * The type name itself is checked with X's value by prop_type(). */
static int check_annotation(const json_t *obj, const char *key, size_t klen,
                            struct entity_error *err)
{
    char base[ENTITY_MAX_PROPNAME + 1];
    size_t blen = klen - TYPE_SUFFIX_LEN;

    if (blen == 0 || blen > ENTITY_MAX_PROPNAME)
        return entity_set_err(err, -EINVAL, key, "'%.80s' does not annotate a valid property name",
                              key);
    memcpy(base, key, blen);
    base[blen] = '\0';
    if (is_system(base))
        return 0;
    if (!json_object_get(obj, base))
        return entity_set_err(err, -EINVAL, key,
                              "'%.60s@odata.type' annotates a property '%.60s' "
                              "that is not present",
                              base, base);
    return 0;
}

static int prop_cmp(const void *a, const void *b)
{
    return strcmp(((const struct prop *)a)->name, ((const struct prop *)b)->name);
}

/* Collect the custom properties of OBJ into a malloc'd array sorted by name
 * (byte order), typed and checked: "odata.*" members, annotations, system
 * properties and null values are skipped. In MODE_FILE names, annotations
 * and limits are checked too. Returns 0 with *out (caller frees; may be NULL
 * when *n == 0), or -EINVAL / -EFBIG / -ENOMEM with err filled and *bad_key
 * = the member at fault (borrowed from OBJ; NULL when none). */
int entity_collect_props(const json_t *obj, enum mode mode, struct prop **out, size_t *n,
                         const char **bad_key, struct entity_error *err)
{
    struct prop *props = NULL;
    size_t count = 0, cap = json_object_size(obj);
    const char *key;
    json_t *v;
    int rc;

    *out = NULL;
    *n = 0;
    *bad_key = NULL;
    if (cap > 0) {
        props = calloc(cap, sizeof(*props));
        if (!props)
            return entity_set_err(err, -ENOMEM, NULL, "out of memory");
    }
    json_object_foreach ((json_t *)obj, key, v) {
        size_t klen = strlen(key);
        struct prop *p;

        if (strncmp(key, "odata.", 6) == 0 || is_system(key))
            continue;
        /* "@odata.type" alone annotates the name "": an annotation, never
         * a property (rendered, it would be the annotation of a property
         * "" a second time) */
        if (klen >= TYPE_SUFFIX_LEN && strcmp(key + klen - TYPE_SUFFIX_LEN, TYPE_SUFFIX) == 0) {
            if (mode == MODE_FILE) {
                rc = check_annotation(obj, key, klen, err);
                if (rc < 0)
                    goto fail;
            }
            continue;
        }
        if (mode == MODE_FILE && !valid_name(key)) {
            rc = entity_set_err(err, -EINVAL, key,
                                "property name '%.60s' is not valid: use at most "
                                "255 letters, digits and '_', not starting with a digit",
                                key);
            goto fail;
        }
        if (json_is_null(v))
            continue;
        p = &props[count];
        p->name = key;
        p->value = v;
        rc = prop_type(obj, key, v, &p->type, err);
        if (rc == 0)
            rc = prop_check(p, mode == MODE_FILE, err);
        if (rc < 0)
            goto fail;
        count++;
    }
    if (count > 1)
        qsort(props, count, sizeof(*props), prop_cmp);
    *out = props;
    *n = count;
    return 0;

fail:
    *bad_key = key;
    free(props);
    return rc;
}

/* Add P to the wire object W in the form the service expects: Int64 as a
 * decimal string, Double as a number (NaN/Infinity as strings), DateTime in
 * its canonical UTC form, all annotated like Guid/Binary. Returns 0 or
 * -ENOMEM. */
static int wire_add(json_t *w, const struct prop *p)
{
    char akey[ANNOTATION_KEY_MAX], num[32];
    json_t *v;

    switch (p->type) {
    case EDM_INT32:
        v = json_integer(p->i);
        break;
    case EDM_INT64:
        snprintf(num, sizeof(num), "%lld", p->i);
        v = json_string(num);
        break;
    case EDM_DOUBLE:
        if (isnan(p->d))
            v = json_string("NaN");
        else if (isinf(p->d))
            v = json_string(p->d > 0 ? "Infinity" : "-Infinity");
        else
            v = json_real(p->d);
        break;
    case EDM_BOOLEAN:
        v = json_boolean(json_is_true(p->value));
        break;
    case EDM_DATETIME:
        v = json_string(p->dt);
        break;
    default:
        v = json_stringn(json_string_value(p->value), json_string_length(p->value));
    }
    if (!v || json_object_set_new(w, p->name, v) < 0)
        return -ENOMEM;
    if (p->type == EDM_STRING || p->type == EDM_INT32 || p->type == EDM_BOOLEAN)
        return 0;
    snprintf(akey, sizeof(akey), "%s%s", p->name, TYPE_SUFFIX);
    if (json_object_set_new(w, akey, json_string(edm_type_name(p->type))) < 0)
        return -ENOMEM;
    return 0;
}

/* 1-based line of the member "NAME": in TEXT (LEN bytes), 0 if not found.
 * Used only to point error messages at the right line. */
static int find_line(const char *text, size_t len, const char *name)
{
    size_t nlen = strlen(name);
    int line = 1;

    for (size_t i = 0; i + nlen + 2 <= len; i++) {
        size_t j;

        if (text[i] == '\n')
            line++;
        if (text[i] != '"' || (i > 0 && text[i - 1] == '\\') ||
            memcmp(text + i + 1, name, nlen) != 0 || text[i + 1 + nlen] != '"')
            continue;
        for (j = i + nlen + 2; j < len && strchr(" \t\r\n", text[j]); j++)
            ;
        if (j < len && text[j] == ':')
            return line;
    }
    return 0;
}

/* Copy the system member KEY of OBJ into *dst (malloc'd) if DST is non-NULL
 * and the member is a string. Returns 0 or -ENOMEM. */
static int copy_key(const json_t *obj, enum entity_sys key, char **dst)
{
    const char *v = entity_wire_sys(obj, key);

    if (!dst || !v)
        return 0;
    *dst = strdup(v);
    return *dst ? 0 : -ENOMEM;
}

/* A new wire object holding the N properties PROPS; NULL on ENOMEM. */
static json_t *wire_from_props(const struct prop *props, size_t n)
{
    json_t *wire = json_object();

    for (size_t i = 0; wire && i < n; i++) {
        if (wire_add(wire, &props[i]) < 0) {
            json_decref(wire);
            wire = NULL;
        }
    }
    return wire;
}

/* entity_parse: see entity.h. A leading UTF-8 byte order mark is skipped. */
int entity_parse(const char *text, size_t len, json_t **wire_out, char **pk_out, char **rk_out,
                 struct entity_error *err)
{
    json_t *root = NULL, *wire = NULL;
    struct prop *props = NULL;
    const char *bad_key = NULL;
    json_error_t jerr;
    size_t n = 0;
    int rc;

    *wire_out = NULL;
    if (pk_out)
        *pk_out = NULL;
    if (rk_out)
        *rk_out = NULL;
    entity_clear_err(err);
    if (len > ENTITY_MAX_BYTES)
        return entity_set_err(err, -EFBIG, NULL, "the entity text is larger than 1 MiB");
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        text += 3;
        len -= 3;
    }

    root = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!root) {
        rc = entity_set_err(err, -EINVAL, NULL, "invalid JSON: %s", jerr.text);
        if (err)
            err->line = jerr.line > 0 ? jerr.line : 0;
        goto out;
    }
    if (!json_is_object(root)) {
        rc = entity_set_err(err, -EINVAL, NULL, "the file must hold one JSON object { ... }");
        goto out;
    }
    rc = entity_collect_props(root, MODE_FILE, &props, &n, &bad_key, err);
    if (rc < 0) {
        if (err && bad_key)
            err->line = find_line(text, len, bad_key);
        goto out;
    }
    if (n > ENTITY_MAX_PROPERTIES) {
        rc = entity_set_err(err, -EINVAL, NULL,
                            "the entity has %zu properties, more than the %d "
                            "allowed",
                            n, ENTITY_MAX_PROPERTIES);
        goto out;
    }

    if (!(wire = wire_from_props(props, n))) {
        rc = entity_set_err(err, -ENOMEM, NULL, "out of memory");
        goto out;
    }
    if (copy_key(root, ENTITY_PK, pk_out) < 0 || copy_key(root, ENTITY_RK, rk_out) < 0) {
        rc = entity_set_err(err, -ENOMEM, NULL, "out of memory");
        goto out;
    }
    *wire_out = wire;
    wire = NULL;
    rc = 0;

out:
    if (rc < 0) {
        if (pk_out) {
            free(*pk_out);
            *pk_out = NULL;
        }
        if (rk_out) {
            free(*rk_out);
            *rk_out = NULL;
        }
    }
    free(props);
    json_decref(wire);
    json_decref(root);
    return rc;
}
