/* failring.h - the last failed operations of a mount, kept in a bounded ring
 * (xattr user.aztfs.errors on the mount root) and counted. Thread-safe. */
#ifndef AZTFS_FAILRING_H
#define AZTFS_FAILRING_H

#include <stddef.h>

/* How many failures the ring keeps (the oldest is dropped first). */
#define FAILRING_SIZE 32

struct failring;

/* One failure as the caller knows it. */
struct failure {
    const char *op;       /* "save", "delete", "list", ... */
    const char *path;     /* the path it was about (any bytes; escaped when kept) */
    int err;              /* the positive errno the operation returned */
    long http_status;     /* the service's HTTP status; 0: none */
    const char *code;     /* the service's error code; NULL or "": none */
    const char *message;  /* why, in words; NULL: strerror(err) */
};

/* A new, empty ring; NULL on ENOMEM. */
struct failring *failring_new(void);
void failring_free(struct failring *r);

/* Record F with the current time (a copy: nothing of F is kept). The path
 * and message are escaped as log lines are (log_escape) and cut to a few
 * hundred bytes. R may be NULL (nothing happens). Never fails: when memory
 * runs out the entry is counted but not kept. */
void failring_add(struct failring *r, const struct failure *f);

/* How many failures were recorded since the ring was made (kept or not). */
unsigned long failring_count(struct failring *r);

/* The kept failures, oldest first, as one line of JSON:
 *   {"failures": TOTAL, "recent": [{"time": "2026-11-23T07:03:25Z",
 *    "op": "save", "path": "/t/p/a.json", "errno": 116, "error": "ESTALE",
 *    "http_status": 412, "code": "UpdateConditionNotSatisfied",
 *    "message": "..."}, ...]}
 * ("http_status" and "code" only when the service answered). When the whole
 * would exceed MAX_BYTES, the oldest entries are left out until it fits.
 * Malloc'd (caller frees); NULL on ENOMEM or when not even the empty list
 * fits. */
char *failring_json(struct failring *r, size_t max_bytes);

#endif
