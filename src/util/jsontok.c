/* util/jsontok.c - JSON tokens found in place (util.h): for the readers of
 * one known shape (a Query Entities page, one flat entity), which find the
 * tokens here and leave the making of values to jansson or to themselves.
 * Nothing is copied, decoded or allocated; the rules are RFC 8259's. */
#include <stdint.h>
#include <string.h>

#include "util/util.h"

/* See util.h. */
void jtok_ws(struct jtok *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

/* See util.h. */
int jtok_take(struct jtok *r, char c)
{
    jtok_ws(r);
    if (r->p < r->end && *r->p == c) {
        r->p++;
        return 1;
    }
    return 0;
}

/* See util.h. */
int jtok_word(struct jtok *r, const char *word)
{
    size_t n = strlen(word);

    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
        return 0;
    r->p += n;
    return 1;
}

/* What a byte means inside a string token: 0 nothing, else one of these
 * (32 a line: 0x00-0x1f, 0x20-0x3f, ...). */
enum { CH_END = 1, CH_CONTROL, CH_ESCAPE, CH_NONASCII };
#define C CH_CONTROL
#define E CH_END
#define B CH_ESCAPE
#define N CH_NONASCII
static const unsigned char in_string[256] = {
    C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C, C,
    0, 0, E, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, B, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N,
    N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N,
    N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N,
    N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N, N,
};
#undef C
#undef E
#undef B
#undef N

/* The first byte at or after P (before END) that is not plain inside a
 * string ('"', '\\', a control character, a byte past 0x7F), or END:
 * eight bytes at a time while they are all plain, the bytes of a word
 * tested at once (each test leaves a byte's top bit set where it holds:
 * a byte below 0x20, equal to '"' or to '\\', or with its top bit set). */
static const char *plain_run(const char *p, const char *end)
{
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;

    while (end - p >= 8) {
        uint64_t w, quote, slash;

        memcpy(&w, p, 8);
        quote = w ^ (ones * '"');
        slash = w ^ (ones * '\\');
        if (((w - ones * 0x20) | (quote - ones) | (slash - ones) | w) & high)
            break; /* some byte is not plain (or may not be: the bytes decide) */
        p += 8;
    }
    return p;
}

/* See util.h. */
int jtok_string(struct jtok *r, const char **s, size_t *n, int *flags)
{
    const char *p;
    int f = 0;

    jtok_ws(r);
    if (r->p >= r->end || *r->p != '"')
        return -1;
    for (p = r->p + 1; p < r->end; p++) {
        p = plain_run(p, r->end);
        if (p == r->end)
            break;
        switch (in_string[(unsigned char)*p]) {
        case 0:
            continue;
        case CH_END:
            *s = r->p + 1;
            *n = (size_t)(p - *s);
            *flags = f;
            r->p = p + 1;
            return 0;
        case CH_CONTROL:
            return -1;
        case CH_NONASCII:
            f |= JTOK_NONASCII;
            continue;
        default: /* CH_ESCAPE: the next byte is the escape's */
            f |= JTOK_ESCAPED;
            if (++p >= r->end)
                return -1;
        }
    }
    return -1;
}

/* Is [S, S+N) a JSON number? *INTEGRAL: without fraction and exponent. */
static int is_number(const char *s, size_t n, int *integral)
{
    size_t i = 0, d;

    *integral = 1;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && s[i] >= '1' && s[i] <= '9')
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    else
        return 0;
    if (i < n && s[i] == '.') {
        *integral = 0;
        for (d = ++i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            ;
        if (i == d)
            return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        *integral = 0;
        if (++i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        for (d = i; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            ;
        if (i == d)
            return 0;
    }
    return i == n;
}

/* See util.h. */
size_t jtok_number(const struct jtok *r, int *integral)
{
    const char *s = r->p;
    size_t n = 0;

    while (s + n < r->end && s[n] && strchr("0123456789+-.eE", s[n]))
        n++;
    return n > 0 && is_number(s, n, integral) ? n : 0;
}
