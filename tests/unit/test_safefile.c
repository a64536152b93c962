/* test_safefile.c - unit tests for the files the daemon writes (safefile.h):
 * symlinks, FIFOs, other owners, hard links and writable modes refused;
 * the directory rules (owner, group/other write, the sticky bit on an
 * ancestor, symlinked components, -o allow_shared_dirs); mkdir -p; the
 * temporary names of write-then-rename; safe_same_file. Runs as root (it
 * gives files to uid 65534). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/util.h"
#include "tap.h"

#define NOBODY 65534

/* The temporary directory of this run (mkdtemp), removed at the end. */
static char base[] = "/tmp/aztfs-test-safefile-XXXXXX";

/* BASE/FMT... into OUT (PATH_MAX bytes): a path in the run's directory. */
__attribute__((format(printf, 2, 3))) static char *at(char *out, const char *fmt, ...)
{
    char rel[PATH_MAX / 2];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(rel, sizeof(rel), fmt, ap);
    va_end(ap);
    snprintf(out, PATH_MAX, "%s/%s", base, rel);
    return out;
}

/* Write TEXT to PATH (created MODE, replacing what was there). 0 or -1. */
static int put(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode), ok_ = fd >= 0;

    if (ok_)
        ok_ = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    if (fd >= 0)
        close(fd);
    return ok_ && chmod(path, mode) == 0 ? 0 : -1;
}

/* Does PATH hold exactly TEXT? */
static int holds(const char *path, const char *text)
{
    char got[256];
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    ssize_t n = fd >= 0 ? read(fd, got, sizeof(got) - 1) : -1;

    if (fd >= 0)
        close(fd);
    if (n < 0)
        return 0;
    got[n] = '\0';
    return strcmp(got, text) == 0;
}

/* mkdir PATH with MODE exactly (chmod after the umask) and owner UID. */
static int mkdir_as(const char *path, mode_t mode, uid_t uid)
{
    return mkdir(path, 0700) == 0 && chmod(path, mode) == 0 && chown(path, uid, 0) == 0 ? 0 : -1;
}

/* Open directory DIR (no create) into *D; the result, WHY kept in why. */
static char why[512];
static int dir_open(const char *dir, int allow_shared, struct safe_dir *d)
{
    why[0] = '\0';
    return safe_dir_open(dir, 0, allow_shared, d, why, sizeof(why));
}

/* safe_open of NAME in D with FLAGS: its result (a descriptor closed). */
static int try_open(const struct safe_dir *d, const char *name, int flags)
{
    int fd;

    why[0] = '\0';
    fd = safe_open(d, name, flags, 0600, why, sizeof(why));
    if (fd >= 0)
        close(fd);
    return fd >= 0 ? 0 : fd;
}

