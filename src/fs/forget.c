/* fs/forget.c - bound the memory the kernel and the mount keep per file:
 * the kernel remembers every name it was given (a lookup, a readdirplus
 * entry, a create) until memory runs short, and fs/inode.c keeps a node
 * for each until the kernel forgets it. The names given are kept in order,
 * with the node id of their directory (fs/lowlevel.c says it); past KEEP
 * of them a thread of its own tells the kernel that the oldest are stale
 * (fuse_lowlevel_notify_inval_entry). The kernel drops them, their inodes
 * go, their FORGETs come, and their nodes are freed (fs.h). Never a name in use (fs/inuse.c: a
 * working directory, a mount point, an open directory, or a name above
 * one): the kernel would unhash it (d_invalidate), and take the directory
 * from the process, or detach the mount. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs/fs_i.h"

#define FORGET_BATCH 1024 /* names past KEEP before the thread wakes, at most */
/* Room past KEEP for the names given while a round runs: one readdirplus
 * answer names hundreds at once, and a name there is no room for is never
 * told stale (before, telling a directory's name stale swept its files; a
 * directory in use is not told now) */
#define FORGET_SLACK 4096

struct named {
    uint64_t parent; /* the node id of the directory the name was given in */
    char *path;      /* the name's path (malloc'd): its last component is the name */
};

