/* util/lock.c - mutexes that, in debug builds, can tell whether the calling
 * thread holds them (util.h: lock_init, lock_held, LOCK_HELD). A debug build
 * (configure --enable-sanitizers or --enable-tsan: AZTFS_DEBUG) makes every
 * mutex error-checking, so that its owner is known; other builds make the
 * default kind and assert nothing. */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "util/util.h"

/* See util.h. */
int lock_init(pthread_mutex_t *m)
{
#ifdef AZTFS_DEBUG
    pthread_mutexattr_t attr;
    int rc = pthread_mutexattr_init(&attr);

    if (rc != 0)
        return -rc;
    rc = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    if (rc == 0)
        rc = pthread_mutex_init(m, &attr);
    pthread_mutexattr_destroy(&attr);
    return -rc;
#else
    return -pthread_mutex_init(m, NULL);
#endif
}

/* See util.h. An error-checking mutex tells its owner trying to lock it
 * again EDEADLK. The try is a timed lock whose deadline has passed, so
 * that a mutex another thread holds answers ETIMEDOUT at once instead of
 * blocking the caller until that thread lets go. */
int lock_held(const pthread_mutex_t *cm)
{
    static const struct timespec past = { 0, 0 };
    pthread_mutex_t *m = (pthread_mutex_t *)cm; /* left as it was: see util.h */
    int rc = pthread_mutex_timedlock(m, &past);

    if (rc == 0) { /* nobody held it: we did not */
        pthread_mutex_unlock(m);
        return 0;
    }
    return rc == EDEADLK; /* ETIMEDOUT: another thread holds it */
}
