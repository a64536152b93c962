/* journal.c - the write-behind journal file: records with a digest each,
 * appends, group commit, reading back, atomic rewrite (journal.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "buf.h"
#include "journal.h"

/* A record's text is at most this long (an entity is at most 1 MiB on the
 * wire; its JSON escaping can double that). */
#define RECORD_MAX (8u * 1024 * 1024)
#define DIGEST_HEX 16
/* The file grows by this much of zeros at a time: a flush after a record
 * written into space already on disk writes the data alone (no size or
 * extent change to journal), which halves its cost here. */
#define GROW_BYTES (4u * 1024 * 1024)

struct journal {
    pthread_mutex_t mu;
    pthread_cond_t synced_cv;
    struct logger *lg;
    char *dir, *path, *tmp_path;
    int fd, lock_fd;
    int broken;                 /* a write or sync failed: no more appends */
    int syncing;                /* a flush runs (its caller holds no lock) */
    uint64_t end;               /* bytes appended, counted from the open */
    uint64_t synced;            /* everything before this is on disk */
    uint64_t base;              /* END at the last rewrite */
    off_t pos;                  /* where the next record goes in the file */
    off_t alloc;                /* the file's size: zeros from POS on */
};

/* Create DIR and its missing parents, 0700. Returns 0 or -errno. */
static int make_dirs(const char *dir)
{
    char *p = *dir ? strdup(dir) : NULL;
    int rc = 0;

    if (!*dir)
        return -EINVAL;
    if (!p)
        return -ENOMEM;
    for (char *s = p + 1; rc == 0; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;

        *s = '\0';
        if (mkdir(p, 0700) < 0 && errno != EEXIST)
            rc = -errno;
        *s = c;
        if (c == '\0')
            break;
    }
    free(p);
    return rc;
}

