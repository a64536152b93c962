/* util/safefile.c - files the daemon writes, opened so that another user cannot
 * redirect them (util.h). Ownership and mode bits are checked, ACLs are
 * not (out of scope). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <openssl/rand.h>

#include "util/util.h"

#define SHARED_FIX "or add -o allow_shared_dirs if you mean it"
#define TMP_TRIES 100

/* printf into WHY (if any); returns RC, so callers can "return why_set(...)". */
__attribute__((format(printf, 4, 5))) static int why_set(int rc, char *why, size_t whylen,
                                                         const char *fmt, ...)
{
    va_list ap;

    if (why && whylen) {
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* May UID own what the daemon's files depend on? Root or ourselves. */
static int trusted(uid_t uid)
{
    return uid == 0 || uid == geteuid();
}

/* Is NAME one component (no '/', not "", ".", "..")? */
static int valid_name(const char *name)
{
    return name && *name && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* PATH made absolute against the current directory: malloc'd, or NULL
 * with errno set. */
static char *absolute(const char *path)
{
    char *cwd, *out = NULL;

    if (path[0] == '/')
        return strdup(path);
    if (!(cwd = getcwd(NULL, 0)))
        return NULL;
    if (asprintf(&out, "%s/%s", cwd, path) < 0) {
        out = NULL;
        errno = ENOMEM;
    }
    free(cwd);
    return out;
}

/* Every symlink among the prefixes of the absolute ABS (as given, before
 * resolving) must belong to root or us. Returns 0 or -EACCES with WHY. */
static int check_links(char *abs, char *why, size_t whylen)
{
    struct stat st;
    int rc = 0;

    for (char *s = abs + 1; rc == 0; s++) {
        char c = *s;

        if (c != '/' && c != '\0')
            continue;
        *s = '\0';
        if (s[-1] != '/' && lstat(abs, &st) == 0 && S_ISLNK(st.st_mode) && !trusted(st.st_uid))
            rc = why_set(-EACCES, why, whylen,
                         "%s is a symlink that belongs to uid %u "
                         "(neither root nor uid %u), who could point it elsewhere: give "
                         "the real path, " SHARED_FIX,
                         abs, (unsigned)st.st_uid, (unsigned)geteuid());
        *s = c;
        if (c == '\0')
            break;
    }
    return rc;
}

/* ABS resolved: realpath of its longest existing prefix, then (CREATE
 * only) the missing rest, which may not hold "..". Returns 0 with *OUT
 * (malloc'd) or -errno with WHY. */
static int resolve(const char *abs, int create, char **out, char *why, size_t whylen)
{
    char *copy = strdup(abs), *real = NULL, *save = NULL, *rest, *c;
    size_t cut = copy ? strlen(copy) : 0;
    int rc = -ENOMEM;

    if (!copy)
        return why_set(rc, why, whylen, "out of memory");
    while (!(real = realpath(copy, NULL))) {
        rc = -errno;
        if (rc != -ENOENT || !create) {
            why_set(rc, why, whylen, "%s: %s", abs, strerror(-rc));
            goto out;
        }
        while (cut > 1 && copy[cut - 1] == '/')
            cut--;
        while (cut > 1 && copy[cut - 1] != '/')
            cut--;
        copy[cut] = '\0'; /* "/" at the latest, which exists */
    }
    rest = copy + cut;
    memcpy(rest, abs + cut, strlen(abs + cut) + 1);
    if (asprintf(out, "%s/%s", real, rest) < 0) {
        rc = why_set(-ENOMEM, why, whylen, "out of memory");
        goto out;
    }
    rc = 0;
    for (c = strtok_r(rest, "/", &save); c; c = strtok_r(NULL, "/", &save))
        if (strcmp(c, "..") == 0)
            rc = why_set(-EINVAL, why, whylen,
                         "%s: \"..\" after a directory that does "
                         "not exist",
                         abs);
    if (rc < 0) {
        free(*out);
        *out = NULL;
    }
out:
    free(real);
    free(copy);
    return rc;
}

/* The fix WHY offers for a directory (status ST) others may write: chmod
 * only for a directory of the user's own, group included (root's
 * /var/mail, root:mail 2775, is the system's: its mode is not the mount's
 * to change); else another directory. */
static const char *shared_fix(const struct stat *st)
{
    return st->st_uid == geteuid() && (geteuid() != 0 || st->st_gid == 0) ?
        "run chmod go-w " :
        "use a directory only you can write instead of ";
}

/* The directory rules of safe_dir_open for PATH, whose status is ST: FINAL
 * for the directory itself, else an ancestor. Returns 0 or -EACCES with WHY. */
static int check_dir(const struct stat *st, const char *path, int final, char *why, size_t whylen)
{
    int others_write = (st->st_mode & (S_IWGRP | S_IWOTH)) != 0;

    if (!trusted(st->st_uid))
        return why_set(-EACCES, why, whylen,
                       "%s belongs to uid %u (neither root nor uid "
                       "%u), who could replace the %s in it: use a directory of your "
                       "own, " SHARED_FIX,
                       path, (unsigned)st->st_uid, (unsigned)geteuid(),
                       final ? "files" : "directories");
    /* sticky (/tmp): no other user can remove or rename what is ours, and
     * what they made first is refused by safe_open (owner, one link, no
     * symlink) */
    if (others_write && !(st->st_mode & S_ISVTX))
        return why_set(-EACCES, why, whylen,
                       "%s is writable by group or others without "
                       "the sticky bit (mode %04o), so the %s in it can be "
                       "replaced: %s%s, " SHARED_FIX,
                       path, (unsigned)(st->st_mode & 07777), final ? "files" : "directories",
                       shared_fix(st), path);
    return 0;
}

/* Open the directory COMP in DIRFD (PATH: where it is, for messages), made
 * 0700 first if missing and CREATE. Returns the descriptor or -errno with WHY. */
static int open_step(int dirfd, const char *comp, int create, const char *path, char *why,
                     size_t whylen)
{
    const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat(dirfd, comp, flags), rc;

    if (fd < 0 && errno == ENOENT && create) {
        if (mkdirat(dirfd, comp, 0700) < 0 && errno != EEXIST)
            return why_set(-errno, why, whylen, "cannot create the directory %s: %s", path,
                           strerror(errno));
        fd = openat(dirfd, comp, flags);
    }
    if (fd >= 0)
        return fd;
    rc = -errno;
    if (rc == -ELOOP || rc == -ENOTDIR)
        return why_set(rc, why, whylen,
                       "%s is a symlink or not a directory (it changed "
                       "while being checked): give the path of a directory",
                       path);
    return why_set(rc, why, whylen, "%s: %s", path, strerror(-rc));
}

/* The next component of a path being split by strtok_r (S: the path on
 * the first call, then NULL), "." skipped; NULL at the end. */
static char *next_comp(char *s, char **save)
{
    char *c;

    do
        c = strtok_r(s, "/", save), s = NULL;
    while (c && strcmp(c, ".") == 0);
    return c;
}

/* Walk the resolved REAL from "/" (see safe_dir_open). Returns 0 with
 * *OUT, or -errno with WHY. */
static int walk(const char *real, int create, int allow_shared, struct safe_dir *out, char *why,
                size_t whylen)
{
    char *copy = strdup(real), *path = malloc(strlen(real) + 2), *save = NULL, *comp;
    size_t len = 1;
    struct stat st;
    int fd = -1, next, rc = -ENOMEM;

    if (!copy || !path) {
        why_set(rc, why, whylen, "out of memory");
        goto fail;
    }
    strcpy(path, "/");
    if ((fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        rc = why_set(-errno, why, whylen, "/: %s", strerror(errno));
        goto fail;
    }
    comp = next_comp(copy, &save);
    for (;;) {
        if (fstat(fd, &st) < 0) {
            rc = why_set(-errno, why, whylen, "%s: %s", path, strerror(errno));
            goto fail;
        }
        if (!allow_shared && (rc = check_dir(&st, path, comp == NULL, why, whylen)) < 0)
            goto fail;
        if (!comp)
            break;
        len += (size_t)sprintf(path + len, "%s%s", len > 1 ? "/" : "", comp);
        next = open_step(fd, comp, create, path, why, whylen);
        close(fd);
        if ((fd = next) < 0) {
            rc = next;
            goto fail;
        }
        comp = next_comp(NULL, &save);
    }
    free(copy);
    *out = (struct safe_dir){ .fd = fd, .path = path };
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    free(copy);
    free(path);
    return rc;
}

/* See util/util.h. */
int safe_dir_open(const char *path, int create, int allow_shared, struct safe_dir *out, char *why,
                  size_t whylen)
{
    char *abs = absolute(path), *real = NULL;
    int rc;

    *out = (struct safe_dir){ .fd = -1 };
    if (!abs)
        return why_set(-errno, why, whylen, "%s: %s", path, strerror(errno));
    rc = allow_shared ? 0 : check_links(abs, why, whylen);
    if (rc == 0)
        rc = resolve(abs, create, &real, why, whylen);
    if (rc == 0)
        rc = walk(real, create, allow_shared, out, why, whylen);
    free(real);
    free(abs);
    return rc;
}

/* See util/util.h. */
void safe_dir_close(struct safe_dir *d)
{
    if (d->path)
        close(d->fd);
    free(d->path);
    *d = (struct safe_dir){ .fd = -1 };
}

/* See util/util.h. */
int safe_path_split(const char *path, char **dir, char **name)
{
    char *abs = absolute(path), *slash;
    int rc = -EINVAL;

    *dir = *name = NULL;
    if (!abs)
        return -errno;
    slash = strrchr(abs, '/'); /* there is one: ABS is absolute */
    if (valid_name(slash + 1)) {
        *name = strdup(slash + 1);
        *dir = slash == abs ? strdup("/") : strndup(abs, (size_t)(slash - abs));
        rc = *dir && *name ? 0 : -ENOMEM;
    }
    if (rc < 0) {
        free(*dir);
        free(*name);
        *dir = *name = NULL;
    }
    free(abs);
    return rc;
}

/* See util/util.h. */
int safe_parent_open(const char *path, int allow_shared, struct safe_dir *dir, char **name,
                     char *why, size_t whylen)
{
    char *dpath = NULL;
    int rc = safe_path_split(path, &dpath, name);

    *dir = (struct safe_dir){ .fd = -1 };
    if (rc == -EINVAL)
        return why_set(rc, why, whylen, "%s does not end in a file name", path);
    if (rc < 0)
        return why_set(rc, why, whylen, "%s: %s", path, strerror(-rc));
    rc = safe_dir_open(dpath, 0, allow_shared, dir, why, whylen);
    free(dpath);
    if (rc < 0) {
        free(*name);
        *name = NULL;
    }
    return rc;
}

/* The file rules of safe_open for NAME in D, open as FD. Returns 0 or
 * -errno with WHY. */
static int check_file(const struct safe_dir *d, const char *name, int fd, char *why, size_t whylen)
{
    struct stat st;

    if (fstat(fd, &st) < 0)
        return why_set(-errno, why, whylen, "%s/%s: %s", d->path, name, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return why_set(-EINVAL, why, whylen, "%s/%s is not a regular file: remove it", d->path,
                       name);
    if (st.st_nlink != 1)
        return why_set(-EMLINK, why, whylen,
                       "%s/%s has %lu links (another name shares "
                       "it): remove it",
                       d->path, name, (unsigned long)st.st_nlink);
    if (st.st_uid != geteuid())
        return why_set(-EACCES, why, whylen,
                       "%s/%s belongs to uid %u, not to uid %u: "
                       "remove it",
                       d->path, name, (unsigned)st.st_uid, (unsigned)geteuid());
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return why_set(-EACCES, why, whylen,
                       "%s/%s is writable by group or others "
                       "(mode %04o): run chmod go-w %s/%s",
                       d->path, name, (unsigned)(st.st_mode & 07777), d->path, name);
    return 0;
}

/* Why opening NAME in D failed with RC: a symlink, something that is not a
 * regular file (a FIFO without a reader: ENXIO), or RC's text. */
static int open_failed(const struct safe_dir *d, const char *name, int rc, char *why, size_t whylen)
{
    struct stat st;

    if (rc == -ELOOP)
        return why_set(rc, why, whylen,
                       "%s/%s is a symlink (aztfs writes no file through "
                       "one): remove it",
                       d->path, name);
    if (rc == -ENXIO && fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
        return why_set(-EINVAL, why, whylen, "%s/%s is not a regular file: remove it", d->path,
                       name);
    return why_set(rc, why, whylen, "%s/%s: %s", d->path, name, strerror(-rc));
}

/* See util/util.h. */
int safe_open(const struct safe_dir *d, const char *name, int flags, mode_t mode, char *why,
              size_t whylen)
{
    int keep = flags & (O_ACCMODE | O_CREAT | O_EXCL | O_APPEND), fd, fl, rc;

    if (!valid_name(name))
        return why_set(-EINVAL, why, whylen, "%s: \"%s\" is not a file name", d->path, name);
    fd = openat(d->fd, name, keep | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode);
    if (fd < 0)
        return open_failed(d, name, -errno, why, whylen);
    rc = check_file(d, name, fd, why, whylen);
    if (rc == 0 &&
        ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ||
         ((flags & O_TRUNC) && ftruncate(fd, 0) < 0)))
        rc = why_set(-errno, why, whylen, "%s/%s: %s", d->path, name, strerror(errno));
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

/* See util/util.h. */
int safe_tmp(const struct safe_dir *d, const char *name, mode_t mode, char **tmp)
{
    static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const int flags = O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY;
    unsigned char rnd[6];
    char *t;
    size_t n;
    int fd = -EEXIST;

    *tmp = NULL;
    if (!valid_name(name))
        return -EINVAL;
    if (asprintf(&t, "%s.tmp-XXXXXX", name) < 0)
        return -ENOMEM;
    n = strlen(t) - sizeof(rnd);
    for (int i = 0; i < TMP_TRIES && fd == -EEXIST; i++) {
        if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
            fd = -EIO;
            break;
        }
        for (size_t k = 0; k < sizeof(rnd); k++)
            t[n + k] = chars[rnd[k] % (sizeof(chars) - 1)];
        fd = openat(d->fd, t, flags, mode);
        if (fd < 0)
            fd = -errno;
    }
    if (fd < 0)
        free(t);
    else
        *tmp = t;
    return fd;
}

/* See util/util.h. */
int safe_same_file(const struct safe_dir *d, const char *name, int fd)
{
    struct stat a, b;

    if (fstat(fd, &a) < 0)
        return -errno;
    if (fstatat(d->fd, name, &b, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -errno;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* See util.h. */
int safe_pwrite_all(int fd, const char *data, size_t len, off_t off)
{
    while (len > 0) {
        ssize_t n = pwrite(fd, data, len, off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        data += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}
