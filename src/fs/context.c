/* fs/context.c - the request the calling thread serves, and its mount:
 * set by fs/lowlevel.c around each callback it calls, read by the
 * path-level adapters below it (libfuse's high-level API keeps its
 * context per thread the same way). */
#include "fs/fs_i.h"

struct call {
    struct aztfs *a;
    fuse_req_t req;
};

static _Thread_local struct call current;

/* See fs_i.h. */
struct aztfs *fs_call_enter(struct aztfs *a, fuse_req_t req)
{
    current.a = a;
    current.req = req;
    return a;
}

/* See fs_i.h. */
void fs_call_leave(void)
{
    current.a = NULL;
    current.req = NULL;
}

/* See fs.h. */
struct aztfs *fs_ctx(void)
{
    return current.a;
}

/* See fs.h. */
int fs_interrupted(void)
{
    return current.req && fuse_req_interrupted(current.req);
}
