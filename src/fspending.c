/* fspending.c - write handles by path: the unsaved files the mount shows, and renames. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsint.h"

/* Does OF stand for a file the table does not hold yet, or holds with
 * other bytes? A new file whose save failed (invalid text, or created
 * meanwhile by someone else) is not one until it is written again: its
 * close said it was not saved. OF's lock held. */
static int unsaved(const struct open_file *of)
{
    return (of->is_new && !of->failed) || of->written;
}

/* Register OF (a write handle) under PATH. */
int fs_pending_add(struct aztfs *a, const char *path, struct open_file *of)
{
    if (!(of->path = strdup(path)))
        return -ENOMEM;
    pthread_mutex_lock(&a->pending_lock);
    of->pnext = a->pending;
    a->pending = of;
    pthread_mutex_unlock(&a->pending_lock);
    return 0;
}

void fs_pending_remove(struct aztfs *a, struct open_file *of)
{
    struct open_file **pp;

    if (!of->path)
        return;
    pthread_mutex_lock(&a->pending_lock);
    for (pp = &a->pending; *pp; pp = &(*pp)->pnext) {
        if (*pp == of) {
            *pp = of->pnext;
            break;
        }
    }
    pthread_mutex_unlock(&a->pending_lock);
}

/* Call FN(OF, CTX) for each handle registered at PATH that still speaks for
 * it (not detached), with pending_lock and OF's lock held, until FN returns
 * nonzero. Returns FN's last answer, or 0. */
static int each_at(struct aztfs *a, const char *path,
                   int (*fn)(struct open_file *of, void *ctx), void *ctx)
{
    int rc = 0;

    pthread_mutex_lock(&a->pending_lock);
    for (struct open_file *of = a->pending; of && rc == 0; of = of->pnext) {
        if (strcmp(of->path, path) != 0)
            continue;
        pthread_mutex_lock(&of->lock);
        if (!of->detached)
            rc = fn(of, ctx);
        pthread_mutex_unlock(&of->lock);
    }
    pthread_mutex_unlock(&a->pending_lock);
    return rc;
}

static int detach_one(struct open_file *of, void *ctx)
{
    (void)ctx;
    of->detached = 1;
    return 0;
}

/* Detach the write handles open on PATH; see fsint.h. */
void fs_pending_detach(struct aztfs *a, const char *path)
{
    each_at(a, path, detach_one, NULL);
}

static int size_one(struct open_file *of, void *ctx)
{
    if (!unsaved(of))
        return 0;
    *(size_t *)ctx = of->len;
    return 1;
}

/* Size of the unsaved copy of PATH (new or written), if one is open. */
int fs_pending_size(struct aztfs *a, const char *path, size_t *len)
{
    return each_at(a, path, size_one, len) == 1 ? 0 : -ENOENT;
}

/* The bytes of a new file not yet saved, copied by copy_one. */
struct pending_copy {
    char *data;
    size_t len;
};

static int copy_one(struct open_file *of, void *ctx)
{
    struct pending_copy *c = ctx;

    if (!of->is_new || !unsaved(of))
        return 0;
    if (!(c->data = malloc(of->len + 1)))
        return -ENOMEM;
    if (of->len)
        memcpy(c->data, of->data, of->len);
    c->data[of->len] = '\0';
    c->len = of->len;
    return 1;
}

/* See fsint.h. */
int fs_pending_copy(struct aztfs *a, const char *path, char **data, size_t *len)
{
    struct pending_copy c = { NULL, 0 };
    int rc = each_at(a, path, copy_one, &c);

    if (rc != 1)
        return rc < 0 ? rc : -ENOENT;
    *data = c.data;
    *len = c.len;
    return 0;
}

static int is_new_one(struct open_file *of, void *ctx)
{
    (void)ctx;
    return of->is_new && unsaved(of);
}

/* See fsint.h. */
int fs_pending_is_new(struct aztfs *a, const char *path)
{
    return each_at(a, path, is_new_one, NULL);
}

/* A rename that handles follow (fs_pending_follow). */
struct follow {
    const char *to, *old_etag, *new_etag;
    int n;                  /* handles that followed, or -ENOMEM */
};

static int follow_one(struct open_file *of, void *ctx)
{
    struct follow *f = ctx;
    int take = f->new_etag && (of->is_new ? !f->old_etag :
                               f->old_etag && of->etag && strcmp(of->etag, f->old_etag) == 0);
    char *path = strdup(f->to), *etag = take ? strdup(f->new_etag) : NULL;

    if (!path || (take && !etag)) {
        free(path);
        free(etag);
        f->n = -ENOMEM;     /* this one keeps its name and ETag: ESTALE at its save */
        return 0;
    }
    if (f->n >= 0)
        f->n++;
    free(of->path);
    of->path = path;
    of->ino = fspath_ino(f->to);
    if (take) {
        free(of->etag);
        of->etag = etag;
        if (of->is_new) {   /* it replaces the entity TO at its close */
            of->is_new = 0;
            of->written = 1;
            of->replace = 1;
        }
    }
    return 0;
}

/* See fsint.h. */
int fs_pending_follow(struct aztfs *a, const char *from, const char *to,
                      const char *old_etag, const char *new_etag)
{
    struct follow f = { to, old_etag, new_etag, 0 };

    each_at(a, from, follow_one, &f);
    return f.n;
}

/* See fsint.h. */
void fs_pending_list(struct aztfs *a, const char *dir,
                     void (*fn)(void *ctx, const char *name), void *ctx)
{
    size_t dl = strlen(dir);

    pthread_mutex_lock(&a->pending_lock);
    for (struct open_file *of = a->pending; of; of = of->pnext) {
        const char *name;
        int show;

        if (strncmp(of->path, dir, dl) != 0 || of->path[dl] != '/')
            continue;
        name = of->path + dl + 1;
        if (strchr(name, '/'))
            continue;
        pthread_mutex_lock(&of->lock);
        show = !of->detached && of->is_new && unsaved(of);
        pthread_mutex_unlock(&of->lock);
        if (show)
            fn(ctx, name);
    }
    pthread_mutex_unlock(&a->pending_lock);
}
