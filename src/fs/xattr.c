/* fs/xattr.c - FUSE extended-attribute callbacks (fs_i.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "util/util.h"
#include "fs/fs_i.h"
#include "monitor/monitor.h"
#include "store/store.h"

/* Largest value the kernel passes for one attribute (XATTR_SIZE_MAX). */
#define VALUE_MAX 65536

/* Answer a getxattr with the LEN bytes of TEXT: its length when SIZE is 0
 * (the caller asks how much room to make), else the bytes, or -ERANGE. */
static int answer(const char *text, size_t len, char *value, size_t size)
{
    if (len > VALUE_MAX)
        return -E2BIG;
    if (size > 0 && size < len)
        return -ERANGE;
    if (size > 0)
        memcpy(value, text, len);
    return (int)len;
}

/* Answer with malloc'd TEXT (NULL: out of memory) and free it. */
static int answer_owned(char *text, char *value, size_t size)
{
    int rc;

    if (!text)
        return -ENOMEM;
    rc = answer(text, strlen(text), value, size);
    free(text);
    return rc;
}

/* The store's counters and the mount's: "nodes", the names the kernel
 * holds as fs/inode.c counts them (malloc'd; NULL on ENOMEM). */
static char *mount_stats(struct aztfs *a)
{
    json_t *j = stats_object(&a->store);
    char *out = NULL;

    if (j &&
        json_object_set_new(j, "nodes", json_integer((json_int_t)fs_inodes_count(a->inodes))) == 0)
        out = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return out;
}

/* The root's attributes. */
static int root_xattr(struct aztfs *a, const char *name, char *value, size_t size)
{
    if (strcmp(name, STATS_XATTR) == 0)
        return answer_owned(mount_stats(a), value, size);
    if (strcmp(name, XATTR_ERRORS) == 0 && a->store.log.failures)
        return answer_owned(failring_json(a->store.log.failures, VALUE_MAX), value, size);
    if (strcmp(name, XATTR_PENDING) == 0) {
        char *json = NULL;
        int rc = store_pending_json(&a->store, VALUE_MAX - 1024, &json);

        return rc < 0 ? rc : answer_owned(json, value, size);
    }
    return -ENODATA;
}

/* MTIME (an entity's Timestamp) as "YYYY-MM-DDThh:mm:ss.fffffffZ" in OUT. */
static void format_timestamp(struct timespec mtime, char out[40])
{
    struct tm tm;
    size_t n;

    gmtime_r(&mtime.tv_sec, &tm);
    n = strftime(out, 40, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, 40 - n, ".%07ldZ", mtime.tv_nsec / 100);
}

/* An entity's attributes, from the entity as stored (cache or service). */
static int entity_xattr(struct aztfs *a, const char *path, struct fspath *fp, const char *name,
                        char *value, size_t size)
{
    struct cache_file cf = { 0 };
    char ts[40];
    int rc, etag = strcmp(name, XATTR_ETAG) == 0;

    if (!etag && strcmp(name, XATTR_TIMESTAMP) != 0)
        return -ENODATA;
    rc = store_load(&a->store, fp, path, &cf);
    if (rc == -ENOENT)
        return -ENODATA; /* a new file not saved yet */
    if (rc < 0)
        return rc;
    if (etag)
        rc = cf.etag ? answer(cf.etag, strlen(cf.etag), value, size) : -ENODATA;
    else {
        format_timestamp(cf.mtime, ts);
        rc = answer(ts, strlen(ts), value, size);
    }
    cache_file_clear(&cf);
    return rc;
}

/* See fs/fs_i.h. */
int fs_getxattr(const char *path, const char *name, char *value, size_t size)
{
    struct aztfs *a = fs_ctx();
    struct fspath fp;
    int rc;

    if (strncmp(name, "user.", 5) != 0)
        return -ENOTSUP;
    if (strcmp(path, "/") == 0)
        return root_xattr(a, name, value, size);
    if (strncmp(name, "user.aztfs.", 11) != 0 || fspath_parse(path, &fp) < 0)
        return -ENODATA;
    rc = fp.kind == FSP_ENTITY ? entity_xattr(a, path, &fp, name, value, size) : -ENODATA;
    fspath_free(&fp);
    return rc;
}

/* See fs/fs_i.h. */
int fs_listxattr(const char *path, char *list, size_t size)
{
    static const char names[] = XATTR_ETAG "\0" XATTR_TIMESTAMP; /* both NUL-ended */
    struct fspath fp;
    int entity;

    if (fspath_parse(path, &fp) < 0)
        return 0;
    entity = fp.kind == FSP_ENTITY;
    fspath_free(&fp);
    return entity ? answer(names, sizeof(names), list, size) : 0;
}

/* See fs/fs_i.h. */
int fs_setxattr(const char *path, const char *name, const char *value, size_t size, int flags)
{
    struct aztfs *a = fs_ctx();
    char *target;
    int rc;

    (void)flags;
    /* write-behind: setfattr -n user.aztfs.discard -v /t/p/r.json MOUNT
     * drops that failed change from the journal ("*": all of them) */
    if (strcmp(path, "/") != 0 || strcmp(name, XATTR_DISCARD) != 0)
        return -ENOTSUP;
    if (size == 0 || size > 4096 || !(target = strndup(value, size)))
        return size == 0 || size > 4096 ? -EINVAL : -ENOMEM;
    rc = store_discard(&a->store, target);
    if (rc == -ENOENT)
        log_warn(&a->store.log,
                 "discard %s: no failed change of that path is in the "
                 "journal (user.aztfs.pending lists them)",
                 target);
    free(target);
    return rc == -ENOENT ? -ENODATA : rc;
}

/* See fs/fs_i.h. */
int fs_removexattr(const char *path, const char *name)
{
    (void)path, (void)name;
    return -ENOTSUP;
}
