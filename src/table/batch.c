/* table/batch.c - entity group transactions: the $batch multipart body, the
 * outcome and ETags of its answer, and the settling of a lost answer. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/rand.h>

#include "table/table.h"
#include "util/util.h"
#include "table/table_i.h"

/* Outcome of a batch; see table/table.h. */
int table_batch_outcome(const char *body, struct az_status *st)
{
    const char *p = body;

    while ((p = strstr(p, "HTTP/1.1 ")) != NULL) {
        long code = strtol(p + 9, NULL, 10);
        const char *json;

        p += 9;
        if (code >= 200 && code < 300)
            continue;
        st->http_status = code;
        if ((json = strstr(p, "{\"odata.error\"")) != NULL)
            table_error_parse(json, TE_BATCH_PART, st);
        return -1;
    }
    return 0;
}

/* ETag of one operation's response; see table/table.h. */
int table_batch_etag(const char *body, size_t index, char **etag)
{
    const char *p = body;

    *etag = NULL;
    for (size_t i = 0; i < index && p; i++)
        if ((p = strstr(p, "HTTP/1.1 ")) != NULL)
            p += 9;
    if (!p || !(p = strstr(p, "HTTP/1.1 ")) || !(p = strchr(p, '\n')))
        return 0;
    /* its headers: the lines after the status line, up to an empty one */
    for (;;) {
        const char *line = p + 1;
        size_t len = strcspn(line, "\r\n");

        if (len == 0)
            return 0;
        if (len > 5 && strncasecmp(line, "ETag:", 5) == 0) {
            const char *v = line + 5 + strspn(line + 5, " \t");
            size_t vlen = len - (size_t)(v - line);

            while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
                vlen--;
            return vlen == 0 || (*etag = strndup(v, vlen)) ? 0 : -ENOMEM;
        }
        p = line + len;
        if (*p == '\r')
            p++;
        if (*p != '\n')
            return 0;
    }
}

/* Drop what the new_etag outputs of OPS hold. */
static void batch_etags_clear(const struct table_batch_op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (ops[i].new_etag) {
            free(*ops[i].new_etag);
            *ops[i].new_etag = NULL;
        }
    }
}

/* Hand the ETags of BODY's changeset responses to OPS. 0 or -ENOMEM. */
static int batch_etags_take(const char *body, const struct table_batch_op *ops, size_t n)
{
    int rc = 0;

    batch_etags_clear(ops, n); /* a settle attempt may have filled some */
    for (size_t i = 0; i < n && rc == 0; i++)
        if (ops[i].new_etag && ops[i].kind != TB_DELETE)
            rc = table_batch_etag(body, i, ops[i].new_etag);
    if (rc < 0)
        batch_etags_clear(ops, n);
    return rc;
}

/* A batch, for finding out whether it was applied. */
struct batch_probe {
    struct table_client *tc;
    const char *table, *pk;
    const struct table_batch_op *ops;
    size_t n;
    const struct timespec *since; /* an earlier send's window start, or NULL */
};

/* Is every byte of S ASCII (its order the service's, whichever that is)? */
static int ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return 0;
    return 1;
}

/* The entities of one page of a batch's key range, kept by RowKey (at
 * most BATCH_RANGE_MAX: a range with more is not read further). */
#define BATCH_RANGE_MAX 1000
struct range_found {
    json_t *by_rk;
    size_t n;
    int whole; /* every entity of the range was read, and the range is the
                * service's (ASCII keys: ordered alike): one not in it is absent */
};

/* table_page_fn of a batch's range query. */
static int range_page(void *ctx, json_t *value)
{
    struct range_found *f = ctx;
    size_t i;
    json_t *e;

    json_array_foreach (value, i, e) {
        const char *rk = json_string_value(json_object_get(e, "RowKey"));

        if (rk && json_object_set(f->by_rk, rk, e) < 0)
            return -ENOMEM;
        f->n++;
    }
    if (f->n >= BATCH_RANGE_MAX) {
        f->whole = 0;
        return 1;
    }
    return 0;
}

/* The batch B of inserts only: read its RowKeys' range with one query
 * (not an entity at a time) into F. Returns 0, or -errno (F->by_rk NULL
 * then: read entity by entity). */
