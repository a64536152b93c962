/* mounts.c - what is mounted where: the kernel's mount table
 * (/proc/self/mountinfo) asked whether a directory is a mount point, and
 * whether a directory can take a mount (a directory, empty). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/util.h"

/* Decode mountinfo's octal escapes (\040 space, \011 tab, \012 newline,
 * \134 backslash) of S in place. */
static void unescape(char *s)
{
    char *out = s;

    while (*s) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            *out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 4;
        } else {
            *out++ = *s++;
        }
    }
    *out = '\0';
}

/* The mount point (field 5) and file system type (the first field after
 * " - ") of mountinfo line LINE, cut in place; -EINVAL when it has neither. */
static int parse_line(char *line, char **dir, char **type)
{
    char *save = NULL, *f;
    int i = 0;

    *dir = *type = NULL;
    for (f = strtok_r(line, " \n", &save); f; f = strtok_r(NULL, " \n", &save)) {
        if (++i == 5)
            *dir = f;
        else if (i > 5 && strcmp(f, "-") == 0) {
            *type = strtok_r(NULL, " \n", &save);
            break;
        }
    }
    if (!*dir || !*type)
        return -EINVAL;
    unescape(*dir);
    return 0;
}

/* Call FN(CTX, DIR, TYPE) for each line of the mount table TABLE that
 * reads (DIR decoded), in order, until FN returns other than 0. Returns
 * what FN returned last, 0, -EIO, or -errno when TABLE cannot be opened. */
static int each_line(const char *table, int (*fn)(void *ctx, const char *dir, const char *type),
                     void *ctx)
{
    FILE *f = fopen(table, "re");
    char *line = NULL, *d, *t;
    size_t cap = 0;
    int rc = 0;

    if (!f)
        return -errno;
    while (rc == 0 && getline(&line, &cap, f) > 0)
        if (parse_line(line, &d, &t) == 0)
            rc = fn(ctx, d, t);
    free(line);
    if (rc == 0 && ferror(f))
        rc = -EIO;
    fclose(f);
    return rc;
}

/* What mounts_type_at looks for, and what it found. */
struct type_at {
    const char *dir;
    char *type;
    size_t len;
    int found;
};

static int on_type_line(void *ctx, const char *dir, const char *type)
{
    struct type_at *w = ctx;

    if (strcmp(dir, w->dir) != 0)
        return 0;
    w->found = 1; /* the last line for DIR is the mount on top */
    if (w->len > 0) {
        strncpy(w->type, type, w->len - 1);
        w->type[w->len - 1] = '\0';
    }
    return 0;
}

/* See util.h. */
int mounts_type_at(const char *table, const char *dir, char *type, size_t len)
{
    struct type_at w = { dir, type, len, 0 };
    int rc = each_line(table, on_type_line, &w);

    return rc < 0 ? rc : w.found;
}

/* See util.h. */
int mounts_check_place(const char *dir, int allow_nonempty, char *why, size_t len)
{
    char first[256] = "", more[48] = "";
    struct dirent *e;
    struct stat st;
    unsigned long n = 0;
    DIR *d;

    if (strncmp(dir, "/dev/fd/", 8) == 0 || stat(dir, &st) < 0)
        return 0; /* a descriptor mount.fuse3 opened, or the mount decides */
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, len,
                 "%s is not a directory: the mount would hide it and every access "
                 "through it would fail; mount on an empty directory",
                 dir);
        return -ENOTDIR;
    }
    if (allow_nonempty || !(d = opendir(dir)))
        return 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && n++ == 0)
            snprintf(first, sizeof(first), "%s", e->d_name);
    closedir(d);
    if (n == 0)
        return 0;
    if (n > 1)
        snprintf(more, sizeof(more), " and %lu more", n - 1);
    snprintf(why, len,
             "%s is not empty (it holds '%s'%s): the mount would hide what it holds "
             "until the unmount; mount on an empty directory, or add -o nonempty "
             "if you mean it",
             dir, first, more);
    return -ENOTEMPTY;
}

/* mounts_each's callback and its context, for each_line. */
struct each {
    int (*fn)(void *ctx, const char *dir);
    void *ctx;
};

static int on_each_line(void *ctx, const char *dir, const char *type)
{
    struct each *e = ctx;

    (void)type;
    return e->fn(e->ctx, dir);
}

/* See util.h. */
int mounts_each(const char *table, int (*fn)(void *ctx, const char *dir), void *ctx)
{
    struct each e = { fn, ctx };

    return each_line(table, on_each_line, &e);
}
