/* fs/scratch.c - files the mount keeps locally (editor/rsync temporaries) and local-only directories. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "fs/fs.h"

/* A scratch file or a local directory; few exist at a time, so a list will do. */
struct node {
    char *path;            /* guarded by scratch.lock */
    int is_dir;            /* guarded by scratch.lock */
    struct buf data;       /* the file's bytes; guarded by scratch.lock */
    size_t charged;        /* its size rounded up to SCRATCH_PAGE: what it
                                 counts in scratch.used; guarded by scratch.lock */
    mode_t mode;           /* guarded by scratch.lock */
    struct timespec mtime; /* guarded by scratch.lock */
    struct node *next;     /* guarded by scratch.lock */
};

struct scratch {
    pthread_mutex_t lock;
    struct node *head;        /* guarded by lock */
    size_t used;              /* sum of every node's charge: at most max; guarded by
                                 lock */
    size_t max;               /* -o scratch_size, in bytes: set by scratch_new */
    const struct logger *log; /* set by scratch_new */
};

/* See fs/fs.h. */
struct scratch *scratch_new(size_t max_bytes, const struct logger *log)
{
    struct scratch *s = calloc(1, sizeof(*s));

    if (s && lock_init(&s->lock) != 0) {
        free(s);
        return NULL;
    }
    if (s) {
        s->max = max_bytes;
        s->log = log;
    }
    return s;
}

static void node_free(struct node *n)
{
    free(n->path);
    buf_free(&n->data);
    free(n);
}