/* The digest of LEN bytes of TEXT as 16 hex digits in OUT. */
static void digest_hex(const char *text, size_t len, char out[DIGEST_HEX + 1])
{
    unsigned char md[SHA256_DIGEST_LENGTH];

    SHA256((const unsigned char *)text, len, md);
    for (int i = 0; i < DIGEST_HEX / 2; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* Append REC as one record line to B. Returns 0, -EFBIG or -ENOMEM. */
static int format_record(struct buf *b, const json_t *rec)
{
    char hex[DIGEST_HEX + 1];
    char *text;
    size_t len;
    int rc = 0;

    if (!json_is_object(rec))
        return -EINVAL;         /* journal_read takes objects only */
    if (!(text = json_dumps(rec, JSON_COMPACT)))
        return -ENOMEM;
    len = strlen(text);
    if (len > RECORD_MAX) {
        rc = -EFBIG;
    } else {
        digest_hex(text, len, hex);
        buf_addf(b, "%s %s\n", hex, text);
        rc = b->err ? -ENOMEM : 0;
    }
    free(text);
    return rc;
}

/* Where the records of file FD (SIZE bytes) end: at its first zero byte
 * (the space grown ahead of them), else at its end. 0 or -errno. */
static int find_end(int fd, off_t size, off_t *end)
{
    char chunk[65536];
    off_t off = 0;

    while (off < size) {
        ssize_t n = pread(fd, chunk, sizeof(chunk), off);
        char *z;

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -EIO;
        if ((z = memchr(chunk, '\0', (size_t)n)) != NULL) {
            *end = off + (z - chunk);
            return 0;
        }
        off += n;
    }
    *end = size;
    return 0;
}

/* Write all LEN bytes of DATA to FD at OFF. Returns 0 or -errno. */
static int pwrite_all(int fd, const char *data, size_t len, off_t off)
{
    while (len > 0) {
        ssize_t n = pwrite(fd, data, len, off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        data += n;
        len -= (size_t)n;
        off += n;
    }
    return 0;
}

/* Make room for LEN more bytes at j->pos: the file grown with zeros
 * (written, not a hole). Lock held. Returns 0 or -errno. */
static int grow(struct journal *j, size_t len)
{
    static const char zeros[65536];
    off_t want = j->pos + (off_t)len;

    while (j->alloc < want) {
        off_t stop = j->alloc + GROW_BYTES;

        for (off_t at = j->alloc; at < stop; at += (off_t)sizeof(zeros)) {
            int rc = pwrite_all(j->fd, zeros, sizeof(zeros), at);

            if (rc < 0)
                return rc;
        }
        j->alloc = stop;
    }
    return 0;
}

/* See journal.h. */
int journal_open(const char *dir, const char *name, struct logger *lg, struct journal **out)
{
    struct journal *j = calloc(1, sizeof(*j));
    char *lock_path = NULL;
    struct stat sb;
    int rc = -ENOMEM;

    *out = NULL;
    if (!j)
        return -ENOMEM;
    j->fd = j->lock_fd = -1;
    j->lg = lg;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->synced_cv, NULL);
    if (!(j->dir = strdup(dir)) || asprintf(&j->path, "%s/%s", dir, name) < 0 ||
        asprintf(&j->tmp_path, "%s/%s.new", dir, name) < 0 ||
        asprintf(&lock_path, "%s/%s.lock", dir, name) < 0) {
        lock_path = NULL;
        goto out_err;
    }
    if ((rc = make_dirs(dir)) < 0) {
        log_error(lg, "journal directory %s cannot be created: %s", dir, strerror(-rc));
        goto out_err;
    }
    j->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (j->lock_fd < 0 || flock(j->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
        log_error(lg, "journal %s: %s", j->path, rc == -EBUSY ?
                  "another aztfs mount is using it (one journal per mount: give this one "
                  "its own -o journal_dir=)" : strerror(-rc));
        goto out_err;
    }
    j->fd = open(j->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (j->fd < 0 || fstat(j->fd, &sb) < 0) {
        rc = -errno;
        log_error(lg, "journal %s cannot be opened: %s", j->path, strerror(-rc));
        goto out_err;
    }
    j->alloc = sb.st_size;
    if ((rc = find_end(j->fd, sb.st_size, &j->pos)) < 0)
        goto out_err;
    free(lock_path);
    *out = j;
    return 0;
out_err:
    free(lock_path);
    journal_close(j);
    return rc;
}

/* Check one LINE (LEN bytes, without its newline) and hand its record to
 * FN. Returns 0 (FN's 0, or a bad record: *bad_one set), or FN's error. */
static int read_line(char *line, size_t len, int (*fn)(void *, const json_t *), void *ctx,
                     int *bad_one)
{
    char hex[DIGEST_HEX + 1];
    json_t *rec;
    int rc;

    *bad_one = 1;
    if (len < DIGEST_HEX + 3 || line[DIGEST_HEX] != ' ')
        return 0;
    digest_hex(line + DIGEST_HEX + 1, len - DIGEST_HEX - 1, hex);
    if (memcmp(hex, line, DIGEST_HEX) != 0)
        return 0;
    rec = json_loadb(line + DIGEST_HEX + 1, len - DIGEST_HEX - 1, 0, NULL);
    if (!rec || !json_is_object(rec)) {
        json_decref(rec);
        return 0;
    }
    *bad_one = 0;
    rc = fn(ctx, rec);
    json_decref(rec);
    return rc;
}

/* See journal.h. */
int journal_read(struct journal *j, int (*fn)(void *ctx, const json_t *rec), void *ctx,
                 unsigned *bad)
{
    struct buf b = BUF_INIT(SIZE_MAX);
    char chunk[65536];
    size_t start = 0;
    off_t off = 0;
    ssize_t n;
    int rc = 0;

    if (bad)
        *bad = 0;
    while ((n = pread(j->fd, chunk, sizeof(chunk), off)) > 0) {
        if (buf_add(&b, chunk, (size_t)n) < 0) {
            rc = -ENOMEM;
            goto out;
        }
        off += n;
    }
    if (n < 0) {
        rc = -errno;
        log_error(j->lg, "journal %s cannot be read: %s", j->path, strerror(-rc));
        goto out;
    }
    {                           /* the records end where the grown zeros begin */
        char *z = b.ptr ? memchr(b.ptr, '\0', b.len) : NULL;

        if (z)
            b.len = (size_t)(z - b.ptr);
    }
    while (start < b.len && rc == 0) {
        char *nl = memchr(b.ptr + start, '\n', b.len - start);
        size_t len = nl ? (size_t)(nl - (b.ptr + start)) : b.len - start;
        int bad_one = 0;

        if (nl)
            rc = read_line(b.ptr + start, len, fn, ctx, &bad_one);
        else
            bad_one = 1;    /* the last record was cut short */
        if (bad_one) {
            log_error(j->lg, "journal %s: the record at byte %zu is %s: skipped (it was "
                      "never acknowledged, or the disk damaged it)", j->path, start,
                      nl ? "damaged" : "cut short (torn write)");
            if (bad)
                (*bad)++;
        }
        start += len + 1;
    }
out:
    buf_free(&b);
    return rc;
}

/* See journal.h. */
int journal_append(struct journal *j, const json_t *rec, uint64_t *lsn)
{
    struct buf b = BUF_INIT(SIZE_MAX);
    int rc = format_record(&b, rec);

    if (rc < 0)
        goto out;
    pthread_mutex_lock(&j->mu);
    if (j->broken) {
        rc = -EIO;
    } else if ((rc = grow(j, b.len)) < 0 ||
               (rc = pwrite_all(j->fd, b.ptr, b.len, j->pos)) < 0) {
        j->broken = 1;
        log_error(j->lg, "journal %s: write failed: %s; changes are refused from now on",
                  j->path, strerror(-rc));
    } else {
        j->pos += (off_t)b.len;
        j->end += b.len;
        *lsn = j->end;
    }
    pthread_mutex_unlock(&j->mu);
out:
    buf_free(&b);
    return rc < 0 && rc != -ENOMEM && rc != -EFBIG ? -EIO : rc;
}

/* See journal.h. */
int journal_sync(struct journal *j, uint64_t lsn)
{
    int rc = 0;

    pthread_mutex_lock(&j->mu);
    if (lsn > j->end)
        lsn = j->end;           /* nothing past what was appended */
    while (j->synced < lsn && !j->broken) {
        uint64_t target;

        if (j->syncing) {
            pthread_cond_wait(&j->synced_cv, &j->mu);
            continue;
        }
        j->syncing = 1;
        target = j->end;
        pthread_mutex_unlock(&j->mu);
        rc = fdatasync(j->fd) < 0 ? -errno : 0;
        pthread_mutex_lock(&j->mu);
        j->syncing = 0;
        if (rc < 0) {
            j->broken = 1;
            log_error(j->lg, "journal %s: flush to disk failed: %s; changes are refused "
                      "from now on", j->path, strerror(-rc));
        } else {
            j->synced = target;
        }
        pthread_cond_broadcast(&j->synced_cv);
    }
    rc = j->synced >= lsn ? 0 : -EIO;
    pthread_mutex_unlock(&j->mu);
    return rc;
}

/* Flush directory DIR (a rename in it made durable). */
static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;

    if (fd < 0)
        return -errno;
    if (fsync(fd) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

/* Write the records of RECS into a new file at j->tmp_path and flush it.
 * Returns its descriptor (*len: its size) or -errno. */
static int write_new(struct journal *j, const json_t *recs, off_t *len)
{
    struct buf b = BUF_INIT(SIZE_MAX);
    size_t i;
    json_t *rec;
    int fd, rc = 0;

    json_array_foreach(recs, i, rec)
        if ((rc = format_record(&b, rec)) < 0)
            break;
    fd = rc < 0 ? -1 : open(j->tmp_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (rc == 0 && fd < 0)
        rc = -errno;
    if (rc == 0 && ((rc = pwrite_all(fd, b.ptr ? b.ptr : "", b.len, 0)) == 0) && fsync(fd) < 0)
        rc = -errno;
    *len = (off_t)b.len;
    buf_free(&b);
    if (rc < 0 && fd >= 0) {
        close(fd);
        unlink(j->tmp_path);
    }
    return rc < 0 ? rc : fd;
}

/* See journal.h. */
int journal_rewrite(struct journal *j, json_t *(*build)(void *ctx), void *ctx)
{
    json_t *recs;
    off_t len = 0;
    int fd, rc = 0;

    pthread_mutex_lock(&j->mu);
    while (j->syncing)          /* a flush of the old file runs unlocked */
        pthread_cond_wait(&j->synced_cv, &j->mu);
    recs = build(ctx);
    fd = !recs ? -ENOMEM : !json_is_array(recs) ? -EINVAL : write_new(j, recs, &len);
    json_decref(recs);
    if (fd >= 0 && rename(j->tmp_path, j->path) < 0) {
        rc = -errno;
        close(fd);
        unlink(j->tmp_path);
    } else if (fd < 0) {
        rc = fd;
    }
    if (rc == 0) {              /* renamed: the new file is the journal now */
        close(j->fd);
        j->fd = fd;
        j->pos = j->alloc = len;
        j->synced = j->end;     /* everything live is in the new, flushed file */
        j->base = j->end;
        if ((rc = sync_dir(j->dir)) < 0) {
            j->broken = 1;      /* the rename may not survive a crash */
            log_error(j->lg, "journal %s: its directory cannot be flushed: %s; changes "
                      "are refused from now on", j->path, strerror(-rc));
        }
        pthread_mutex_unlock(&j->mu);
        return rc;
    }
    pthread_mutex_unlock(&j->mu);
    log_error(j->lg, "journal %s cannot be compacted: %s (it stays as it was)", j->path,
              strerror(-rc));
    return rc;
}

/* See journal.h. */
uint64_t journal_size(struct journal *j)
{
    uint64_t n;

    pthread_mutex_lock(&j->mu);
    n = j->end - j->base;
    pthread_mutex_unlock(&j->mu);
    return n;
}

/* See journal.h. */
const char *journal_path(const struct journal *j)
{
    return j->path;
}

/* See journal.h. */
void journal_close(struct journal *j)
{
    if (!j)
        return;
    if (j->fd >= 0)
        close(j->fd);
    if (j->lock_fd >= 0)
        close(j->lock_fd);      /* releases the flock */
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->synced_cv);
    free(j->dir);
    free(j->path);
    free(j->tmp_path);
    free(j);
}
