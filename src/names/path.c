/* names/path.c - FUSE paths -> (table, partition, entity) addresses, and stable inode numbers. */
#include <errno.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "names/names.h"
#include "util/util.h"

/* Table names: a letter, then 2-62 letters or digits; "Tables" is reserved. */
int fspath_valid_table_name(const char *name)
{
    size_t n = strlen(name);

    if (n < 3 || n > 63 || strcasecmp(name, "Tables") == 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        int alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
        int digit = ch >= '0' && ch <= '9';

        if (!alpha && !(digit && i > 0))
            return 0;
    }
    return 1;
}

/* See names/names.h. */
char *fspath_join(const char *parent, const char *name)
{
    char *p;

    if (asprintf(&p, "%s/%s", strcmp(parent, "/") == 0 ? "" : parent, name) < 0)
        return NULL;
    return p;
}

/* FNV-1a over the path; 0 and 1 are reserved. */
uint64_t fspath_ino(const char *path)
{
    uint64_t h;

    if (strcmp(path, "/") == 0)
        return 1;
    h = hash_fnv1a(path);
    return h < 2 ? h + 2 : h;
}

void fspath_free(struct fspath *fp)
{
    free(fp->table);
    free(fp->pk_name);
    free(fp->pk);
    free(fp->file_name);
    free(fp->rk);
    free(fp->parent);
    free(fp->filter);
    free(fp->view);
    memset(fp, 0, sizeof(*fp));
}

/* Every name the codec makes fits, so a listed name is never too long. */
_Static_assert(KEYCODEC_NAME_MAX + sizeof(ENTITY_SUFFIX) - 1 <= NAME_MAX,
               "entity file names fit NAME_MAX");
_Static_assert(KEYCODEC_PREFIX_MAX + sizeof(KEYCODEC_LONG_MARK) - 1 + KEYCODEC_HASH_HEX <=
                   KEYCODEC_NAME_MAX,
               "long-form names fit KEYCODEC_NAME_MAX");

/* Why fspath_invalid_reason refuses a path, besides keycodec's reasons. */
#define WHY_TOO_LONG "a name is at most 255 bytes"
#define WHY_BARE_SUFFIX "'.json' is the name of no key (the empty RowKey is '%.json')"
#define WHY_FILTER                                                            \
    "a view's filter is spelled as a key's name: '%' is written %25 and '/' " \
    "%2F, and it is not empty (doc/NAMES.md)"

/* Components of a path: up to five (a view's entity). */
#define MAX_COMPONENTS 5

/* Is every component of PATH at most NAME_MAX bytes? */
static int components_fit(const char *path)
{
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, "/");

        if (n > NAME_MAX)
            return 0;
        p += n + (p[n] == '/');
    }
    return 1;
}

/* Decode the key component NAME: a partition directory, or with IS_FILE an
 * entity file name ending in ".json". 0 with *key set (short form) or NULL
 * (long form); -EINVAL with *why set when NAME stands for no key the service
 * accepts (or is ".json" alone); -ENOENT if the codec cannot produce NAME;
 * -ENOMEM. */
static int decode_component(const char *name, int is_file, char **key, const char **why)
{
    char *k = NULL;
    int rc;

    *why =
        is_file && strcmp(name, ENTITY_SUFFIX) == 0 ? WHY_BARE_SUFFIX : keycodec_name_problem(name);
    if (*why)
        return -EINVAL;
    rc = is_file ? keycodec_file_decode(name, &k) : keycodec_decode(name, &k);
    if (rc == -ENOMEM)
        return rc;
    if (rc < 0)
        return -ENOENT;
    if (rc == 1) { /* long form: the prefix alone is not the key */
        free(k);
        k = NULL;
    }
    *key = k;
    return 0;
}

/* Where ".where" is among the N components COMP: 1 ("/t/.where..."), 2
 * ("/t/pk/.where..."), or 0 (not a view). */
static int where_index(char **comp, int n)
{
    if (n >= 2 && strcmp(comp[1], FSP_WHERE_NAME) == 0)
        return 1;
    if (n >= 3 && strcmp(comp[2], FSP_WHERE_NAME) == 0)
        return 2;
    return 0;
}

/* Is NAME that of an export stream? */
static int is_stream_name(const char *name)
{
    return strcmp(name, FSP_STREAM_NAME) == 0;
}

/* Decode the filter name NAME into *filter by the key names' rule: 0,
 * -EINVAL with *why (not a canonical spelling, a long form, empty), -ENOMEM. */
static int decode_filter(const char *name, char **filter, const char **why)
{
    int rc = keycodec_decode(name, filter);

    if (rc == -ENOMEM)
        return rc;
    if (rc == 0 && **filter)
        return 0;
    free(*filter);
    *filter = NULL;
    *why = WHY_FILTER;
    return -EINVAL;
}

/* The view part of a parse: COMP[W] is ".where" among N components, the
 * table (and with W 2 the partition) already in FP. */