/* The file checks: symlink, FIFO, other owner, hard link, writable modes. */
static void test_files(void)
{
    char dir[PATH_MAX], p[PATH_MAX], victim[PATH_MAX], q[PATH_MAX];
    struct safe_dir d = { 0 };
    struct stat st;
    int fd;

    ok(mkdir_as(at(dir, "files"), 0700, 0) == 0, "files: mkdir");
    ok(put(at(victim, "victim"), "secret\n", 0600) == 0, "a root-owned 0600 victim");
    is_int(dir_open(dir, 0, &d), 0, "a 0700 directory of ours is accepted: %s", why);

    ok(symlink(victim, at(p, "files/log")) == 0, "symlink planted at the name");
    is_int(try_open(&d, "log", O_WRONLY | O_APPEND | O_CREAT), -ELOOP,
           "a symlink at the name is refused");
    ok(strstr(why, "/files/log is a symlink") != NULL, "why names it: %s", why);
    is_int(try_open(&d, "log", O_WRONLY | O_CREAT | O_TRUNC), -ELOOP, "also with O_TRUNC");
    ok(holds(victim, "secret\n"), "the symlink's target is unchanged");

    ok(mkfifo(at(p, "files/fifo"), 0600) == 0, "a FIFO planted at a name");
    alarm(5); /* a block kills the test: no plan printed */
    is_int(try_open(&d, "fifo", O_WRONLY | O_CREAT | O_TRUNC), -EINVAL,
           "a FIFO is refused for writing, without blocking");
    ok(strstr(why, "is not a regular file") != NULL, "why: %s", why);
    is_int(try_open(&d, "fifo", O_RDONLY), -EINVAL, "and for reading");
    is_int(try_open(&d, "fifo", O_RDWR | O_APPEND), -EINVAL, "and for both");
    alarm(0);

    ok(put(at(p, "files/theirs"), "theirs\n", 0644) == 0 && chown(p, NOBODY, 0) == 0,
       "a file of uid %d", NOBODY);
    is_int(try_open(&d, "theirs", O_WRONLY | O_APPEND | O_CREAT | O_TRUNC), -EACCES,
           "a file owned by another uid is refused");
    ok(strstr(why, "belongs to uid 65534") != NULL, "why: %s", why);
    ok(holds(p, "theirs\n"), "O_TRUNC comes after the checks: the file is unchanged");

    ok(put(at(p, "files/linked"), "x", 0600) == 0 && link(p, at(q, "other")) == 0,
       "a file with a second name");
    is_int(try_open(&d, "linked", O_WRONLY | O_APPEND), -EMLINK, "a hard link is refused");

    ok(put(at(p, "files/gw"), "x", 0620) == 0, "a group-writable file");
    is_int(try_open(&d, "gw", O_WRONLY | O_APPEND), -EACCES, "is refused");
    ok(strstr(why, "chmod go-w") != NULL, "why says the fix: %s", why);
    ok(put(at(p, "files/ow"), "x", 0602) == 0, "an other-writable file");
    is_int(try_open(&d, "ow", O_WRONLY | O_APPEND), -EACCES, "is refused");
    ok(put(at(p, "files/readable"), "old", 0644) == 0, "a 0644 file of ours");
    why[0] = '\0';
    fd = safe_open(&d, "readable", O_WRONLY | O_TRUNC, 0600, why, sizeof(why));
    ok(fd >= 0, "group/other read is allowed: %s", why);
    ok(fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0, "O_TRUNC applied after the checks");
    ok(fd >= 0 && !(fcntl(fd, F_GETFL) & O_NONBLOCK) && (fcntl(fd, F_GETFD) & FD_CLOEXEC),
       "O_NONBLOCK cleared, O_CLOEXEC set");
    if (fd >= 0)
        close(fd);

    fd = safe_open(&d, "new", O_WRONLY | O_APPEND | O_CREAT, 0600, why, sizeof(why));
    ok(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0600 && st.st_uid == 0,
       "a missing file is created with the mode given");
    if (fd >= 0)
        close(fd);
    is_int(try_open(&d, "../victim", O_RDONLY), -EINVAL, "a name with '/' is refused");
    is_int(try_open(&d, "..", O_RDONLY), -EINVAL, "\"..\" is refused");
    safe_dir_close(&d);
    ok(d.path == NULL, "safe_dir_close");
    safe_dir_close(&d); /* a zeroed struct: nothing */
}

/* The directory itself: writable by group or others without the sticky
 * bit, or owned by another uid, is refused unless allow_shared; the fix
 * offered is chmod for a directory of our own, never for the system's. A
 * sticky one (/tmp) is accepted: no one else can remove or rename our
 * file there, and what they made first is refused by safe_open. */
