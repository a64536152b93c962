/* fs/handles.c - what the FUSE adapters share: handles, the pending list, the conflict ring, attributes (fs_i.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs_i.h"
#include "store/store.h"
#include "stream/stream.h"

/* A conflict noted at PATH (fs_conflict_note) lasts this long. */
#define CONFLICT_WINDOW_NS 2000000000LL
#define CONFLICTS 8

struct fs_handles {
    pthread_mutex_t lock;
    struct fs_open_link *open; /* every handle given to the kernel and not released;
                                    guarded by lock */
    struct open_file *pending; /* entity handles open for writing, by path; guarded
                                    by lock */
    struct conflict {          /* recent ESTALE answers to path operations */
        char *path;            /* guarded by fs_handles.lock */
        struct timespec at;    /* CLOCK_MONOTONIC; guarded by fs_handles.lock */
    } conflicts[CONFLICTS];    /* guarded by lock */
};

/* --- handles ------------------------------------------------------------------- */

/* See fs/fs_i.h. */
struct open_file *fs_open_file_new(void)
{
    struct open_file *of = calloc(1, sizeof(*of));

    if (of && lock_init(&of->lock) != 0) {
        free(of);
        return NULL;
    }
    if (of) /* the bound is OPEN_FILE_MAX, checked by fs_handle_resize */
        buf_init(&of->data, SIZE_MAX);
    return of;
}

/* See fs/fs_i.h. */
void fs_open_file_free(struct open_file *of)
{
    if (!of)
        return;
    pthread_mutex_destroy(&of->lock);
    export_free(of->stream);
    import_free(of->import);
    buf_free(&of->data);
    free(of->etag);
    free(of->placeholder);
    free(of->path);
    free(of);
}

/* See fs/fs_i.h. OF's buffer has no cap (SIZE_MAX), so it always takes. */
void fs_handle_take_text(struct open_file *of, char **text, size_t len)
{
    if (*text && buf_attach(&of->data, *text, len) == 0)
        *text = NULL;
}

/* See fs/fs_i.h. */
int fs_handle_resize(struct open_file *of, size_t len)
{
    int rc;

    if (len > OPEN_FILE_MAX)
        return -EFBIG;
    rc = buf_setlen(&of->data, len);
    if (rc < 0) /* the text is as it was: a later write may fit */
        buf_clearerr(&of->data);
    return rc;
}

/* Put L (CLOSE frees it) on H's list of open handles. */
static void link_push(struct fs_handles *h, struct fs_open_link *l,
                      void (*close)(struct fs_open_link *l))
{
    l->close = close;
    pthread_mutex_lock(&h->lock);
    l->prev = NULL;
    l->next = h->open;
    if (h->open)
        h->open->prev = l;
    h->open = l;
    pthread_mutex_unlock(&h->lock);
}

/* Take L off H's list of open handles. Lock held. */
static void link_unlink(struct fs_handles *h, struct fs_open_link *l)
{
    LOCK_HELD(&h->lock);
    if (l->prev)
        l->prev->next = l->next;
    else
        h->open = l->next;
    if (l->next)
        l->next->prev = l->prev;
    l->prev = l->next = NULL;
}

/* Close an open file's handle (released, or open when the mount ends). */
static void file_close(struct fs_open_link *l)
{
    fs_open_file_free((struct open_file *)l);
}

/* See fs/fs_i.h. */
void fs_attach(struct fuse_file_info *fi, struct open_file *of, const char *path)
{
    struct fs_handles *h = fs_ctx()->handles;

    of->ino = fspath_ino(path);
    link_push(h, &of->link, file_close);
    fi->fh = (uint64_t)(uintptr_t)of;
    fi->direct_io = 1; /* reads return the entity as opened: see doc/ */
}

/* See fs/fs_i.h. */
void fs_dir_attach(struct fuse_file_info *fi, struct fs_open_link *l,
                   void (*close)(struct fs_open_link *l), const char *path)
{
    l->dir_path = strdup(path); /* NULL: fs_handles_each_dir says ENOMEM */
    link_push(fs_ctx()->handles, l, close);
    fi->fh = (uint64_t)(uintptr_t)l;
}