struct fs_forget {
    unsigned long keep;      /* -o forget_after */
    unsigned long batch;     /* names past KEEP before the thread wakes */
    struct fuse_session *se; /* the session told; NULL: not started */
    /* set by fs_forget_start, before the thread starts */
    char *mountpoint;           /* absolute (malloc'd) */
    struct fs_handles *handles; /* the mount's open directories (borrowed) */
    int shared;                 /* -o allow_other: other users may be inside */
    pthread_mutex_t mu;         /* guards what follows */
    pthread_cond_t cv;          /* stop, or a batch of new names past KEEP */
    int stop;                   /* end the thread */
    int ended;                  /* the thread has ended (or never started) */
    struct named *ring;         /* the names given, oldest at head */
    size_t cap, head, n;
    unsigned long lost;  /* names not kept since the last round (the ring full) */
    unsigned long added; /* names given since the last round: a round waits for
                            a batch of them (the names in use it put back do
                            not start another) */
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
    g->ended = 1;
    g->lg = lg;
    g->batch = keep / 8 > FORGET_BATCH ? FORGET_BATCH : keep / 8 ? keep / 8 : 1;
    g->cap = keep ? keep + (4 * g->batch > FORGET_SLACK ? 4 * g->batch : FORGET_SLACK) : 0;
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

/* See fs.h. */
void fs_forget_named(struct fs_forget *g, uint64_t parent, const char *path)
{
    const char *slash;
    char *copy;
    int wake;

    if (!g || !g->cap || !path || !(slash = strrchr(path, '/')) || !slash[1])
        return;
    if (!(copy = strdup(path)))
        return; /* not kept: the kernel keeps that name until memory runs short */
    pthread_mutex_lock(&g->mu);
    if (g->n == g->cap) { /* the thread lags: this name is not kept */
        g->lost++;
        pthread_mutex_unlock(&g->mu);
        free(copy);
        return;
    }
    g->ring[(g->head + g->n) % g->cap] = (struct named){ parent, copy };
    g->n++;
    g->added++;
    wake = g->added >= g->batch && g->n >= g->keep + g->batch;
    if (wake)
        pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Tell the kernel that NAME in directory PARENT is stale. 0 or -errno
 * (ENOENT: the kernel holds no such entry any more). */
static int inval_entry(struct fs_forget *g, uint64_t parent, const char *name)
{
    return fuse_lowlevel_notify_inval_entry(g->se, parent, name, strlen(name));
}

/* Has the thread been asked to end? */
static int stopping(struct fs_forget *g)
{
    int stop;

    pthread_mutex_lock(&g->mu);
    stop = g->stop;
    pthread_mutex_unlock(&g->mu);
    return stop;
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

/* Put NAME back at the ring's end, to be asked about again in a later
 * round (a name in use now may not be then); freed when the ring is full. */
static void requeue(struct fs_forget *g, struct named name)
{
    pthread_mutex_lock(&g->mu);
    if (g->n < g->cap) {
        g->ring[(g->head + g->n) % g->cap] = name;
        g->n++;
        name.path = NULL;
    }
    pthread_mutex_unlock(&g->mu);
    free(name.path);
}

/* Tell the kernel the K names of OLD are stale, but those in use, which go
 * back to the ring: what is in use is asked once for the round
 * (fs_inuse_collect; the processes' directories only when a name may be a
 * directory). When that cannot be told (out of memory, no mount table),
 * nothing is told this round. LOST: names the ring had no room for since
 * the last round. */
static void forget_round(struct fs_forget *g, struct named *old, size_t k, unsigned long lost)
{
    struct fs_inuse u;
    unsigned long done = 0, kept = 0;
    int dirs = 0, rc;

    for (size_t i = 0; i < k && !dirs; i++)
        dirs = fs_inuse_may_be_dir(old[i].path);
    rc = fs_inuse_collect(&u, g->mountpoint, g->handles, g->shared, dirs);
    for (size_t i = 0; i < k; i++) {
        if (rc < 0 || stopping(g) || fs_inuse_holds(&u, old[i].path) ||
            (u.unknown && fs_inuse_may_be_dir(old[i].path))) {
            kept++;
            requeue(g, old[i]);
            continue;
        }
        done += inval_entry(g, old[i].parent, strrchr(old[i].path, '/') + 1) == 0;
        free(old[i].path);
    }
    fs_inuse_clear(&u);
    if (rc < 0 && g->lg)
        log_warn(g->lg,
                 "the kernel was not told to drop %zu names: what it has in use cannot "
                 "be told (%s)",
                 k, strerror(-rc));
    if (g->lg)
        log_debug(g->lg,
                  "the kernel holds more than %lu names: told to drop %lu of them "
                  "(%lu it still had); %lu in use kept, %lu not kept (no room)",
                  g->keep, k - kept, done, kept, lost);
}

static void *forget_main(void *arg)
{
    struct fs_forget *g = arg;

    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        struct named *old = NULL;
        size_t k = g->added >= g->batch && g->n >= g->keep + g->batch ? take_oldest(g, &old) : 0;
        unsigned long lost = g->lost;

        if (!k) {
            pthread_cond_wait(&g->cv, &g->mu);
            continue;
        }
        g->lost = g->added = 0;
        pthread_mutex_unlock(&g->mu);
        forget_round(g, old, k, lost);
        free(old);
        pthread_mutex_lock(&g->mu);
    }
    g->ended = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* See fs.h. */
int fs_forget_start(struct fs_forget *g, struct fuse_session *se, const char *mountpoint,
                    struct fs_handles *h, int shared)
{
    if (!g || !g->cap)
        return 0;
    free(g->mountpoint);
    if (!(g->mountpoint = strdup(mountpoint)))
        return -ENOMEM;
    g->handles = h;
    g->shared = shared;
    g->se = se;
    g->ended = 0;
    if (workers_add(&g->thread, "aztfs-forget", forget_main, g) < 0) {
        g->ended = 1;
        return -EAGAIN;
    }
    return 0;
}

/* See fs.h. */
int fs_forget_stopped(struct fs_forget *g, int ms)
{
    struct timespec t;
    int ended;

    if (!g)
        return 1;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_cond_broadcast(&g->cv);
    while (!g->ended && pthread_cond_timedwait(&g->cv, &g->mu, &t) == 0)
        ;
    ended = g->ended;
    pthread_mutex_unlock(&g->mu);
    if (ended)
        workers_join(&g->thread);
    return ended;
}

/* See fs.h. */
void fs_forget_free(struct fs_forget *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->mu);
    g->stop = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    workers_join(&g->thread);
    for (size_t i = 0; i < g->n; i++)
        free(g->ring[(g->head + i) % g->cap].path);
    free(g->ring);
    free(g->mountpoint);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
    free(g);
}
