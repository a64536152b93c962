/* monitor/metrics.c - the counters in the Prometheus text format, written atomically by a thread (monitor.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/util.h"
#include "monitor/monitor.h"

#define METRICS_TEXT_MAX (1024 * 1024) /* far more than the metrics below take */

/* One metric: where its value is in the stats document (monitor/statsjson.c), its
 * name, type and help. SUB "*": one sample per member, labelled LABEL. */
struct metric_def {
    const char *key, *sub, *name, *type, *label, *help;
};

static const struct metric_def defs[] = {
    { "requests", NULL, "aztfs_requests_total", "counter", NULL,
      "Requests sent to the table service, retries included." },
    { "requests_by_kind", "*", "aztfs_requests_by_kind_total", "counter", "kind",
      "Requests sent, by kind of operation." },
    { "retries", NULL, "aztfs_retries_total", "counter", NULL,
      "Requests that were retries of a transient failure." },
    { "transport_errors", NULL, "aztfs_transport_errors_total", "counter", NULL,
      "Requests that got no HTTP response (connection, TLS, timeout)." },
    { "responses", "*", "aztfs_responses_total", "counter", "class",
      "HTTP responses by status class." },
    { "bytes_in", NULL, "aztfs_received_bytes_total", "counter", NULL,
      "Bytes of response bodies received." },
    { "bytes_out", NULL, "aztfs_sent_bytes_total", "counter", NULL,
      "Bytes of request bodies sent." },
    { "errors_by_code", "*", "aztfs_service_errors_total", "counter", "code",
      "Answers that carried a service error code (x-ms-error-code), by code; 404s of "
      "lookups among them." },
    { "failures", NULL, "aztfs_failures_total", "counter", NULL,
      "Failed operations logged (the last ones: xattr user.aztfs.errors)." },
    { "cache", "hits", "aztfs_cache_hits_total", "counter", NULL,
      "Cache lookups answered from memory." },
    { "cache", "misses", "aztfs_cache_misses_total", "counter", NULL,
      "Cache lookups that had to ask the service." },
    { "cache", "evictions", "aztfs_cache_evictions_total", "counter", NULL,
      "Cache entries dropped to stay within cache_size." },
    { "cache", "expirations", "aztfs_cache_expirations_total", "counter", NULL,
      "Cache entries dropped after cache_timeout." },
    { "cache", "entries", "aztfs_cache_entries", "gauge", NULL, "Entries the cache holds now." },
    { "cache", "bytes", "aztfs_cache_bytes", "gauge", NULL, "Bytes the cache holds now." },
    { "cache", "max_bytes", "aztfs_cache_max_bytes", "gauge", NULL,
      "The cache's bound (cache_size)." },
    /* with -o writeback only (no "writeback" member: not written) */
    { "writeback", "queued", "aztfs_writeback_queued", "gauge", NULL,
      "Changes acknowledged and waiting to be sent (write-behind)." },
    { "writeback", "sending", "aztfs_writeback_sending", "gauge", NULL,
      "Changes in a batch being sent now." },
    { "writeback", "failed", "aztfs_writeback_failed", "gauge", NULL,
      "Changes that failed for good, kept in the journal (user.aztfs.pending)." },
    { "writeback", "damaged", "aztfs_writeback_damaged", "gauge", NULL,
      "Stretches of damage the journal was read past at this mount." },
};

/* V as a label value: backslash, double quote and newline escaped. */
static void put_label_value(struct buf *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            buf_addf(b, "\\%c", *v);
        else if (*v == '\n')
            buf_adds(b, "\\n");
        else
            buf_add(b, v, 1);
    }
}

/* One sample line: NAME{mountpoint="MP"[,LABEL="LV"]} VALUE. */
static void put_sample(struct buf *b, const char *name, const char *mp, const char *label,
                       const char *lv, json_int_t value)
{
    buf_addf(b, "%s{mountpoint=\"", name);
    put_label_value(b, mp);
    if (label) {
        buf_addf(b, "\",%s=\"", label);
        put_label_value(b, lv);
    }
    buf_addf(b, "\"} %" JSON_INTEGER_FORMAT "\n", value);
}