void scratch_free(struct scratch *s)
{
    if (!s)
        return;
    while (s->head) {
        struct node *n = s->head;

        s->head = n->next;
        node_free(n);
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Find PATH of the given kind. Lock held. */
static struct node *find(struct scratch *s, const char *path, int is_dir)
{
    LOCK_HELD(&s->lock);
    for (struct node *n = s->head; n; n = n->next)
        if (n->is_dir == is_dir && strcmp(n->path, path) == 0)
            return n;
    return NULL;
}

/* Unlink and free N. Lock held. */
static void drop(struct scratch *s, struct node *n)
{
    struct node **pp;

    LOCK_HELD(&s->lock);
    pp = &s->head;
    while (*pp != n)
        pp = &(*pp)->next;
    *pp = n->next;
    s->used -= n->charged;
    node_free(n);
}

/* Is PATH directly inside DIR? Returns the name part or NULL. */
static const char *child_name(const char *path, const char *dir)
{
    size_t dl = strlen(dir);

    if (strncmp(path, dir, dl) != 0 || path[dl] != '/' || strchr(path + dl + 1, '/'))
        return NULL;
    return path + dl + 1;
}

static void now(struct timespec *ts)
{
    clock_gettime(CLOCK_REALTIME, ts);
}

/* Add a new node. Lock held. */
static int add(struct scratch *s, const char *path, int is_dir, mode_t mode)
{
    struct node *n;

    LOCK_HELD(&s->lock);
    n = calloc(1, sizeof(*n));
    if (!n || !(n->path = strdup(path))) {
        free(n);
        return -ENOMEM;
    }
    buf_init(&n->data, SCRATCH_MAX_BYTES);
    n->is_dir = is_dir;
    n->mode = mode & 07777;
    now(&n->mtime);
    n->next = s->head;
    s->head = n;
    return 0;
}

int scratch_create(struct scratch *s, const char *path, mode_t mode)
{
    int rc;

    pthread_mutex_lock(&s->lock);
    rc = find(s, path, 0) ? -EEXIST : add(s, path, 0, mode);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int scratch_stat(struct scratch *s, const char *path, struct scratch_attr *out)
{
    struct node *n;

    pthread_mutex_lock(&s->lock);
    n = find(s, path, 0);
    if (n)
        *out = (struct scratch_attr){ .size = n->data.len, .mode = n->mode, .mtime = n->mtime };
    pthread_mutex_unlock(&s->lock);
    return n ? 0 : -ENOENT;
}

ssize_t scratch_read(struct scratch *s, const char *path, char *buf, size_t size, off_t off)
{
    struct node *n;
    ssize_t rc = -ENOENT;

    pthread_mutex_lock(&s->lock);
    n = find(s, path, 0);
    if (n) {
        rc = off >= 0 ? (ssize_t)buf_read(&n->data, (size_t)off, buf, size) : 0;
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

static size_t page_up(size_t len)
{
    return (len + SCRATCH_PAGE - 1) / SCRATCH_PAGE * SCRATCH_PAGE;
}

/* After a shrink: give back what N's buffer holds beyond about twice its
 * bytes (a fresh buffer of the right size replaces it). Best effort: when
 * that cannot be had, the old buffer stays. Lock held (not asserted: N
 * does not lead to its store). */
static void refit(struct node *n)
{
    struct buf b = BUF_INIT(SCRATCH_MAX_BYTES);

    if (n->data.len == 0) {
        buf_free(&n->data);
        return;
    }
    if (n->data.alloc <= 2 * (n->data.len + 1))
        return;
    if (buf_add(&b, n->data.ptr, n->data.len) < 0) {
        buf_free(&b);
        return;
    }
    buf_free(&n->data);
    n->data = b;
}

/* Make N exactly LEN bytes long (new bytes zeroed; a shrink releases
 * memory). N counts LEN rounded up to a page in the store's bound; a
 * growth that would take the store past it is refused. Returns 0, -EFBIG,
 * -ENOSPC or -ENOMEM (N unchanged). Lock held. */
static int resize(struct scratch *s, struct node *n, size_t len)
{
    size_t charge;
    int rc;

    LOCK_HELD(&s->lock);
    charge = page_up(len);
    if (len > SCRATCH_MAX_BYTES)
        return -EFBIG;
    if (len != n->data.len) {
        int shrink = len < n->data.len;

        if (charge > n->charged && charge - n->charged > s->max - s->used)
            return -ENOSPC;
        if ((rc = buf_setlen(&n->data, len)) < 0) {
            buf_clearerr(&n->data); /* N is as it was: a later, smaller change may fit */
            return rc;
        }
        s->used = s->used - n->charged + charge;
        n->charged = charge;
        if (shrink)
            refit(n);
    }
    now(&n->mtime);
    return 0;
}

/* The one line a write or truncate refused for want of room gets. USED
 * and MAX as they were at the refusal. */
static void log_full(const struct scratch *s, const char *op, const char *path, size_t used,
                     size_t max)
{
    log_error(s->log,
              "%s %s failed: ENOSPC: no room for scratch files: they hold %zu KiB of the "
              "%zu KiB -o scratch_size allows; remove some or raise it",
              op, path, used / 1024, max / 1024);
}

ssize_t scratch_write(struct scratch *s, const char *path, const char *buf, size_t size, off_t off)
{
    struct node *n;
    ssize_t rc = -ENOENT;
    size_t used = 0;

    if (off < 0)
        return -EINVAL;
    pthread_mutex_lock(&s->lock);
    n = find(s, path, 0);
    if (n) {
        size_t end = (size_t)off + size;

        rc = end > n->data.len ? resize(s, n, end) : 0;
        if (rc == 0) {
            if (size)
                memcpy(n->data.ptr + off, buf, size);
            now(&n->mtime);
            rc = (ssize_t)size;
        }
        used = s->used;
    }
    pthread_mutex_unlock(&s->lock);
    if (rc == -ENOSPC)
        log_full(s, "write", path, used, s->max);
    return rc;
}

int scratch_truncate(struct scratch *s, const char *path, off_t size)
{
    struct node *n;
    int rc = -ENOENT;
    size_t used = 0;

    if (size < 0)
        return -EINVAL;
    pthread_mutex_lock(&s->lock);
    if ((n = find(s, path, 0))) {
        rc = (uintmax_t)size > SCRATCH_MAX_BYTES ? -EFBIG : resize(s, n, (size_t)size);
        used = s->used;
    }
    pthread_mutex_unlock(&s->lock);
    if (rc == -ENOSPC)
        log_full(s, "truncate", path, used, s->max);
    return rc;
}

int scratch_chmod(struct scratch *s, const char *path, mode_t mode)
{
    struct node *n;

    pthread_mutex_lock(&s->lock);
    if ((n = find(s, path, 0)))
        n->mode = mode & 07777;
    pthread_mutex_unlock(&s->lock);
    return n ? 0 : -ENOENT;
}

int scratch_utimens(struct scratch *s, const char *path, const struct timespec *mtime)
{
    struct node *n;

    pthread_mutex_lock(&s->lock);
    if ((n = find(s, path, 0)))
        n->mtime = *mtime;
    pthread_mutex_unlock(&s->lock);
    return n ? 0 : -ENOENT;
}

int scratch_get(struct scratch *s, const char *path, char **data, size_t *len)
{
    struct node *n;
    int rc = -ENOENT;

    pthread_mutex_lock(&s->lock);
    if ((n = find(s, path, 0))) {
        *data = malloc(n->data.len + 1);
        rc = *data ? 0 : -ENOMEM;
        if (rc == 0) {
            if (n->data.len)
                memcpy(*data, n->data.ptr, n->data.len);
            (*data)[n->data.len] = '\0';
            *len = n->data.len;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Remove the file (IS_DIR 0) or directory at PATH: 0 or -ENOENT. */
static int remove_node(struct scratch *s, const char *path, int is_dir)
{
    struct node *n;

    pthread_mutex_lock(&s->lock);
    if ((n = find(s, path, is_dir)))
        drop(s, n);
    pthread_mutex_unlock(&s->lock);
    return n ? 0 : -ENOENT;
}

int scratch_unlink(struct scratch *s, const char *path)
{
    return remove_node(s, path, 0);
}

int scratch_rename(struct scratch *s, const char *from, const char *to)
{
    struct node *n, *old;
    char *p;
    int rc = -ENOENT;

    pthread_mutex_lock(&s->lock);
    if ((n = find(s, from, 0))) {
        rc = -ENOMEM;
        if ((p = strdup(to))) {
            if ((old = find(s, to, 0)) && old != n)
                drop(s, old);
            free(n->path);
            n->path = p;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

void scratch_list(struct scratch *s, const char *dir,
                  void (*fn)(void *ctx, const char *name, const struct scratch_attr *a), void *ctx)
{
    pthread_mutex_lock(&s->lock);
    for (struct node *n = s->head; n; n = n->next) {
        const char *name = n->is_dir ? NULL : child_name(n->path, dir);
        struct scratch_attr a = { .size = n->data.len, .mode = n->mode, .mtime = n->mtime };

        if (name)
            fn(ctx, name, &a);
    }
    pthread_mutex_unlock(&s->lock);
}

size_t scratch_count(struct scratch *s, const char *dir)
{
    size_t c = 0;

    pthread_mutex_lock(&s->lock);
    for (struct node *n = s->head; n; n = n->next)
        c += !n->is_dir && child_name(n->path, dir);
    pthread_mutex_unlock(&s->lock);
    return c;
}

void scratch_usage(struct scratch *s, size_t *used, size_t *max_bytes)
{
    pthread_mutex_lock(&s->lock);
    *used = s->used;
    *max_bytes = s->max;
    pthread_mutex_unlock(&s->lock);
}

int scratch_mkdir(struct scratch *s, const char *path)
{
    int rc;

    pthread_mutex_lock(&s->lock);
    rc = find(s, path, 1) ? -EEXIST : add(s, path, 1, 0755);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int scratch_is_dir(struct scratch *s, const char *path)
{
    int r;

    pthread_mutex_lock(&s->lock);
    r = find(s, path, 1) != NULL;
    pthread_mutex_unlock(&s->lock);
    return r;
}

int scratch_rmdir(struct scratch *s, const char *path)
{
    return remove_node(s, path, 1);
}

void scratch_list_dirs(struct scratch *s, const char *dir, void (*fn)(void *ctx, const char *name),
                       void *ctx)
{
    pthread_mutex_lock(&s->lock);
    for (struct node *n = s->head; n; n = n->next) {
        const char *name = n->is_dir ? child_name(n->path, dir) : NULL;

        if (name)
            fn(ctx, name);
    }
    pthread_mutex_unlock(&s->lock);
}

int scratch_has_dirs(struct scratch *s, const char *dir)
{
    int r = 0;

    pthread_mutex_lock(&s->lock);
    for (struct node *n = s->head; n && !r; n = n->next)
        r = n->is_dir && child_name(n->path, dir) != NULL;
    pthread_mutex_unlock(&s->lock);
    return r;
}
