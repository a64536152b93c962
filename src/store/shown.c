/* store/shown.c - what the mount shows after a change, the one place both
 * ways of making changes use (store/direct.c at once, store/queued.c
 * through write-behind): a written entity rendered into the cache and its
 * listings, a deleted one gone from them, and an entity the mount knew
 * wrongly dropped so that it is read again. */
#include <errno.h>
#include <stdlib.h>

#include "entity/entity.h"
#include "names/names.h"
#include "store/store.h"
#include "store/store_i.h"

/* Entity PATH (FP) changed, or turned out to be other than the mount knew
 * (a save or delete answered ESTALE, EEXIST or ENOENT): drop the cached
 * entity and what the layer above knows of it, its partition's listing
 * (which recorded the old size and mtime, or lacks or holds the name
 * wrongly), and the table's listing when it lacks the partition. The next
 * stat, read or ls then agree on the entity as it is. */
void store_forget_entity(struct store *s, const char *path, const struct fspath *fp)
{
    char *tdir;

    store_forget(s, path);
    store_forget(s, fp->parent);
    if ((tdir = fspath_join("/", fp->table))) {
        if (cache_dir_lookup(s->cache, tdir, fp->pk_name, NULL) != 0)
            store_forget(s, tdir);
        free(tdir);
    }
}

/* The mount wrote entity FP and F is what it holds now (F NULL: written,
 * attributes unknown; GONE: deleted): the cached listings of its partition
 * and table say so, without asking the service again. */
void store_shown_in_listing(struct store *s, const struct fspath *fp, const struct cache_file *f,
                            int exists)
{
    struct timespec none = { 0, 0 };
    struct listing *l;
    char *tdir = fspath_join("/", fp->table);

    if (!tdir || !fp->pk || !fp->rk) {
        free(tdir);
        return;
    }
    if (cache_dir_edit(s->cache, fp->parent, fp->file_name, fp->rk, f != NULL, f ? f->len : 0,
                       f ? f->mtime : none, !exists) < 0 &&
        !exists) {
        store_forget(s, tdir); /* the partition may be empty now: unknown */
    } else if (exists) {       /* the partition exists now */
        if (cache_dir_lookup(s->cache, tdir, fp->pk_name, NULL) != 0 &&
            cache_dir_edit(s->cache, tdir, fp->pk_name, fp->pk, 0, 0, none, 0) == -ENOMEM)
            store_forget(s, tdir);
    } else if ((l = cache_get_listing(s->cache, fp->parent))) {
        if (listing_count(l) == 0) /* its last entity: the partition is gone */
            (void)cache_dir_edit(s->cache, tdir, fp->pk_name, fp->pk, 0, 0, none, 1);
        listing_unref(l);
    }
    free(tdir);
}

/* See store_i.h. */
void store_show_written(struct store *s, const char *path, const struct fspath *fp,
                        const json_t *wire, const char *etag, int exact)
{
    struct cache_file f = { 0 };
    char ts[64];
    json_t *e = exact && etag ? json_deep_copy(wire) : NULL;
    int shown = 0;

    store_forget(s, path);
    /* with its listing cached, the copy is one of that listing's (a walk
     * through the directory reads it as the listing's snapshot) */
    if (e && table_etag_timestamp(etag, ts, sizeof(ts)) == 0 &&
        entity_wire_set_sys(e, fp->pk, fp->rk, ts, etag) == 0 &&
        store_cache_entity(s, fp->parent, e,
                           cache_known_dir(s->cache, fp->parent) ? CACHE_LISTED : 0, NULL, &f) == 0)
        shown = 1;
    store_shown_in_listing(s, fp, shown ? &f : NULL, 1);
    cache_file_clear(&f);
    json_decref(e);
}

/* See store_i.h. */
void store_show_gone(struct store *s, const char *path, const struct fspath *fp)
{
    store_forget(s, path);
    store_shown_in_listing(s, fp, NULL, 0);
    (void)cache_put_absent(s->cache, path);
}
