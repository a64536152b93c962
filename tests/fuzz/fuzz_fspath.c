/* fuzz_fspath.c - libFuzzer target for src/names/path.c (with the query views'
 * paths) and src/table/odata.c.
 *
 * Input = arbitrary bytes, cut at the first NUL, as a path after a leading
 * '/'. fspath_parse must not crash and must answer 0, -ENOENT, -EINVAL,
 * -ENAMETOOLONG or -ENOMEM; fspath_invalid_reason gives a reason exactly for
 * -EINVAL and -ENAMETOOLONG. On success: a path is in a view by its names
 * (fspath_in_view) exactly when it parses to a view kind; a view has its
 * filter (not empty) and its view path is a prefix of the path (written
 * without "//"); a view's
 * entity or partition maps to a normal path that parses to the entity or
 * partition of the same keys. A view's filter goes through userfilter_build
 * (with and without a partition) without crashing, and an accepted filter
 * is within the limits.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names/names.h"
#include "table/table.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int same(const char *a, const char *b)
{
    return a && b ? strcmp(a, b) == 0 : a == b;
}

/* FP is a view's partition or entity: its normal path parses to the same keys. */
static void check_normal(const char *path, const struct fspath *fp)
{
    char *n = fspath_normal(fp);
    struct fspath nfp;

    if (!n)
        return; /* ENOMEM */
    FUZZ_CHECK(fspath_parse(n, &nfp) == 0, "%s: normal path '%s' does not parse", path, n);
    FUZZ_CHECK(nfp.kind == (fp->kind == FSP_VIEW_ENTITY ? FSP_ENTITY : FSP_PARTITION),
               "%s: normal path '%s' of kind %d", path, n, nfp.kind);
    FUZZ_CHECK(same(nfp.pk, fp->pk) && same(nfp.rk, fp->rk), "%s: keys differ in '%s'", path, n);
    FUZZ_CHECK(!fspath_in_view(n), "%s: normal path '%s' in a view", path, n);
    fspath_free(&nfp);
    free(n);
}

static void check_filter(const struct fspath *fp)
{
    const char *why;
    char *f;

    for (int scoped = 0; scoped < 2; scoped++) {
        int rc = userfilter_build(scoped ? "p'k" : NULL, fp->filter, &f, &why);

        FUZZ_CHECK(rc == 0 || rc == -EINVAL || rc == -ENOMEM, "userfilter_build %d", rc);
        FUZZ_CHECK((rc == -EINVAL) == (why != NULL), "reason iff EINVAL");
        if (rc == 0) {
            FUZZ_CHECK(userfilter_comparisons(f) <= USERFILTER_MAX_COMPARISONS, "too many");
            FUZZ_CHECK(userfilter_encoded_len(f) <= USERFILTER_MAX_ENCODED, "too long");
            FUZZ_CHECK(strstr(f, fp->filter) != NULL, "the filter is kept");
            free(f);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *path = malloc(size + 2);
    struct fspath fp;
    const char *why;
    int rc;

    if (!path)
        return 0;
    path[0] = '/';
    memcpy(path + 1, data, size);
    path[size + 1] = '\0';
    rc = fspath_parse(path, &fp);
    why = fspath_invalid_reason(path);
    FUZZ_CHECK(rc == 0 || rc == -ENOENT || rc == -EINVAL || rc == -ENAMETOOLONG || rc == -ENOMEM,
               "%s: rc %d", path, rc);
    if (rc != -ENOMEM)
        FUZZ_CHECK((why != NULL) == (rc == -EINVAL || rc == -ENAMETOOLONG), "%s: rc %d, reason %s",
                   path, rc, why ? why : "(none)");
    if (rc == 0) {
        int view = fp.kind >= FSP_WHERE;

        FUZZ_CHECK(view == fspath_in_view(path), "%s: kind %d, in view %d", path, fp.kind,
                   fspath_in_view(path));
        FUZZ_CHECK(view || !fp.filter, "%s: a filter outside a view", path);
        if (fp.kind > FSP_WHERE) {
            FUZZ_CHECK(fp.filter && *fp.filter && fp.view, "%s: a view without a filter", path);
            FUZZ_CHECK(strstr(path, "//") || strncmp(path, fp.view, strlen(fp.view)) == 0,
                       "%s: view '%s'", path, fp.view); /* (FUSE sends no "//") */
            check_filter(&fp);
        }
        if (fp.kind == FSP_VIEW_ENTITY || fp.kind == FSP_VIEW_PARTITION)
            check_normal(path, &fp);
        fspath_free(&fp);
    }
    free(path);
    return 0;
}
