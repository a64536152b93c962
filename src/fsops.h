/* fsops.h - the FUSE operations table and the per-mount state it works on. */
#ifndef AZTFS_FSOPS_H
#define AZTFS_FSOPS_H

#define FUSE_USE_VERSION 312
#include <fuse.h>
#include <sys/types.h>
#include <time.h>

#include "cache.h"
#include "http.h"
#include "log.h"
#include "table.h"

/* Everything one mount needs; handed to FUSE as private_data. */
struct aztfs {
    struct table_client *tc;     /* owned */
    struct cache *cache;         /* owned */
    struct logger log;
    struct http_stats stats;
    double cache_timeout;        /* seconds a listing or entity stays fresh */
    time_t mount_time;           /* mtime of directories */
    uid_t uid;                   /* owner of every file */
    gid_t gid;
};

/* The operations table (designated initializers in fsops.c). */
extern const struct fuse_operations aztfs_ops;

#endif