/* The HELP, TYPE and sample lines of D, from the stats document ROOT. */
static void put_metric(struct buf *b, const struct metric_def *d, json_t *root, const char *mp)
{
    json_t *v = json_object_get(root, d->key), *m;
    const char *k;

    if (!v)
        return; /* a part the mount does not have (write-behind) */
    if (d->sub && strcmp(d->sub, "*") != 0)
        v = json_object_get(v, d->sub);
    buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", d->name, d->help, d->name, d->type);
    if (d->label) {
        json_object_foreach (v, k, m)
            put_sample(b, d->name, mp, d->label, k, json_integer_value(m));
    } else {
        put_sample(b, d->name, mp, NULL, NULL, json_integer_value(v));
    }
}

/* The request duration histogram from ROOT's "latency" (statsjson.c). */
static void put_latency(struct buf *b, json_t *root, const char *mp)
{
    static const char name[] = "aztfs_request_duration_seconds";
    json_t *l = json_object_get(root, "latency"), *bk;
    size_t i;

    buf_addf(b,
             "# HELP %s How long requests to the table service took, each attempt "
             "(retries apart).\n# TYPE %s histogram\n",
             name, name);
    json_array_foreach (json_object_get(l, "buckets"), i, bk) {
        json_t *le = json_object_get(bk, "le");
        char bound[32];

        if (json_is_real(le))
            snprintf(bound, sizeof(bound), "%g", json_real_value(le));
        else
            snprintf(bound, sizeof(bound), "+Inf");
        buf_addf(b, "%s_bucket{mountpoint=\"", name);
        put_label_value(b, mp);
        buf_addf(b, "\",le=\"%s\"} %" JSON_INTEGER_FORMAT "\n", bound,
                 json_integer_value(json_object_get(bk, "count")));
    }
    buf_addf(b, "%s_sum{mountpoint=\"", name);
    put_label_value(b, mp);
    buf_addf(b, "\"} %.6f\n", json_real_value(json_object_get(l, "sum_seconds")));
    put_sample(b, "aztfs_request_duration_seconds_count", mp, NULL, NULL,
               json_integer_value(json_object_get(l, "count")));
}

/* See monitor/monitor.h. */
char *metrics_text(struct store *s, const char *mountpoint)
{
    json_t *root = stats_object(s);
    struct buf b;
    char *out = NULL;

    buf_init(&b, METRICS_TEXT_MAX);
    for (size_t i = 0; root && i < sizeof(defs) / sizeof(defs[0]); i++)
        put_metric(&b, &defs[i], root, mountpoint);
    if (root)
        put_latency(&b, root, mountpoint);
    if (root)
        out = buf_take(&b, NULL);
    buf_free(&b);
    json_decref(root);
    return out;
}

/* See monitor/monitor.h. */
int metrics_write(struct store *s, const char *mountpoint, const struct safe_dir *dir,
                  const char *name)
{
    char *text = metrics_text(s, mountpoint), *tmp = NULL;
    size_t len = text ? strlen(text) : 0;
    int fd, rc = -ENOMEM;

    if (!text)
        goto out;
    if ((fd = safe_tmp(dir, name, 0644, &tmp)) < 0) {
        rc = fd;
        goto out;
    }
    errno = EIO; /* what a short write without an error means here */
    rc = write(fd, text, len) == (ssize_t)len ? 0 : -errno;
    if (close(fd) != 0 && rc == 0)
        rc = -errno;
    if (rc == 0 && renameat(dir->fd, tmp, dir->fd, name) != 0)
        rc = -errno;
    if (rc < 0)
        unlinkat(dir->fd, tmp, 0);
out:
    free(text);
    free(tmp);
    return rc;
}

