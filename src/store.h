/* store.h - entities by key: loaded from the cache or the service (with
 * read-ahead), saved, deleted and renamed with their ETag guards, and what
 * the cached listings learn from each change or must drop after a conflict
 * (tables and partitions: storedir.h). Part of the store layer
 * (storecore.h): no FUSE, requests through table.h (and, to resolve a
 * long-form name by listing, scan.h).
 *
 * Entities are addressed by their path (the cache's key) and FP, that path
 * parsed; FP's keys are filled in when a long-form name is resolved. Every
 * function returns 0 or -errno unless it says otherwise, and logs the
 * failures of its requests itself (one line each). */
#ifndef AZTFS_STORE_H
#define AZTFS_STORE_H

#include <stddef.h>
#include <time.h>

#include "fspath.h"
#include "storecore.h"

/* --- reading ----------------------------------------------------------------- */

/* The entity at PATH: from the cache when fresh; else, when its partition's
 * fresh listing lacks it, -ENOENT; else (the listing is fresh, so a reader
 * is likely walking it) a read-ahead of it and the entities after it; else
 * a point query. 0 with *out filled (release with cache_file_clear). */
int store_load(struct store *s, struct fspath *fp, const char *path, struct cache_file *out);

/* store_load for an open: a copy older than the negative lifetime is read
 * again (its ETag is what a save will be guarded by), unless the open only
 * reads, the copy came with its partition's listing and a walk is going
 * through that listing (fetched or read within the negative lifetime): a
 * walk reads the snapshot it listed. -ENOENT: gone (logged as info). */
int store_load_current(struct store *s, struct fspath *fp, const char *path,
                       struct cache_file *out, int writing);

/* Note that a reader is going through directory PATH's listing now (a
 * walk of its table: store_load_current). */
void store_dir_read(struct store *s, const char *path);

/* store_load, with FP's keys resolved too (an entity served from the cache
 * under a long-form name carries none yet): what every change needs. */
int store_load_keyed(struct store *s, struct fspath *fp, const char *path,
                     struct cache_file *out);

/* The entity at PATH if the cache holds it fresh (no request): 0 with
 * *out, or -ENOENT. */
int store_peek(struct store *s, const char *path, struct cache_file *out);

/* Size and mtime of the entity at PATH from the cache alone (no request):
 * 0 or -ENOENT. */
int store_cached_attr(struct store *s, const char *path, size_t *len, struct timespec *mtime);

/* Size and mtime of the entity at PATH: the cached file, else what its
 * partition's listing recorded, else store_load. */
int store_entity_attr(struct store *s, struct fspath *fp, const char *path, size_t *len,
                      struct timespec *mtime);


/* --- changing ---------------------------------------------------------------- */

/* Save TEXT (LEN bytes; empty: an entity without properties) as the entity
 * at PATH: Insert when IS_NEW, else Replace (or Merge with -o merge, unless
 * FORCE_REPLACE) guarded by ETAG. Nothing is sent when the text is not a
 * valid entity (-EINVAL, -EFBIG), or a long-form name's keys are neither
 * listed nor in the text (-EINVAL). On success the saved entity is what
 * the cache shows (store_peek) and *new_etag (NEW_ETAG may be NULL) gets
 * its ETag; after -ESTALE, -EEXIST or -ENOENT the cache shows nothing of
 * it, so the next read sees the entity as it is. */
int store_save(struct store *s, const char *path, const char *text, size_t len, int is_new,
               const char *etag, int force_replace, char **new_etag);

/* Save TEXT as the entity at PATH whatever is there: Insert when there is
 * none, else a full Replace guarded by the ETag it has as the mount knows
 * it, read again first when the mount's copy is older than the negative
 * lifetime (store_load_current: the save of sed -i, rsync and atomic-save
 * editors is this rename). */
int store_save_over(struct store *s, struct fspath *fp, const char *path, const char *text,
                    size_t len);

/* Cut or zero-extend the text of the entity at PATH to SIZE bytes and save
 * it, guarded by the ETag it was read with. */
int store_truncate(struct store *s, struct fspath *fp, const char *path, size_t size);

/* Delete the entity at PATH, guarded by the ETag it was read with (-ESTALE:
 * changed since; -ENOENT: deleted by someone else). The cached listings
 * lose its name (and the table's the partition, when that was its last). */
int store_delete(struct store *s, struct fspath *fp, const char *path);

/* Rename entity FROM onto TO in the same partition: one entity group
 * transaction that writes TO (Insert, or Replace guarded by its ETag) and
 * deletes FROM with its ETag, so either both happen or neither (the
 * service fails the whole changeset on a stale ETag). On success
 * *from_etag gets the ETag FROM had and *to_etag the one the service gave
 * TO (each malloc'd, or NULL when there was none). -ESTALE: FROM or TO
 * changed since it was read, nothing changed. */
int store_rename(struct store *s, const char *from, struct fspath *ff, const char *to,
                 struct fspath *tf, char **from_etag, char **to_etag);

/* --- write-behind (-o writeback; storewb.c) ------------------------------------ */

struct wb_config;

/* Open the journal of CFG, load what it holds and send it now, before the
 * mount serves (a crash's changes; those that fail stay reported).
 * Write-behind sends through its own client for ACCT with HC (ACCT
 * borrowed: it outlives the store). Returns 0 or -errno (logged). */
int store_writeback_open(struct store *s, const struct wb_config *cfg,
                         const struct account *acct, const struct http_config *hc);

/* An O_EXCL create of PATH (FP): with write-behind, decided by the service
 * now, so that across mounts one create wins: an empty entity inserted at
 * once (after the entity's queued delete, if any, is sent), which the
 * file's content then replaces (queued, guarded by *ETAG). Returns 0 with
 * *etag (malloc'd), -EEXIST (it exists, made here or elsewhere), -errno
 * (logged), or 1 when the create is decided at its close as usual
 * (synchronous mode: the close's insert fails with EEXIST for the loser;
 * a long-form name, whose keys are in its content). */
int store_create_exclusive(struct store *s, const char *path, struct fspath *fp,
                           char **etag);

/* Start sending in the background (after daemonizing). 0 or -errno. */
int store_writeback_start(struct store *s);

/* Stop write-behind (the mount has ended): what is queued is sent for at
 * most cfg.stop_seconds, one log line says what was sent and what is
 * left, the journal is closed. Returns the number of changes left in the
 * journal (unsent or failed); 0 in synchronous mode or when called again. */
size_t store_writeback_close(struct store *s);

/* fsync of PATH (an entity, a directory, "/"): the queued changes under it
 * sent, waiting for them. Returns 0, or -EIO when a change under PATH
 * failed and was not dealt with. Synchronous mode: 0. */
int store_sync(struct store *s, const char *path);

/* The root's user.aztfs.pending (at most about LIMIT bytes; malloc'd), or
 * NULL when the mount is synchronous (or out of memory). */
char *store_pending_json(struct store *s, size_t limit);

/* Drop the failed change of PATH ("*": all) from the journal: 0, or
 * -ENOENT when there is none. */
int store_discard(struct store *s, const char *path);

#endif
