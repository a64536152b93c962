/* table/crud.c - Table service operations on entities and tables, and the
 * settling of a write whose answer was lost (is the entity ours?). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "entity/entity.h"
#include "table/table.h"
#include "table/table_i.h"

/* Point query; see table.h. */
int table_get_entity(struct table_client *tc, const char *table, const char *pk, const char *rk,
                     json_t **entity, char **etag, struct az_status *st)
{
    struct http_response resp;
    char *path = table_entity_path(table, pk, rk);
    struct table_req rq = {
        .kind = TK_GET_ENTITY, .method = "GET", .path = path, .what = "get entity"
    };
    json_error_t jerr;
    int rc;

    *entity = NULL;
    if (etag)
        *etag = NULL;
    if (!pk || !rk) {
        free(path);
        return -EINVAL;
    }
    if (!path)
        return -ENOMEM;
    rc = table_send(tc, &rq, &resp, st);
    free(path);
    if (rc < 0) {
        log_debug(tc->lg, "get entity %s: no response: %s", table, st->message);
        goto out;
    }
    if (resp.status != 200) {
        rc = table_fail(tc, "get entity", st);
        goto out;
    }
    *entity = json_loadb(resp.body, resp.body_len, 0, &jerr);
    if (!json_is_object(*entity)) {
        json_decref(*entity);
        *entity = NULL;
        snprintf(st->message, sizeof(st->message), "malformed entity: %s", jerr.text);
        log_debug(tc->lg, "get entity %s: %s", table, st->message);
        rc = -EIO;
        goto out;
    }
    if (etag) {
        const char *e = resp.hdr[HDR_ETAG];

        if (!e)
            e = json_string_value(json_object_get(*entity, "odata.etag"));
        if (e && !(*etag = strdup(e))) {
            json_decref(*entity);
            *entity = NULL;
            rc = -ENOMEM;
        }
    }
out:
    http_response_clear(&resp);
    return rc;
}

/* --- settling a write whose answer was lost ---------------------------------- */

/* Canonical text of wire entity E with fixed keys and Timestamp, so that two
 * entities compare by their properties and types alone. NULL on error. */
static char *canonical_props(const json_t *e)
{
    json_t *c = json_deep_copy(e);
    char *text = NULL;
    size_t len;

    if (!c)
        return NULL;
    json_object_del(c, "Timestamp@odata.type");
    if (json_object_set_new(c, "PartitionKey", json_string("")) == 0 &&
        json_object_set_new(c, "RowKey", json_string("")) == 0 &&
        json_object_set_new(c, "Timestamp", json_string("")) == 0 &&
        entity_render(c, &text, &len, NULL) < 0)
        text = NULL;
    json_decref(c);
    return text;
}

/* Was wire entity E last changed at or after SINCE (its Timestamp)? */
static int changed_since(const json_t *e, const struct timespec *since)
{
    struct timespec ts;
    const char *t = json_string_value(json_object_get(e, "Timestamp"));

    if (!t || entity_parse_datetime(t, &ts) < 0)
        return 0;
    return ts.tv_sec > since->tv_sec ||
        (ts.tv_sec == since->tv_sec && ts.tv_nsec >= since->tv_nsec);
}

/* CUR (a stored wire entity) with ENTITY merged into it: ENTITY's
 * properties replace CUR's, each bringing its own annotation (or none).
 * A new reference, or NULL on ENOMEM. */
static json_t *merged_into(const json_t *cur, const json_t *entity)
{
    json_t *want = json_deep_copy(cur), *v;
    const char *k;

    json_object_foreach ((json_t *)entity, k, v) {
        char ann[300];

        snprintf(ann, sizeof(ann), "%s@odata.type", k);
        if (want)
            json_object_del(want, ann);
    }
    json_object_foreach ((json_t *)entity, k, v) {
        if (want)
            json_object_set(want, k, v);
    }
    return want;
}

/* Does the stored entity hold exactly ENTITY's properties (and types), or
 * with MERGED, ENTITY's properties over whatever else it has, written at or
 * after SINCE? Used to settle a write whose earlier send may have been
 * applied: equal content written before that send is someone else's.
 * Returns 1, 0 (also when the entity is gone), or -errno; *etag gets the
 * stored entity's ETag. */
static int entity_holds(struct table_client *tc, const char *table, const char *pk, const char *rk,
                        const json_t *entity, int merged, const struct timespec *since, char **etag)
{
    struct az_status st;
    json_t *cur = NULL;
    int rc;

    rc = table_get_entity(tc, table, pk, rk, &cur, etag, &st);
    if (rc == -ENOENT)
        return 0;
    if (rc < 0)
        return rc;
    rc = table_entity_holds(cur, entity, merged, since);
    json_decref(cur);
    return rc;
}

