/* fs/write.c - FUSE callbacks that change files: create, write, truncate, flush/fsync/release commits, unlink, rename, chmod, chown, utimens (fs_i.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs/fs_i.h"
#include "store/store.h"

static int is_scratch(const char *path);

/* Refuse change OP, with a log line and in user.aztfs.errors, to put
 * something where the tree has no place. */
static int misplaced(struct aztfs *a, const char *op, const char *path, const char *what)
{
    return fs_refused(a, op, path, -EPERM, what);
}

/* OP of PATH, a name fspath_parse does not know (-ENOENT): in a partition,
 * a spelling no key has (EINVAL, as doc/NAMES.md's other refusals); else
 * no place for a file. */
static int unknown_name(struct aztfs *a, const char *op, const char *path)
{
    const char *p = strchr(path + 1, '/');

    if (p && (p = strchr(p + 1, '/')) && !strchr(p + 1, '/'))
        return fs_refuse_name(a, op, path);
    return misplaced(a, op, path,
                     "files live inside partition directories "
                     "(/TABLE/PARTITION/ROWKEY.json)");
}

/* An entity was saved at PATH: its partition is in the table now, so the
 * local directory a mkdir made for it is no longer needed. */
static void partition_saved(struct aztfs *a, const char *path)
{
    char *dir = strndup(path, (size_t)(strrchr(path, '/') - path));

    if (dir)
        scratch_rmdir(a->scratch, dir);
    free(dir);
}

/* Commit an entity handle if it changed. Returns 0 or -errno. OF's lock
 * held. */
static int commit_handle(struct aztfs *a, const char *path, struct open_file *of)
{
    struct cache_file f = { 0 };
    struct fspath fp;
    char *etag = NULL;
    int rc, empty;

    LOCK_HELD(&of->lock);
    if (!of->written)
        return 0;
    empty = of->is_new && !of->ever_written; /* made before any content */
    if (of->refused) {
        rc = -EFBIG; /* logged at the write: the text is not what was written */
    } else if ((rc = fspath_parse(path, &fp)) == 0) {
        rc = store_save(&a->store,
                        &(struct store_save){ path, &fp, of->data.ptr ? of->data.ptr : "",
                                              of->data.len,
                                              of->is_new      ? SAVE_INSERT :
                                                  of->replace ? SAVE_REPLACE :
                                                                SAVE_UPDATE,
                                              of->etag },
                        &etag);
        fspath_free(&fp);
    }
    if (rc < 0) {
        of->failed = 1;
        of->written = 0; /* reported once; a later flush does not resend */
        return rc;
    }
    partition_saved(a, path);
    free(of->placeholder); /* content saved: the entity is the file's now */
    of->placeholder = empty && etag ? strdup(etag) : NULL;
    free(of->etag);
    of->etag = etag;
    of->is_new = 0;
    of->written = 0;
    of->failed = 0;
    /* the entity as stored (canonical text) replaces what was written;
     * not the empty entity made before the content: its writer's next
     * write at offset 0 (bash's noclobber '>' flushes before it writes)
     * must make the file exactly what it wrote */
    if (!empty && store_peek(&a->store, path, &f) == 0)
        fs_handle_take_text(of, &f.data, f.len);
    cache_file_clear(&f);
    return 0;
}

/* The content of OF at PATH was refused (its commit failed, or a write was
 * too large): the empty entity the handle made before it (an O_EXCL
 * create's, a flush before the first write) is removed, guarded by its own
 * ETag (store_uncreate: one changed since by someone else stays), so that
 * bad input leaves nothing behind; the handle is a new unsaved file again.
 * A removal that failed is tried once more at the release (LAST). OF's
 * lock held. */
static void drop_placeholder(struct aztfs *a, const char *path, struct open_file *of, int last)
{
    struct fspath fp;
    int rc;

    LOCK_HELD(&of->lock);
    if (!of->placeholder)
        return;
    if ((rc = fspath_parse(path, &fp)) == 0) {
        rc = store_uncreate(&a->store, &fp, path, of->placeholder);
        if (rc == 0)
            scratch_mkdir(a->scratch, fp.parent); /* the directory stays until rmdir */
        fspath_free(&fp);
    }
    if (rc == 0) {
        free(of->etag);
        of->etag = NULL;
        of->is_new = 1;
    }
    if (rc == 0 || rc == -ESTALE || rc == -ENOENT || last) {
        free(of->placeholder);
        of->placeholder = NULL;
    }
}

