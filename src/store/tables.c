/* store/tables.c - tables and partitions: existence, and the directories the mount makes (store.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

/* Does table NAME exist, when the cached root listing cannot say?
 * With -o tables=, only the tables named there are shown. */
static int table_known(struct store *s, const char *name)
{
    struct az_status st = { 0 };
    int rc;

    if (s->tables) {
        rc = -ENOENT;
        for (char **t = s->tables; *t; t++)
            if (strcmp(*t, name) == 0 && (rc = store_table_probe(s, name, &st)) > 0)
                rc = 0;
    } else {
        rc = table_exists(s->tc, name, &st);
        rc = rc < 0 ? rc : rc == 1 ? 0 : -ENOENT;
    }
    if (rc < 0 && rc != -ENOENT)
        store_log_failure(s, "look up table", name, rc, &st, NULL);
    return rc;
}

/* See store.h. */
int store_table_exists(struct store *s, const char *table)
{
    char *tdir = fspath_join("/", table);
    int rc = cache_dir_lookup(s->cache, "/", table, NULL);

    if (!tdir)
        return -ENOMEM;
    /* not in the table list (which may predate it): a marker or listing of
     * its own, a recent "no", else ask */
    if (rc != 0 && rc != -ENOMEM)
        rc = rc == -EAGAIN && cache_known_dir(s->cache, tdir) ? 0 :
            cache_absent(s->cache, tdir)                      ? -ENOENT :
                                                                -EAGAIN;
    if (rc == -EAGAIN) {
        rc = table_known(s, table);
        if (rc == 0)
            (void)cache_put_exists(s->cache, tdir);
        else if (rc == -ENOENT)
            (void)cache_put_absent(s->cache, tdir);
    }
    free(tdir);
    return rc;
}

/* See store.h. */
int store_partition_exists(struct store *s, struct fspath *fp, int fresh)
{
    struct az_status st = { 0 };
    char *tdir = fspath_join("/", fp->table);
    char *pdir = tdir ? fspath_join(tdir, fp->pk_name) : NULL, *filter;
    int rc = -EAGAIN;

    if (!pdir) {
        free(tdir);
        return -ENOMEM;
    }
    /* listed, or known; not listed in a table the mount made, or said
     * lately not to exist; else ask (the listing may predate it) */
    if (!fresh &&
        (rc = cache_exists(s->cache, pdir) ?
             0 :
             cache_dir_lookup(s->cache, tdir, fp->pk_name, NULL)) == -ENOENT &&
        !cache_dir_owned(s->cache, tdir))
        rc = -EAGAIN;
    if (!fresh && rc == -EAGAIN && cache_absent(s->cache, pdir))
        rc = -ENOENT;
    free(tdir);
    if (rc != -EAGAIN || !fp->pk) {
        free(pdir);
        if (rc == -EAGAIN) /* a long-form name: its table's listing says */
            rc = scan_resolve_keys(s, fp);
        return rc == 0 ? 1 : rc == -ENOENT ? 0 : rc;
    }
    if (!(filter = table_filter_partition(fp->pk))) {
        free(pdir);
        return -ENOMEM;
    }
    /* write-behind: a partition with queued changes is there for a lookup;
     * one asked about afresh (rmdir) has its changes sent first */
    if (!fresh && store_queued_in(s, pdir)) {
        free(filter);
        free(pdir);
        return 1;
    }
    if (fresh)
        store_settle(s, pdir);
    rc = store_probe(s, fp->table, filter, table_select_key(ENTITY_RK), &st);
    if (rc < 0 && rc != -ENOENT)
        store_log_failure(s, "look up", pdir, rc, &st, NULL);
    if (rc == 1)
        cache_put_exists(s->cache, pdir);
    else if (rc == 0)
        cache_put_absent(s->cache, pdir);
    free(filter);
    free(pdir);
    return rc;
}

/* See store/store.h. */
int store_partition_other(struct store *s, const struct fspath *fp)
{
    struct az_status st = { 0 };
    char *part = table_filter_partition(fp->pk), *rk = table_odata_literal(fp->rk);
    char *filter = NULL;
    int rc = -ENOMEM;

    if (part && rk && asprintf(&filter, "%s and RowKey ne %s", part, rk) >= 0) {
        store_settle(s, fp->parent);
        rc = store_probe(s, fp->table, filter, table_select_key(ENTITY_RK), &st);
        if (rc < 0)
            store_log_failure(s, "look up", fp->parent, rc, &st, NULL);
    } else {
        filter = NULL;
    }
    free(filter);
    free(rk);
    free(part);
    return rc;
}

/* The mount made directory PATH, empty: cache an empty listing of it that
 * the mount keeps complete (CACHE_OWNED), and name it (NAME, KEY) in the
 * listing of PARENT when PARENT is not NULL. Returns 0 (the cache is an
 * optimisation: without memory, the service is asked later). */
static int made_dir(struct store *s, const char *path, const char *parent, const char *name,
                    const char *key)
{
    struct timespec none = { 0, 0 };
    struct listing *l = listing_new();

    store_forget(s, path);
    if (l)
        (void)cache_put_listing(s->cache, path, l, CACHE_OWNED);
    listing_unref(l);
    if (parent && cache_dir_edit(s->cache, parent, name, key, 0, 0, none, 0) < 0)
        store_forget(s, parent);
    return 0;
}

/* See store.h. */
int store_create_table(struct store *s, const char *path, const char *table)
{
    struct az_status st = { 0 };
    const char *why = table_name_problem(table_client_profile(s->tc), table);
    int rc;

    if (why) { /* the service's own rules, before anything is sent */
        store_log_failure(s, "create table", path, -EINVAL, NULL, why);
        return -EINVAL;
    }
    rc = table_create(s->tc, table, &st);
    if (rc == -EEXIST)
        log_info(&s->log, "%s: table exists (table names ignore case)", path);
    else if (rc < 0)
        store_log_failure(s, "create table", path, rc, &st, NULL);
    if (rc == 0) /* the mount made it, so the mount knows it is empty */
        rc = made_dir(s, path, "/", table, table);
    else
        store_forget(s, "/");
    return rc;
}

/* See store.h. */
int store_partition_made(struct store *s, const struct fspath *fp)
{
    char *tdir = fspath_join("/", fp->table), *pdir = tdir ? fspath_join(tdir, fp->pk_name) : NULL;
    int rc = -ENOMEM;

    if (pdir) /* a partition is named in its table only once it holds an entity */
        rc = made_dir(s, pdir, NULL, NULL, NULL);
    free(tdir);
    free(pdir);
    return rc;
}

/* See store.h. */
int store_remove_table(struct store *s, const char *path, const char *table)
{
    struct az_status st = { 0 };
    int rc;

    store_settle(s, path); /* write-behind: its queued changes first */
    rc = store_table_probe(s, table, &st);
    if (rc == 1)
        rc = -ENOTEMPTY;
    if (rc == 0)
        rc = table_delete(s->tc, table, &st);
    if (rc < 0 && rc != -ENOTEMPTY && rc != -ENOENT)
        store_log_failure(s, "remove table", path, rc, &st, NULL);
    store_forget(s, "/");
    store_forget(s, path);
    return rc;
}
