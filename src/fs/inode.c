/* fs/inode.c - the kernel's node ids. Each name the kernel is given (a
 * lookup's answer, a create, a readdirplus entry) is a node, counted as the
 * kernel counts it and freed at its FORGET (libfuse's passthrough_ll keeps
 * its inodes the same way). A node knows its directory and its name, so an
 * id gives back a path for the path-level operations (fs/lowlevel.c). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs/fs_i.h"

#define BUCKETS_MIN 1024

struct node {
    struct node *parent;    /* holds a count on it (children); NULL: the root,
                               or a name removed */
    char *name;             /* malloc'd; NULL: the root, or removed */
    uint64_t nlookup;       /* the kernel's count: its lookups less its forgets */
    unsigned long children; /* nodes whose parent this is */
    struct node *next;      /* the hash chain of (parent, name); for a removed
                               name, the list of removed nodes */
    struct node *prev;      /* a removed node's neighbour in that list */
};

struct fs_inodes {
    pthread_mutex_t mu; /* guards everything below */
    struct node root;   /* FUSE_ROOT_ID; never freed */
    struct node **buckets;
    size_t nbuckets, count;
    struct node *removed; /* nodes whose name was removed, still counted */
};

/* See fs.h. */
struct fs_inodes *fs_inodes_new(void)
{
    struct fs_inodes *t = calloc(1, sizeof(*t));

    if (!t)
        return NULL;
    t->nbuckets = BUCKETS_MIN;
    if (!(t->buckets = calloc(t->nbuckets, sizeof(*t->buckets))) ||
        pthread_mutex_init(&t->mu, NULL) != 0) {
        free(t->buckets);
        free(t);
        return NULL;
    }
    t->root.nlookup = 1; /* the kernel never forgets the root */
    return t;
}

/* See fs.h. */
void fs_inodes_free(struct fs_inodes *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nbuckets; i++)
        for (struct node *n = t->buckets[i], *next; n; n = next) {
            next = n->next;
            free(n->name);
            free(n);
        }
    for (struct node *n = t->removed, *next; n; n = next) { /* their FORGET never came */
        next = n->next;
        free(n);
    }
    free(t->buckets);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static struct node *node_of(struct fs_inodes *t, fuse_ino_t ino)
{
    return ino == FUSE_ROOT_ID ? &t->root : (struct node *)(uintptr_t)ino;
}

