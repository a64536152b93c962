/* buf.h - the one growable byte buffer, in the spirit of curl's dynbuf:
 * always NUL-terminated, bounded by a size cap, and a failure is sticky. */
#ifndef AZTFS_BUF_H
#define AZTFS_BUF_H

#include <stddef.h>

struct buf {
    char *ptr;      /* NULL until something is added; then NUL-terminated */
    size_t len;     /* bytes held, the terminating NUL not counted */
    size_t alloc;   /* bytes allocated at ptr */
    size_t max;     /* LEN never exceeds this: adding more fails with -EFBIG */
    int err;        /* 0, or the first failure (-ENOMEM, -EFBIG): from then on
                       every add does nothing and returns it */
};

/* An empty buffer that may grow to MAX bytes (static initialiser). */
#define BUF_INIT(max) { NULL, 0, 0, (max), 0 }

/* Make B empty, with cap MAX, owning nothing. */
void buf_init(struct buf *b, size_t max);

/* Append N bytes of MEM. Returns 0, or -ENOMEM / -EFBIG (and so does every
 * later add: test once at the end). */
int buf_add(struct buf *b, const void *mem, size_t n);

/* Append the NUL-terminated string S. Returns as buf_add. */
int buf_adds(struct buf *b, const char *s);

/* Append printf-formatted text. Returns as buf_add. */
int buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Make B exactly LEN bytes: cut it, or grow it with zero bytes. Returns as
 * buf_add. */
int buf_setlen(struct buf *b, size_t len);

/* Make B own STR, a malloc'd NUL-terminated string of LEN bytes, in place
 * of what it held (freed), without copying it. Returns 0, or -EFBIG when
 * LEN exceeds B's cap (then STR is not taken and B is unchanged). */
int buf_attach(struct buf *b, char *str, size_t len);

/* Copy up to N bytes from offset OFF of B into OUT. Returns the number
 * copied (0 at or past the end). */
size_t buf_read(const struct buf *b, size_t off, void *out, size_t n);

/* Forget a failure, keeping the contents: for a buffer whose failed add
 * left it as it was, where a later, smaller change may still fit. */
void buf_clearerr(struct buf *b);

/* Forget the contents and any failure; keep the memory for reuse. */
void buf_reset(struct buf *b);

/* Hand over B's bytes: a malloc'd NUL-terminated string (an empty one when
 * nothing was added) the caller frees; *LEN (if non-NULL) gets its length.
 * B is left empty, owning nothing. NULL (and B freed) when B has failed or
 * memory is short. */
char *buf_take(struct buf *b, size_t *len);

/* Free what B holds and make it empty (cap and failure kept as they were
 * reset: err 0). */
void buf_free(struct buf *b);

#endif
