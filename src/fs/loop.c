/* fs/loop.c - the FUSE request loop: libfuse's multi-threaded loop, done
 * with its public calls so that each request's header is seen before it
 * is served (fs.h). The callbacks of the high-level API are given paths,
 * not the kernel's node ids; the forgetting of fs/forget.c needs the id of
 * the directory each name was given in, which is the header's. */
#include <errno.h>
#include <linux/fuse.h> /* struct fuse_in_header, FUSE_LOOKUP ... */
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <time.h>

#include "fs/fs_i.h"
#include <fuse_lowlevel.h> /* fuse_session_receive_buf, _process_buf */

/* The request the calling thread serves: set by the loop around each
 * request, read by the callbacks it calls on the same thread (libfuse
 * keeps its own request context the same way). */
static _Thread_local struct fs_request current;

struct loop {
    struct fuse_session *se;
    sem_t finish; /* a worker has left its loop */
};

/* See fs.h. */
int fs_current_request(struct fs_request *out)
{
    *out = current;
    return current.opcode != 0;
}

static void free_buf(void *mem)
{
    free(*(void **)mem);
}

static void *serve_main(void *arg)
{
    struct loop *l = arg;
    struct fuse_buf buf = { .mem = NULL };

    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
    pthread_cleanup_push(free_buf, &buf.mem);
    while (!fuse_session_exited(l->se)) {
        int res;

        /* cancelled only while waiting for a request (the loop's end) */
        pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
        res = fuse_session_receive_buf(l->se, &buf);
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
        if (res == -EINTR)
            continue;
        if (res <= 0) {
            if (res < 0)
                fuse_session_exit(l->se); /* unmounted (ENODEV) or broken */
            break;
        }
        if (!(buf.flags & FUSE_BUF_IS_FD) && buf.size >= sizeof(struct fuse_in_header)) {
            const struct fuse_in_header *in = buf.mem;

            current.opcode = in->opcode;
            current.nodeid = in->nodeid;
        }
        fuse_session_process_buf(l->se, &buf);
        current.opcode = 0;
    }
    pthread_cleanup_pop(1);
    sem_post(&l->finish);
    return NULL;
}

/* See fs.h. */
int fs_loop(struct fuse *f, int threads)
{
    struct loop l = { .se = fuse_get_session(f) };
    struct workers w = { .n = 0 };
    int started;

    if (threads < 1)
        threads = 1;
    if (threads > WORKERS_MAX)
        threads = WORKERS_MAX;
    if (sem_init(&l.finish, 0, 0) != 0)
        return -errno;
    if (fuse_start_cleanup_thread(f) != 0) {
        sem_destroy(&l.finish);
        return -ENOMEM;
    }
    started = workers_start(&w, "aztfs-fuse", threads, serve_main, &l);
    if (started > 0) {
        /* a signal (libfuse's handlers end the session) interrupts the
         * wait; one handled between the check and the wait is seen at the
         * next check, a second later at most */
        while (!fuse_session_exited(l.se)) {
            struct timespec t;

            clock_gettime(CLOCK_REALTIME, &t);
            t.tv_sec += 1;
            sem_timedwait(&l.finish, &t);
        }
        for (int i = 0; i < w.n; i++)
            pthread_cancel(w.tids[i]);
        workers_join(&w);
    }
    fuse_stop_cleanup_thread(f);
    sem_destroy(&l.finish);
    fuse_session_reset(l.se);
    return started > 0 ? 0 : -EAGAIN;
}
