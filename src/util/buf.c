/* util/buf.c - the one growable byte buffer (util.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define BUF_FIRST 256 /* the first allocation */

void buf_init(struct buf *b, size_t max)
{
    b->ptr = NULL;
    b->len = b->alloc = 0;
    b->max = max;
    b->err = 0;
}

void buf_free(struct buf *b)
{
    free(b->ptr);
    buf_init(b, b->max);
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    b->err = 0;
    if (b->ptr)
        b->ptr[0] = '\0';
}

int buf_attach(struct buf *b, char *str, size_t len)
{
    if (len > b->max)
        return -EFBIG;
    free(b->ptr);
    b->ptr = str;
    b->len = len;
    b->alloc = len + 1;
    b->err = 0;
    return 0;
}

size_t buf_read(const struct buf *b, size_t off, void *out, size_t n)
{
    if (off >= b->len)
        return 0;
    if (n > b->len - off)
        n = b->len - off;
    memcpy(out, b->ptr + off, n);
    return n;
}

void buf_clearerr(struct buf *b)
{
    b->err = 0;
}

/* Fail B with ERR (sticky); returns ERR. */
static int buf_fail(struct buf *b, int err)
{
    b->err = err;
    return err;
}

/* Make room for N more bytes and the NUL. Returns 0 or a failure. */
static int buf_room(struct buf *b, size_t n)
{
    size_t need, cap;
    char *p;

    if (b->err)
        return b->err;
    if (n > b->max - b->len)
        return buf_fail(b, -EFBIG);
    need = b->len + n + 1;
    if (need <= b->alloc)
        return 0;
    cap = b->alloc ? b->alloc : BUF_FIRST;
    while (cap < need)
        cap = cap > (size_t)-1 / 2 ? need : cap * 2;
    if (!(p = realloc(b->ptr, cap)))
        return buf_fail(b, -ENOMEM);
    b->ptr = p;
    b->alloc = cap;
    return 0;
}

int buf_add(struct buf *b, const void *mem, size_t n)
{
    int rc = buf_room(b, n);

    if (rc < 0)
        return rc;
    if (n)
        memcpy(b->ptr + b->len, mem, n);
    b->len += n;
    b->ptr[b->len] = '\0';
    return 0;
}

int buf_adds(struct buf *b, const char *s)
{
    return buf_add(b, s, strlen(s));
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int n, rc;

    if (b->err)
        return b->err;
    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return buf_fail(b, -ENOMEM);
    if ((rc = buf_room(b, (size_t)n)) < 0)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

int buf_setlen(struct buf *b, size_t len)
{
    int rc;

    if (len > b->len) {
        if ((rc = buf_room(b, len - b->len)) < 0)
            return rc;
        memset(b->ptr + b->len, 0, len - b->len);
    } else if (b->err) {
        return b->err;
    }
    b->len = len;
    if (b->ptr)
        b->ptr[len] = '\0';
    return 0;
}

char *buf_take(struct buf *b, size_t *len)
{
    char *p = b->ptr;

    if (len)
        *len = b->len;
    if (b->err) {
        buf_free(b);
        return NULL;
    }
    if (!p && !(p = strdup(""))) {
        buf_free(b);
        return NULL;
    }
    buf_init(b, b->max);
    return p;
}
