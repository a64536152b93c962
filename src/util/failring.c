/* util/failring.c - the last failed operations of a mount in a bounded ring (util.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "util/util.h"

#define PATH_KEEP 512 /* bytes of an escaped path kept */
/* bytes of an escaped message kept: an import's failure names the line,
 * why, its keys (80 bytes each) and what was applied, some 600 bytes; 32
 * entries of 1 KiB and a path stay within an xattr's 64 KiB */
#define MESSAGE_KEEP 1024

struct entry {
    time_t when;
    char op[24];
    char path[PATH_KEEP];
    char message[MESSAGE_KEEP];
    char code[64];
    long http_status;
    int err;
};

struct failring {
    pthread_mutex_t lock;
    struct entry e[FAILRING_SIZE]; /* guarded by lock */
    unsigned long total;           /* recorded ever; e[total % SIZE] is the next slot;
                                   guarded by lock */
};

/* See util/util.h. */
struct failring *failring_new(void)
{
    struct failring *r = calloc(1, sizeof(*r));

    if (r && lock_init(&r->lock) != 0) {
        free(r);
        return NULL;
    }
    return r;
}

void failring_free(struct failring *r)
{
    if (!r)
        return;
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* See util/util.h. */
void failring_add(struct failring *r, const struct failure *f)
{
    struct entry *e;

    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    e = &r->e[r->total % FAILRING_SIZE];
    r->total++;
    e->when = time(NULL);
    e->err = f->err;
    e->http_status = f->http_status;
    log_escape(e->op, sizeof(e->op), f->op ? f->op : "?");
    log_escape(e->path, sizeof(e->path), f->path ? f->path : "");
    log_escape(e->message, sizeof(e->message), f->message ? f->message : strerror(f->err));
    log_escape(e->code, sizeof(e->code), f->code ? f->code : "");
    pthread_mutex_unlock(&r->lock);
}

/* See util/util.h. */
unsigned long failring_count(struct failring *r)
{
    unsigned long n;

    pthread_mutex_lock(&r->lock);
    n = r->total;
    pthread_mutex_unlock(&r->lock);
    return n;
}

/* Entry E as a JSON object (new reference; NULL on ENOMEM). */
static json_t *entry_json(const struct entry *e)
{
    char when[32];
    struct tm tm;
    const char *name = strerrorname_np(e->err);
    json_t *o;

    gmtime_r(&e->when, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    o = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "time", when, "op", e->op, "path", e->path,
                  "errno", e->err, "error", name ? name : "?", "message", e->message);
    if (o && e->http_status > 0 &&
        json_object_set_new(o, "http_status", json_integer(e->http_status)) < 0)
        goto fail;
    if (o && e->code[0] && json_object_set_new(o, "code", json_string(e->code)) < 0)
        goto fail;
    return o;
fail:
    json_decref(o);
    return NULL;
}

/* The JSON of the newest N entries of R (R locked). Malloc'd, or NULL. */
static char *dump_newest(struct failring *r, size_t n)
{
    json_t *root, *list;
    char *out = NULL;

    LOCK_HELD(&r->lock);
    root = json_pack("{s:I, s:[]}", "failures", (json_int_t)r->total, "recent");
    list = root ? json_object_get(root, "recent") : NULL;
    for (size_t i = r->total - n; list && i < r->total; i++)
        if (json_array_append_new(list, entry_json(&r->e[i % FAILRING_SIZE])) < 0)
            list = NULL;
    if (list)
        out = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return out;
}

/* See util/util.h. */
char *failring_json(struct failring *r, size_t max_bytes)
{
    size_t n;
    char *out = NULL;

    pthread_mutex_lock(&r->lock);
    n = r->total < FAILRING_SIZE ? r->total : FAILRING_SIZE;
    for (;;) {
        out = dump_newest(r, n);
        if (!out || strlen(out) <= max_bytes)
            break;
        free(out);
        out = NULL;
        if (n-- == 0)
            break;
    }
    pthread_mutex_unlock(&r->lock);
    return out;
}