static int range_read(const struct batch_probe *b, struct range_found *f)
{
    const char *lo = b->ops[0].rk, *hi = b->ops[0].rk;
    char *le, *range, *filter;
    struct az_status st;
    int rc = -ENOMEM;

    memset(f, 0, sizeof(*f));
    f->whole = ascii(lo);
    for (size_t i = 1; i < b->n; i++) {
        f->whole = f->whole && ascii(b->ops[i].rk);
        if (strcmp(b->ops[i].rk, lo) < 0)
            lo = b->ops[i].rk;
        if (strcmp(b->ops[i].rk, hi) > 0)
            hi = b->ops[i].rk;
    }
    le = table_filter_cmp("RowKey", "le", hi, NULL);
    range = le ? table_filter_cmp("RowKey", "ge", lo, le) : NULL;
    filter = range ? table_filter_cmp("PartitionKey", "eq", b->pk, range) : NULL;
    if (filter && (f->by_rk = json_object()))
        rc = table_query(b->tc, b->table, filter, NULL, BATCH_RANGE_MAX, range_page, f, &st);
    free(le);
    free(range);
    free(filter);
    if (rc < 0) {
        json_decref(f->by_rk);
        f->by_rk = NULL;
    }
    return rc;
}

/* Does the table hold the result of OP of batch B (written within the
 * window from SINCE), read alone? 1, 0 or -errno. */
static int applied_one(const struct batch_probe *b, const struct table_batch_op *op,
                       const struct timespec *since, const struct http_response *resp)
{
    struct write_probe p = { b->tc,
                             "batch",
                             b->table,
                             b->pk,
                             op->rk,
                             op->kind == TB_DELETE ? NULL : op->entity,
                             op->kind == TB_MERGE,
                             NULL,
                             since };
    int rc = table_write_applied(&p, resp);

    if (op->new_etag && op->kind != TB_DELETE) {
        free(*op->new_etag);
        *op->new_etag = p.etag; /* the entity that holds our write */
        p.etag = NULL;
    }
    free(p.etag);
    return rc;
}

/* Does the table hold insert OP's entity, written within the window from
 * SINCE, by what its range query F found? 1, 0, -errno, or 2 when F
 * cannot tell (read the entity alone). */
static int applied_in_range(const struct range_found *f, const struct table_batch_op *op,
                            const struct timespec *since)
{
    const json_t *cur = f->by_rk ? json_object_get(f->by_rk, op->rk) : NULL;
    const char *etag = json_string_value(json_object_get(cur, "odata.etag"));
    int rc;

    if (!cur)
        return f->by_rk && f->whole ? 0 : 2;
    rc = table_entity_holds(cur, op->entity, 0, since);
    if (rc == 1 && op->new_etag) {
        free(*op->new_etag);
        if (etag && !(*op->new_etag = strdup(etag)))
            rc = -ENOMEM;
    }
    return rc;
}

/* Does the table hold the result of the batch CTX (struct batch_probe):
 * every written entity exactly as sent, written within the window of the
 * sends RESP answers, and every deleted one gone? Returns 1, 0 or -errno.
 * (An http_request.settle hook.) A batch of inserts is looked for with
 * one query of its keys' range; other operations one entity at a time. */
static int batch_applied(void *ctx, const struct http_response *resp)
{
    const struct batch_probe *b = ctx;
    struct range_found found = { NULL, 0, 0 };
    struct timespec since;
    int inserts = b->n > 1, rc = 1;

    /* the window once, for every operation: without a Date header it ends
     * now, and a hundred reads take longer than its second of slack */
    if (b->since)
        since = *b->since;
    else
        http_send_window(resp, &since);
    for (size_t i = 0; i < b->n && inserts; i++)
        inserts = b->ops[i].kind == TB_INSERT;
    if (inserts) /* an error: each entity read alone */
        (void)range_read(b, &found);
    for (size_t i = 0; i < b->n && rc == 1; i++)
        if ((rc = applied_in_range(&found, &b->ops[i], &since)) == 2)
            rc = applied_one(b, &b->ops[i], &since, resp);
    json_decref(found.by_rk);
    return rc;
}

/* The status of the $batch answer RESP that counts for retries and the
 * pace (an http_request.status_of hook; CTX a struct batch_probe): the
 * failed part's when it says the service throttles (its changeset was not
 * applied, so it is sent again as a whole), else RESP's own. */
static long batch_status(void *ctx, const struct http_response *resp)
{
    const struct batch_probe *b = ctx;
    struct az_status st = { 0 };

    if (resp->status == 202 && resp->body && table_batch_outcome(resp->body, &st) < 0 &&
        table_profile_throttled(b->tc->profile, st.http_status))
        return st.http_status;
    return resp->status;
}