/* An O_EXCL create of entity PATH (FP) on handle OF: with write-behind the
 * service decides it now (store_create_exclusive), and the handle then
 * holds the empty entity made, which its content replaces (or, refused,
 * removes: drop_placeholder). 0 or -errno. */
static int create_exclusive(struct aztfs *a, const char *path, struct fspath *fp,
                            struct open_file *of)
{
    char *etag = NULL;
    int rc = store_create_exclusive(&a->store, path, fp, &etag);

    if (rc != 0)
        return rc > 0 ? 0 : rc;
    if (!(of->placeholder = strdup(etag))) {
        log_error(&a->store.log,
                  "%s: out of memory: if its content is refused, the empty "
                  "entity its create made stays",
                  path);
    }
    of->is_new = 0;
    of->etag = etag;
    partition_saved(a, path);
    return 0;
}

/* See fs/fs_i.h. */
int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();
    struct open_file *of;
    struct fspath fp;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc == -ENOENT ? unknown_name(a, "create", path) : rc;
    if (fp.kind != FSP_ENTITY && fp.kind != FSP_SCRATCH) {
        fspath_free(&fp);
        return misplaced(a, "create", path,
                         "files live inside partition directories "
                         "(/TABLE/PARTITION/ROWKEY.json)");
    }
    if (!(of = fs_open_file_new())) {
        fspath_free(&fp);
        return -ENOMEM;
    }
    if (fp.kind == FSP_SCRATCH) {
        rc = scratch_create(a->scratch, path, mode);
        if (rc == -EEXIST && !(fi->flags & O_EXCL))
            rc = (fi->flags & O_TRUNC) ? scratch_truncate(a->scratch, path, 0) : 0;
        of->kind = FS_SCRATCH;
    } else {
        of->is_new = 1;
        of->append = !!(fi->flags & O_APPEND);
        of->trunc_open = !!(fi->flags & O_TRUNC);
        if (fi->flags & O_EXCL)
            rc = create_exclusive(a, path, &fp, of);
    }
    fspath_free(&fp);
    if (rc == 0 && of->kind == FS_ENTITY) /* a write handle of an entity */
        rc = fs_pending_add(a->handles, path, of);
    if (rc < 0) {
        fs_open_file_free(of);
        return rc;
    }
    fs_attach(fi, of, path);
    return 0;
}

/* See fs/fs_i.h. */
int fs_open_write(struct aztfs *a, const char *path, struct fspath *fp, struct fuse_file_info *fi)
{
    struct open_file *of;
    int rc;

    if ((rc = fs_open_entity(a, fp, path, 1, &of)) < 0)
        return rc;
    if (!of->etag && !of->is_new) {
        log_error(&a->store.log,
                  "%s: the service gave no ETag, so a write could not be "
                  "guarded",
                  path);
        fs_open_file_free(of);
        return -EIO;
    }
    if (fi->flags & O_TRUNC)
        (void)fs_handle_resize(of, 0); /* a cut cannot fail */
    of->append = !!(fi->flags & O_APPEND);
    of->trunc_open = !!(fi->flags & O_TRUNC);
    if ((rc = fs_pending_add(a->handles, path, of)) < 0) {
        fs_open_file_free(of);
        return rc;
    }
    fs_attach(fi, of, path);
    return 0;
}

/* See fs/fs_i.h. */
int fs_entity_write(const char *path, struct open_file *of, const char *buf, size_t size, off_t off)
{
    int rc;

    pthread_mutex_lock(&of->lock);
    if (of->append) /* the kernel's idea of the size may be stale */
        off = (off_t)of->data.len;
    rc = (size_t)off + size > of->data.len ? fs_handle_resize(of, (size_t)off + size) : 0;
    if (rc == 0) {
        memcpy(of->data.ptr + off, buf, size);
        of->written = of->ever_written = 1;
        rc = (int)size;
    } else if (rc == -EFBIG) {
        char why[80];

        of->refused = of->ever_written = 1; /* no commit sends a cut text */
        snprintf(why, sizeof(why), "larger than %d bytes: no entity can be that big",
                 OPEN_FILE_MAX);
        fs_refused(fs_ctx(), "write", path, rc, why);
    }
    pthread_mutex_unlock(&of->lock);
    return rc;
}

