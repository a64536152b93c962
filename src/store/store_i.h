/* store_i.h - what store/store.c and store/queued.c (its write-behind side) share:
 * the listing edits of a change and the dropping of an entity the mount
 * knew wrongly. Not for other modules. */
#ifndef AZTFS_STORE_STORE_I_H
#define AZTFS_STORE_STORE_I_H

#include "cache/cache.h"
#include "names/names.h"
#include "store/store.h"

/* Entity PATH (FP) changed, or turned out to be other than the mount knew:
 * drop the cached entity, its partition's listing, and the table's listing
 * when it lacks the partition (store/store.c). */
void store_forget_entity(struct store *s, const char *path, const struct fspath *fp);

/* The mount wrote entity FP and F is what it holds now (F NULL: written,
 * attributes unknown; EXISTS 0: deleted): the cached listings of its
 * partition and table say so (store/store.c). */
void store_shown_in_listing(struct store *s, const struct fspath *fp,
                            const struct cache_file *f, int exists);

/* A write of WIRE at PATH (FP) succeeded, the entity now has ETAG (NULL:
 * unknown): show it at once. With EXACT (not a merge) and an ETag that
 * carries the Timestamp, the new entity is rendered into the cache and its
 * listing entry; else the cached copy is dropped (the next stat reads it
 * back) and the listing only names it (store/store.c). */
void store_show_written(struct store *s, const char *path, const struct fspath *fp,
                        const json_t *wire, const char *etag, int exact);

/* --- store/queued.c: write-behind (s->wb set) --- */

/* What write-behind holds for PATH (FP): 0 nothing (ask the cache and the
 * service), 1 a queued write (*out filled, cached), -ENOENT a queued
 * delete, or -errno. */
int store_pending_load(struct store *s, const struct fspath *fp, const char *path,
                       struct cache_file *out);

/* Queue the write of WIRE (HOW, guarded by ETAG) of PATH (FP, keys
 * resolved) and show it at once; *token gets the ETag it shows. */
int store_queue_write(struct store *s, const char *path, const struct fspath *fp,
                      const json_t *wire, enum table_write how, const char *etag,
                      char **token);

/* PATH was saved exactly as the service holds it: its failed change, if
 * any, is dropped from the journal (the user chose the service's version;
 * logged). */
void store_resolved(struct store *s, const char *path);

/* Queue the delete of PATH (FP) guarded by ETAG. */
int store_queue_delete(struct store *s, const char *path, const struct fspath *fp,
                       const char *etag);

/* Queue a rename: TO (TF) written with WIRE (an insert when TO_ETAG is
 * NULL, else a replace guarded by it) and FROM (FF) deleted guarded by
 * FROM_ETAG, sent in one batch. *token gets TO's new ETag. */
int store_queue_rename(struct store *s, const char *from, const struct fspath *ff,
                       const char *from_etag, const char *to, const struct fspath *tf,
                       const char *to_etag, const json_t *wire, char **token);

#endif