static int parse_view(struct fspath *fp, char **comp, int n, int w, const char **why)
{
    int rc;

    fp->scoped = w == 2;
    fp->kind = FSP_WHERE;
    if (n == w + 1)
        return 0;
    if ((rc = decode_filter(comp[w + 1], &fp->filter, why)) < 0)
        return rc;
    if ((w == 1 ? asprintf(&fp->view, "/%s/%s/%s", fp->table, FSP_WHERE_NAME, comp[2]) :
                  asprintf(&fp->view, "/%s/%s/%s/%s", fp->table, fp->pk_name, FSP_WHERE_NAME,
                           comp[3])) < 0) {
        fp->view = NULL;
        return -ENOMEM;
    }
    fp->kind = FSP_VIEW;
    if (n == w + 2)
        return 0;
    if (n == w + 3 && is_stream_name(comp[n - 1])) { /* "/t/.where/F/.ndjson", "/t/pk/...": */
        fp->kind = FSP_VIEW_STREAM;
        return 0;
    }
    if (w == 1) { /* "/t/.where/F/pk[/rk.json]" */
        if (!(fp->pk_name = strdup(comp[3])))
            return -ENOMEM;
        if ((rc = decode_component(comp[3], 0, &fp->pk, why)) < 0)
            return rc;
        fp->kind = n == 5 && is_stream_name(comp[4]) ? FSP_VIEW_STREAM : FSP_VIEW_PARTITION;
        if (n == 4 || fp->kind == FSP_VIEW_STREAM)
            return 0;
    } /* "/t/pk/.where/F/rk.json" has five too */
    if (!(fp->file_name = strdup(comp[n - 1])))
        return -ENOMEM;
    fp->kind = FSP_VIEW_ENTITY;
    return decode_component(comp[n - 1], 1, &fp->rk, why); /* not ".json": ENOENT */
}

/* The components of PATH (a copy to cut, COPY) into COMP, their count into
 * *N. 0, or -ENOENT (too many). */
static int split(char *copy, char **comp, int *n)
{
    char *save = NULL, *tok;

    *n = 0;
    for (tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        if (*n == MAX_COMPONENTS)
            return -ENOENT;
        comp[(*n)++] = tok;
    }
    return 0;
}

/* fspath_parse, with the reason for -EINVAL and -ENAMETOOLONG in *why. */
static int parse(const char *path, struct fspath *fp, const char **why)
{
    char *comp[MAX_COMPONENTS] = { 0 };
    char *copy;
    int n = 0, w, rc = 0;

    memset(fp, 0, sizeof(*fp));
    *why = NULL;
    if (path[0] != '/')
        return -ENOENT;
    if (!components_fit(path)) {
        *why = WHY_TOO_LONG;
        return -ENAMETOOLONG;
    }
    copy = strdup(path);
    if (!copy)
        return -ENOMEM;
    if ((rc = split(copy, comp, &n)) < 0)
        goto fail;
    w = where_index(comp, n);
    if (!w && n > 3) {
        rc = -ENOENT;
        goto fail;
    }
    fp->kind = (enum fsp_kind)n; /* ROOT, TABLE, PARTITION, ENTITY by depth */
    if (n >= 1) {
        if (!fspath_valid_table_name(comp[0])) {
            rc = -ENOENT;
            goto fail;
        }
        if (!(fp->table = strdup(comp[0]))) {
            rc = -ENOMEM;
            goto fail;
        }
    }
    if (n >= 2 && w != 1 && !(n == 2 && is_stream_name(comp[1]))) {
        if (!(fp->pk_name = strdup(comp[1]))) {
            rc = -ENOMEM;
            goto fail;
        }
        if ((rc = decode_component(comp[1], 0, &fp->pk, why)) < 0)
            goto fail;
    }
    if (w) {
        if ((rc = parse_view(fp, comp, n, w, why)) < 0)
            goto fail;
    } else if (n >= 2 && is_stream_name(comp[n - 1])) {
        fp->kind = FSP_STREAM; /* "/t/.ndjson", "/t/pk/.ndjson" */
    } else if (n == 3) {
        size_t len = strlen(comp[2]), sl = strlen(ENTITY_SUFFIX);

        if (!(fp->file_name = strdup(comp[2]))) {
            rc = -ENOMEM;
            goto fail;
        }
        if (len < sl || strcmp(comp[2] + len - sl, ENTITY_SUFFIX) != 0)
            fp->kind = FSP_SCRATCH;
        else if ((rc = decode_component(comp[2], 1, &fp->rk, why)) < 0)
            goto fail;
    }
    /* parent path: everything before the last '/' */
    if (n >= 1) {
        const char *last = strrchr(path, '/');
        size_t plen = (size_t)(last - path);

        fp->parent = plen ? strndup(path, plen) : strdup("/");
        if (!fp->parent) {
            rc = -ENOMEM;
            goto fail;
        }
    }
    free(copy);
    return 0;
fail:
    free(copy);
    fspath_free(fp);
    return rc;
}

/* Parse a FUSE path; see names/names.h. */
int fspath_parse(const char *path, struct fspath *fp)
{
    const char *why;

    return parse(path, fp, &why);
}

/* fspath_invalid_reason: see names/names.h. */
const char *fspath_invalid_reason(const char *path)
{
    struct fspath fp;
    const char *why;
    int rc = parse(path, &fp, &why);

    if (rc == 0)
        fspath_free(&fp);
    return rc == -EINVAL || rc == -ENAMETOOLONG ? why : NULL;
}

/* See names/names.h. */
int fspath_in_view(const char *path)
{
    const char *p = path;

    for (int i = 0; i < 3 && *p; i++) {
        size_t n;

        p += strspn(p, "/");
        n = strcspn(p, "/");
        if (i > 0 && n == strlen(FSP_WHERE_NAME) && strncmp(p, FSP_WHERE_NAME, n) == 0)
            return 1;
        p += n;
    }
    return 0;
}

/* See names.h. */
int fspath_is_stream(const char *path)
{
    const char *last = strrchr(path, '/');

    return last && last != path && is_stream_name(last + 1); /* not "/.ndjson" */
}

/* See names/names.h. */
char *fspath_normal(const struct fspath *fp)
{
    char *p;
    int rc = fp->kind == FSP_VIEW_ENTITY ?
        asprintf(&p, "/%s/%s/%s", fp->table, fp->pk_name, fp->file_name) :
        asprintf(&p, "/%s/%s", fp->table, fp->pk_name);

    return rc < 0 ? NULL : p;
}