/* See fs/fs_i.h. */
int fs_entity_truncate(const char *path, struct open_file *of, off_t size)
{
    int rc;

    (void)path;
    pthread_mutex_lock(&of->lock);
    rc = fs_handle_resize(of, (size_t)size);
    if (rc == 0)
        of->written = of->ever_written = 1;
    if (rc == 0 && size == 0)
        of->refused = 0; /* the writer starts over */
    pthread_mutex_unlock(&of->lock);
    return rc;
}

/* See fs/fs_i.h. */
int fs_truncate(const char *path, off_t size)
{
    struct aztfs *a = fs_ctx();
    struct fspath fp;
    int rc;

    if (!path) /* a removed scratch file */
        return -ESTALE;
    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (fp.kind == FSP_SCRATCH) {
        rc = scratch_truncate(a->scratch, path, size);
    } else if (fp.kind != FSP_ENTITY) {
        rc = -EISDIR;
    } else if (fs_conflict_take(a->handles, path)) {
        rc = -ESTALE;
    } else { /* truncate by path: change and commit at once */
        rc = store_truncate(&a->store, &fp, path, (size_t)size);
        if (rc == 0)
            partition_saved(a, path);
        else if (rc == -ESTALE)
            fs_conflict_note(a->handles, path);
    }
    fspath_free(&fp);
    return rc;
}

/* Flush of an entity handle whose name was removed while it was open (rm,
 * or a rename onto it, through this mount): as on a local disk, what was
 * written goes with the removed file. Nothing is sent (the name is gone or
 * belongs to another entity now); said once in the log. */
static int drop_detached(struct aztfs *a, struct open_file *of)
{
    pthread_mutex_lock(&of->lock);
    if (of->written || (of->is_new && !of->failed))
        log_info(&a->store.log,
                 "a file removed while open was closed: its unsaved changes "
                 "(%zu bytes) went with it, as on a local disk",
                 of->data.len);
    of->written = 0;
    of->is_new = 0;
    of->detached = 1;
    pthread_mutex_unlock(&of->lock);
    return 0;
}

/* See fs/fs_i.h. */
int fs_entity_flush(const char *path, struct open_file *of)
{
    int rc;

    if (!path)
        return drop_detached(fs_ctx(), of);
    pthread_mutex_lock(&of->lock);
    /* A new file flushed before any write: touch means "create it now";
     * after O_TRUNC or O_APPEND (bash's '>' and '>>' flush before they
     * write) the data is still to come. */
    if (of->is_new && !of->ever_written && !of->trunc_open && !of->append && !of->failed)
        of->written = 1;
    rc = commit_handle(fs_ctx(), path, of);
    if (rc < 0 || of->refused)
        drop_placeholder(fs_ctx(), path, of, 0);
    pthread_mutex_unlock(&of->lock);
    return rc;
}

/* See fs/fs_i.h. */
int fs_entity_fsync(const char *path, struct open_file *of)
{
    int rc = fs_entity_flush(path, of);

    /* write-behind: on the service, or EIO for a change that failed */
    if (rc == 0 && path && !is_scratch(path))
        rc = store_sync(&fs_ctx()->store, path);
    return rc;
}

/* See fs/fs_i.h. */
int fs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
    (void)datasync, (void)fi;
    return store_sync(&fs_ctx()->store, path);
}

/* See fs/fs_i.h. */
int fs_release_write(const char *path, struct open_file *of)
{
    int rc = 0;

    pthread_mutex_lock(&of->lock);
    if (of->is_new && !of->ever_written && !of->failed) {
        of->written = 1;
        rc = commit_handle(fs_ctx(), path, of);
    } else if (of->failed || of->refused) {
        drop_placeholder(fs_ctx(), path, of, 1); /* one its flush could not remove */
    }
    pthread_mutex_unlock(&of->lock);
    return rc;
}

