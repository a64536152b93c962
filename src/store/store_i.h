/* store_i.h - the inside of the store layer, for the files of store/ only:
 * the seam every change goes through (two ways to make a change: at once,
 * or through write-behind's queue) and what the mount shows after one. */
#ifndef AZTFS_STORE_STORE_I_H
#define AZTFS_STORE_STORE_I_H

#include <jansson.h>

#include "cache/cache.h"
#include "names/names.h"
#include "store/store.h"
#include "table/table.h"

/* ---- shown.c: what the mount shows after a change ---- */

/* Entity PATH (FP) changed, or turned out to be other than the mount knew:
 * drop the cached entity, its partition's listing, and the table's listing
 * when it lacks the partition. */
void store_forget_entity(struct store *s, const char *path, const struct fspath *fp);

/* The mount wrote entity FP and F is what it holds now (F NULL: written,
 * attributes unknown; EXISTS 0: deleted): the cached listings of its
 * partition and table say so. */
void store_shown_in_listing(struct store *s, const struct fspath *fp, const struct cache_file *f,
                            int exists);

/* A write of WIRE at PATH (FP) succeeded, the entity now has ETAG (NULL:
 * unknown): show it at once. With EXACT (not a merge) and an ETag that
 * carries the Timestamp, the new entity is rendered into the cache and its
 * listing entry; else the cached copy is dropped (the next stat reads it
 * back) and the listing only names it. */
void store_show_written(struct store *s, const char *path, const struct fspath *fp,
                        const json_t *wire, const char *etag, int exact);

/* Entity PATH (FP) was deleted (or moved away) by the mount: gone from the
 * cache and its listings, and known absent. */
void store_show_gone(struct store *s, const char *path, const struct fspath *fp);

/* ---- gather.c: a table's partitions from a query in any order ---- */

/* A table scan's entities, in whatever order the service sends them,
 * gathered by partition: each partition's listing cached only once the
 * query is read to its end, each partition named once in the table's
 * listing. */
struct gather;

/* A gathering whose partitions are named in OUT (the listing of LDIR, a
 * table "/t" or a table-level view, as readdir reads it: a reference is
 * taken), each partition's listing cached at LDIR/NAME and its entities
 * at EDIR/NAME (the table's path). NULL on ENOMEM. */
struct gather *gather_new(const char *ldir, const char *edir, struct listing *out);

/* Entity E (a tree; NULL: PRE, what a worker rendered) of partition PK:
 * into its partition's listing and the cache (store_list_entity), unless
 * the gathering keeps names only. *ISNEW: PK was not seen before; *LEN:
 * the bytes of its file (0: not cached). Returns store_list_entity's 0 or
 * 1 (not listed: names only, a duplicate, or it cannot be shown), or
 * -errno. */
int gather_entity(struct gather *g, struct store *s, const char *pk, const json_t *e,
                  struct store_rendered *pre, size_t *len, int *isnew);

/* The table is too big to hold: the partitions' listings are dropped (the
 * entities cached stay), the names seen so far go into the table's
 * listing, and each new one as it comes. 0 or -errno. */
int gather_names_only(struct gather *g);

/* The query is read to its end: each partition's listing sorted and
 * cached (unless names only), and every name, sorted, in the table's
 * listing (those not there yet). 0 or -errno. */
int gather_finish(struct gather *g, struct cache *c);

void gather_free(struct gather *g);

/* ---- the seam: how a change reaches the service ---- */

/* A rename, all or nothing: TO (TF) written with WIRE (an insert when
 * TO_ETAG is NULL, else a replace guarded by it) and FROM (FF) deleted,
 * guarded by FROM_ETAG. Everything borrowed. */
struct store_move {
    const char *from;
    const struct fspath *ff;
    const char *from_etag;
    const char *to;
    const struct fspath *tf;
    const char *to_etag;
    const json_t *wire;
};

/* The store hands every change to one of two implementations of this
 * table (in the style of curl's connection filters): store_direct
 * (store/direct.c) sends it at once, store_queued (store/queued.c) hands
 * it to write-behind's queue (-o writeback) and is the only module that
 * calls writeback/. s->changes says which; the store picks direct at
 * store_open and queued at store_writeback_open. Each shows what it did
 * through shown.c. Paths and FPs are borrowed; keys are resolved. Answers
 * are 0 or -errno, with the service's details in *ST where there is one. */
struct store_changes {
    const char *name;
    /* What is pending for PATH: 0 nothing (ask the cache and the service),
     * 1 a pending write (*OUT filled, cached), -ENOENT a pending delete. */
    int (*pending)(struct store *s, const struct fspath *fp, const char *path,
                   struct cache_file *out);
    /* Write WIRE (HOW, guarded by ETAG; NULL: none) and show it; 0 with
     * *NEW_ETAG (malloc'd: the ETag the file now shows). */
    int (*write)(struct store *s, const char *path, const struct fspath *fp, const json_t *wire,
                 enum table_write how, const char *etag, char **new_etag, struct az_status *st);
    /* Delete PATH guarded by ETAG (the caller shows it gone). */
    int (*remove)(struct store *s, const char *path, const struct fspath *fp, const char *etag,
                  struct az_status *st);
    /* Rename as M says; TO shown, *TO_ETAG its new ETag (the caller shows
     * FROM gone). */
    int (*rename)(struct store *s, const struct store_move *m, char **to_etag,
                  struct az_status *st);
    /* PATH was saved exactly as the service holds it: a failed change of
     * it, if any, is dropped (the user chose the service's version). */
    void (*resolved)(struct store *s, const char *path);
    /* A listing of DIR is about to be fetched: its pending changes go
     * first, so the listing holds them. */
    void (*settle)(struct store *s, const char *dir);
    /* Are changes under DIR pending (so it exists, whatever the service
     * says yet)? 1 or 0. */
    int (*pending_in)(struct store *s, const char *dir);
    /* An O_EXCL create of PATH: store_create_exclusive's answers. */
    int (*create_exclusive)(struct store *s, const char *path, const struct fspath *fp,
                            char **etag);
    /* store_sync, store_pending_json, store_pending_counts, store_discard. */
    int (*sync)(struct store *s, const char *path);
    int (*report)(struct store *s, size_t limit, char **out);
    int (*counts)(struct store *s, struct store_pending_counts *out);
    int (*discard)(struct store *s, const char *path);
    /* Remove the empty entity PATH a new file made before its refused
     * content, guarded by ETAG (that insert's answer): store_uncreate's
     * answers (the caller shows it gone). */
    int (*uncreate)(struct store *s, const char *path, const struct fspath *fp, const char *etag,
                    struct az_status *st);
};

extern const struct store_changes store_direct; /* store/direct.c */
extern const struct store_changes store_queued; /* store/queued.c */

/* store_entity_fits, a refusal logged as PATH "not saved" and put in
 * user.aztfs.errors under OP. */
int store_fits_service(struct store *s, const char *op, const char *path, const char *pk,
                       const char *rk, const json_t *wire, size_t text_len);

#endif
