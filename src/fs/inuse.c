/* fs/inuse.c - the names under the mount that the kernel has in use, which
 * fs/forget.c must never tell it are stale: the kernel answers that by
 * unhashing the name (d_invalidate), which takes a process's working
 * directory from it (getcwd: ENOENT, "(deleted)" in /proc/PID/cwd) and
 * detaches whatever is mounted at or under it. Asked once per round of
 * forget.c: the mount points inside the mount (/proc/self/mountinfo), the
 * directories open through it (fs/handles.c), and, when the round holds a
 * name that may be a directory, the working and root directories of every
 * process (/proc/PID/cwd, /proc/PID/root). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs/fs_i.h"

#define DELETED " (deleted)" /* what /proc/PID/cwd adds for an unhashed name */

/* What collect() gathers into. */
struct gather {
    struct fs_inuse *u;
    const char *mp; /* the mount point, absolute */
    size_t mplen;   /* its length; 0 when it is "/" */
    int rc;         /* 0, or -ENOMEM */
};

/* Keep ABS (an absolute path) when it is under the mount point: its part
 * below it ("/T/P"). */
static void keep(struct gather *g, const char *abs, size_t len)
{
    struct fs_inuse *u = g->u;
    char **grown;

    if (len <= g->mplen || strncmp(abs, g->mp, g->mplen) != 0 || abs[g->mplen] != '/')
        return; /* elsewhere, or the mount's root (never a name told stale) */
    if (u->n == u->cap) {
        size_t cap = u->cap ? 2 * u->cap : 16;

        if (!(grown = realloc(u->paths, cap * sizeof(*grown)))) {
            g->rc = -ENOMEM;
            return;
        }
        u->paths = grown;
        u->cap = cap;
    }
    if (!(u->paths[u->n] = strndup(abs + g->mplen, len - g->mplen)))
        g->rc = -ENOMEM;
    else
        u->n++;
}

static int on_mount(void *ctx, const char *dir)
{
    keep(ctx, dir, strlen(dir));
    return 0;
}

static void on_open_dir(void *ctx, const char *path)
{
    struct gather *g = ctx;
    char abs[PATH_MAX]; /* the handles hold paths below the mount point */
    int n = snprintf(abs, sizeof(abs), "%.*s%s", (int)g->mplen, g->mp, path);

    if (n > 0 && (size_t)n < sizeof(abs))
        keep(g, abs, (size_t)n);
    else
        g->rc = -ENOMEM; /* not kept: the round forgets nothing */
}

/* The working and root directory of every process. A link that cannot be
 * read (another user's process, with -o allow_other: SHARED) leaves
 * u->unknown set: any directory may be in use. */
static void scan_procs(struct gather *g, int shared)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    char link[64], buf[PATH_MAX];

    if (!d) {
        g->u->unknown = 1;
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        for (int i = 0; i < 2; i++) {
            ssize_t n;

            snprintf(link, sizeof(link), "/proc/%.20s/%s", e->d_name, i ? "root" : "cwd");
            if ((n = readlink(link, buf, sizeof(buf) - 1)) < 0) {
                if (shared && (errno == EACCES || errno == EPERM))
                    g->u->unknown = 1;
                continue; /* ENOENT: ended meanwhile, or a kernel thread */
            }
            buf[n] = '\0';
            if ((size_t)n > strlen(DELETED) && strcmp(buf + n - strlen(DELETED), DELETED) == 0)
                n -= (ssize_t)strlen(DELETED);
            keep(g, buf, (size_t)n);
        }
    }
    closedir(d);
}

/* See fs_i.h. */
int fs_inuse_collect(struct fs_inuse *u, const char *mountpoint, struct fs_handles *h, int shared,
                     int procs)
{
    struct gather g = { u, mountpoint, strcmp(mountpoint, "/") ? strlen(mountpoint) : 0, 0 };
    int rc;

    memset(u, 0, sizeof(*u));
    if ((rc = mounts_each("/proc/self/mountinfo", on_mount, &g)) < 0)
        return rc;
    if (h && (rc = fs_handles_each_dir(h, on_open_dir, &g)) < 0)
        return rc;
    if (procs)
        scan_procs(&g, shared);
    return g.rc;
}

/* See fs_i.h. */
int fs_inuse_holds(const struct fs_inuse *u, const char *path)
{
    size_t n = strlen(path);

    for (size_t i = 0; i < u->n; i++)
        if (strncmp(u->paths[i], path, n) == 0 && (u->paths[i][n] == '\0' || u->paths[i][n] == '/'))
            return 1;
    return 0;
}

/* See fs_i.h. Outside a view the tree is /TABLE/PARTITION/FILE: three
 * components are a file (an entity, a scratch file, a partition's
 * stream); a view's names may be directories at any depth. */
int fs_inuse_may_be_dir(const char *path)
{
    int depth = 0;

    for (const char *p = path; *p; p++)
        depth += *p == '/';
    return depth < 3 || strstr(path, "/" FSP_WHERE_NAME) != NULL;
}

/* See fs_i.h. */
void fs_inuse_clear(struct fs_inuse *u)
{
    for (size_t i = 0; i < u->n; i++)
        free(u->paths[i]);
    free(u->paths);
    memset(u, 0, sizeof(*u));
}
