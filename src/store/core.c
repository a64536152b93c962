/* store/core.c - the store's state and what both halves of the store layer build on (store.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "util/util.h"
#include "names/names.h"
#include "store/store.h"
#include "store/store_i.h"

_Static_assert(CACHE_DIGEST_LEN == ENTITY_DIGEST_LEN, "a cached file holds an entity digest");

/* See store.h. */
void store_set_hooks(struct store *s, int (*cancelled)(void *ctx),
                     void (*dropped)(void *ctx, const char *path), void *ctx)
{
    table_client_set_cancel(s->tc, cancelled, ctx);
    s->cancelled = cancelled;
    s->cancel_ctx = ctx;
    s->dropped = dropped;
    s->dropped_ctx = ctx;
}

/* Hand COPY the rendered TEXT (taken: *text is NULLed) with ETAG and MTIME.
 * Returns 0 or -ENOMEM (COPY empty). */
static int give_copy(struct cache_file *copy, char **text, size_t len, const char *etag,
                     struct timespec mtime)
{
    copy->data = *text;
    copy->len = len;
    copy->mtime = mtime;
    copy->etag = etag ? strdup(etag) : NULL;
    *text = NULL;
    if (etag && !copy->etag) {
        cache_file_clear(copy);
        return -ENOMEM;
    }
    return 0;
}

/* R: wire entity E's system properties (borrowed from E, or in R->own when
 * E is the entity's text: a page read as text) and, when it has a RowKey,
 * its rendering (R->text to free; on failure R->rc, and R->why pointing
 * into ERR). */
static void render_here(const json_t *e, struct store_rendered *r, struct entity_error *err)
{
    struct entity_keys k;

    memset(r, 0, sizeof(*r));
    if (json_is_string(e)) {
        r->rc = entity_render_text(json_string_value(e), json_string_length(e), &r->text, &r->len,
                                   r->digest, &r->has_digest, &k, err);
        r->own = k.block;
        r->pk = k.pk;
        r->rk = k.rk;
        r->ts = k.ts;
        r->etag = k.etag;
        if (!r->rk) { /* as for a tree: nothing rendered without a RowKey */
            free(r->text);
            r->text = NULL;
            r->rc = 0;
        } else if (r->rc < 0) {
            r->why = err->text;
        }
        return;
    }
    r->pk = entity_wire_sys(e, ENTITY_PK);
    r->rk = entity_wire_sys(e, ENTITY_RK);
    r->ts = entity_wire_sys(e, ENTITY_TIMESTAMP);
    r->etag = entity_wire_sys(e, ENTITY_ETAG);
    if (r->rk &&
        (r->rc = entity_render_digest(e, &r->text, &r->len, r->digest, &r->has_digest, err)) < 0) {
        r->text = NULL;
        r->why = err->text;
    }
}

/* store_cache_entity of the entity R describes (its text is taken). */
static int cache_rendered(struct store *s, const char *dir, struct store_rendered *r,
                          unsigned flags, struct store_shown *shown, struct cache_file *copy)
{
    struct timespec mtime = { s->mount_time, 0 };
    struct cache_file f = { 0 };
    char *text = r->text, *name = NULL, *path = NULL;
    size_t len = r->len;
    int rc;

    r->text = NULL;
    if (!r->rk) {
        log_warn(&s->log, "%s: an entity without a RowKey was skipped", dir);
        free(text);
        return -EIO;
    }
    if (!text) {
        log_warn(&s->log, "%s: entity '%s' cannot be shown: %s", dir, r->rk,
                 r->why ? r->why : strerror(r->rc < 0 ? -r->rc : ENOMEM));
        return r->rc < 0 ? r->rc : -ENOMEM;
    }
    f.has_digest = r->has_digest;
    memcpy(f.digest, r->digest, sizeof(f.digest));
    if (r->ts)
        entity_parse_datetime(r->ts, &mtime);
    rc = -ENOMEM;
    if (!(name = keycodec_file_encode(r->rk)) || !(path = fspath_join(dir, name)))
        goto out;
    f.data = text;
    f.len = len;
    f.etag = (char *)r->etag;
    f.mtime = mtime;
    rc = cache_put(s->cache, path, &f, flags);
    if (rc == 0 && copy)
        rc = give_copy(copy, &text, len, r->etag, mtime);
    if (rc == 0 && shown) {
        shown->name = name;
        shown->len = len;
        shown->mtime = mtime;
        name = NULL;
    }
out:
    free(text);
    free(name);
    free(path);
    return rc;
}

/* See store.h. */
int store_cache_entity(struct store *s, const char *dir, const json_t *e, unsigned flags,
                       struct store_shown *shown, struct cache_file *copy)
{
    struct entity_error err;
    struct store_rendered r;
    int rc;

    render_here(e, &r, &err);
    rc = cache_rendered(s, dir, &r, flags, shown, copy);
    free(r.own);
    return rc;
}

/* See store.h. */
void *store_render_page(const json_t *value)
{
    size_t n = json_array_size(value), room = 1, at = 0, i, k;
    struct store_page_render *pr = calloc(1, sizeof(*pr) + n * sizeof(pr->e[0]));

    if (!pr)
        return NULL;
    pr->n = n;
    /* each entity rendered; the system properties of one rendered from its
     * tree, borrowed from the page, are then copied into one block (the
     * page is freed after this); one rendered from its text owns them */
    for (i = 0; i < n; i++) {
        struct store_rendered *r = &pr->e[i];
        struct entity_error err;

        render_here(json_array_get(value, i), r, &err);
        if (r->rc < 0)
            r->why = r->rc == -ENOMEM ? NULL : strdup(err.text); /* NULL: ENOMEM said */
        if (!r->own)
            room += (r->pk ? strlen(r->pk) + 1 : 0) + (r->rk ? strlen(r->rk) + 1 : 0) +
                (r->ts ? strlen(r->ts) + 1 : 0) + (r->etag ? strlen(r->etag) + 1 : 0);
    }
    if (!(pr->keys = malloc(room))) {
        store_render_page_free(pr);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        struct store_rendered *r = &pr->e[i];
        const char **slot[] = { &r->pk, &r->rk, &r->ts, &r->etag };

        if (r->own)
            continue;
        for (k = 0; k < sizeof(slot) / sizeof(slot[0]); k++) {
            if (*slot[k]) {
                size_t len = strlen(*slot[k]) + 1;

                memcpy(pr->keys + at, *slot[k], len);
                *slot[k] = pr->keys + at;
                at += len;
            }
        }
    }
    return pr;
}

