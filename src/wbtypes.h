/* wbtypes.h - the types write-behind's callers and its inside share: what
 * a change is, the hooks of its outcomes, the settings (writeback.h says
 * what is done with them). A leaf: writeback.h and wb_int.h both include
 * it, so that the inside does not include the outside's header. */
#ifndef AZTFS_WBTYPES_H
#define AZTFS_WBTYPES_H

#include <stddef.h>
#include <jansson.h>

/* What a change does to its entity. */
enum wb_kind { WB_INSERT, WB_REPLACE, WB_MERGE, WB_DELETE };

/* One change, as store.c hands it over (everything borrowed). */
struct wb_change {
    const char *path;           /* the entity's path in the mount */
    const char *table, *pk, *rk;
    enum wb_kind kind;
    const json_t *entity;       /* wire form without keys; NULL for WB_DELETE */
    const char *if_match;       /* the ETag the change was made against (a real
                                 * one, or the token of a queued change);
                                 * NULL for WB_INSERT */
};

/* How the store hears of outcomes (called without writeback's lock, from
 * a sending thread or wb_open's replay). */
struct wb_hooks {
    /* PATH's change is applied: ENTITY (NULL: deleted) now has ETAG (NULL:
     * unknown). EXACT: the entity is exactly ENTITY (not a merge). Called
     * only when no later change of PATH is queued. */
    void (*applied)(void *ctx, const char *path, const json_t *entity, int exact,
                    const char *etag);
    /* PATH's queued changes failed for good: what the mount shows of it
     * must be read again. */
    void (*failed)(void *ctx, const char *path);
    /* Should a writer stop waiting (for room in the queue, for a flush)?
     * Asked, with writeback's lock held, from the writer's own thread at
     * least every WB_WAIT_STEP_MS: nonzero when the request it serves was
     * interrupted or the mount is going away. NULL: never. */
    int (*cancelled)(void *ctx);
    void *ctx;
};

struct wb_config {
    const char *dir;            /* journal directory */
    const char *name;           /* journal file name in it */
    double delay;               /* seconds a change may wait for batch-mates */
    size_t max_bytes;           /* queue bound: writers wait beyond it */
    int senders;                /* partitions sent in parallel */
    double stop_seconds;        /* wb_close sends for at most this long */
    int allow_shared_dir;       /* -o allow_shared_dirs: the directory's owner and mode
                                 * are not checked (journal_open) */
};

#endif
