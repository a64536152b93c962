/* journal/journal.c - the write-behind journal file: where it lives (checked), its
 * key and lock, appends, group commit, reading back, atomic rewrite
 * (journal.h). The record format is journal/record.c's. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "util/util.h"
#include "journal/journal.h"
#include "journal/journal_i.h"

/* The file grows by this much of zeros at a time (at most; less on a small
 * disk: grow_step): a flush after a record written into space already on
 * disk writes the data alone (no size or extent change to journal), which
 * halves its cost here. */
#define GROW_MAX (4u * 1024 * 1024)
#define GROW_MIN (64u * 1024)

/* Bytes free for us on FD's filesystem (0 when unknown). */
static uint64_t free_bytes(int fd)
{
    struct statvfs sv;

    return fstatvfs(fd, &sv) == 0 ? (uint64_t)sv.f_bavail * sv.f_frsize : 0;
}

/* How much to grow the file by: a sixteenth of the free space, within
 * GROW_MIN..GROW_MAX, so a small disk is not filled with zeros ahead. */
static off_t grow_step(int fd)
{
    uint64_t s = free_bytes(fd) / 16;

    s = s < GROW_MIN ? GROW_MIN : s > GROW_MAX ? GROW_MAX : s;
    return (off_t)(s - s % GROW_MIN);
}

/* Zeros from j->alloc up to STOP (written, not a hole). 0 or -errno. */
static int zero_to(struct journal *j, off_t stop)
{
    static const char zeros[GROW_MIN];

    while (j->alloc < stop) {
        size_t n =
            stop - j->alloc < (off_t)sizeof(zeros) ? (size_t)(stop - j->alloc) : sizeof(zeros);
        int rc = safe_pwrite_all(j->fd, zeros, n, j->alloc);

        if (rc < 0)
            return rc;
        j->alloc += (off_t)n;
    }
    return 0;
}

/* Make room for LEN more bytes at j->pos: the file grown with zeros by a
 * step, else (a disk almost full) by LEN exactly. Lock held. 0 or -errno. */
static int grow(struct journal *j, size_t len)
{
    off_t want, step;
    int rc;

    LOCK_HELD(&j->mu);
    want = j->pos + (off_t)len;
    if (j->alloc >= want)
        return 0;
    step = grow_step(j->fd);
    rc = zero_to(j, want + step - (want % step));
    return rc == -ENOSPC || rc == -EDQUOT ? zero_to(j, want) : rc;
}

/* Where the records of file FD (SIZE bytes) end: before the zeros grown
 * at its end. 0 or -errno. */
static int content_end(int fd, off_t size, off_t *end)
{
    char chunk[65536];
    off_t at = size;

    while (at > 0) {
        size_t n = at < (off_t)sizeof(chunk) ? (size_t)at : sizeof(chunk);
        ssize_t got = pread(fd, chunk, n, at - (off_t)n);

        if (got < 0 && errno == EINTR)
            continue;
        if (got != (ssize_t)n)
            return got < 0 ? -errno : -EIO;
        for (size_t i = n; i-- > 0;)
            if (chunk[i] != '\0') {
                *end = at - (off_t)n + (off_t)i + 1;
                return 0;
            }
        at -= (off_t)n;
    }
    *end = 0;
    return 0;
}

/* Flush the journal's directory (a rename or a new file made durable). */
static int sync_dir(struct journal *j)
{
    return fsync(j->dir.fd) < 0 ? -errno : 0;
}

/* Take the lock of J: NAME.lock, flock'ed. Returns 0, -EBUSY or -errno
 * (logged). MU held, except from journal_open (nobody else has J yet): not
 * asserted. */
static int take_lock(struct journal *j)
{
    char why[512];
    int fd = safe_open(&j->dir, j->lock_name, O_RDWR | O_CREAT, 0600, why, sizeof(why));

    if (fd < 0) {
        log_error(j->lg, "journal lock: %s", why);
        return fd;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int rc = errno == EWOULDBLOCK ? -EBUSY : -errno;

        close(fd);
        if (rc == -EBUSY)
            log_error(j->lg,
                      "journal %s: another aztfs process is using it (a mount, or one "
                      "still sending its queue after an unmount: it ends within its "
                      "writeback_stop); give this mount its own -o journal_dir=",
                      j->path);
        return rc;
    }
    if (j->lock_fd >= 0)
        close(j->lock_fd);
    j->lock_fd = fd;
    return 0;
}

