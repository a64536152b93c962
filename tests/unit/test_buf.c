/* test_buf.c - unit tests for the growable buffer: growth, the cap, sticky failure, setlen, take. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"
#include "tap.h"

static void test_add(void)
{
    struct buf b = BUF_INIT(1 << 20);
    char *s;
    size_t len;

    is_int(buf_adds(&b, "ab"), 0, "add a string");
    is_int(buf_add(&b, "c\0d", 3), 0, "add bytes with a NUL");
    is_int(b.len, 5, "length counts every byte");
    ok(memcmp(b.ptr, "abc\0d", 6) == 0, "bytes kept, NUL-terminated");
    is_int(buf_addf(&b, "-%d-%s", 42, "x"), 0, "add formatted");
    ok(memcmp(b.ptr + 5, "-42-x", 6) == 0, "formatted text appended");
    for (int i = 0; i < 1000; i++)
        buf_adds(&b, "0123456789");
    is_int(b.err, 0, "10 KB of growth without failure");
    is_int(b.len, 10010, "length after growth");
    ok(b.ptr[b.len] == '\0' && b.alloc > b.len, "still terminated");
    s = buf_take(&b, &len);
    ok(s && len == 10010 && memcmp(s, "abc", 3) == 0, "take hands over the bytes");
    ok(b.ptr == NULL && b.len == 0 && b.max == 1 << 20, "take leaves it empty, cap kept");
    free(s);
    s = buf_take(&b, &len);
    is_str(s, "", "take of an empty buffer gives \"\"");
    is_int(len, 0, "of length 0");
    free(s);
    buf_free(&b);
}

static void test_cap(void)
{
    struct buf b;
    char *s;

    buf_init(&b, 8);
    is_int(buf_adds(&b, "12345678"), 0, "exactly the cap fits");
    is_int(buf_adds(&b, "9"), -EFBIG, "one byte more: EFBIG");
    is_int(buf_adds(&b, ""), -EFBIG, "the failure is sticky");
    is_int(buf_addf(&b, "%s", ""), -EFBIG, "sticky for addf too");
    is_int(buf_setlen(&b, 2), -EFBIG, "and for setlen");
    s = buf_take(&b, NULL);
    ok(s == NULL && b.ptr == NULL, "take of a failed buffer: NULL, freed");
    buf_reset(&b);
    is_int(buf_addf(&b, "%08d", 7), 0, "after a reset it works again");
    is_int(buf_addf(&b, "x"), -EFBIG, "addf past the cap: EFBIG");
    buf_free(&b);
    is_int(b.err, 0, "free clears the failure");
}

static void test_setlen(void)
{
    struct buf b = BUF_INIT(64);

    is_int(buf_setlen(&b, 4), 0, "grow an empty buffer");
    ok(b.len == 4 && memcmp(b.ptr, "\0\0\0\0", 5) == 0, "zero-filled, terminated");
    buf_adds(&b, "abc");
    is_int(buf_setlen(&b, 5), 0, "cut");
    ok(b.len == 5 && b.ptr[4] == 'a' && b.ptr[5] == '\0', "cut keeps the start");
    is_int(buf_setlen(&b, 65), -EFBIG, "grow past the cap");
    buf_free(&b);
    buf_reset(&b);
    is_int(buf_setlen(&b, 0), 0, "setlen 0 of nothing");
    buf_free(&b);
}

static void test_attach(void)
{
    struct buf b = BUF_INIT(4);
    char *s = strdup("abc"), *big = strdup("abcde");

    buf_adds(&b, "x");
    is_int(buf_attach(&b, s, 3), 0, "attach a malloc'd string");
    ok(b.ptr == s && b.len == 3 && b.alloc == 4, "taken as it is, no copy");
    is_int(buf_adds(&b, "d"), 0, "it grows like any contents");
    is_str(b.ptr, "abcd", "appended");
    is_int(buf_attach(&b, big, 5), -EFBIG, "past the cap: not taken");
    is_str(b.ptr, "abcd", "contents unchanged");
    free(big);
    buf_free(&b);
}

static void test_read_clearerr(void)
{
    struct buf b = BUF_INIT(6);
    char out[8] = "";

    buf_adds(&b, "abcdef");
    is_int(buf_read(&b, 2, out, 3), 3, "read inside");
    ok(memcmp(out, "cde", 3) == 0, "the bytes at the offset");
    is_int(buf_read(&b, 4, out, 8), 2, "read cut at the end");
    is_int(buf_read(&b, 6, out, 1), 0, "read at the end");
    is_int(buf_read(&b, 60, out, 1), 0, "read past the end");
    is_int(buf_adds(&b, "g"), -EFBIG, "full");
    buf_clearerr(&b);
    is_int(b.err, 0, "clearerr forgets the failure");
    ok(b.len == 6 && strcmp(b.ptr, "abcdef") == 0, "and keeps the contents");
    is_int(buf_setlen(&b, 3), 0, "a smaller change works again");
    buf_free(&b);
}

int main(void)
{
    test_add();
    test_read_clearerr();
    test_attach();
    test_cap();
    test_setlen();
    return done_testing();
}
