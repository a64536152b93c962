/* stream/import.c - NDJSON written to a table's or a partition's stream,
 * applied in entity group transactions (stream.h).
 *
 * Each line is one entity as its file shows it (an export stream's line,
 * or any text a file may hold, on one line, with its keys). Lines are
 * parsed by the writer as they arrive and gathered by partition into
 * transactions of up to 100 entities (and under the service's 4 MiB);
 * a full one is queued and sent by one of scan_parallel threads, so that
 * several transactions, of one partition or of several, are out at once.
 * Two transactions out together never hold the same entity: a line whose
 * keys are held already (a counting filter of the keys held, queued or
 * out says maybe; a look through them says yes) waits until everything
 * before it is answered, so a stream that names an entity twice leaves
 * the later line's entity. (The filter alone, with a whole table read
 * ahead, said maybe about once in 2,500 lines, and each wait emptied the
 * queue that spreads the transactions over the partitions.)
 *
 * The first failure stops the stream: a line we refuse (not an entity, one
 * over the service's limits, another partition's) after every line before
 * it has been applied; a transaction the service refuses with the lines of
 * every transaction not yet sent, of any partition. The writes that follow
 * and the close return its -errno; the log line and user.aztfs.errors name
 * the line. A close of one copy of the descriptor (FLUSH) or an fsync is
 * not the stream's end: it returns the outcome of the lines ended, and
 * takes a line not yet ended only when it is whole JSON (only blanks may
 * follow it); the last close (RELEASE: import_free) ends the stream. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "entity/entity.h"
#include "names/names.h"
#include "stream/stream_i.h"

/* --- lines ----------------------------------------------------------------------------- */

/* Refuse line N of M, lines 1 to APPLIED being applied (N - 1, or N when
 * text came after line N's entity), for WHY (printf-style): every line
 * before is applied first, so that the stream stops exactly there.
 * Returns -EINVAL, or the earlier failure that came first. */
