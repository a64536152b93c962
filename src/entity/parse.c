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

/* The annotation "KEY@odata.type" of property KEY (KLEN bytes, at most
 * ENTITY_MAX_PROPNAME) in OBJ, borrowed; NULL when there is none. */
static const json_t *annotation_of(const json_t *obj, const char *key, size_t klen)
{
    char akey[ANNOTATION_KEY_MAX];

    memcpy(akey, key, klen);
    memcpy(akey + klen, TYPE_SUFFIX, sizeof(TYPE_SUFFIX));
    return json_object_get(obj, akey);
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

        enum member_role role = entity_member_role(key, klen);
        struct scalar ann;
        const json_t *a;

        if (role == MEMBER_SKIP)
            continue;
        if (role == MEMBER_ANNOTATION) {
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
        scalar_of_json(v, &p->v);
        if (json_is_object(v) || json_is_array(v) || klen > ENTITY_MAX_PROPNAME)
            a = NULL; /* an error before the annotation is looked at */
        else if ((a = annotation_of(obj, key, klen)))
            scalar_of_json(a, &ann);
        if ((rc = entity_prop_check(p, a ? &ann : NULL, mode == MODE_FILE, err)) < 0)
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
        v = json_boolean(p->v.kind == SC_TRUE);
        break;
    case EDM_DATETIME:
        v = json_string(p->dt);
        break;
    default:
        v = json_stringn(p->v.s, p->v.n);
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