/* Does RESP refuse the batch for the service's rate (http_request.
 * rate_limited), and which? table_refusal of RESP, or of its failed part
 * when it is a 202. */
static int batch_rate_limited(void *ctx, const struct http_response *resp)
{
    struct az_status st = { 0 };
    long status = batch_status(ctx, resp);

    if (resp->status != 202 || !resp->body)
        return table_rate_limited(NULL, resp);
    (void)table_batch_outcome(resp->body, &st);
    return table_refusal(status, &st);
}

/* Append OP, the changeset part of one operation on PK of TABLE, to B (a
 * multipart body with changeset boundary ID). Returns 0 or -ENOMEM. */
static int batch_add_op(struct buf *b, const struct table_client *tc, const char *id,
                        const char *table, const char *pk, const struct table_batch_op *op)
{
    const struct account *a = tc->acct;
    /* Cosmos DB: a Merge as POST + X-HTTP-Method, as the SDKs send it */
    int tunnel = op->kind == TB_MERGE && tc->profile->merge_tunneled;
    const char *method = op->kind == TB_INSERT || tunnel ? "POST" :
        op->kind == TB_REPLACE || op->kind == TB_UPSERT  ? "PUT" :
        op->kind == TB_MERGE                             ? "MERGE" :
                                                           "DELETE";
    char *path = op->kind == TB_INSERT ? NULL : table_entity_path(table, pk, op->rk);
    char *body = op->kind == TB_DELETE ? NULL : table_entity_body(op->entity, pk, op->rk);
    int rc = -ENOMEM;

    if ((op->kind != TB_INSERT && !path) || (op->kind != TB_DELETE && !body))
        goto out;
    buf_addf(b,
             "--changeset_%s\r\nContent-Type: application/http\r\n"
             "Content-Transfer-Encoding: binary\r\n\r\n",
             id);
    if (path)
        buf_addf(b, "%s %s://%s%s%s HTTP/1.1\r\n", method, a->scheme, a->host, a->base_path, path);
    else
        buf_addf(b, "%s %s://%s%s/%s HTTP/1.1\r\n", method, a->scheme, a->host, a->base_path,
                 table);
    buf_addf(b, "Accept: %s\r\nDataServiceVersion: 3.0\r\n", TABLE_ACCEPT_JSON);
    if (tunnel)
        buf_adds(b, "X-HTTP-Method: MERGE\r\n");
    if (op->kind != TB_INSERT && op->kind != TB_UPSERT)
        buf_addf(b, "If-Match: %s\r\n", op->etag ? op->etag : "*");
    if (body)
        buf_addf(b,
                 "Content-Type: application/json\r\nPrefer: return-no-content\r\n"
                 "\r\n%s\r\n",
                 body);
    else
        buf_adds(b, "\r\n");
    rc = b->err ? -ENOMEM : 0;
out:
    free(path);
    free(body);
    return rc;
}

/* The multipart body of the batch of OPS into B, with boundaries
 * batch_ID and changeset_ID (one changeset). Returns 0 or -ENOMEM. */
static int batch_body(struct buf *b, const struct table_client *tc, const char *id,
                      const char *table, const char *pk, const struct table_batch_op *ops, size_t n)
{
    buf_addf(b, "--batch_%s\r\nContent-Type: multipart/mixed; boundary=changeset_%s\r\n\r\n", id,
             id);
    for (size_t i = 0; i < n; i++)
        if (batch_add_op(b, tc, id, table, pk, &ops[i]) < 0)
            return -ENOMEM;
    buf_addf(b, "--changeset_%s--\r\n--batch_%s--\r\n", id, id);
    return b->err ? -ENOMEM : 0;
}

/* What the answer RESP (RC from table_send) to the batch PROBE says: 0,
 * or the -errno of its failing operation (a 409/412 after a resend settled
 * by looking at the entities). Fills the new_etag outputs on success. */
static int batch_answer(struct batch_probe *probe, int rc, const struct http_response *resp,
                        struct az_status *st)
{
    struct table_client *tc = probe->tc;