static void test_dir_itself(void)
{
    static const mode_t modes[] = { 0770, 0707, 0777 };
    char p[PATH_MAX];
    struct safe_dir d;
    int fd;

    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        char name[32];

        snprintf(name, sizeof(name), "shared%04o", (unsigned)modes[i]);
        ok(mkdir_as(at(p, "%s", name), modes[i], 0) == 0, "a directory %04o", (unsigned)modes[i]);
        is_int(dir_open(p, 0, &d), -EACCES, "%04o: refused", (unsigned)modes[i]);
        ok(strstr(why, "writable by group or others without the sticky bit") &&
               strstr(why, "chmod go-w") && strstr(why, "allow_shared_dirs") && strstr(why, name),
           "why: %s", why);
        is_int(dir_open(p, 1, &d), 0, "%04o: accepted with allow_shared", (unsigned)modes[i]);
        safe_dir_close(&d);
    }
    ok(mkdir_as(at(p, "mailish"), 02775, 0) == 0 && chown(p, 0, 8) == 0,
       "a root-owned directory of group 8 (/var/mail's mode)");
    is_int(dir_open(p, 0, &d), -EACCES, "refused");
    ok(strstr(why, "use a directory only you can write") && !strstr(why, "chmod"),
       "a system directory's mode is never the advice: %s", why);

    ok(mkdir_as(at(p, "tmpish"), 01777, 0) == 0, "a sticky world-writable directory (/tmp)");
    is_int(dir_open(p, 0, &d), 0, "is accepted: %s", why);
    fd = safe_open(&d, "log", O_WRONLY | O_APPEND | O_CREAT, 0600, why, sizeof(why));
    ok(fd >= 0, "a file is created in it: %s", why);
    if (fd >= 0)
        close(fd);
    ok(put(at(p, "tmpish/planted"), "theirs\n", 0600) == 0 && chown(p, NOBODY, 0) == 0,
       "a file another uid made first");
    is_int(try_open(&d, "planted", O_WRONLY | O_APPEND | O_CREAT), -EACCES, "is refused");
    ok(symlink("/etc/passwd", at(p, "tmpish/link")) == 0, "a symlink planted there");
    is_int(try_open(&d, "link", O_WRONLY | O_APPEND | O_CREAT), -ELOOP, "is refused");
    safe_dir_close(&d);

    ok(mkdir_as(at(p, "nobodys"), 0755, NOBODY) == 0, "a directory of uid %d", NOBODY);
    is_int(dir_open(p, 0, &d), -EACCES, "refused");
    ok(strstr(why, "belongs to uid 65534") && strstr(why, "allow_shared_dirs"), "why: %s", why);
    is_int(dir_open(p, 1, &d), 0, "accepted with allow_shared");
    safe_dir_close(&d);
    ok(mkdir_as(at(p, "roots"), 0755, 0) == 0, "a root-owned 0755 directory");
    is_int(dir_open(p, 0, &d), 0, "is accepted");
    safe_dir_close(&d);
}

/* The ancestors: sticky world-writable fine, not sticky or another owner
 * refused. */
static void test_ancestors(void)
{
    char p[PATH_MAX], anc[PATH_MAX];
    struct safe_dir d;

    ok(mkdir_as(at(anc, "sticky"), 01777, 0) == 0 && mkdir_as(at(p, "sticky/d"), 0700, 0) == 0,
       "a directory in a sticky world-writable one");
    is_int(dir_open(p, 0, &d), 0, "a sticky world-writable ancestor is accepted: %s", why);
    safe_dir_close(&d);

    ok(mkdir_as(at(anc, "ww"), 0777, 0) == 0 && mkdir_as(at(p, "ww/d"), 0700, 0) == 0,
       "a directory in a world-writable one without the sticky bit");
    is_int(dir_open(p, 0, &d), -EACCES, "refused");
    ok(strstr(why, anc) && strstr(why, "without the sticky bit") &&
           strstr(why, "allow_shared_dirs"),
       "why names the ancestor: %s", why);
    is_int(dir_open(p, 1, &d), 0, "accepted with allow_shared");
    safe_dir_close(&d);

    ok(mkdir_as(at(anc, "theirs"), 0755, NOBODY) == 0 && mkdir_as(at(p, "theirs/d"), 0700, 0) == 0,
       "a directory in one of uid %d", NOBODY);
    is_int(dir_open(p, 0, &d), -EACCES, "refused");
    ok(strstr(why, anc) && strstr(why, "belongs to uid 65534"), "why: %s", why);
}

