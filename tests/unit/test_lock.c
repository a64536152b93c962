/* test_lock.c - util/lock.c: lock_held tells whether the calling thread
 * holds an error-checking mutex, never blocks, and leaves the mutex as it
 * was; lock_init makes such a mutex in a debug build (AZTFS_DEBUG:
 * configure --enable-sanitizers or --enable-tsan), a default one else. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "tap.h"
#include "util/util.h"

/* A second thread that takes M, says so, and lets it go when told. */
struct other {
    pthread_mutex_t *m;
    pthread_mutex_t sync;
    pthread_cond_t cv; /* holding or release changed */
    int holding;       /* the thread holds M; guarded by sync */
    int release;       /* let M go and end; guarded by sync */
};

static void *other_main(void *p)
{
    struct other *o = p;

    pthread_mutex_lock(o->m);
    pthread_mutex_lock(&o->sync);
    o->holding = 1;
    pthread_cond_broadcast(&o->cv);
    while (!o->release)
        pthread_cond_wait(&o->cv, &o->sync);
    pthread_mutex_unlock(&o->sync);
    pthread_mutex_unlock(o->m);
    return NULL;
}

/* Is M free (nobody holds it)? Left free. */
static int is_free(pthread_mutex_t *m)
{
    if (pthread_mutex_trylock(m) != 0)
        return 0;
    pthread_mutex_unlock(m);
    return 1;
}

static void test_not_held(pthread_mutex_t *m)
{
    ok(!lock_held(m), "not held: lock_held is false");
    ok(is_free(m), "not held: the mutex is left free");
}

static void test_held_here(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    ok(lock_held(m), "held by this thread: lock_held is true");
    is_int(pthread_mutex_trylock(m), EBUSY, "held by this thread: still held");
    is_int(pthread_mutex_unlock(m), 0, "held by this thread: still ours to unlock");
}

static void test_held_elsewhere(pthread_mutex_t *m)
{
    struct other o = { .m = m };
    struct workers w = { .n = 0 };
    int started;

    pthread_mutex_init(&o.sync, NULL);
    pthread_cond_init(&o.cv, NULL);
    started = workers_add(&w, "aztfs-test-lock", other_main, &o) == 0;
    pthread_mutex_lock(&o.sync);
    while (started && !o.holding)
        pthread_cond_wait(&o.cv, &o.sync);
    pthread_mutex_unlock(&o.sync);

    ok(started && !lock_held(m), "held by another thread: lock_held is false (no wait)");
    ok(started && !is_free(m), "held by another thread: still held");

    pthread_mutex_lock(&o.sync);
    o.release = 1;
    pthread_cond_broadcast(&o.cv);
    pthread_mutex_unlock(&o.sync);
    workers_join(&w);
    ok(is_free(m) && !lock_held(m), "let go by the other thread: free, not held");
    pthread_cond_destroy(&o.cv);
    pthread_mutex_destroy(&o.sync);
}

/* An error-checking mutex, as lock_init makes in a debug build: made here
 * so that lock_held is tested in every build. */
static void errorcheck_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t attr;

    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
}

int main(void)
{
    pthread_mutex_t m, d;

    errorcheck_init(&m);
    test_not_held(&m);
    test_held_here(&m);
    test_held_elsewhere(&m);
    pthread_mutex_destroy(&m);
    is_int(lock_init(&d), 0, "lock_init makes a mutex");
    pthread_mutex_lock(&d);
#ifdef AZTFS_DEBUG
    ok(lock_held(&d), "debug build: lock_init's mutex tells its holder (error-checking)");
#else
    ok(pthread_mutex_trylock(&d) == EBUSY, "other builds: lock_init's mutex is held");
#endif
    pthread_mutex_unlock(&d);
    pthread_mutex_destroy(&d);
    return done_testing();
}