/* Names of J's files in its directory. Returns 0 or -ENOMEM. */
static int name_files(struct journal *j, const char *name)
{
    if (!(j->name = strdup(name)) || asprintf(&j->lock_name, "%s.lock", name) < 0 ||
        asprintf(&j->key_name, "%s.key", name) < 0 ||
        asprintf(&j->path, "%s/%s", j->dir.path, name) < 0) {
        j->lock_name = j->key_name = j->path = NULL;
        return -ENOMEM;
    }
    return 0;
}

/* See journal.h. */
int journal_open(const char *dir, const char *name, int allow_shared, struct logger *lg,
                 struct journal **out)
{
    struct journal *j = calloc(1, sizeof(*j));
    char why[512];
    struct stat sb;
    int rc;

    *out = NULL;
    if (!j)
        return -ENOMEM;
    j->fd = j->lock_fd = j->dir.fd = -1;
    j->lg = lg;
    lock_init(&j->mu);
    pthread_cond_init(&j->synced_cv, NULL);
    if ((rc = safe_dir_open(dir, 1, allow_shared, &j->dir, why, sizeof(why))) < 0) {
        log_error(lg, "journal directory: %s", why);
        goto out_err;
    }
    if ((rc = name_files(j, name)) < 0 || (rc = take_lock(j)) < 0)
        goto out_err;
    j->fd = safe_open(&j->dir, name, O_RDWR | O_CREAT, 0600, why, sizeof(why));
    if (j->fd < 0 || fstat(j->fd, &sb) < 0) {
        rc = j->fd < 0 ? j->fd : -errno;
        log_error(lg, "journal: %s", j->fd < 0 ? why : strerror(-rc));
        goto out_err;
    }
    if ((rc = journal_load_key(j)) < 0)
        goto out_err;
    j->alloc = sb.st_size;
    if ((rc = content_end(j->fd, sb.st_size, &j->pos)) < 0)
        goto out_err;
    *out = j;
    return 0;
out_err:
    journal_close(j);
    return rc;
}

/* Read all of FD into B. 0 or -errno. */
static int read_all(int fd, struct buf *b)
{
    char chunk[65536];
    off_t off = 0;
    ssize_t n;

    while ((n = pread(fd, chunk, sizeof(chunk), off)) > 0 || (n < 0 && errno == EINTR)) {
        if (n < 0)
            continue;
        if (buf_add(b, chunk, (size_t)n) < 0)
            return -ENOMEM;
        off += n;
    }
    return n < 0 ? -errno : 0;
}

/* Keep D (LEN bytes: the file of J as it was read) as NAME.damaged-TIME
 * beside it: a copy (a hard link would give the journal a second link,
 * which its open refuses), written to a new file and renamed. Returns the
 * name (malloc'd) or NULL (logged). */
static char *keep_damaged(struct journal *j, const char *d, size_t len)
{
    char stamp[32], *kept = NULL, *tmp = NULL;
    time_t now = time(NULL);
    struct tm tm;
    int fd, rc;

    gmtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
    if (asprintf(&kept, "%s.damaged-%s", j->name, stamp) < 0)
        return NULL;
    if ((fd = safe_tmp(&j->dir, kept, 0600, &tmp)) < 0) {
        rc = fd;
    } else {
        if ((rc = safe_pwrite_all(fd, d, len, 0)) == 0 && fsync(fd) < 0)
            rc = -errno;
        close(fd);
        if (rc == 0 && renameat(j->dir.fd, tmp, j->dir.fd, kept) < 0)
            rc = -errno;
        if (rc < 0)
            unlinkat(j->dir.fd, tmp, 0);
    }
    free(tmp);
    if (rc < 0) {
        log_error(j->lg, "journal %s: the damaged journal cannot be kept as %s: %s", j->path, kept,
                  strerror(-rc));
        free(kept);
        return NULL;
    }
    return kept;
}

/* Log span SP of the file's bytes D (damage or a foreign record), and put
 * it in the failure ring. */
static void report_span(struct journal *j, const char *d, const struct jspan *sp)
{
    char *path = jrec_salvage_path(d + sp->off, sp->len);
    const char *why = sp->kind == JS_FOREIGN ?
        "a journal record that does not match the journal's key (damaged, or forged): "
        "refused" :
        "a damaged journal record";

    if (sp->kind == JS_TORN)
        log_warn(j->lg,
                 "journal %s: the record at byte %zu (%zu bytes) is cut short: a write "
                 "a crash interrupted, never acknowledged; skipped",
                 j->path, sp->off, sp->len);
    else if (sp->kind == JS_FOREIGN)
        log_error(j->lg,
                  "journal %s: the record at byte %zu (%s%s) does not match the key "
                  "%s: damaged, or not written by this journal's mounts; refused, never "
                  "applied",
                  j->path, sp->off, path ? "it names " : "no path", path ? path : "", j->key_name);
    else
        log_error(j->lg,
                  "journal %s: %zu bytes at byte %zu hold no whole record, and whole "
                  "records follow (they are applied): if they held an acknowledged change "
                  "(%s%s), it is lost",
                  j->path, sp->len, sp->off, path ? "it names " : "no path is left in them",
                  path ? path : "");
    if (sp->kind != JS_TORN)
        failring_add(j->lg->failures,
                     &(struct failure){ "journal", path ? path : j->path, EIO, 0, NULL, why });
    free(path);
}