/* A symlinked component is resolved and the target checked; a symlink of
 * another user is refused. */
static void test_symlinked_dir(void)
{
    char p[PATH_MAX], real[PATH_MAX], t[PATH_MAX];
    struct safe_dir d;

    ok(mkdir_as(at(real, "target"), 0700, 0) == 0 && symlink(real, at(p, "link")) == 0,
       "a root symlink to a good directory");
    is_int(dir_open(p, 0, &d), 0, "accepted: %s", why);
    is_str(d.path, real, "the descriptor's path is the target");
    safe_dir_close(&d);
    ok(symlink(at(t, "ww"), at(p, "link_ww")) == 0, "a root symlink to a shared directory");
    is_int(dir_open(at(p, "link_ww/d"), 0, &d), -EACCES, "the target's checks apply");
    ok(strstr(why, t) != NULL, "why names the target: %s", why);
    ok(symlink(real, at(p, "link_nobody")) == 0 && lchown(p, NOBODY, 0) == 0,
       "a symlink of uid %d to a good directory", NOBODY);
    is_int(dir_open(p, 0, &d), -EACCES, "refused");
    ok(strstr(why, "is a symlink that belongs to uid 65534"), "why: %s", why);
    is_int(dir_open(p, 1, &d), 0, "accepted with allow_shared");
    safe_dir_close(&d);
}

/* CREATE makes missing components 0700; without it a missing directory is
 * ENOENT. */
static void test_create(void)
{
    char p[PATH_MAX], q[PATH_MAX];
    struct safe_dir d;
    struct stat st;
    mode_t old = umask(0);

    is_int(dir_open(at(p, "new/a/b"), 0, &d), -ENOENT, "a missing directory without create");
    ok(strstr(why, "new/a/b") != NULL, "why: %s", why);
    is_int(safe_dir_open(p, 1, 0, &d, why, sizeof(why)), 0, "created: %s", why);
    safe_dir_close(&d);
    ok(stat(at(q, "new"), &st) == 0 && (st.st_mode & 07777) == 0700 &&
           stat(at(q, "new/a"), &st) == 0 && (st.st_mode & 07777) == 0700 && stat(p, &st) == 0 &&
           (st.st_mode & 07777) == 0700,
       "each component 0700");
    is_int(safe_dir_open(p, 1, 0, &d, why, sizeof(why)), 0, "again: it exists");
    safe_dir_close(&d);
    is_int(safe_dir_open(at(p, "new2/../x"), 1, 0, &d, why, sizeof(why)), -EINVAL,
           "\"..\" after a missing component is refused");
    ok(put(at(p, "afile"), "x", 0600) == 0, "a file");
    is_int(safe_dir_open(at(p, "afile/sub"), 1, 0, &d, why, sizeof(why)), -ENOTDIR,
           "a file on the way: ENOTDIR");
    umask(old);
}