/* See store.h. */
void store_render_page_free(void *prepared)
{
    struct store_page_render *pr = prepared;

    if (!pr)
        return;
    for (size_t i = 0; i < pr->n; i++) {
        free(pr->e[i].text);
        free(pr->e[i].why);
        free(pr->e[i].own);
    }
    free(pr->keys);
    free(pr);
}

/* See store.h. */
int store_list_entity(struct store *s, const char *dir, const json_t *e, struct listing *l,
                      size_t *len, struct store_rendered *pre)
{
    struct entity_error err;
    struct store_rendered here, *r = pre;
    struct store_shown shown;
    int rc;

    if (e) {
        render_here(e, &here, &err);
        r = &here;
    }
    if (!r || !r->pk || !r->rk) {
        rc = 1;
        if (r == &here)
            free(here.text);
        goto out;
    }
    rc = cache_rendered(s, dir, r, CACHE_LISTED, &shown, NULL);
    if (rc < 0) {
        rc = rc == -ENOMEM ? rc : 1; /* logged; an entity we cannot show is left out */
        goto out;
    }
    /* a service without order may name an entity twice as far as we can
     * tell: each name listed once (1: not listed) */
    rc = table_client_ordered(s->tc) ?
        listing_add(l, shown.name, r->rk, 1, shown.len, shown.mtime) :
        listing_add_once(l, shown.name, r->rk, 1, shown.len, shown.mtime);
    if (len)
        *len = shown.len;
    free(shown.name);
out:
    if (r == &here)
        free(here.own);
    return rc;
}

/* See store.h. */
void store_settle(struct store *s, const char *dir)
{
    s->changes->settle(s, dir);
}

/* See store.h. */
int store_queued_in(struct store *s, const char *dir)
{
    return s->changes->pending_in(s, dir);
}

/* See store.h. */
void store_forget(struct store *s, const char *path)
{
    cache_invalidate(s->cache, path);
    if (s->dropped)
        s->dropped(s->dropped_ctx, path);
}

/* See store.h. */
void store_log_failure(struct store *s, const char *op, const char *path, int rc,
                       const struct az_status *st, const char *why)
{
    const char *reason = why ? why : strerror(-rc), *name = strerrorname_np(-rc);
    struct failure f = { op, path, -rc, st ? st->http_status : 0, st ? st->code : NULL, reason };
    char err[1100]; /* "ESTALE (Stale file handle)", "ENOSPC: no room ...": the errno's
                       name as user.aztfs.errors spells it, then why (an import's names a
                       line, two keys and what was applied: under 1 KiB) */

    snprintf(err, sizeof(err), why ? "%s: %s" : "%s (%s)", name ? name : "?", reason);
    failring_add(s->log.failures, &f); /* user.aztfs.errors */
    if (!st || (st->http_status == 0 && st->attempts == 0))
        log_error(&s->log, "%s %s failed: %s", op, path, err);
    else if (st->http_status == 0)
        log_error(&s->log, "%s %s failed: %s (no response: %s; attempts %d)", op, path, err,
                  st->message, st->attempts);
    else
        log_error(&s->log, "%s %s failed: %s (HTTP %ld %s%s%s; attempts %d)", op, path, err,
                  st->http_status, st->code[0] ? st->code : "-", st->message[0] ? ": " : "",
                  st->message, st->attempts);
}

/* See store/store.h. */
int store_entity_fits(struct store *s, const char *pk, const char *rk, const json_t *wire,
                      size_t text_len, char *why, size_t whylen)
{
    struct entity_error err = { 0 };
    int rc = entity_check_limits(s->limits, wire, pk, rk, &err);

    if (rc < 0) {
        snprintf(why, whylen, "%s", err.text);
        return rc;
    }
    return table_entity_fits(table_client_profile(s->tc), pk, rk, wire, text_len, why, whylen);
}

/* See store_i.h. */
int store_fits_service(struct store *s, const char *op, const char *path, const char *pk,
                       const char *rk, const json_t *wire, size_t text_len)
{
    char why[256];
    int rc = store_entity_fits(s, pk, rk, wire, text_len, why, sizeof(why));

    if (rc < 0 && rc != -ENOMEM) {
        failring_add(s->log.failures, &(struct failure){ op, path, -rc, 0, NULL, why });
        log_error(&s->log, "%s: not saved: %s", path, why);
    }
    return rc;
}

static int on_first_entity(void *p, json_t *value)
{
    int *found = p;

    *found = json_array_size(value) > 0;
    return *found ? 1 : 0;
}

/* See store.h. */
int store_probe(struct store *s, const char *table, const char *filter, const char *select,
                struct az_status *st)
{
    int found = 0;
    int rc = table_query(s->tc, table, filter, select, 1, on_first_entity, &found, st);

    return rc < 0 ? rc : found;
}

/* See store.h. */
int store_table_probe(struct store *s, const char *name, struct az_status *st)
{
    return store_probe(s, name, NULL, table_select_key(ENTITY_PK), st);
}
