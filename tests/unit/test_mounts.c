/* test_mounts.c - util/mounts.c: mounts_type_at reads a mount table in
 * /proc/self/mountinfo's format: the mount on top of a directory, its
 * escaped names, lines it cannot read, and a table that is not there;
 * mounts_check_place: a file and a directory holding files refused;
 * mounts_each gives every mount point in order, decoded. */
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "tap.h"
#include "util/util.h"

static const char TABLE[] =
    "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
    "40 1 8:1 / /mnt rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
    "41 40 0:40 / /mnt/tables rw,relatime shared:2 - autofs systemd-1 rw,fd=40\n"
    "42 41 0:41 / /mnt/tables rw,nosuid,nodev master:3 - fuse.aztfs aztfs:acct rw,user_id=0\n"
    "43 1 0:42 / /srv/with\\040space\\134and\\011tab rw - tmpfs tmpfs rw\n"
    "44 1 0:43 / /opt/auto rw - autofs systemd-1 rw\n"
    "not a mountinfo line\n"
    "45 1 0:44 / /broken rw no-separator tmpfs\n";

static char path[] = "/tmp/aztfs-test-mounts-XXXXXX";

static int type_at(const char *dir, char *type, size_t len)
{
    memset(type, 'x', len);
    return mounts_type_at(path, dir, type, len);
}

/* mounts_check_place: an empty directory takes a mount; a file never; a
 * directory that holds files only when allowed; what it cannot see is the
 * mount's to decide. */
static void test_place(void)
{
    char dir[] = "/tmp/aztfs-test-place-XXXXXX", p[sizeof(dir) + 16], why[512];
    int fd;

    ok(mkdtemp(dir) != NULL, "a directory");
    why[0] = '\0';
    is_int(mounts_check_place(dir, 0, why, sizeof(why)), 0, "an empty directory is fine");
    snprintf(p, sizeof(p), "%s/f", dir);
    ok((fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0 && close(fd) == 0, "a file in it");
    is_int(mounts_check_place(p, 0, why, sizeof(why)), -ENOTDIR, "a file is refused");
    ok(strstr(why, p) && strstr(why, "not a directory"), "why: %s", why);
    is_int(mounts_check_place(p, 1, why, sizeof(why)), -ENOTDIR, "even with nonempty");
    is_int(mounts_check_place(dir, 0, why, sizeof(why)), -ENOTEMPTY, "a directory holding it");
    ok(strstr(why, dir) && strstr(why, "'f'") && strstr(why, "-o nonempty") && !strstr(why, "more"),
       "why names it, what it holds and the option: %s", why);
    is_int(mounts_check_place(dir, 1, why, sizeof(why)), 0, "allowed with nonempty");
    snprintf(p, sizeof(p), "%s/.hidden", dir);
    ok(mkdir(p, 0700) == 0, "and a hidden directory");
    is_int(mounts_check_place(dir, 0, why, sizeof(why)), -ENOTEMPTY, "refused");
    ok(strstr(why, "and 1 more") != NULL, "counted: %s", why);
    rmdir(p);
    snprintf(p, sizeof(p), "%s/f", dir);
    unlink(p);
    snprintf(p, sizeof(p), "%s/gone", dir);
    is_int(mounts_check_place(p, 0, why, sizeof(why)), 0, "a missing one: the mount decides");
    is_int(mounts_check_place("/dev/fd/3", 0, why, sizeof(why)), 0, "mount.fuse3's /dev/fd/N");
    rmdir(dir);
}

/* What mounts_each gave: the mount points joined with '|'; STOP_AT: the
 * call that answers 7 (0: none). */
struct seen {
    char all[512];
    int stop_at;
};

static int on_mount(void *ctx, const char *dir)
{
    struct seen *s = ctx;
    size_t n = strlen(s->all);

    snprintf(s->all + n, sizeof(s->all) - n, "%s|", dir);
    return s->stop_at && --s->stop_at == 0 ? 7 : 0;
}

int main(void)
{
    char type[32];
    int fd = mkstemp(path);

    ok(fd >= 0 && write(fd, TABLE, strlen(TABLE)) == (ssize_t)strlen(TABLE) && close(fd) == 0,
       "the mount table is written");

    is_int(type_at("/mnt/tables", type, sizeof(type)), 1, "/mnt/tables is a mount point");
    is_str(type, "fuse.aztfs", "the mount on top (the last line) is the one told");
    is_int(type_at("/mnt", type, sizeof(type)), 1, "/mnt too");
    is_str(type, "ext4", "of its own type");
    is_int(type_at("/opt/auto", type, sizeof(type)), 1, "an automount point is one");
    is_str(type, "autofs", "told as autofs");
    is_int(type_at("/srv/with space\\and\ttab", type, sizeof(type)), 1,
           "escaped names are decoded (\\040, \\134, \\011)");
    is_str(type, "tmpfs", "and their type read");
    is_int(type_at("/srv/with\\040space\\134and\\011tab", type, sizeof(type)), 0,
           "the escaped spelling is not a name");
    is_int(type_at("/mnt/tables/t", type, sizeof(type)), 0, "a directory below is not");
    is_int(type_at("/mn", type, sizeof(type)), 0, "nor a prefix of one");
    is_int(type_at("/broken", type, sizeof(type)), 0, "a line without ' - ' is skipped");
    is_int(type_at("/mnt/tables", type, 5), 1, "a short TYPE buffer");
    is_str(type, "fuse", "is cut to fit, terminated");

    {
        struct seen s = { "", 0 };

        is_int(mounts_each(path, on_mount, &s), 0, "mounts_each reads the whole table");
        is_str(s.all, "/proc|/mnt|/mnt/tables|/mnt/tables|/srv/with space\\and\ttab|/opt/auto|",
               "every mount point, in order, decoded; unreadable lines skipped");
        s.stop_at = 2;
        s.all[0] = '\0';
        is_int(mounts_each(path, on_mount, &s), 7, "FN's answer other than 0 ends the walk");
        is_str(s.all, "/proc|/mnt|", "after the line it came at");
    }
    unlink(path);
    is_int(mounts_each(path, on_mount, NULL), -ENOENT, "mounts_each of a missing table: -ENOENT");
    is_int(mounts_type_at(path, "/mnt", type, sizeof(type)), -ENOENT, "a missing table: -ENOENT");
    is_int(mounts_type_at("/proc/self/mountinfo", "/", type, sizeof(type)), 1,
           "the kernel's own table has /");
    test_place();
    return done_testing();
}
