/* store/direct.c - changes sent at once (the store's default): each one
 * request, or one entity group transaction for a rename, answered before
 * the call returns; what it wrote shown through store/shown.c. One side of
 * the seam in store_i.h; store/queued.c is the other. */
#include <errno.h>
#include <stddef.h>

#include "store/store.h"
#include "store/store_i.h"

/* Nothing is ever pending: the service holds every change made. */
static int direct_pending(struct store *s, const struct fspath *fp, const char *path,
                          struct cache_file *out)
{
    (void)s, (void)fp, (void)path, (void)out;
    return 0;
}

static int direct_write(struct store *s, const char *path, const struct fspath *fp,
                        const json_t *wire, enum table_write how, const char *etag, char **new_etag,
                        struct az_status *st)
{
    int rc = table_write_entity(s->tc, fp->table, fp->pk, fp->rk, wire, how, etag, new_etag, st);

    if (rc == 0)
        store_show_written(s, path, fp, wire, *new_etag, how != TW_MERGE);
    return rc;
}

static int direct_remove(struct store *s, const char *path, const struct fspath *fp,
                         const char *etag, struct az_status *st)
{
    (void)path;
    return table_delete_entity(s->tc, fp->table, fp->pk, fp->rk, etag, st);
}

/* Both halves in one entity group transaction (one partition: a rename
 * across partitions is EXDEV before it gets here). */
static int direct_rename(struct store *s, const struct store_move *m, char **to_etag,
                         struct az_status *st)
{
    struct table_batch_op ops[2] = {
        { m->to_etag ? TB_REPLACE : TB_INSERT, m->tf->rk, m->wire, m->to_etag, to_etag },
        { TB_DELETE, m->ff->rk, NULL, m->from_etag, NULL },
    };
    int rc = table_batch(s->tc, m->ff->table, m->ff->pk, ops, 2, st);

    if (rc == 0)
        store_show_written(s, m->to, m->tf, m->wire, *to_etag, 1);
    return rc;
}

static void direct_resolved(struct store *s, const char *path)
{
    (void)s, (void)path;
}

static void direct_settle(struct store *s, const char *dir)
{
    (void)s, (void)dir;
}

static int direct_pending_in(struct store *s, const char *dir)
{
    (void)s, (void)dir;
    return 0;
}

/* Decided when the file is closed: its content is the insert, which fails
 * with EEXIST for the loser. */
static int direct_create_exclusive(struct store *s, const char *path, const struct fspath *fp,
                                   char **etag)
{
    (void)s, (void)path, (void)fp;
    *etag = NULL;
    return 1;
}

/* At once, as the insert it undoes was made. */
static int direct_uncreate(struct store *s, const char *path, const struct fspath *fp,
                           const char *etag, struct az_status *st)
{
    return direct_remove(s, path, fp, etag, st);
}

/* Every change is on the service when its call returns. */
static int direct_sync(struct store *s, const char *path)
{
    (void)s, (void)path;
    return 0;
}

static int direct_report(struct store *s, size_t limit, char **out)
{
    (void)s, (void)limit;
    *out = NULL;
    return -ENODATA;
}

static int direct_counts(struct store *s, struct store_pending_counts *out)
{
    (void)s, (void)out;
    return -ENODATA;
}

static int direct_discard(struct store *s, const char *path)
{
    (void)s, (void)path;
    return -ENOTSUP;
}

const struct store_changes store_direct = {
    .name = "direct",
    .pending = direct_pending,
    .write = direct_write,
    .remove = direct_remove,
    .rename = direct_rename,
    .resolved = direct_resolved,
    .settle = direct_settle,
    .pending_in = direct_pending_in,
    .create_exclusive = direct_create_exclusive,
    .uncreate = direct_uncreate,
    .sync = direct_sync,
    .report = direct_report,
    .counts = direct_counts,
    .discard = direct_discard,
};
