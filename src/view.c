/* view.c - query views: listings of a filtered query, entities shared with the table (view.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entity.h"
#include "keycodec.h"
#include "scan.h"
#include "store.h"
#include "storedir.h"
#include "view.h"

/* One view query in progress: the listing of DIR as the pages come. */
struct vquery {
    struct store *s;
    const char *table;
    const char *dir;            /* the view directory listed */
    int by_partition;           /* a table-level view: OUT names partitions */
    struct listing *out;
    char *pk;                   /* the partition being passed: its key, */
    char *ndir;                 /* its normal path ("/t/pk"), where its entities are cached, */
    char *vdir;                 /* by_partition: its path in the view, */
    struct listing *files;      /* by_partition: and its entities so far */
};

/* by_partition: the partition passed is complete: cache its listing in
 * the view and name it in OUT. */
static int finish_partition(struct vquery *q)
{
    int rc = 0;

    if (q->vdir) {
        rc = cache_put_listing(q->s->cache, q->vdir, q->files, 0);
        if (rc == 0)
            rc = listing_add(q->out, strrchr(q->vdir, '/') + 1, q->pk, 0, 0,
                             (struct timespec){ 0, 0 });
    }
    listing_unref(q->files);
    free(q->pk);
    free(q->ndir);
    free(q->vdir);
    q->files = NULL;
    q->pk = q->ndir = q->vdir = NULL;
    return rc;
}

/* Make PK the partition being passed. */
static int set_partition(struct vquery *q, const char *pk)
{
    char *name = keycodec_encode(pk);
    int rc = finish_partition(q);

    if (rc < 0 || !name) {
        free(name);
        return rc < 0 ? rc : -ENOMEM;
    }
    if (!(q->pk = strdup(pk)) || asprintf(&q->ndir, "/%s/%s", q->table, name) < 0)
        q->ndir = NULL;
    if (q->ndir && q->by_partition && (q->vdir = fspath_join(q->dir, name)))
        q->files = listing_new();
    free(name);
    return q->ndir && (!q->by_partition || q->files) ? 0 : -ENOMEM;
}