static fuse_ino_t id_of(struct fs_inodes *t, struct node *n)
{
    return n == &t->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

/* FNV-1a of the parent's address and the name. */
static size_t hash(const struct node *parent, const char *name, size_t nbuckets)
{
    uint64_t h = 1469598103934665603ULL, p = (uint64_t)(uintptr_t)parent;

    for (int i = 0; i < 8; i++, p >>= 8)
        h = (h ^ (p & 0xff)) * 1099511628211ULL;
    for (const unsigned char *s = (const unsigned char *)name; *s; s++)
        h = (h ^ *s) * 1099511628211ULL;
    return (size_t)(h % nbuckets);
}

static struct node *find(struct fs_inodes *t, const struct node *parent, const char *name)
{
    struct node *n = t->buckets[hash(parent, name, t->nbuckets)];

    while (n && (n->parent != parent || strcmp(n->name, name) != 0))
        n = n->next;
    return n;
}

static void link_in(struct fs_inodes *t, struct node *n)
{
    size_t b = hash(n->parent, n->name, t->nbuckets);

    n->next = t->buckets[b];
    t->buckets[b] = n;
    t->count++;
}

static void unlink_out(struct fs_inodes *t, struct node *n)
{
    struct node **p = &t->buckets[hash(n->parent, n->name, t->nbuckets)];

    while (*p != n)
        p = &(*p)->next;
    *p = n->next;
    n->next = NULL;
    t->count--;
}

/* Twice the buckets when the chains grow past two nodes on average; kept
 * as they are when out of memory (longer chains, still right). */
static void grow(struct fs_inodes *t)
{
    size_t nb = t->nbuckets * 2;
    struct node **b;

    if (t->count <= 2 * t->nbuckets || !(b = calloc(nb, sizeof(*b))))
        return;
    for (size_t i = 0; i < t->nbuckets; i++)
        for (struct node *n = t->buckets[i], *next; n; n = next) {
            size_t h = hash(n->parent, n->name, nb);

            next = n->next;
            n->next = b[h];
            b[h] = n;
        }
    free(t->buckets);
    t->buckets = b;
    t->nbuckets = nb;
}

/* Take the removed node N out of the list of removed nodes. */
static void unlist_removed(struct fs_inodes *t, struct node *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        t->removed = n->next;
    if (n->next)
        n->next->prev = n->prev;
}

/* Free N and then each directory above it that nothing holds any more
 * (not counted by the kernel, no child). */
static void release(struct fs_inodes *t, struct node *n)
{
    while (n && n != &t->root && n->nlookup == 0 && n->children == 0) {
        struct node *parent = n->parent;

        if (n->name)
            unlink_out(t, n);
        else
            unlist_removed(t, n);
        free(n->name);
        free(n);
        if (parent)
            parent->children--;
        n = parent;
    }
}

/* Take N out of its directory: its name is gone (removed, or replaced by
 * a rename), though the kernel may still count it. */
static void detach(struct fs_inodes *t, struct node *n)
{
    struct node *parent = n->parent;

    unlink_out(t, n);
    free(n->name);
    n->name = NULL;
    n->parent = NULL;
    n->prev = NULL;
    n->next = t->removed;
    if (t->removed)
        t->removed->prev = n;
    t->removed = n;
    parent->children--;
    release(t, parent);
    release(t, n);
}

/* See fs_i.h. */
int fs_inodes_ref(struct fs_inodes *t, fuse_ino_t parent, const char *name, fuse_ino_t *out)
{
    struct node *p = node_of(t, parent), *n;
    int rc = 0;

    pthread_mutex_lock(&t->mu);
    if (!(n = find(t, p, name))) {
        if (!(n = calloc(1, sizeof(*n))) || !(n->name = strdup(name))) {
            free(n);
            rc = -ENOMEM;
            goto out;
        }
        n->parent = p;
        p->children++;
        link_in(t, n);
        grow(t);
    }
    n->nlookup++;
    *out = id_of(t, n);
out:
    pthread_mutex_unlock(&t->mu);
    return rc;
}

/* See fs_i.h. */
void fs_inodes_forget(struct fs_inodes *t, fuse_ino_t ino, uint64_t nlookup)
{
    struct node *n = node_of(t, ino);

    if (n == &t->root)
        return;
    pthread_mutex_lock(&t->mu);
    n->nlookup = n->nlookup > nlookup ? n->nlookup - nlookup : 0;
    release(t, n);
    pthread_mutex_unlock(&t->mu);
}

/* The length of N's path, or 0 when a name on its way up is removed. */
static size_t path_len(const struct fs_inodes *t, const struct node *n)
{
    size_t len = 0;

    for (; n != &t->root; n = n->parent) {
        if (!n->name)
            return 0;
        len += 1 + strlen(n->name);
    }
    return len ? len : 1; /* the root: "/" */
}

/* N's path, then "/" NAME when NAME is given, in *OUT (malloc'd). */
static int path_of(struct fs_inodes *t, fuse_ino_t ino, const char *name, char **out)
{
    struct node *n;
    size_t len, extra = name ? 1 + strlen(name) : 0;
    char *p;
    int rc = 0;

    *out = NULL;
    pthread_mutex_lock(&t->mu);
    n = node_of(t, ino);
    if (!(len = path_len(t, n)))
        rc = -ESTALE;
    else if (!(p = malloc(len + extra + 1)))
        rc = -ENOMEM;
    if (rc == 0) {
        size_t at = n == &t->root ? 0 : len; /* the root's "/" is dropped before a name */

        if (n == &t->root)
            p[0] = '/';
        p[n == &t->root ? 1 : len] = '\0';
        for (; n != &t->root; n = n->parent) {
            size_t l = strlen(n->name);

            at -= l;
            memcpy(p + at, n->name, l);
            p[--at] = '/';
        }
        if (name) {
            size_t base = strcmp(p, "/") == 0 ? 0 : len;

            p[base] = '/';
            memcpy(p + base + 1, name, extra);
        }
        *out = p;
    }
    pthread_mutex_unlock(&t->mu);
    return rc;
}

/* See fs_i.h. */
int fs_inodes_path(struct fs_inodes *t, fuse_ino_t ino, char **out)
{
    return path_of(t, ino, NULL, out);
}

/* See fs_i.h. */
int fs_inodes_child_path(struct fs_inodes *t, fuse_ino_t parent, const char *name, char **out)
{
    return path_of(t, parent, name, out);
}

/* See fs_i.h. */
void fs_inodes_remove(struct fs_inodes *t, fuse_ino_t parent, const char *name)
{
    struct node *n;

    pthread_mutex_lock(&t->mu);
    if ((n = find(t, node_of(t, parent), name)))
        detach(t, n);
    pthread_mutex_unlock(&t->mu);
}

/* Move N to NAME (taken) in P. */
static void move(struct fs_inodes *t, struct node *n, struct node *p, char *name)
{
    struct node *old = n->parent;

    unlink_out(t, n);
    free(n->name);
    n->name = name;
    n->parent = p;
    p->children++;
    link_in(t, n);
    old->children--;
    release(t, old);
}

/* See fs_i.h. */
int fs_inodes_rename(struct fs_inodes *t, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                     const char *newname, int exchange)
{
    struct node *p = node_of(t, parent), *np = node_of(t, newparent), *src, *dst;
    char *to = strdup(newname), *from = exchange ? strdup(name) : NULL;
    int rc = 0;

    if (!to || (exchange && !from)) {
        free(to);
        free(from);
        return -ENOMEM;
    }
    pthread_mutex_lock(&t->mu);
    src = find(t, p, name);
    dst = find(t, np, newname);
    if (exchange && dst) {
        np->children++; /* held while both move */
        if (src) {
            move(t, src, np, to);
            to = NULL;
        }
        move(t, dst, p, from);
        from = NULL;
        np->children--;
        release(t, np);
    } else if (src && src != dst) {
        if (dst)
            detach(t, dst); /* the name replaced */
        move(t, src, np, to);
        to = NULL;
    } else if (dst && !exchange && !src) {
        detach(t, dst); /* renamed onto a name the kernel was given; the
                           source was never looked up */
    }
    pthread_mutex_unlock(&t->mu);
    free(to);
    free(from);
    return rc;
}

/* See fs_i.h. */
int fs_inodes_find(struct fs_inodes *t, const char *path, fuse_ino_t *out)
{
    struct node *n;
    const char *s = path;
    char part[NAME_MAX + 1];

    pthread_mutex_lock(&t->mu);
    n = &t->root;
    while (n && *s) {
        const char *e;
        size_t l;

        while (*s == '/')
            s++;
        if (!*s)
            break;
        e = strchr(s, '/');
        l = e ? (size_t)(e - s) : strlen(s);
        if (l > NAME_MAX) {
            n = NULL;
            break;
        }
        memcpy(part, s, l);
        part[l] = '\0';
        n = find(t, n, part);
        s += l;
    }
    if (n)
        *out = id_of(t, n);
    pthread_mutex_unlock(&t->mu);
    return n ? 0 : -ENOENT;
}

/* See fs_i.h. */
size_t fs_inodes_count(struct fs_inodes *t)
{
    size_t n;

    pthread_mutex_lock(&t->mu);
    n = t->count;
    pthread_mutex_unlock(&t->mu);
    return n;
}