    if (rc == 0 && resp->settled) {
        memset(st, 0, sizeof(*st));
        return 0;
    }
    if (rc < 0) {
        log_debug(tc->lg, "batch on %s failed: no response: %s", probe->table, st->message);
        return rc;
    }
    if (resp->status != 202)
        return table_fail(tc, "batch", st);
    if (table_batch_outcome(resp->body ? resp->body : "", st) == 0)
        return batch_etags_take(resp->body ? resp->body : "", probe->ops, probe->n);
    rc = table_fail(tc, "batch", st);
    /* as for single writes: a 409/412, or the 404 of a delete, may answer a
     * resend of a batch whose first send was applied (only then); the
     * entities decide */
    if ((rc == -EEXIST || rc == -ESTALE || rc == -ENOENT) && (resp->resent || probe->since) &&
        batch_applied(probe, resp) == 1) {
        log_info(tc->lg,
                 "batch of %zu on %s/%s: the service already holds it (an earlier "
                 "send was applied)",
                 probe->n, probe->table, probe->pk);
        memset(st, 0, sizeof(*st));
        rc = 0;
    }
    return rc;
}

/* Is sending the batch of OPS again harmless whether or not an earlier
 * send was applied? Insert Or Replace is: it writes the same entity again.
 * An Insert fails with 409 and an If-Match with 412 once the first send
 * was applied, and a Delete with 404: their lost answers are settled by
 * reading the entities back (batch_applied). */
static int batch_idempotent(const struct table_batch_op *ops, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ops[i].kind != TB_UPSERT)
            return 0;
    return 1;
}

/* Run an entity group transaction; see table/table.h. */
int table_batch(struct table_client *tc, const char *table, const char *pk,
                const struct table_batch_op *ops, size_t n, struct az_status *st)
{
    return table_batch_again(tc, table, pk, ops, n, NULL, st);
}

/* The index a failed batch's error names; see table/table.h. */
int table_batch_failed_index(const struct az_status *st)
{
    const char *m = st->message;
    char *end;
    long i;

    if (!m || *m < '0' || *m > '9')
        return -1;
    i = strtol(m, &end, 10);
    return *end == ':' && i >= 0 && i < TABLE_BATCH_OPS ? (int)i : -1;
}

/* Run an entity group transaction sent before; see table/table.h. */
int table_batch_again(struct table_client *tc, const char *table, const char *pk,
                      const struct table_batch_op *ops, size_t n, const struct timespec *first_sent,
                      struct az_status *st)
{
    struct http_response resp;
    /* no cap of its own: the service judges the size (413 is EFBIG) */
    struct buf b = BUF_INIT(SIZE_MAX);
    unsigned char rnd[8];
    char id[17], *ctype = NULL;
    struct timespec since;
    struct batch_probe probe = { tc, table, pk, ops, n, NULL };
    char key[TARGET_KEY_MAX];
    struct table_req rq = {
        .kind = TK_BATCH,
        .method = "POST",
        .path = "/$batch",
        .what = "batch",
        .settle = batch_applied,
        .settle_ctx = &probe,
        .status_of = batch_status,
    };
    int rc = -ENOMEM;

    memset(&resp, 0, sizeof(resp));
    memset(st, 0, sizeof(*st));
    batch_etags_clear(ops, n);
    if (n == 0 || n > TABLE_BATCH_OPS)
        return -EINVAL;
    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        return -EIO;
    if (first_sent) {
        since = *first_sent;
        since.tv_sec -= 1;
        probe.since = &since;
    }
    for (int i = 0; i < 8; i++)
        snprintf(id + 2 * i, 3, "%02x", rnd[i]);
    if (batch_body(&b, tc, id, table, pk, ops, n) < 0 ||
        asprintf(&ctype, "multipart/mixed; boundary=batch_%s", id) < 0) {
        ctype = NULL;
        goto out;
    }
    if (batch_idempotent(ops, n))
        rq.settle = NULL; /* a lost answer: sent again as it is, not read back */
    rq.content_type = ctype;
    rq.body = b.ptr;
    rq.body_len = b.len;
    table_target_key(key, sizeof(key), table, pk); /* paced by the partition's target */
    rq.target = key;
    rq.target_n = (unsigned)n;
    rq.rate_limited = batch_rate_limited;
    rc = table_send(tc, &rq, &resp, st);
    rc = batch_answer(&probe, rc, &resp, st);
out:
    if (rc < 0)
        batch_etags_clear(ops, n);
    http_response_clear(&resp);
    free(ctype);
    buf_free(&b);
    return rc;
}