/* See journal.h. */
int journal_read(struct journal *j, int (*fn)(void *ctx, const json_t *rec), void *ctx,
                 struct journal_damage *dmg)
{
    struct buf b = BUF_INIT(SIZE_MAX);
    struct journal_damage d = { 0 };
    struct jscan s = { 0 };
    int rc;

    if ((rc = read_all(j->fd, &b)) < 0) {
        log_error(j->lg, "journal %s cannot be read: %s", j->path, strerror(-rc));
        goto out;
    }
    if ((rc = jrec_scan(b.ptr ? b.ptr : "", b.len, j->key, j->legacy, &s)) < 0)
        goto out;
    for (size_t i = 0; i < s.n; i++) {
        const struct jspan *sp = &s.spans[i];

        d.torn += sp->kind == JS_TORN;
        d.damaged += sp->kind == JS_DAMAGED;
        d.foreign += sp->kind == JS_FOREIGN;
        if (sp->kind != JS_RECORD && sp->kind != JS_LEGACY)
            report_span(j, b.ptr, sp);
    }
    if (d.damaged || d.foreign) {
        char *kept = keep_damaged(j, b.ptr, b.len);

        if (kept)
            log_error(j->lg, "journal %s: kept as it was in %s/%s", j->path, j->dir.path, kept);
        free(kept);
    }
    for (size_t i = 0; i < s.n && rc == 0; i++)
        if (s.spans[i].rec)
            rc = fn(ctx, s.spans[i].rec);
out:
    jrec_scan_free(&s);
    buf_free(&b);
    if (dmg)
        *dmg = d;
    return rc;
}

/* See journal.h. */
int journal_append(struct journal *j, const json_t *rec, uint64_t *lsn)
{
    struct buf b = BUF_INIT(SIZE_MAX);
    size_t i;
    json_t *r;
    int rc = 0;

    if (json_is_array(rec))
        json_array_foreach (rec, i, r) {
            if ((rc = jrec_format(&b, r, j->key)) < 0)
                break;
        }
    else
        rc = jrec_format(&b, rec, j->key);
    if (rc < 0)
        goto out;
    pthread_mutex_lock(&j->mu);
    if (b.len == 0) { /* nothing to append: the end as it is */
        *lsn = j->end;
        pthread_mutex_unlock(&j->mu);
        goto out;
    }
    if ((rc = grow(j, b.len)) == 0)
        rc = safe_pwrite_all(j->fd, b.ptr, b.len, j->pos);
    if (rc == 0) {
        j->pos += (off_t)b.len;
        j->end += b.len;
        *lsn = j->end;
        j->legacy = 0; /* keyed records in it now */
    } else if (rc == -EDQUOT) {
        rc = -ENOSPC; /* nothing counted: the next append writes over it */
    } else if (rc != -ENOSPC) {
        j->broken = 1;
        log_error(j->lg, "journal %s: write failed: %s", j->path, strerror(-rc));
        rc = -EIO;
    }
    pthread_mutex_unlock(&j->mu);
out:
    buf_free(&b);
    return rc;
}

/* Is J's name still its file, and its lock file the lock it holds (made
 * again when removed)? 0, -ESTALE or -EBUSY (logged). Lock held. */
static int check_names(struct journal *j)
{
    int same;

    LOCK_HELD(&j->mu);
    same = safe_same_file(&j->dir, j->name, j->fd);
    if (same != 1) {
        log_error(j->lg,
                  "journal %s was removed or replaced while this mount uses it: it is "
                  "written again from what is queued",
                  j->path);
        return -ESTALE;
    }
    if (safe_same_file(&j->dir, j->lock_name, j->lock_fd) == 1)
        return 0;
    log_warn(j->lg, "journal lock %s/%s was removed while this mount uses it: taken again",
             j->dir.path, j->lock_name);
    return take_lock(j) == 0 ? 0 : -EBUSY;
}

