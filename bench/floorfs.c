/* floorfs.c - the FUSE floor of the benchmark: a directory tree loaded into
 * memory and served read-only by a libfuse low-level filesystem.
 *
 *     floorfs SRC MOUNTPOINT [-f] [-o FUSE options]
 *
 * It answers every request from memory with what a FUSE filesystem can do
 * best: readdirplus (each listing also answers the stat that follows it),
 * entry and attribute timeouts of a day (the kernel asks once), reads
 * served like aztfs's (direct_io: each read reaches the daemon), a
 * multi-threaded loop like aztfs's. A tool's time over floorfs is what FUSE
 * itself costs on this machine, which varies from run to run: compare
 * aztfs against it in the same run (bench/latency.py builds and runs it).
 * Only directories and regular files are loaded; the tree never changes.
 *
 * Built by bench/latency.py:
 *     cc -O2 -Wall -Wextra -Werror floorfs.c $(pkg-config --cflags --libs fuse3)
 */
#define FUSE_USE_VERSION 312
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TIMEOUT 86400.0

/* One file or directory; its inode number is its index + 1. */
struct node {
    char *name;
    struct stat st;
    char *data;                /* a file's bytes */
    size_t *kids;              /* a directory's entries (indices), in readdir order */
    size_t nkids;
    size_t parent;
};

struct tree {
    struct node *n;
    size_t count, cap;
};

static struct tree T;

/* Append a node; its index, or (size_t)-1 on ENOMEM. */
static size_t node_new(const char *name, const struct stat *st, size_t parent)
{
    if (T.count == T.cap) {
        size_t cap = T.cap ? 2 * T.cap : 1024;
        struct node *n = realloc(T.n, cap * sizeof(*n));

        if (!n)
            return (size_t)-1;
        T.n = n;
        T.cap = cap;
    }
    memset(&T.n[T.count], 0, sizeof(T.n[0]));
    if (!(T.n[T.count].name = strdup(name)))
        return (size_t)-1;
    T.n[T.count].st = *st;
    T.n[T.count].st.st_ino = T.count + 1;
    T.n[T.count].parent = parent;
    return T.count++;
}

/* Read file PATH into node I. Returns 0 or -1. */
static int load_file(const char *path, size_t i)
{
    size_t len = (size_t)T.n[i].st.st_size, got = 0;
    int fd = open(path, O_RDONLY);
    char *d = malloc(len ? len : 1);

    if (fd < 0 || !d) {
        free(d);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    while (got < len) {
        ssize_t r = read(fd, d + got, len - got);

        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    T.n[i].data = d;
    T.n[i].st.st_size = (off_t)got;
    return 0;
}

/* Load directory PATH as node I, recursively. Returns 0 or -1. */
static int load_dir(const char *path, size_t i)
{
    DIR *d = opendir(path);
    struct dirent *de;
    int rc = 0;

    if (!d)
        return -1;
    while (rc == 0 && (de = readdir(d))) {
        char sub[4096];
        struct stat st;
        size_t k, *kids;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >= (int)sizeof(sub) ||
            lstat(sub, &st) < 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
            continue;
        if ((k = node_new(de->d_name, &st, i)) == (size_t)-1 ||
            !(kids = realloc(T.n[i].kids, (T.n[i].nkids + 1) * sizeof(*kids)))) {
            rc = -1;
            break;
        }
        T.n[i].kids = kids;
        kids[T.n[i].nkids++] = k;
        rc = S_ISDIR(st.st_mode) ? load_dir(sub, k) : load_file(sub, k);
    }
    closedir(d);
    return rc;
}

/* The node of inode INO, or NULL. */
static struct node *node_of(fuse_ino_t ino)
{
    return ino >= 1 && ino <= T.count ? &T.n[ino - 1] : NULL;
}

static void entry_of(const struct node *n, struct fuse_entry_param *e)
{
    memset(e, 0, sizeof(*e));
    e->ino = n->st.st_ino;
    e->attr = n->st;
    e->attr_timeout = e->entry_timeout = TIMEOUT;
}

static void ff_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct node *p = node_of(parent);
    struct fuse_entry_param e;

    for (size_t i = 0; p && i < p->nkids; i++)
        if (strcmp(T.n[p->kids[i]].name, name) == 0) {
            entry_of(&T.n[p->kids[i]], &e);
            fuse_reply_entry(req, &e);
            return;
        }
    fuse_reply_err(req, ENOENT);
}

static void ff_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct node *n = node_of(ino);

    (void)fi;
    if (!n)
        fuse_reply_err(req, ENOENT);
    else
        fuse_reply_attr(req, &n->st, TIMEOUT);
}