/* Everything but STOP is set before the thread starts (metrics_new,
 * metrics_start) and read-only while it runs. */
struct metrics {
    struct safe_dir dir;    /* the checked directory of the file */
    char *name;             /* the file's name in it */
    struct store *s;        /* set before the thread starts */
    const char *mountpoint; /* set before the thread starts */
    unsigned interval;      /* set before the thread starts */
    int started;            /* the thread runs (metrics_start); read by metrics_stop
                                 on the thread that started it */
    struct workers thread;  /* the one thread that writes (util/worker.c) */
    pthread_mutex_t lock;
    pthread_cond_t wake; /* signalled by metrics_stop; waited on with lock */
    int stop;            /* guarded by lock */
};

/* Write the file, logging a failure (once per kind of failure in a row). */
static void write_logged(struct metrics *m, int *last_err)
{
    int rc = metrics_write(m->s, m->mountpoint, &m->dir, m->name);

    if (rc < 0 && rc != *last_err)
        log_warn(&m->s->log, "metrics_file %s/%s: not written: %s", m->dir.path, m->name,
                 strerror(-rc));
    *last_err = rc;
}

static void *metrics_thread(void *p)
{
    struct metrics *m = p;
    struct timespec until;
    int last_err = 0;

    pthread_mutex_lock(&m->lock);
    while (!m->stop) {
        pthread_mutex_unlock(&m->lock);
        write_logged(m, &last_err);
        pthread_mutex_lock(&m->lock);
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += m->interval;
        while (!m->stop && pthread_cond_timedwait(&m->wake, &m->lock, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&m->lock);
    write_logged(m, &last_err); /* the final counts, at unmount */
    return NULL;
}

/* See monitor/monitor.h. */
struct metrics *metrics_new(const char *path, int allow_shared)
{
    struct metrics *m = calloc(1, sizeof(*m));
    char why[512];

    if (!m) {
        fprintf(stderr, "aztfs: out of memory\n");
        return NULL;
    }
    if (safe_parent_open(path, allow_shared, &m->dir, &m->name, why, sizeof(why)) < 0) {
        fprintf(stderr, "aztfs: metrics_file=%s cannot be used: %s\n", path, why);
        free(m);
        return NULL;
    }
    return m;
}

/* See monitor/monitor.h. */
int metrics_start(struct metrics *m, struct store *s, const char *mountpoint, unsigned interval)
{
    pthread_condattr_t ca;
    int ok = 0;

    m->s = s;
    m->mountpoint = mountpoint;
    m->interval = interval;
    if (pthread_condattr_init(&ca) == 0) {
        ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
            pthread_cond_init(&m->wake, &ca) == 0;
        pthread_condattr_destroy(&ca);
    }
    if (ok && lock_init(&m->lock) != 0) {
        pthread_cond_destroy(&m->wake);
        ok = 0;
    }
    if (ok && workers_add(&m->thread, "aztfs-metrics", metrics_thread, m) < 0) {
        pthread_mutex_destroy(&m->lock);
        pthread_cond_destroy(&m->wake);
        ok = 0;
    }
    if (!ok) {
        log_error(&s->log, "metrics_file %s/%s: the thread that writes it cannot start",
                  m->dir.path, m->name);
        return -1;
    }
    m->started = 1;
    return 0;
}

/* See monitor/monitor.h. */
void metrics_stop(struct metrics *m)
{
    if (!m)
        return;
    if (m->started) {
        pthread_mutex_lock(&m->lock);
        m->stop = 1;
        pthread_cond_signal(&m->wake);
        pthread_mutex_unlock(&m->lock);
        workers_join(&m->thread);
        pthread_mutex_destroy(&m->lock);
        pthread_cond_destroy(&m->wake);
    }
    safe_dir_close(&m->dir);
    free(m->name);
    free(m);
}
