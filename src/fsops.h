/* fsops.h - the FUSE operations table and the per-mount state it works on. */
#ifndef AZTFS_FSOPS_H
#define AZTFS_FSOPS_H

#define FUSE_USE_VERSION 312
#include <fuse.h>
#include <pthread.h>
#include <sys/types.h>
#include <time.h>

#include "cache.h"
#include "http.h"
#include "log.h"
#include "scratch.h"
#include "table.h"

struct open_file;

/* Everything one mount needs; handed to FUSE as private_data. */
struct aztfs {
    struct table_client *tc;     /* owned */
    struct fuse *fuse;           /* the running mount (set at init) */
    struct cache *cache;         /* owned */
    struct scratch *scratch;     /* owned: scratch files and local directories */
    int merge;                   /* -o merge: writes to existing entities MERGE */
    char **tables;               /* -o tables=: the tables shown (NULL: all) */
    struct logger log;
    struct http_stats stats;
    double cache_timeout;        /* seconds a listing or entity stays fresh */
    double attr_timeout;         /* seconds the kernel keeps a stat without asking */
    time_t mount_time;           /* mtime of directories */
    uid_t uid;                   /* owner of every file */
    gid_t gid;
    pthread_mutex_t pending_lock;
    struct open_file *pending;   /* entity handles open for writing, by path */
    struct conflict {            /* recent ESTALE answers to path operations */
        char *path;
        struct timespec at;      /* CLOCK_MONOTONIC */
    } conflicts[8];              /* guarded by pending_lock */
};

/* List the account's tables into the cache: at mount time this is both the
 * credentials check and the first listing. Returns 0 or -errno, details in *st. */
int fs_list_root(struct aztfs *a, struct az_status *st);

/* The operations table (designated initializers in fsops.c). */
extern const struct fuse_operations aztfs_ops;

#endif