/* See table_i.h. */
int table_entity_holds(const json_t *cur, const json_t *entity, int merged,
                       const struct timespec *since)
{
    json_t *want = merged ? merged_into(cur, entity) : NULL;
    char *a = canonical_props(cur), *b = canonical_props(merged ? want : entity);
    int rc = (a && b) ? strcmp(a, b) == 0 && changed_since(cur, since) : -ENOMEM;

    json_decref(want);
    free(a);
    free(b);
    return rc;
}

/* See table/table_i.h. */
int table_write_applied(void *ctx, const struct http_response *resp)
{
    struct write_probe *p = ctx;
    struct timespec since;
    struct az_status st;
    json_t *e = NULL;
    int rc;

    if (!p->entity) {
        rc = table_get_entity(p->tc, p->table, p->pk, p->rk, &e, NULL, &st);
        json_decref(e);
        return rc == -ENOENT ? 1 : rc < 0 ? rc : 0;
    }
    if (p->since)
        since = *p->since;
    else
        http_send_window(resp, &since);
    free(p->etag);
    p->etag = NULL;
    rc = entity_holds(p->tc, p->table, p->pk, p->rk, p->entity, p->merged, &since, &p->etag);
    if (rc == 1)
        log_debug(p->tc->lg, "%s %s/%s: the service holds this write", p->what, p->pk, p->rk);
    return rc;
}

/* --- writes ------------------------------------------------------------------ */

/* The write of PROBE was applied by a send whose answer was lost: success,
 * with the ETag of the entity that holds it. */
static int write_done(struct write_probe *probe, char **new_etag, struct az_status *st)
{
    memset(st, 0, sizeof(*st));
    if (new_etag) {
        *new_etag = probe->etag;
        probe->etag = NULL;
    }
    return 0;
}

/* What the answer RESP (RC from table_send) to the write PROBE says.
 * Returns 0 with *new_etag (if NEW_ETAG) set, or -errno. */
static int write_answer(struct write_probe *probe, int rc, const struct http_response *resp,
                        char **new_etag, struct az_status *st)
{
    if (rc == 0 && resp->settled)
        return write_done(probe, new_etag, st);
    if (rc < 0) {
        log_debug(probe->tc->lg, "%s failed: no response: %s (attempts %d)", probe->what,
                  st->message, st->attempts);
        return rc;
    }
    if (resp->status >= 300) {
        /* A 409 (insert) or 412 (replace/merge) answering a request sent
         * once is someone else's change: it fails, always. Only when an
         * earlier send may have been applied (our retry after a lost
         * answer, libcurl's resend on a dead connection) can it be our own
         * write meeting itself; then the entity decides. */
        if ((resp->status == 409 || resp->status == 412) && resp->resent &&
            table_write_applied(probe, resp) == 1) {
            log_info(probe->tc->lg,
                     "%s: the service already holds this write (an earlier "
                     "send was applied)",
                     probe->what);
            return write_done(probe, new_etag, st);
        }
        return table_fail(probe->tc, probe->what, st);
    }
    if (new_etag && resp->hdr[HDR_ETAG] && !(*new_etag = strdup(resp->hdr[HDR_ETAG])))
        return -ENOMEM;
    return 0;
}

/* Write an entity; see table.h. */
int table_write_entity(struct table_client *tc, const char *table, const char *pk, const char *rk,
                       const json_t *entity, enum table_write how, const char *etag,
                       char **new_etag, struct az_status *st)
{
    struct http_response resp;
    char *path = NULL, *body = NULL, *ifmatch = NULL, *what = NULL;
    /* Cosmos DB answers the MERGE verb with 405: tunneled, as the SDKs send it */
    int tunnel = how == TW_MERGE && tc->profile->merge_tunneled;
    const char *extra[4] = { "Prefer: return-no-content", tunnel ? "X-HTTP-Method: MERGE" : NULL,
                             NULL, NULL };
    struct write_probe probe = { 0 };
    struct table_req rq = {
        .kind = how == TW_INSERT ? TK_INSERT :
            how == TW_REPLACE    ? TK_REPLACE :
                                   TK_MERGE,
        .method = how == TW_INSERT || tunnel ? "POST" :
            how == TW_REPLACE                ? "PUT" :
                                               "MERGE",
        .content_type = "application/json",
        .extra = extra,
        .settle = table_write_applied,
        .settle_ctx = &probe,
    };
    int rc = -ENOMEM;

    if (new_etag)
        *new_etag = NULL;
    memset(&resp, 0, sizeof(resp));
    if ((how != TW_INSERT && !etag) || !pk || !rk)
        return -EINVAL;
    if (how != TW_INSERT)
        path = table_entity_path(table, pk, rk);
    else if (asprintf(&path, "/%s", table) < 0)
        path = NULL;
    body = table_entity_body(entity, pk, rk);
    if (!path || !body)
        goto out;
    if (etag && asprintf(&ifmatch, "If-Match: %s", etag) < 0) {
        ifmatch = NULL;
        goto out;
    }
    extra[tunnel ? 2 : 1] = ifmatch;
    if (asprintf(&what, "%s %s",
                 how == TW_INSERT      ? "insert" :
                     how == TW_REPLACE ? "replace" :
                                         "merge",
                 table) < 0) {
        what = NULL;
        goto out;
    }
    probe = (struct write_probe){ tc, what, table, pk, rk, entity, how == TW_MERGE, NULL, NULL };
    rq.path = path;
    rq.body = body;
    rq.body_len = strlen(body);
    rq.what = what;
    rc = table_send(tc, &rq, &resp, st);
    rc = write_answer(&probe, rc, &resp, new_etag, st);
out:
    free(probe.etag);
    http_response_clear(&resp);
    free(what);
    free(ifmatch);
    free(body);
    free(path);
    return rc;
}