/* Entries of directory INO from offset OFF (0: ".", 1: "..", 2 + i: kid
 * i) into at most SIZE bytes, with attributes when PLUS. */
static void reply_dir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
    struct node *d = node_of(ino);
    char *buf;
    size_t used = 0;

    if (!d || !S_ISDIR(d->st.st_mode)) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    if (!(buf = malloc(size))) {
        fuse_reply_err(req, ENOMEM);
        return;
    }
    for (size_t i = (size_t)off; i < d->nkids + 2; i++) {
        struct node *n = i == 0 ? d : i == 1 ? &T.n[d->parent] : &T.n[d->kids[i - 2]];
        const char *name = i == 0 ? "." : i == 1 ? ".." : n->name;
        struct fuse_entry_param e;
        size_t len;

        entry_of(n, &e);
        if (plus && i < 2)
            e.ino = 0;         /* "." and "..": no lookup count taken */
        len = plus ? fuse_add_direntry_plus(req, buf + used, size - used, name, &e,
                                            (off_t)i + 1)
                   : fuse_add_direntry(req, buf + used, size - used, name, &e.attr,
                                       (off_t)i + 1);
        if (len > size - used)
            break;
        used += len;
    }
    fuse_reply_buf(req, buf, used);
    free(buf);
}

static void ff_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    (void)fi;
    reply_dir(req, ino, size, off, 0);
}

static void ff_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           struct fuse_file_info *fi)
{
    (void)fi;
    reply_dir(req, ino, size, off, 1);
}

static void ff_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
    struct node *n = node_of(ino);

    if (!n || !S_ISREG(n->st.st_mode))
        fuse_reply_err(req, n ? EISDIR : ENOENT);
    else if ((fi->flags & O_ACCMODE) != O_RDONLY)
        fuse_reply_err(req, EROFS);
    else {
        fi->direct_io = 1;     /* as aztfs: every read reaches the daemon */
        fuse_reply_open(req, fi);
    }
}

static void ff_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    struct node *n = node_of(ino);
    size_t len = n ? (size_t)n->st.st_size : 0;

    (void)fi;
    if (!n || (size_t)off >= len)
        fuse_reply_buf(req, NULL, 0);
    else
        fuse_reply_buf(req, n->data + off, len - (size_t)off < size ? len - (size_t)off : size);
}

static void ff_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    conn->want |= FUSE_CAP_READDIRPLUS;
    conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;    /* always plus, as aztfs's listings */
}

static const struct fuse_lowlevel_ops ops = {
    .init = ff_init,
    .lookup = ff_lookup,
    .getattr = ff_getattr,
    .readdir = ff_readdir,
    .readdirplus = ff_readdirplus,
    .open = ff_open,
    .read = ff_read,
};

int main(int argc, char **argv)
{
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    struct fuse_cmdline_opts o;
    struct fuse_session *se;
    struct fuse_loop_config *lc;
    struct stat st;
    int rc = 1;

    if (argc < 3 || stat(argv[1], &st) < 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "usage: floorfs SRC MOUNTPOINT [-f] [-o FUSE options]\n");
        return 2;
    }
    if (node_new("", &st, 0) == (size_t)-1 || load_dir(argv[1], 0) < 0) {
        fprintf(stderr, "floorfs: cannot load %s\n", argv[1]);
        return 1;
    }
    fprintf(stderr, "floorfs: %zu nodes loaded\n", T.count);
    for (int i = 0; i < argc; i++)
        if (i != 1 && fuse_opt_add_arg(&args, argv[i]) != 0)
            return 1;
    if (fuse_parse_cmdline(&args, &o) != 0 || !o.mountpoint)
        return 2;
    se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
    if (se && fuse_session_mount(se, o.mountpoint) == 0) {
        fuse_daemonize(o.foreground);
        fuse_set_signal_handlers(se);
        if ((lc = fuse_loop_cfg_create())) {
            rc = fuse_session_loop_mt(se, lc) < 0;
            fuse_loop_cfg_destroy(lc);
        }
        fuse_remove_signal_handlers(se);
        fuse_session_unmount(se);
    }
    if (se)
        fuse_session_destroy(se);
    free(o.mountpoint);
    fuse_opt_free_args(&args);
    return rc;
}
