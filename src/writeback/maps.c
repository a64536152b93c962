/* writeback/maps.c - write-behind's maps: entities by path, partitions by
 * directory, and the tokens of changes sent with the ETags the service gave
 * (bounded); and its clock (writeback_i.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "writeback/writeback_i.h"
#include "writeback/writeback.h"

/* Tokens remembered after their change was sent (for files still open
 * with one): at most this many, the oldest forgotten first. */
#define WB_DONE_MAX 16384

/* See writeback/writeback_i.h. */
struct timespec wb_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t;
}

/* See writeback/writeback_i.h. */
int wb_wait_sent(struct writeback *wb)
{
    struct timespec until;

    LOCK_HELD(&wb->mu);
    until = wb_now();
    until.tv_nsec += WB_WAIT_STEP_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&wb->done_cv, &wb->mu, &until);
    return wb->hooks.cancelled && wb->hooks.cancelled(wb->hooks.ctx) ? -EINTR : 0;
}

/* --- the maps ------------------------------------------------------------------ */

/* See writeback/writeback_i.h. */
struct wb_ent *wb_ent_get(struct writeback *wb, const char *path, int create)
{
    size_t b = hash_fnv1a(path) % wb->n_ent_buckets;
    struct wb_ent *e;

    for (e = wb->ents[b]; e; e = e->hnext)
        if (strcmp(e->path, path) == 0)
            return e;
    if (!create || !(e = calloc(1, sizeof(*e))))
        return NULL;
    if (!(e->path = strdup(path))) {
        free(e);
        return NULL;
    }
    e->hnext = wb->ents[b];
    wb->ents[b] = e;
    wb->n_ents++;
    return e;
}

/* Free PATH's entity entry when nothing refers to it any more. Lock held,
 * or replaying (writeback_i.h): not asserted. */
void wb_ent_release(struct writeback *wb, struct wb_ent *e)
{
    struct wb_ent **pp = &wb->ents[hash_fnv1a(e->path) % wb->n_ent_buckets];

    if (e->last || e->failed)
        return;
    while (*pp != e)
        pp = &(*pp)->hnext;
    *pp = e->hnext;
    wb->n_ents--;
    free(e->path);
    free(e);
}

/* The partition entry of directory DIR (created with TABLE and PK), or NULL.
 * Lock held, or replaying (writeback_i.h): not asserted. */
struct wb_part *wb_part_get(struct writeback *wb, const char *dir, int create)
{
    size_t b = hash_fnv1a(dir) % wb->n_part_buckets;
    struct wb_part *p;

    for (p = wb->parts[b]; p; p = p->hnext)
        if (strcmp(p->dir, dir) == 0)
            return p;
    if (!create || !(p = calloc(1, sizeof(*p))))
        return NULL;
    if (!(p->dir = strdup(dir))) {
        free(p);
        return NULL;
    }
    p->hnext = wb->parts[b];
    wb->parts[b] = p;
    wb->n_parts++;
    return p;
}

/* Remember that TOKEN's change was sent and the service gave ETAG. Lock
 * held, or replaying (writeback_i.h): not asserted. */
void wb_done_put(struct writeback *wb, const char *token, const char *etag)
{
    size_t b = hash_fnv1a(token) % wb->n_done_buckets;
    struct wb_done *d;

    if (!etag)
        return;
    if (wb->n_dones >= WB_DONE_MAX) {
        /* forget a whole bucket's worth: cheap, and bounded */
        size_t drop = (b + 1) % wb->n_done_buckets;

        while (wb->dones[drop]) {
            d = wb->dones[drop];
            wb->dones[drop] = d->hnext;
            free(d->token);
            free(d->etag);
            free(d);
            wb->n_dones--;
        }
    }
    if (!(d = calloc(1, sizeof(*d))) || !(d->token = strdup(token)) || !(d->etag = strdup(etag))) {
        if (d)
            free(d->token);
        free(d);
        return; /* a file open with this token then gets ESTALE */
    }
    d->hnext = wb->dones[b];
    wb->dones[b] = d;
    wb->n_dones++;
}

/* See writeback/writeback_i.h. */
int wb_done_get(struct writeback *wb, const char *token, char **etag)
{
    LOCK_HELD(&wb->mu);
    *etag = NULL;
    for (struct wb_done *d = wb->dones[hash_fnv1a(token) % wb->n_done_buckets]; d; d = d->hnext)
        if (strcmp(d->token, token) == 0)
            return (*etag = strdup(d->etag)) ? 1 : -ENOMEM;
    return 0;
}