/* Delete an entity; see table.h. */
int table_delete_entity(struct table_client *tc, const char *table, const char *pk, const char *rk,
                        const char *etag, struct az_status *st)
{
    struct http_response resp;
    char *path = table_entity_path(table, pk, rk), *ifmatch = NULL;
    const char *extra[2] = { NULL, NULL };
    struct write_probe probe = { tc, "delete entity", table, pk, rk, NULL, 0, NULL, NULL };
    struct table_req rq = {
        .kind = TK_DELETE,
        .method = "DELETE",
        .path = path,
        .extra = extra,
        .what = "delete entity",
        .settle = table_write_applied,
        .settle_ctx = &probe,
    };
    int rc = -ENOMEM;

    memset(&resp, 0, sizeof(resp));
    if (!path || asprintf(&ifmatch, "If-Match: %s", etag ? etag : "*") < 0) {
        ifmatch = NULL;
        goto out;
    }
    extra[0] = ifmatch;
    rc = table_send(tc, &rq, &resp, st);
    if (rc == 0 && resp.settled) {
        memset(st, 0, sizeof(*st));
        goto out;
    }
    if (rc < 0) {
        log_debug(tc->lg, "delete entity failed: no response: %s", st->message);
        goto out;
    }
    /* The service says it is not there. After an earlier send that may
     * have been applied (our retry, libcurl's unseen resend on a dead
     * reused connection) that is our own delete; after one send, someone
     * else deleted it (-ENOENT). A 404 without the service's not-found code
     * (from a proxy, a wrong path) is an error. */
    if (resp.status == 404 && az_status_errno(st) == ENOENT)
        rc = resp.resent ? 0 : -ENOENT;
    else if (resp.status >= 300)
        rc = table_fail(tc, "delete entity", st);
out:
    http_response_clear(&resp);
    free(ifmatch);
    free(path);
    return rc;
}

/* Create a table; see table.h. */
int table_create(struct table_client *tc, const char *name, struct az_status *st)
{
    struct http_response resp;
    json_t *obj = json_pack("{s:s}", "TableName", name);
    char *body = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    const char *extra[] = { "Prefer: return-no-content", NULL };
    struct table_req rq = {
        .kind = TK_CREATE_TABLE,
        .method = "POST",
        .path = "/Tables",
        .content_type = "application/json",
        .body = body,
        .body_len = body ? strlen(body) : 0,
        .extra = extra,
        .what = "create table",
    };
    int rc = -ENOMEM;

    json_decref(obj);
    memset(&resp, 0, sizeof(resp));
    if (!body)
        return rc;
    rc = table_send(tc, &rq, &resp, st);
    if (rc == 0 && resp.status >= 300) {
        /* a resend of ours that the first attempt already applied */
        if (resp.status == 409 && resp.resent && strcmp(st->code, "TableAlreadyExists") == 0)
            rc = 0;
        else
            rc = table_fail(tc, "create table", st);
    }
    http_response_clear(&resp);
    free(body);
    return rc;
}

/* Delete a table; see table.h. */
int table_delete(struct table_client *tc, const char *name, struct az_status *st)
{
    struct http_response resp;
    char *lit = table_odata_literal(name), *enc = NULL, *path = NULL;
    struct table_req rq = { .kind = TK_DELETE_TABLE, .method = "DELETE", .what = "delete table" };
    int rc = -ENOMEM;

    memset(&resp, 0, sizeof(resp));
    if (!lit || !(enc = table_url_encode(lit)) || asprintf(&path, "/Tables(%s)", enc) < 0) {
        path = NULL;
        goto out;
    }
    rq.path = path;
    rc = table_send(tc, &rq, &resp, st);
    if (rc == 0 && resp.status >= 300) {
        if (resp.status == 404 && az_status_errno(st) == ENOENT)
            rc = 0; /* gone, as for an entity (table_delete_entity) */
        else
            rc = table_fail(tc, "delete table", st);
    }
out:
    http_response_clear(&resp);
    free(path);
    free(enc);
    free(lit);
    return rc;
}