/* See fs/fs_i.h. */
void fs_dir_release(struct fs_handles *h, struct fs_open_link *l)
{
    pthread_mutex_lock(&h->lock);
    link_unlink(h, l);
    pthread_mutex_unlock(&h->lock);
    free(l->dir_path);
    l->close(l);
}

/* See fs_i.h. */
int fs_handles_each_dir(struct fs_handles *h, void (*fn)(void *ctx, const char *path), void *ctx)
{
    int rc = 0;

    pthread_mutex_lock(&h->lock);
    for (struct fs_open_link *l = h->open; l; l = l->next)
        if (l->dir_path)
            fn(ctx, l->dir_path);
        else if (l->close != file_close)
            rc = -ENOMEM; /* a directory whose path is not known */
    pthread_mutex_unlock(&h->lock);
    return rc;
}

/* See fs/fs.h. The pending list holds only handles of the open list. */
void fs_handles_close_all(struct fs_handles *h)
{
    struct fs_open_link *l;

    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    h->pending = NULL;
    while ((l = h->open) != NULL) {
        link_unlink(h, l);
        pthread_mutex_unlock(&h->lock);
        free(l->dir_path);
        l->close(l);
        pthread_mutex_lock(&h->lock);
    }
    pthread_mutex_unlock(&h->lock);
}

/* See fs/fs_i.h. */
int fs_open_entity(struct aztfs *a, struct fspath *fp, const char *path, int writing,
                   struct open_file **out)
{
    struct cache_file f = { 0 };
    struct open_file *of;
    int is_new = 1, rc = fs_pending_copy(a->handles, path, &f.data, &f.len);

    if (rc == -ENOENT) {
        is_new = 0;
        rc = store_load_current(&a->store, fp, path, &f, writing);
    }
    if (rc < 0)
        return rc == -ENOENT ? -ESTALE : rc;
    if (!(of = fs_open_file_new())) {
        cache_file_clear(&f);
        return -ENOMEM;
    }
    fs_handle_take_text(of, &f.data, f.len);
    of->is_new = is_new;
    of->etag = f.etag;
    f.etag = NULL;
    cache_file_clear(&f);
    *out = of;
    return 0;
}

/* --- the mount's handles and the pending list ------------------------------------- */

/* See fs/fs.h. */
struct fs_handles *fs_handles_new(void)
{
    struct fs_handles *h = calloc(1, sizeof(*h));

    if (h && lock_init(&h->lock) != 0) {
        free(h);
        return NULL;
    }
    return h;
}