/* See journal.h. */
int journal_sync(struct journal *j, uint64_t lsn)
{
    int rc = 0;

    pthread_mutex_lock(&j->mu);
    if (lsn > j->end)
        lsn = j->end; /* nothing past what was appended */
    while (j->synced < lsn && !j->broken && rc == 0) {
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
            log_error(j->lg,
                      "journal %s: flush to disk failed: %s; it is written again "
                      "before anything more is acknowledged",
                      j->path, strerror(-rc));
        } else if ((rc = check_names(j)) == 0) {
            j->synced = target;
        }
        pthread_cond_broadcast(&j->synced_cv);
    }
    if (rc == 0 && j->synced < lsn)
        rc = -EIO; /* broken: only a rewrite heals it */
    pthread_mutex_unlock(&j->mu);
    return rc == -ESTALE || rc == -EBUSY ? rc : rc < 0 ? -EIO : 0;
}

/* Write the records of RECS into a new temporary file and flush it.
 * Returns its descriptor (*len: its size; *tmp: its name) or -errno. */
static int write_new(struct journal *j, const json_t *recs, off_t *len, char **tmp)
{
    struct buf b = BUF_INIT(SIZE_MAX);
    size_t i;
    json_t *rec;
    int fd = -1, rc = 0;

    *tmp = NULL;
    json_array_foreach (recs, i, rec)
        if ((rc = jrec_format(&b, rec, j->key)) < 0)
            break;
    if (rc == 0 && (fd = safe_tmp(&j->dir, j->name, 0600, tmp)) < 0)
        rc = fd;
    if (rc == 0 && ((rc = safe_pwrite_all(fd, b.ptr ? b.ptr : "", b.len, 0)) == 0) && fsync(fd) < 0)
        rc = -errno;
    *len = (off_t)b.len;
    buf_free(&b);
    if (rc < 0 && fd >= 0) {
        close(fd);
        unlinkat(j->dir.fd, *tmp, 0);
    }
    if (rc < 0) {
        free(*tmp);
        *tmp = NULL;
    }
    return rc < 0 ? rc : fd;
}

/* Take the new file FD (LEN bytes) as J's journal. Lock held. */
static void switch_to(struct journal *j, int fd, off_t len)
{
    LOCK_HELD(&j->mu);
    close(j->fd);
    j->fd = fd;
    j->pos = j->alloc = len;
    j->synced = j->end; /* everything live is in the new, flushed file */
    j->base = j->end;
    j->broken = 0;
    j->legacy = 0; /* the new file is keyed */
}

/* See journal.h. */
int journal_rewrite(struct journal *j, json_t *(*build)(void *ctx), void *ctx)
{
    char *tmp = NULL;
    json_t *recs;
    off_t len = 0;
    int fd, rc = 0;

    pthread_mutex_lock(&j->mu);
    while (j->syncing) /* a flush of the old file runs unlocked */
        pthread_cond_wait(&j->synced_cv, &j->mu);
    recs = build(ctx);
    fd = !recs ? -ENOMEM : !json_is_array(recs) ? -EINVAL : write_new(j, recs, &len, &tmp);
    json_decref(recs);
    if (fd >= 0 && renameat(j->dir.fd, tmp, j->dir.fd, j->name) < 0) {
        rc = -errno;
        close(fd);
        unlinkat(j->dir.fd, tmp, 0);
    } else if (fd < 0) {
        rc = fd;
    }
    free(tmp);
    if (rc == 0) { /* renamed: the new file is the journal now */
        switch_to(j, fd, len);
        if ((rc = sync_dir(j)) < 0 ||
            (safe_same_file(&j->dir, j->lock_name, j->lock_fd) != 1 && take_lock(j) < 0)) {
            j->broken = 1; /* the rename may not survive a crash */
            log_error(j->lg,
                      "journal %s: its directory cannot be flushed or its lock "
                      "taken again: %s",
                      j->path, strerror(rc < 0 ? -rc : EBUSY));
            rc = rc < 0 ? rc : -EBUSY;
        }
        pthread_mutex_unlock(&j->mu);
        return rc;
    }
    pthread_mutex_unlock(&j->mu);
    if (rc != -ENOSPC)
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
uint64_t journal_room(struct journal *j)
{
    uint64_t n;

    pthread_mutex_lock(&j->mu);
    n = free_bytes(j->fd) + (uint64_t)j->alloc;
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
        close(j->lock_fd); /* releases the flock */
    safe_dir_close(&j->dir);
    OPENSSL_cleanse(j->key, sizeof(j->key));
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->synced_cv);
    free(j->name);
    free(j->lock_name);
    free(j->key_name);
    free(j->path);
    free(j);
}