static int refuse(struct import_stream *m, unsigned long long n, unsigned long long applied,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int refuse(struct import_stream *m, unsigned long long n, unsigned long long applied,
                  const char *fmt, ...)
{
    char why[800]; /* the line, an entity_error's text (200), what was applied */
    int len, rc = import_drain(m);
    va_list ap;

    if (rc < 0)
        return rc;
    len = snprintf(why, sizeof(why), "line %llu: ", n);
    va_start(ap, fmt);
    vsnprintf(why + len, sizeof(why) - (size_t)len, fmt, ap);
    va_end(ap);
    len = (int)strlen(why);
    if (applied == 0)
        snprintf(why + len, sizeof(why) - (size_t)len, "; no line applied");
    else
        snprintf(why + len, sizeof(why) - (size_t)len, "; lines 1 to %llu applied, none after",
                 applied);
    pthread_mutex_lock(&m->lock);
    import_fail(m, -EINVAL, NULL, why);
    rc = m->err;
    pthread_mutex_unlock(&m->lock);
    return rc;
}

/* The index of M's fullest held transaction (M holds one). */
static int fullest(const struct import_stream *m)
{
    int f = 0;

    for (int i = 1; i < m->n_held; i++)
        if (m->held[i]->bytes > m->held[f]->bytes)
            f = i;
    return f;
}

/* Is held transaction B full (or spooled: its lines are on disk)? */
static int batch_full(const struct import_stream *m, const struct import_batch *b)
{
    return b->n == TABLE_BATCH_OPS || b->spool_len ||
        b->bytes >= table_batch_room(m->s->tc, IMPORT_BATCH_HEADROOM);
}

/* The held transaction of partition PK with room for a line (a new one
 * when none, or when its own is full: queued first, which its queueing
 * may not have been when interrupted), or NULL with *RC -ENOMEM or what
 * queueing returned (the fullest queued when IMPORT_GROUPS_MAX are held). */
static struct import_batch *held_for(struct import_stream *m, const char *pk, int *rc)
{
    uint64_t h = hash_fnv1a(pk);
    struct import_batch *b;

    *rc = 0;
    for (int i = m->n_held - 1; i >= 0; i--) { /* the newest first: a stream in order */
        if (m->held[i]->pk_hash != h || strcmp(m->held[i]->pk, pk) != 0)
            continue;
        if (!batch_full(m, m->held[i]))
            return m->held[i];
        if ((*rc = import_submit(m, i)) < 0)
            return NULL;
        break;
    }
    if (m->n_held == IMPORT_GROUPS_MAX && (*rc = import_submit(m, fullest(m))) < 0)
        return NULL;
    if (!(b = calloc(1, sizeof(*b))) || !(b->pk = strdup(pk))) {
        free(b);
        *rc = -ENOMEM;
        return NULL;
    }
    b->pk_hash = h;
    m->held[m->n_held++] = b;
    return b;
}

/* Take line N of M (TEXT, LEN bytes, no newline): parsed, checked and
 * added to its partition's transaction. Returns 0 (taken), 1 (taken, but
 * the wait to queue its full transaction was interrupted), or -errno (not
 * taken: -EINTR, the stream's failure, -ENOMEM). */
static int take_line(struct import_stream *m, unsigned long long n, const char *text, size_t len)
{
    struct entity_error err;
    struct import_batch *b;
    json_t *wire = NULL;
    char *pk = NULL, *rk = NULL;
    char why[200];
    uint64_t k;
    int rc, hit, i;

    if (len == strspn(text, " \t\r"))
        return 0; /* a blank line */
    if ((rc = entity_parse(text, len, &wire, &pk, &rk, &err)) < 0) {
        rc = rc == -ENOMEM ? rc : refuse(m, n, n - 1, "%s", err.text);
        goto out;
    }
    if (!pk && m->pk && !(pk = strdup(m->pk))) { /* a partition's stream: its own */
        rc = -ENOMEM;
        goto out;
    }
    if (!pk || !rk) {
        rc = refuse(m, n, n - 1, "no %s", !rk ? "RowKey" : "PartitionKey");
        goto out;
    }
    if (m->pk && strcmp(pk, m->pk) != 0) {
        rc = refuse(m, n, n - 1, "PartitionKey '%.80s' is not this partition's", pk);
        goto out;
    }
    if ((rc = store_entity_fits(m->s, pk, rk, wire, len, why, sizeof(why))) < 0) {
        rc = rc == -ENOMEM ? rc : refuse(m, n, n - 1, "%s", why);
        goto out;
    }
    k = import_key_hash(pk, rk);
    pthread_mutex_lock(&m->lock);
    hit = import_filter_has(m, k) && import_key_held(m, pk, rk, k);
    pthread_mutex_unlock(&m->lock);
    if (hit && (rc = import_drain(m)) < 0) /* maybe named before: the earlier line first */
        goto out;
    if (!(b = held_for(m, pk, &rc)))
        goto out;
    b->wire[b->n] = wire;
    b->rk[b->n] = rk;
    b->key[b->n] = k;
    b->line[b->n++] = n;
    b->bytes += len;
    m->held_bytes += len;
    wire = NULL;
    rk = NULL;
    pthread_mutex_lock(&m->lock);
    import_filter_add(m, k, 1);
    pthread_mutex_unlock(&m->lock);
    if (batch_full(m, b)) {
        for (i = 0; m->held[i] != b; i++)
            ;
        rc = import_submit(m, i);
    } else if (m->held_bytes > IMPORT_HELD_BYTES) {
        rc = import_submit(m, fullest(m));
    }
    rc = rc == -EINTR ? 1 : rc; /* the line is held all the same */
out:
    json_decref(wire);
    free(pk);
    free(rk);
    return rc;
}

/* After line M->lines was taken at a flush without its newline: the blanks
 * of BUF (SIZE bytes) up to that newline, which ends it. Returns the bytes
 * taken, or -errno when something else came (a bad line). */
static long long take_cut(struct import_stream *m, const char *buf, size_t size)
{
    size_t i = 0;

    while (i < size && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r'))
        i++;
    if (i < size && buf[i] != '\n')
        return refuse(m, m->lines, m->lines,
                      "text after its entity, which a close or fsync had taken as the "
                      "whole line before this text came (a line holds one entity)");
    if (i < size) {
        m->cut = 0;
        i++;
    }
    return (long long)i;
}

/* Take the lines of BUF (SIZE bytes) that end in it, keeping the rest in
 * M's partial line; *USED: the bytes taken (the lines taken and the
 * partial line's), SIZE unless it fails. Returns 0 or -errno (-EINTR: the
 * bytes after *USED are not taken, and may be written again). */
static int take(struct import_stream *m, const char *buf, size_t size, size_t *used)
{
    int rc = 0;

    *used = 0;
    while (*used < size) {
        const char *at = buf + *used, *nl = memchr(at, '\n', size - *used);
        size_t len = nl ? (size_t)(nl - at) : size - *used, had = m->partial.len;

        if (m->cut) {
            long long n = take_cut(m, at, size - *used);

            if (n < 0)
                return (int)n;
            *used += (size_t)n;
            continue;
        }
        if (had + len > IMPORT_LINE_MAX)
            return refuse(m, m->lines + 1, m->lines, "longer than %zu bytes", IMPORT_LINE_MAX);
        if (buf_add(&m->partial, at, len) < 0) { /* capped at IMPORT_LINE_MAX + 1 */
            buf_setlen(&m->partial, had);
            return -ENOMEM;
        }
        if (!nl) {
            *used = size;
            return 0;
        }
        if ((rc = take_line(m, m->lines + 1, m->partial.ptr, m->partial.len)) < 0) {
            buf_setlen(&m->partial, had); /* not taken: as it was */
            return rc;
        }
        m->lines++;
        buf_reset(&m->partial);
        *used += len + 1;
        if (rc == 1)
            return -EINTR;
    }
    return 0;
}

/* --- the stream's face ----------------------------------------------------------------- */

/* See stream/stream.h. */
int import_open(struct store *s, struct fspath *fp, const char *path, int insert,
                struct import_stream **out)
{
    struct import_stream *m;
    struct cache_stats cs;
    int rc = -ENOMEM, senders = s->scan_ways > 0 ? s->scan_ways : 1;

    senders = senders > IMPORT_SENDERS_MAX ? IMPORT_SENDERS_MAX : senders;

    *out = NULL;
    if (!(m = calloc(1, sizeof(*m))))
        return -ENOMEM;
    m->s = s;
    m->insert = insert;
    m->queue_tail = &m->queue;
    m->spool_fd = -1;
    cache_get_stats(s->cache, &cs);
    m->queue_bytes = cs.max_bytes;
    buf_init(&m->partial, IMPORT_LINE_MAX + 1);
    clock_gettime(CLOCK_MONOTONIC, &m->started);
    pthread_mutex_init(&m->wlock, NULL);
    lock_init(&m->lock);
    pthread_cond_init(&m->cond, NULL);
    if (!(m->path = strdup(path)) || !(m->table = strdup(fp->table)) ||
        !(m->table_path = fspath_join("/", fp->table)) ||
        !(m->filter = calloc(IMPORT_FILTER_SIZE, sizeof(*m->filter))))
        goto out_err;
    if (fp->pk_name && !fp->pk && (rc = scan_resolve_keys(s, fp)) < 0)
        goto out_err; /* a long-form name: its key found by listing */
    rc = -ENOMEM;
    if (fp->pk_name && !(m->pk = strdup(fp->pk)))
        goto out_err;
    store_settle(s, m->table_path); /* write-behind's changes of the table first */
    if (workers_start(&m->senders, "aztfs-import", senders, import_sender, m) == 0) {
        rc = -EAGAIN;
        goto out_err;
    }
    *out = m;
    return 0;
out_err:
    import_free(m);
    return rc;
}

/* See stream/stream.h. */
int import_write(struct import_stream *m, const char *buf, size_t size, unsigned long long off)
{
    size_t used = 0;
    int rc;

    pthread_mutex_lock(&m->wlock);
    pthread_mutex_lock(&m->lock);
    rc = m->err;
    pthread_mutex_unlock(&m->lock);
    if (rc == 0 && off != m->off && !m->insert) { /* O_APPEND: the kernel's idea of the end */
        log_error(&m->s->log,
                  "import %s: a write at offset %llu, not at %llu: the lines are "
                  "taken in order, as they come",
                  m->path, off, m->off);
        rc = -ESPIPE;
    }
    if (rc == 0) {
        rc = take(m, buf, size, &used);
        m->off += used;
        if (rc == -EINTR && used > 0)
            rc = 0; /* a short write: the rest is the caller's to write again */
    }
    pthread_mutex_unlock(&m->wlock);
    return rc < 0 ? rc : (int)used;
}

/* Is TEXT (LEN bytes) one whole JSON value, which no text that follows
 * can continue into a longer one? (A leading byte order mark skipped, as
 * entity_parse does.) */
static int whole_json(const char *text, size_t len)
{
    size_t bom = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    json_error_t jerr;
    json_t *v = json_loadb(text + bom, len - bom, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    int whole;

    whole = json_is_object(v) || json_is_array(v) || json_is_string(v);
    json_decref(v);
    return whole;
}

/* Every line of M taken, and its line not yet ended too when LAST or when
 * it is one whole JSON value (whole_json), answered. Returns 0 or the
 * stream's failure. */
static int settle(struct import_stream *m, int last)
{
    int rc = 0;

    pthread_mutex_lock(&m->wlock);
    m->closing = 1;
    if (m->partial.len > 0 && (last || whole_json(m->partial.ptr, m->partial.len)) &&
        (rc = take_line(m, m->lines + 1, m->partial.ptr, m->partial.len)) >= 0) {
        m->lines++;
        buf_reset(&m->partial);
        m->cut = !last; /* only blanks may follow it */
    }
    if (rc >= 0)
        rc = import_drain(m);
    m->closing = 0;
    pthread_mutex_unlock(&m->wlock);
    return rc;
}

/* See stream/stream.h. */
int import_flush(struct import_stream *m)
{
    return settle(m, 0);
}

/* See stream/stream.h. */
void import_free(struct import_stream *m)
{
    struct timespec now;

    if (!m)
        return;
    if (m->senders.n > 0) {
        (void)settle(m, 1); /* the stream's end: a failure is logged, as each is */
        pthread_mutex_lock(&m->lock);
        m->stopping = 1;
        pthread_cond_broadcast(&m->cond);
        pthread_mutex_unlock(&m->lock);
        workers_join(&m->senders);
        for (int i = 0; i < m->n_held; i++) /* stopped by a failure, or the mount's end */
            m->dropped += m->held[i]->n;
        clock_gettime(CLOCK_MONOTONIC, &now);
        log_info(&m->s->log,
                 "import %s: %llu lines, %llu entities applied in %llu transactions "
                 "(%s; %llu of them through the spool, %.1f MiB there at most), "
                 "%llu not applied, %.1f s%s",
                 m->path, m->lines, m->applied, m->transactions,
                 m->insert ? "insert" : "insert or replace", m->spooled,
                 (double)m->spool_peak / (1024 * 1024), m->dropped,
                 (double)(now.tv_sec - m->started.tv_sec) +
                     (double)(now.tv_nsec - m->started.tv_nsec) / 1e9,
                 m->err ? ": stopped by the failure logged before" : "");
    }
    for (int i = 0; i < m->n_held; i++)
        import_batch_free(m->held[i]);
    while (m->queue) {
        struct import_batch *b = m->queue;

        m->queue = b->next;
        import_batch_free(b);
    }
    buf_free(&m->partial);
    if (m->spool_fd >= 0)
        close(m->spool_fd);
    pthread_cond_destroy(&m->cond);
    pthread_mutex_destroy(&m->lock);
    pthread_mutex_destroy(&m->wlock);
    free(m->filter);
    free(m->path);
    free(m->table);
    free(m->table_path);
    free(m->pk);
    free(m);
}