/* See fs/fs.h. */
void fs_handles_free(struct fs_handles *h)
{
    if (!h)
        return;
    fs_handles_close_all(h);
    for (size_t i = 0; i < CONFLICTS; i++)
        free(h->conflicts[i].path);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

/* Does OF stand for a file the table does not hold yet, or holds with
 * other bytes? A new file whose save failed (invalid text, or created
 * meanwhile by someone else) is not one until it is written again: its
 * close said it was not saved. OF's lock held. */
static int unsaved(const struct open_file *of)
{
    LOCK_HELD(&of->lock);
    return (of->is_new && !of->failed) || of->written;
}

/* See fs/fs_i.h. */
int fs_pending_add(struct fs_handles *h, const char *path, struct open_file *of)
{
    if (!(of->path = strdup(path)))
        return -ENOMEM;
    pthread_mutex_lock(&h->lock);
    of->pnext = h->pending;
    h->pending = of;
    pthread_mutex_unlock(&h->lock);
    return 0;
}

/* Take OF out of H's pending list (if it is there). H's lock held. */
static void pending_unlink(struct fs_handles *h, struct open_file *of)
{
    LOCK_HELD(&h->lock);
    for (struct open_file **pp = &h->pending; *pp; pp = &(*pp)->pnext) {
        if (*pp == of) {
            *pp = of->pnext;
            break;
        }
    }
}

/* See fs/fs_i.h. A handle a walk stands on stays in the pending list,
 * marked released, until that walk steps off it (walk_next). */
void fs_handle_release(struct fs_handles *h, struct open_file *of)
{
    int walked;

    if (!of)
        return;
    pthread_mutex_lock(&h->lock);
    walked = of->refs > 0;
    if (walked)
        of->released = 1;
    else if (of->path)
        pending_unlink(h, of);
    link_unlink(h, &of->link);
    pthread_mutex_unlock(&h->lock);
    if (!walked)
        fs_open_file_free(of);
}

/* Walks of the pending list. A handle's lock is held across a commit (a
 * request to the service), so a walk never waits for one with the list's
 * lock held: that would stop every open, release and opendir of the mount
 * until the save returned. It stands on the handle (REFS) instead, drops
 * the list's lock, and takes it again to step on. So the order of the two
 * locks is open_file.lock -> fs_handles.lock. */

/* The first handle from OF on (the list's lock held) that a walk takes:
 * not released, and MATCH(OF's path, KEY). Stood on, or NULL (always
 * without MATCH: the walk ends). */
static struct open_file *walk_from(struct open_file *of, int (*match)(const char *, const char *),
                                   const char *key)
{
    for (; of && match; of = of->pnext) {
        if (!of->released && match(of->path, key)) {
            of->refs++;
            return of;
        }
    }
    return NULL;
}

/* Step off OF (the list's lock held) to the next handle walk_from takes;
 * OF is freed if it was released meanwhile and this was its last walk. */
static struct open_file *walk_next(struct fs_handles *h, struct open_file *of,
                                   int (*match)(const char *, const char *), const char *key)
{
    struct open_file *next;

    LOCK_HELD(&h->lock);
    next = walk_from(of->pnext, match, key);
    if (--of->refs == 0 && of->released) {
        pending_unlink(h, of);
        fs_open_file_free(of); /* off both lists: nothing reaches it */
    }
    return next;
}

static int same_path(const char *path, const char *key)
{
    return strcmp(path, key) == 0;
}

/* Call FN(OF, CTX) for each handle registered at PATH that still speaks for
 * it (not detached), with OF's lock held (not the list's), until FN
 * returns nonzero. Returns FN's last answer, or 0. */
static int each_at(struct fs_handles *h, const char *path,
                   int (*fn)(struct open_file *of, void *ctx), void *ctx)
{
    struct open_file *of;
    int rc = 0;

    pthread_mutex_lock(&h->lock);
    for (of = walk_from(h->pending, same_path, path); of;
         of = walk_next(h, of, rc ? NULL : same_path, path)) {
        pthread_mutex_unlock(&h->lock);
        pthread_mutex_lock(&of->lock);
        /* its path is written with both locks held: read with either */
        if (!of->detached && strcmp(of->path, path) == 0)
            rc = fn(of, ctx);
        pthread_mutex_unlock(&of->lock);
        pthread_mutex_lock(&h->lock);
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

static int detach_one(struct open_file *of, void *ctx)
{
    (void)ctx;
    of->detached = 1;
    return 0;
}

/* See fs/fs_i.h. */
void fs_pending_detach(struct fs_handles *h, const char *path)
{
    each_at(h, path, detach_one, NULL);
}

static int size_one(struct open_file *of, void *ctx)
{
    if (!unsaved(of))
        return 0;
    *(size_t *)ctx = of->data.len;
    return 1;
}

/* See fs/fs_i.h. */
int fs_pending_size(struct fs_handles *h, const char *path, size_t *len)
{
    return each_at(h, path, size_one, len) == 1 ? 0 : -ENOENT;
}

/* The bytes of a new file not yet saved, copied by copy_one. */
struct pending_copy {
    char *data;
    size_t len;
};

static int copy_one(struct open_file *of, void *ctx)
{
    struct pending_copy *c = ctx;

    if (!of->is_new || !unsaved(of))
        return 0;
    if (!(c->data = malloc(of->data.len + 1)))
        return -ENOMEM;
    if (of->data.len)
        memcpy(c->data, of->data.ptr, of->data.len);
    c->data[of->data.len] = '\0';
    c->len = of->data.len;
    return 1;
}

/* See fs/fs_i.h. */
int fs_pending_copy(struct fs_handles *h, const char *path, char **data, size_t *len)
{
    struct pending_copy c = { NULL, 0 };
    int rc = each_at(h, path, copy_one, &c);

    if (rc != 1)
        return rc < 0 ? rc : -ENOENT;
    *data = c.data;
    *len = c.len;
    return 0;
}

static int is_new_one(struct open_file *of, void *ctx)
{
    (void)ctx;
    return of->is_new && unsaved(of);
}

/* See fs/fs_i.h. */
int fs_pending_is_new(struct fs_handles *h, const char *path)
{
    return each_at(h, path, is_new_one, NULL);
}

/* A rename that handles follow (fs_pending_follow). */
struct follow {
    struct fs_handles *h;
    const char *to, *old_etag, *new_etag;
    int n; /* handles that followed, or -ENOMEM */
};

static int follow_one(struct open_file *of, void *ctx)
{
    struct follow *f = ctx;
    int take = f->new_etag &&
        (of->is_new ? !f->old_etag : f->old_etag && of->etag && strcmp(of->etag, f->old_etag) == 0);
    char *path = strdup(f->to), *etag = take ? strdup(f->new_etag) : NULL;

    if (!path || (take && !etag)) {
        free(path);
        free(etag);
        f->n = -ENOMEM; /* this one keeps its name and ETag: ESTALE at its save */
        return 0;
    }
    if (f->n >= 0)
        f->n++;
    pthread_mutex_lock(&f->h->lock); /* a walk reads the path with either */
    free(of->path);
    of->path = path;
    of->ino = fspath_ino(f->to);
    pthread_mutex_unlock(&f->h->lock);
    free(of->placeholder); /* it named the entity at FROM */
    of->placeholder = NULL;
    if (take) {
        free(of->etag);
        of->etag = etag;
        if (of->is_new) { /* it replaces the entity TO at its close */
            of->is_new = 0;
            of->written = 1;
            of->replace = 1;
        }
    }
    return 0;
}

/* See fs/fs_i.h. */
int fs_pending_follow(struct fs_handles *h, const char *from, const char *to, const char *old_etag,
                      const char *new_etag)
{
    struct follow f = { h, to, old_etag, new_etag, 0 };

    each_at(h, from, follow_one, &f);
    return f.n;
}

/* Is PATH a name right in directory DIR? */
static int in_dir(const char *path, const char *dir)
{
    size_t dl = strlen(dir);

    return strncmp(path, dir, dl) == 0 && path[dl] == '/' && !strchr(path + dl + 1, '/');
}

/* See fs/fs_i.h. */
void fs_pending_list(struct fs_handles *h, const char *dir, void (*fn)(void *ctx, const char *name),
                     void *ctx)
{
    pthread_mutex_lock(&h->lock);
    for (struct open_file *of = walk_from(h->pending, in_dir, dir); of;
         of = walk_next(h, of, in_dir, dir)) {
        int show;

        pthread_mutex_unlock(&h->lock);
        pthread_mutex_lock(&of->lock);
        show = !of->detached && of->is_new && unsaved(of);
        pthread_mutex_unlock(&of->lock);
        pthread_mutex_lock(&h->lock);
        if (show && in_dir(of->path, dir)) /* a rename may have moved it */
            fn(ctx, of->path + strlen(dir) + 1);
    }
    pthread_mutex_unlock(&h->lock);
}

/* --- the conflict ring ------------------------------------------------------------ */

static long long mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* See fs/fs_i.h: the oldest note (or a free slot) makes room. */
void fs_conflict_note(struct fs_handles *h, const char *path)
{
    struct conflict *slot = &h->conflicts[0];
    char *p = strdup(path);

    if (!p)
        return;
    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < CONFLICTS; i++) {
        struct conflict *c = &h->conflicts[i];

        if (!c->path || (c->at.tv_sec < slot->at.tv_sec && slot->path))
            slot = c;
        if (!c->path)
            break;
    }
    free(slot->path);
    slot->path = p;
    clock_gettime(CLOCK_MONOTONIC, &slot->at);
    pthread_mutex_unlock(&h->lock);
}

/* See fs/fs_i.h. */
int fs_conflict_take(struct fs_handles *h, const char *path)
{
    int hit = 0;

    pthread_mutex_lock(&h->lock);
    for (size_t i = 0; i < CONFLICTS; i++) {
        struct conflict *c = &h->conflicts[i];

        if (!c->path || strcmp(c->path, path) != 0)
            continue;
        hit = mono_ns() - (c->at.tv_sec * 1000000000LL + c->at.tv_nsec) < CONFLICT_WINDOW_NS;
        free(c->path);
        c->path = NULL;
        break;
    }
    pthread_mutex_unlock(&h->lock);
    return hit;
}

/* --- attributes ------------------------------------------------------------------ */

/* See fs/fs_i.h. */
uint64_t fs_ino(const struct aztfs *a, uint64_t ino)
{
    uint64_t folded = (ino >> 32) ^ (ino & 0xFFFFFFFFu);

    if (!a->ino32 || ino == 1)
        return ino;
    return folded < 2 ? folded + 2 : folded;
}

/* See fs/fs_i.h. */
void fs_fill_file_stat(const struct aztfs *a, const char *path, size_t len, struct timespec mtime,
                       struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = fs_ino(a, fspath_ino(path));
    st->st_mode = S_IFREG | a->file_mode;
    /* 2 links: editors (vim's backupcopy=auto) then rewrite the file in
     * place, one guarded write, instead of renaming it away and creating
     * it anew (a delete and an insert). Inodes are unique, so cp -a, tar
     * and du still see distinct files. */
    st->st_nlink = 2;
    st->st_uid = a->uid;
    st->st_gid = a->gid;
    st->st_size = (off_t)len;
    st->st_blksize = 4096;
    st->st_blocks = (blkcnt_t)((len + 511) / 512);
    st->st_atim = st->st_mtim = st->st_ctim = mtime;
}

/* See fs/fs_i.h: as an empty file with the mount's time. */
void fs_fill_dir_stat(const struct aztfs *a, const char *path, struct stat *st)
{
    fs_fill_file_stat(a, path, 0, (struct timespec){ a->mount_time, 0 }, st);
    st->st_mode = S_IFDIR | a->dir_mode;
}

/* See fs/fs_i.h. */
void fs_fill_scratch_stat(const struct aztfs *a, const char *path, const struct scratch_attr *sa,
                          struct stat *st)
{
    fs_fill_file_stat(a, path, sa->size, sa->mtime, st);
    st->st_mode = S_IFREG | (sa->mode & 07777);
    st->st_nlink = 1;
}

/* See fs/fs_i.h. A path with no node is one the kernel has no inode for:
 * nothing to drop. */
void fs_kernel_forget(void *ctx, const char *path)
{
    struct aztfs *a = ctx;
    struct fuse_session *se;
    fuse_ino_t ino;

    if (fs_ctx() != a) /* a request's own change; not one sent in the background */
        return;
    pthread_mutex_lock(&a->fuse_lock);
    se = a->se;
    pthread_mutex_unlock(&a->fuse_lock);
    if (se && fs_inodes_find(a->inodes, path, &ino) == 0)
        (void)fuse_lowlevel_notify_inval_inode(se, ino, 0, 0);
}

/* See fs/fs_i.h. */
int fs_handle_attr(struct aztfs *a, const char *path, struct open_file *of, struct stat *st)
{
    struct timespec mt;
    int unsaved;

    pthread_mutex_lock(&of->lock);
    unsaved = of->written || of->is_new || !of->path;
    if (unsaved) {
        clock_gettime(CLOCK_REALTIME, &mt);
        fs_fill_file_stat(a, path, of->data.len, mt, st);
    }
    pthread_mutex_unlock(&of->lock);
    return unsaved;
}
