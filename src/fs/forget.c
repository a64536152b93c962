/* fs/forget.c - bound the memory the kernel and libfuse keep per file: the
 * kernel remembers every name it was given (a lookup, a readdirplus entry,
 * a create) until memory runs short, and libfuse keeps a node for each
 * until the kernel forgets it. The names given are kept in order, with the
 * node id of their directory (the request's, from fs/loop.c); past KEEP of
 * them a thread of its own tells the kernel that the oldest are stale. The
 * kernel drops those it does not use, their inodes go, their FORGETs reach
 * libfuse, and libfuse frees their nodes (fs.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h> /* FUSE_NOTIFY_INVAL_ENTRY, FUSE_LOOKUP ... */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fs/fs_i.h"
#include <fuse_lowlevel.h> /* fuse_session_fd */

#define FORGET_BATCH 1024 /* names past KEEP before the thread wakes, at most */

struct named {
    uint64_t parent; /* the node id of the directory the name was given in */
    char *name;      /* malloc'd */
};

struct fs_forget {
    unsigned long keep;  /* -o forget_after */
    unsigned long batch; /* names past KEEP before the thread wakes */
    int fd;              /* a dup of the session's /dev/fuse descriptor; -1: none */
    pthread_mutex_t mu;  /* guards what follows */
    pthread_cond_t cv;   /* stop, or the ring past KEEP + batch */
    int stop;            /* end the thread */
    struct named *ring;  /* the names given, oldest at head */
    size_t cap, head, n;
    struct workers thread;
    const struct logger *lg;
};

/* See fs.h. */
struct fs_forget *fs_forget_new(unsigned long keep, const struct logger *lg)
{
    struct fs_forget *g = calloc(1, sizeof(*g));

    if (!g)
        return NULL;
    g->keep = keep;
    g->fd = -1;
    g->lg = lg;
    g->batch = keep / 8 > FORGET_BATCH ? FORGET_BATCH : keep / 8 ? keep / 8 : 1;
    g->cap = keep ? keep + 4 * g->batch : 0;
    if ((g->cap && !(g->ring = calloc(g->cap, sizeof(*g->ring)))) ||
        pthread_mutex_init(&g->mu, NULL) != 0) {
        free(g->ring);
        free(g);
        return NULL;
    }
    if (pthread_cond_init(&g->cv, NULL) != 0) {
        pthread_mutex_destroy(&g->mu);
        free(g->ring);
        free(g);
        return NULL;
    }
    return g;
}

/* Does a request with OPCODE make the kernel remember the names its
 * answer gives? */
static int names_an_entry(uint32_t opcode)
{
    switch (opcode) {
    case FUSE_LOOKUP:
    case FUSE_CREATE:
    case FUSE_MKNOD:
    case FUSE_MKDIR:
    case FUSE_SYMLINK:
    case FUSE_READDIRPLUS:
        return 1;
    default:
        return 0;
    }
}

/* See fs.h. */
void fs_forget_named(struct fs_forget *g, const char *path)
{
    struct fs_request req;
    const char *slash;
    char *name;
    int wake;

    if (!g || !g->cap || !path || !fs_current_request(&req) || !names_an_entry(req.opcode) ||
        !(slash = strrchr(path, '/')) || !slash[1])
        return;
    if (!(name = strdup(slash + 1)))
        return; /* not kept: the kernel keeps that name until memory runs short */
    pthread_mutex_lock(&g->mu);
    if (g->n == g->cap) { /* the thread lags: this name is not kept */
        pthread_mutex_unlock(&g->mu);
        free(name);
        return;
    }
    g->ring[(g->head + g->n) % g->cap] = (struct named){ req.nodeid, name };
    g->n++;
    wake = g->n == g->keep + g->batch;
    if (wake)
        pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Tell the kernel, through G's descriptor, that NAME in directory PARENT
 * is stale: the message fuse_lowlevel_notify_inval_entry sends. 0 or
 * -errno (ENOENT: the kernel holds no such entry any more). */
static int inval_entry(struct fs_forget *g, uint64_t parent, const char *name)
{
    struct fuse_out_header oh = { 0 };
    struct fuse_notify_inval_entry_out out = { 0 };
    size_t len = strlen(name);
    struct iovec iov[3] = {
        { &oh, sizeof(oh) },
        { &out, sizeof(out) },
        { (void *)name, len + 1 },
    };

    oh.len = (uint32_t)(sizeof(oh) + sizeof(out) + len + 1);
    oh.error = FUSE_NOTIFY_INVAL_ENTRY;
    out.parent = parent;
    out.namelen = (uint32_t)len;
    return writev(g->fd, iov, 3) < 0 ? -errno : 0;
}

/* Take the names past KEEP off the ring (under g->mu) into *OUT
 * (malloc'd); returns how many. */
static size_t take_oldest(struct fs_forget *g, struct named **out)
{
    size_t k = g->n > g->keep ? g->n - g->keep : 0;

    if (!k || !(*out = malloc(k * sizeof(**out))))
        return 0;
    for (size_t i = 0; i < k; i++)
        (*out)[i] = g->ring[(g->head + i) % g->cap];
    g->head = (g->head + k) % g->cap;
    g->n -= k;
    return k;
}

static void *forget_main(void *arg)
{
    struct fs_forget *g = arg;

    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct named *old = NULL;
        size_t k = g->n >= g->keep + g->batch ? take_oldest(g, &old) : 0;
        unsigned long done = 0;

        if (!k) {
            pthread_cond_wait(&g->cv, &g->mu);
            continue;
        }
        pthread_mutex_unlock(&g->mu);
        for (size_t i = 0; i < k; i++) {
            done += inval_entry(g, old[i].parent, old[i].name) == 0;
            free(old[i].name);
        }
        free(old);
        if (g->lg)
            log_debug(g->lg,
                      "the kernel holds more than %lu names: told to drop %zu of them "
                      "(%lu it still had)",
                      g->keep, k, done);
        pthread_mutex_lock(&g->mu);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* See fs.h. */
int fs_forget_start(struct fs_forget *g, struct fuse *f)
{
    if (!g || !g->cap)
        return 0;
    if ((g->fd = fcntl(fuse_session_fd(fuse_get_session(f)), F_DUPFD_CLOEXEC, 0)) < 0)
        return -errno;
    if (workers_add(&g->thread, "aztfs-forget", forget_main, g) < 0) {
        close(g->fd);
        g->fd = -1;
        return -EAGAIN;
    }
    return 0;
}

/* See fs.h. */
void fs_forget_stop(struct fs_forget *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    workers_join(&g->thread);
    if (g->fd >= 0)
        close(g->fd);
    g->fd = -1;
}

/* See fs.h. */
void fs_forget_free(struct fs_forget *g)
{
    if (!g)
        return;
    fs_forget_stop(g);
    for (size_t i = 0; i < g->n; i++)
        free(g->ring[(g->head + i) % g->cap].name);
    free(g->ring);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}
