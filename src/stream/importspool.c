/* stream/importspool.c - an import stream's spool (stream_i.h): the
 * transactions queued past the memory the mount was given (-o cache_size),
 * kept on disk until a sender takes them.
 *
 * A stream in partition order (an export, an rsync walk) spreads its
 * transactions over as many partitions as the writer has read ahead; when
 * a partition holds more than memory does, reading ahead means holding
 * lines elsewhere. The writer appends a full transaction's lines to one
 * unnamed file (O_TMPFILE in -o spool_dir=, gone when the stream ends or
 * the mount dies), keeps its keys' hashes, and frees the rest; the sender
 * that takes it reads it back and frees the disk it held (a hole punched).
 * A spool is scratch, not a journal: an import's outcome is its close's
 * answer, as it is without one. When the spool cannot be written (the
 * disk full) the writer logs why once and waits for the senders instead,
 * as it does without a spool (-o spool_dir=none).
 *
 * A record: the line's number (8 bytes), the RowKey's length and the
 * entity's (4 bytes each, host order: the file lives as long as the
 * process), the RowKey, the entity as compact JSON. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stream/stream_i.h"

/* Open M's spool (the writer's, under wlock). Returns 0 or -errno. */
static int spool_open(struct import_stream *m)
{
    const char *dir = m->s->spool_dir;
    char *name = NULL;
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR)) { /* no O_TMPFILE there */
        if (asprintf(&name, "%s/aztfs-spool-XXXXXX", dir) < 0)
            return -ENOMEM;
        if ((fd = mkostemp(name, O_CLOEXEC)) >= 0)
            unlink(name);
        free(name);
    }
    if (fd < 0)
        return -errno;
    m->spool_fd = fd;
    log_info(&m->s->log,
             "import %s: reading ahead past %zu MiB of memory; the rest waits in a spool in %s",
             m->path, m->queue_bytes >> 20, dir);
    return 0;
}

static int add_u32(struct buf *w, size_t v)
{
    uint32_t u = (uint32_t)v;

    return buf_add(w, &u, sizeof(u));
}

/* B's lines as records, appended to W. Returns 0 or -errno. */
static int encode(const struct import_batch *b, struct buf *w)
{
    for (size_t i = 0; i < b->n; i++) {
        char *text = json_dumps(b->wire[i], JSON_COMPACT | JSON_ENCODE_ANY);
        size_t rk = strlen(b->rk[i]);

        if (!text)
            return -ENOMEM;
        buf_add(w, &b->line[i], sizeof(b->line[i]));
        add_u32(w, rk);
        add_u32(w, strlen(text));
        buf_add(w, b->rk[i], rk);
        buf_adds(w, text);
        free(text);
    }
    return w->err;
}

/* Write LEN bytes of P at OFF of FD. Returns 0 or -errno. */
static int write_all(int fd, const char *p, size_t len, off_t off)
{
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        p += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

/* See stream/stream_i.h. */
int import_spool_put(struct import_stream *m, struct import_batch *b)
{
    struct buf w = BUF_INIT(TABLE_BATCH_BYTES + 2 * IMPORT_LINE_MAX);
    int rc = 0;

    if (m->spool_fd < 0)
        rc = spool_open(m);
    if (rc == 0)
        rc = encode(b, &w);
    if (rc == 0)
        rc = write_all(m->spool_fd, w.ptr, w.len, (off_t)m->spool_end);
    if (rc < 0) {
        log_warn(&m->s->log,
                 "import %s: the spool in %s cannot be written (%s): reading ahead only as far as "
                 "%zu MiB of memory",
                 m->path, m->s->spool_dir, strerror(-rc), m->queue_bytes >> 20);
        m->spool_broken = 1;
        buf_free(&w);
        return rc;
    }
    for (size_t i = 0; i < b->n; i++) {
        json_decref(b->wire[i]);
        b->wire[i] = NULL;
        free(b->rk[i]);
        b->rk[i] = NULL;
    }
    b->spool_off = m->spool_end;
    b->spool_len = w.len;
    m->spool_end += w.len;
    buf_free(&w);
    pthread_mutex_lock(&m->lock);
    m->spooled++;
    m->spool_held += b->spool_len;
    if (m->spool_held > m->spool_peak)
        m->spool_peak = m->spool_held;
    pthread_mutex_unlock(&m->lock);
    return 0;
}

static uint32_t get_u32(const char *p)
{
    uint32_t u;

    memcpy(&u, p, sizeof(u));
    return u;
}

/* B's lines from the records of P (LEN bytes). Returns 0 or -errno. */
static int decode(struct import_batch *b, const char *p, size_t len)
{
    const size_t head = sizeof(b->line[0]) + 2 * sizeof(uint32_t);

    for (size_t i = 0; i < b->n; i++) {
        size_t rk, text;

        if (len < head)
            return -EIO;
        memcpy(&b->line[i], p, sizeof(b->line[i]));
        rk = get_u32(p + sizeof(b->line[i]));
        text = get_u32(p + sizeof(b->line[i]) + sizeof(uint32_t));
        p += head;
        len -= head;
        if (len < rk + text)
            return -EIO;
        if (!(b->rk[i] = strndup(p, rk)))
            return -ENOMEM;
        if (!(b->wire[i] = json_loadb(p + rk, text, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL)))
            return -EIO;
        p += rk + text;
        len -= rk + text;
    }
    return len == 0 ? 0 : -EIO;
}

/* See stream/stream_i.h. */
int import_spool_get(struct import_stream *m, struct import_batch *b)
{
    char *p = malloc(b->spool_len ? b->spool_len : 1);
    size_t got = 0;
    int rc = 0;

    if (!p)
        return -ENOMEM;
    while (rc == 0 && got < b->spool_len) {
        ssize_t n = pread(m->spool_fd, p + got, b->spool_len - got, (off_t)(b->spool_off + got));

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            rc = n < 0 ? -errno : -EIO;
        else
            got += (size_t)n;
    }
    if (rc == 0)
        rc = decode(b, p, b->spool_len);
    free(p);
    /* the disk it held, given back (a file system without holes keeps it
     * until the stream ends) */
    fallocate(m->spool_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)b->spool_off,
              (off_t)b->spool_len);
    pthread_mutex_lock(&m->lock);
    m->spool_held -= b->spool_len;
    pthread_mutex_unlock(&m->lock);
    return rc;
}