/* See fs/fs_i.h. */
int fs_unlink(const char *path)
{
    struct aztfs *a = fs_ctx();
    struct fspath fp;
    int rc;

    if ((rc = fspath_parse(path, &fp)) < 0)
        return rc;
    if (fp.kind == FSP_SCRATCH) {
        rc = scratch_unlink(a->scratch, path);
    } else if (fp.kind != FSP_ENTITY) {
        rc = -EISDIR;
    } else if (fs_pending_is_new(a->handles, path)) {
        fs_pending_detach(a->handles, path); /* a new file not yet saved: nothing to send */
        store_forget(&a->store, path);
    } else if (fs_conflict_take(a->handles, path)) {
        rc = -ESTALE;
    } else if ((rc = store_delete(&a->store, &fp, path)) == 0) {
        fs_pending_detach(a->handles, path);
        scratch_mkdir(a->scratch, fp.parent); /* the directory stays until rmdir */
    } else if (rc == -ESTALE) {
        fs_conflict_note(a->handles, path);
    }
    fspath_free(&fp);
    return rc;
}

/* After a rename FROM -> TO made by this mount: the handles open on TO
 * spoke for the entity it replaced; those open on FROM follow to TO, with
 * the ETag the service answered for TO (NEW_ETAG) where they held FROM's
 * (OLD_ETAG). */
static void handles_follow(struct aztfs *a, const char *from, const char *to, const char *old_etag,
                           const char *new_etag)
{
    int n;

    fs_pending_detach(a->handles, to);
    n = fs_pending_follow(a->handles, from, to, old_etag, new_etag);
    if (n < 0)
        log_error(&a->store.log,
                  "rename %s -> %s: out of memory: a file open on %s cannot "
                  "save to %s (ESTALE at its close)",
                  from, to, from, to);
    else if (n > 0 && old_etag && !new_etag)
        log_warn(&a->store.log,
                 "rename %s -> %s: the service gave no ETag for %s: files "
                 "open on %s cannot save to it (ESTALE at their close)",
                 from, to, to, from);
}

/* Rename entity FROM onto entity TO in the same partition (store_rename);
 * files open on FROM follow to TO. */
static int rename_entity(struct aztfs *a, const char *from, struct fspath *ff, const char *to,
                         struct fspath *tf)
{
    char *from_etag = NULL, *to_etag = NULL;
    int rc = store_rename(&a->store, from, ff, to, tf, &from_etag, &to_etag);

    if (rc == 0)
        handles_follow(a, from, to, from_etag, to_etag);
    else if (rc == -ESTALE)
        fs_conflict_note(a->handles, from);
    free(from_etag);
    free(to_etag);
    return rc;
}

/* Rename FROM, a new file open and not yet saved, to TO in its partition:
 * nothing is sent. Its handles follow and save under TO at their close: an
 * Insert, or when TO is an entity, a Replace guarded by the ETag TO has now
 * (the new file replaces it, as on a local disk). */
static int rename_unsaved(struct aztfs *a, const char *from, const char *to, struct fspath *tf)
{
    struct cache_file dst = { 0 };
    int rc = store_load_keyed(&a->store, tf, to, &dst);

    if (rc == 0 || rc == -ENOENT) {
        handles_follow(a, from, to, NULL, rc == 0 ? dst.etag : NULL);
        rc = 0;
    }
    cache_file_clear(&dst);
    store_forget(&a->store, from);
    store_forget(&a->store, to);
    return rc;
}

/* Rename scratch file FROM onto entity TO: commit its bytes as TO in one
 * request (store_save_over), then drop the scratch file. */
static int commit_scratch(struct aztfs *a, const char *from, const char *to, struct fspath *tf)
{
    char *data = NULL;
    size_t len = 0;
    int rc;

    if ((rc = scratch_get(a->scratch, from, &data, &len)) < 0)
        return rc;
    if (fs_conflict_take(a->handles, to)) {
        free(data);
        return -ESTALE;
    }
    rc = store_save_over(&a->store, tf, to, data, len);
    if (rc == 0) {
        partition_saved(a, to);
        scratch_unlink(a->scratch, from);
        fs_pending_detach(a->handles, to);
    } else if (rc == -ESTALE) {
        fs_conflict_note(a->handles, to);
    }
    free(data);
    return rc;
}