static int on_view_page(void *p, json_t *value)
{
    struct vquery *q = p;
    size_t i;
    json_t *e;

    json_array_foreach(value, i, e) {
        const char *pk = entity_wire_sys(e, ENTITY_PK);
        const char *rk = entity_wire_sys(e, ENTITY_RK);
        struct store_shown shown;
        int rc;

        if (!pk || !rk)
            continue;
        if ((!q->pk || strcmp(pk, q->pk) != 0) && (rc = set_partition(q, pk)) < 0)
            return rc;
        rc = store_cache_entity(q->s, q->ndir, e, CACHE_LISTED, &shown, NULL);
        if (rc == -ENOMEM)
            return rc;
        if (rc < 0)
            continue;      /* logged; an entity we cannot show is left out */
        rc = listing_add(q->by_partition ? q->files : q->out, shown.name, rk, 1, shown.len,
                         shown.mtime);
        free(shown.name);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Run the query of view directory DIR (FP's table and filter; PK: only
 * that partition; BY_PARTITION: DIR lists partitions) to its end, cache
 * its listings and give DIR's in *OUT. As view_listing. */
static int run_query(struct store *s, const struct fspath *fp, const char *dir,
                     const char *pk, int by_partition, struct listing **out)
{
    struct vquery q = { .s = s, .table = fp->table, .dir = dir, .by_partition = by_partition };
    struct az_status st = { 0 };
    struct table_cursor *c = NULL;
    const char *why;
    char *filter;
    int rc = userfilter_build(pk, fp->filter, &filter, &why);

    if (rc == -EINVAL)
        store_log_failure(s, "query view", dir, rc, NULL, why);     /* nothing sent */
    if (rc < 0)
        return rc;
    if (!(q.out = listing_new()) ||
        (rc = table_cursor_new(&c, fp->table, filter, NULL, 0)) < 0) {
        rc = -ENOMEM;
        goto out;
    }
    table_cursor_prefetch(c, 1);
    table_cursor_unbounded(c);
    while ((rc = table_cursor_next(s->tc, c, on_view_page, &q, &st)) > 0)
        ;
    if (rc == 0 && by_partition)
        rc = finish_partition(&q);
    if (rc == 0 && (rc = cache_put_listing(s->cache, dir, q.out, 0)) == 0)
        *out = listing_ref(q.out);
    if (rc < 0 && rc != -ENOENT)
        store_log_failure(s, "query view", dir, rc, &st,
                          rc == -EINVAL && st.http_status ? "the service refused the filter"
                                                          : NULL);
out:
    table_cursor_free(c);
    (void)finish_partition(&q);
    listing_unref(q.out);
    free(filter);
    return rc;
}

/* See view.h. */
int view_where_exists(struct store *s, struct fspath *fp)
{
    struct fspath pfp;
    int rc = store_table_exists(s, fp->table);

    if (rc < 0 || !fp->scoped)
        return rc;
    if ((rc = fspath_parse(fp->parent, &pfp)) < 0)
        return rc;
    rc = store_partition_exists(s, &pfp, 0);
    fspath_free(&pfp);
    return rc < 0 ? rc : rc ? 0 : -ENOENT;
}

/* See view.h. */
int view_listing(struct store *s, struct fspath *fp, const char *dir, struct listing **out)
{
    struct fspath vfp;
    struct listing *root;
    long i;
    int rc;

    if ((*out = cache_get_listing(s->cache, dir)))
        return 0;
    if (fp->kind == FSP_VIEW) {
        if (fp->scoped && !fp->pk && (rc = scan_resolve_keys(s, fp)) < 0)
            return rc;      /* a long-form partition name: its key by listing */
        return run_query(s, fp, dir, fp->scoped ? fp->pk : NULL, !fp->scoped, out);
    }
    /* a partition of a table-level view: it must be in the view's listing,
     * whose query cached this one's listing too */
    vfp = *fp;
    vfp.kind = FSP_VIEW;
    if ((rc = view_listing(s, &vfp, fp->view, &root)) < 0)
        return rc;
    if ((i = listing_find(root, fp->pk_name)) < 0)
        rc = -ENOENT;
    else if (!fp->pk && !(fp->pk = listing_key_dup(root, (size_t)i)))
        rc = -ENOMEM;
    listing_unref(root);
    if (rc < 0 || (*out = cache_get_listing(s->cache, dir)))
        return rc;
    return run_query(s, fp, dir, fp->pk, 0, out);   /* not kept: ask for it alone */
}

/* See view.h. */
int view_entity(struct store *s, struct fspath *fp, struct fspath *nfp, char **npath)
{
    struct fspath pfp = *fp;
    struct listing *l = NULL;
    long i = -1;
    int rc;

    *npath = NULL;
    memset(nfp, 0, sizeof(*nfp));
    pfp.kind = fp->scoped ? FSP_VIEW : FSP_VIEW_PARTITION;
    rc = view_listing(s, &pfp, fp->parent, &l);
    fp->pk = pfp.pk;            /* filled in when it was a long-form name */
    if (rc < 0)
        return rc;
    if ((i = listing_find(l, fp->file_name)) < 0)
        rc = -ENOENT;
    else if (!(*npath = fspath_normal(fp)))
        rc = -ENOMEM;
    else if ((rc = fspath_parse(*npath, nfp)) == 0) {
        if (!nfp->pk && !(nfp->pk = strdup(fp->pk)))
            rc = -ENOMEM;
        else if (!nfp->rk && !(nfp->rk = listing_key_dup(l, (size_t)i)))
            rc = -ENOMEM;
    }
    listing_unref(l);
    if (rc == 0) {
        store_dir_read(s, nfp->parent);     /* opens take the view's copy */
        return 0;
    }
    fspath_free(nfp);
    free(*npath);
    *npath = NULL;
    return rc;
}