/* safe_tmp: a new file each time, nothing planted opened. */
static void test_tmp(void)
{
    char p[PATH_MAX], *t1 = NULL, *t2 = NULL;
    struct safe_dir d;
    struct stat st;
    int fd1, fd2;

    ok(mkdir_as(at(p, "tmp"), 0700, 0) == 0, "tmp: mkdir");
    is_int(dir_open(p, 0, &d), 0, "tmp: opened");
    ok(mkfifo(at(p, "tmp/m.prom.tmp"), 0600) == 0, "a FIFO planted at m.prom.tmp");
    alarm(5);
    fd1 = safe_tmp(&d, "m.prom", 0644, &t1);
    fd2 = safe_tmp(&d, "m.prom", 0644, &t2);
    alarm(0);
    ok(fd1 >= 0 && fd2 >= 0, "two temporary files");
    ok(t1 && t2 && strncmp(t1, "m.prom.tmp-", 11) == 0 && strlen(t1) == 17 && strcmp(t1, t2) != 0,
       "random names beside the name: %s %s", t1, t2);
    ok(fd1 >= 0 && fstat(fd1, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 &&
           st.st_nlink == 1,
       "a new empty regular file");
    ok(lstat(at(p, "tmp/m.prom.tmp"), &st) == 0 && S_ISFIFO(st.st_mode),
       "the planted FIFO is left alone");
    ok(fd1 >= 0 && fcntl(fd1, F_GETFD) & FD_CLOEXEC, "O_CLOEXEC");
    if (fd1 >= 0)
        close(fd1);
    if (fd2 >= 0)
        close(fd2);
    free(t1);
    free(t2);
    is_int(safe_tmp(&d, "a/b", 0600, &t1), -EINVAL, "a name with '/' is refused");
    safe_dir_close(&d);
}

/* safe_same_file after unlink, replace, and a symlink to the same file. */
static void test_same_file(void)
{
    char p[PATH_MAX], q[PATH_MAX];
    struct safe_dir d;
    int fd;

    ok(mkdir_as(at(p, "same"), 0700, 0) == 0, "same: mkdir");
    is_int(dir_open(p, 0, &d), 0, "same: opened");
    fd = safe_open(&d, "j", O_RDWR | O_CREAT, 0600, why, sizeof(why));
    ok(fd >= 0, "opened j");
    is_int(safe_same_file(&d, "j", fd), 1, "the same file");
    ok(rename(at(p, "same/j"), at(q, "same/k")) == 0 && symlink("k", at(p, "same/j")) == 0,
       "j moved to k, a symlink j -> k");
    is_int(safe_same_file(&d, "j", fd), 0, "a symlink to it is not the file");
    ok(unlink(at(p, "same/j")) == 0, "j removed");
    is_int(safe_same_file(&d, "j", fd), 0, "removed");
    ok(put(at(p, "same/j"), "x", 0600) == 0, "another j");
    is_int(safe_same_file(&d, "j", fd), 0, "replaced");
    if (fd >= 0)
        close(fd);
    safe_dir_close(&d);
}

/* safe_path_split and safe_parent_open. */
static void test_split(void)
{
    char *dir = NULL, *name = NULL, *cwd = getcwd(NULL, 0), want[PATH_MAX];
    char p[PATH_MAX];
    struct safe_dir d;

    is_int(safe_path_split("a/b.log", &dir, &name), 0, "a relative path");
    snprintf(want, sizeof(want), "%s/a", cwd ? cwd : "?");
    is_str(dir, want, "taken from the current directory");
    is_str(name, "b.log", "its name");
    free(dir);
    free(name);
    is_int(safe_path_split("/x.log", &dir, &name), 0, "a file in /");
    is_str(dir, "/", "dir /");
    free(dir);
    free(name);
    is_int(safe_path_split("/var/log/", &dir, &name), -EINVAL, "a trailing '/' names no file");
    is_int(safe_path_split("/var/..", &dir, &name), -EINVAL, "nor does \"..\"");
    ok(!dir && !name, "nothing returned");
    is_int(safe_parent_open(at(p, "missing/a.log"), 0, &d, &name, why, sizeof(why)), -ENOENT,
           "safe_parent_open: a missing directory");
    ok(strstr(why, "missing") && strstr(why, "No such file"), "why: %s", why);
    is_int(safe_parent_open(at(p, "roots/a.log"), 0, &d, &name, why, sizeof(why)), 0,
           "safe_parent_open: %s", why);
    is_str(name, "a.log", "the name");
    free(name);
    safe_dir_close(&d);
    free(cwd);
}

int main(void)
{
    if (geteuid() != 0) {
        printf("Bail out! test_safefile runs as root (it gives files to uid %d)\n", NOBODY);
        return 1;
    }
    if (!mkdtemp(base)) {
        printf("Bail out! mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    test_files();
    test_dir_itself();
    test_ancestors();
    test_symlinked_dir();
    test_create();
    test_tmp();
    test_same_file();
    test_split();
    ok(tap_rmtree(base), "temporary directory removed");
    return done_testing();
}
