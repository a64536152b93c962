/* scratch.c - files the mount keeps locally (editor/rsync temporaries) and local-only directories. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "scratch.h"

/* A scratch file or a local directory; few exist at a time, so a list will do. */
struct node {
    char *path;
    int is_dir;
    char *data;
    size_t len, cap;
    mode_t mode;
    struct timespec mtime;
    struct node *next;
};

struct scratch {
    pthread_mutex_t lock;
    struct node *head;
};

struct scratch *scratch_new(void)
{
    struct scratch *s = calloc(1, sizeof(*s));

    if (s && pthread_mutex_init(&s->lock, NULL) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

static void node_free(struct node *n)
{
    free(n->path);
    free(n->data);
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
    for (struct node *n = s->head; n; n = n->next)
        if (n->is_dir == is_dir && strcmp(n->path, path) == 0)
            return n;
    return NULL;
}

/* Unlink and free N. Lock held. */
static void drop(struct scratch *s, struct node *n)
{
    struct node **pp = &s->head;

    while (*pp != n)
        pp = &(*pp)->next;
    *pp = n->next;
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
    struct node *n = calloc(1, sizeof(*n));

    if (!n || !(n->path = strdup(path))) {
        free(n);
        return -ENOMEM;
    }
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
        *out = (struct scratch_attr){ .size = n->len, .mode = n->mode, .mtime = n->mtime };
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
        rc = 0;
        if (off >= 0 && (size_t)off < n->len) {
            if (size > n->len - (size_t)off)
                size = n->len - (size_t)off;
            memcpy(buf, n->data + off, size);
            rc = (ssize_t)size;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

/* Make N exactly LEN bytes long (new bytes zeroed). Lock held. */
static int resize(struct node *n, size_t len)
{
    if (len > SCRATCH_MAX_BYTES)
        return -EFBIG;
    if (len > n->cap) {
        size_t cap = n->cap ? n->cap : 4096;
        char *d;

        while (cap < len)
            cap *= 2;
        if (!(d = realloc(n->data, cap)))
            return -ENOMEM;
        n->data = d;
        n->cap = cap;
    }
    if (len > n->len)
        memset(n->data + n->len, 0, len - n->len);
    n->len = len;
    now(&n->mtime);
    return 0;
}

ssize_t scratch_write(struct scratch *s, const char *path, const char *buf, size_t size,
                      off_t off)
{
    struct node *n;
    ssize_t rc = -ENOENT;

    if (off < 0)
        return -EINVAL;
    pthread_mutex_lock(&s->lock);
    n = find(s, path, 0);
    if (n) {
        size_t end = (size_t)off + size;

        rc = end > n->len ? resize(n, end) : 0;
        if (rc == 0) {
            memcpy(n->data + off, buf, size);
            now(&n->mtime);
            rc = (ssize_t)size;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int scratch_truncate(struct scratch *s, const char *path, off_t size)
{
    struct node *n;
    int rc = -ENOENT;

    if (size < 0)
        return -EINVAL;
    pthread_mutex_lock(&s->lock);
    if ((n = find(s, path, 0)))
        rc = resize(n, (size_t)size);
    pthread_mutex_unlock(&s->lock);
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
        *data = malloc(n->len + 1);
        rc = *data ? 0 : -ENOMEM;
        if (rc == 0) {
            if (n->len)
                memcpy(*data, n->data, n->len);
            (*data)[n->len] = '\0';
            *len = n->len;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int scratch_unlink(struct scratch *s, const char *path)
{
    struct node *n;

    pthread_mutex_lock(&s->lock);
    if ((n = find(s, path, 0)))
        drop(s, n);
    pthread_mutex_unlock(&s->lock);
    return n ? 0 : -ENOENT;
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
                  void (*fn)(void *ctx, const char *name, const struct scratch_attr *a),
                  void *ctx)
{
    pthread_mutex_lock(&s->lock);
    for (struct node *n = s->head; n; n = n->next) {
        const char *name = n->is_dir ? NULL : child_name(n->path, dir);
        struct scratch_attr a = { .size = n->len, .mode = n->mode, .mtime = n->mtime };

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
    struct node *n;

    pthread_mutex_lock(&s->lock);
    if ((n = find(s, path, 1)))
        drop(s, n);
    pthread_mutex_unlock(&s->lock);
    return n ? 0 : -ENOENT;
}

void scratch_list_dirs(struct scratch *s, const char *dir,
                       void (*fn)(void *ctx, const char *name), void *ctx)
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