/* Rename FROM (FF) to TO (TF) by what each names. An entity to another
 * partition or table is EXDEV (mv copies), unless that copy could not be
 * saved (store_move_check: refused before mv removes anything). */
static int rename_parsed(struct aztfs *a, const char *from, struct fspath *ff, const char *to,
                         struct fspath *tf)
{
    int rc;

    if (ff->kind == FSP_SCRATCH && tf->kind == FSP_SCRATCH)
        return scratch_rename(a->scratch, from, to);
    if (ff->kind == FSP_SCRATCH && tf->kind == FSP_ENTITY)
        return commit_scratch(a, from, to, tf);
    if (ff->kind == FSP_ENTITY && tf->kind == FSP_ENTITY && strcmp(ff->parent, tf->parent) == 0)
        return strcmp(from, to) == 0            ? 0 :
            fs_pending_is_new(a->handles, from) ? rename_unsaved(a, from, to, tf) :
            fs_conflict_take(a->handles, from)  ? -ESTALE :
                                                  rename_entity(a, from, ff, to, tf);
    if (ff->kind == FSP_SCRATCH)
        return misplaced(a, "rename", to,
                         "scratch files can only become entities inside a partition");
    if (ff->kind == FSP_ENTITY && tf->kind == FSP_ENTITY &&
        (rc = store_move_check(&a->store, from, ff, to, tf, fs_pending_is_new(a->handles, from))) <
            0)
        return rc;
    return -EXDEV; /* across partitions or tables, or directories: copy + unlink */
}

/* See fs/fs_i.h. */
int fs_rename(const char *from, const char *to, unsigned int flags)
{
    struct aztfs *a = fs_ctx();
    struct fspath ff, tf;
    int rc;

    if (flags)
        return -EINVAL; /* RENAME_NOREPLACE/EXCHANGE: mv retries a plain rename */
    if ((rc = fspath_parse(from, &ff)) < 0)
        return rc;
    if ((rc = fspath_parse(to, &tf)) < 0) {
        fspath_free(&ff);
        return rc == -ENOENT ? unknown_name(a, "rename", to) : rc;
    }
    rc = rename_parsed(a, from, &ff, to, &tf);
    fspath_free(&ff);
    fspath_free(&tf);
    return rc;
}

/* Does PATH name a scratch file? 1, 0 (an entity or a directory), or
 * -errno (a name nothing can have). */
static int is_scratch(const char *path)
{
    struct fspath fp;
    int rc = fspath_parse(path, &fp);

    if (rc == 0) {
        rc = fp.kind == FSP_SCRATCH;
        fspath_free(&fp);
    }
    return rc;
}

/* See fs/fs_i.h. */
int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
    int rc;

    if (!path)
        return 0; /* an open file without a name: its mode is fixed */
    if ((rc = is_scratch(path)) <= 0)
        return rc; /* entities and directories: accepted, modes are fixed */
    return scratch_chmod(fs_ctx()->scratch, path, mode);
}

/* See fs/fs_i.h. */
int fs_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi)
{
    struct aztfs *a = fs_ctx();

    if ((uid != (uid_t)-1 && uid != a->uid) || (gid != (gid_t)-1 && gid != a->gid))
        return -EPERM; /* everything belongs to the mounting user */
    return 0;
}

/* See fs/fs_i.h. */
int fs_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi)
{
    struct timespec mt;
    int rc;

    if (!path)
        return 0; /* an open file without a name: no mtime to keep */
    if ((rc = is_scratch(path)) <= 0)
        return rc; /* entities: mtime is the service's Timestamp */
    if (tv && tv[1].tv_nsec == UTIME_OMIT)
        return 0;
    if (!tv || tv[1].tv_nsec == UTIME_NOW)
        clock_gettime(CLOCK_REALTIME, &mt);
    else
        mt = tv[1];
    return scratch_utimens(fs_ctx()->scratch, path, &mt);
}
