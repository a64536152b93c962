/* util/secret.c - secrets wiped before their memory is given back: buffers,
 * strings, and environment variables (the kernel's copy included). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "util/util.h"

extern char **environ;

/* The bounds of the environment block the process was started with
 * (fields 50 and 51 of /proc/self/stat, Linux 3.5 and later). Returns 1
 * with *start and *end set, or 0 when they cannot be read. */
static int env_block(unsigned long *start, unsigned long *end)
{
    char line[2048], *p;
    FILE *f = fopen("/proc/self/stat", "re");
    int field = 3, ok = 0;

    if (!f)
        return 0;
    if (fgets(line, sizeof(line), f) && (p = strrchr(line, ')'))) {
        /* ") " then fields 3 onwards, one space between each two */
        for (p += 2; *p && field < 50; p++)
            if (*p == ' ')
                field++;
        ok = field == 50 && sscanf(p, "%lu %lu", start, end) == 2 && *start < *end;
    }
    fclose(f);
    return ok;
}

/* Wipe ENTRY ("NAME=value", NLEN the length of NAME): whole when it lies in
 * the block [START, END), else its value only. */
static void wipe(char *entry, size_t nlen, int have_block, unsigned long start, unsigned long end)
{
    if (have_block && (unsigned long)entry >= start && (unsigned long)entry < end)
        OPENSSL_cleanse(entry, strlen(entry));
    else
        OPENSSL_cleanse(entry + nlen + 1, strlen(entry + nlen + 1));
}

#define SCRUB_MAX 16 /* copies of one name wiped whole; more: values only */

/* See util/util.h. */
void env_scrub(const char *name)
{
    size_t nlen = strlen(name), n = 0;
    unsigned long start = 0, end = 0;
    int have_block = env_block(&start, &end);
    char *found[SCRUB_MAX];

    for (char **ep = environ; ep && *ep; ep++) {
        if (strncmp(*ep, name, nlen) != 0 || (*ep)[nlen] != '=')
            continue;
        if (n < SCRUB_MAX)
            found[n++] = *ep;
        else /* its name stays in environ until unsetenv below */
            OPENSSL_cleanse(*ep + nlen + 1, strlen(*ep + nlen + 1));
    }
    unsetenv(name); /* drops every NAME from environ; the strings stay */
    for (size_t i = 0; i < n; i++)
        wipe(found[i], nlen, have_block, start, end);
}

/* See util.h. */
void secret_free(void *p, size_t len)
{
    if (p) {
        OPENSSL_cleanse(p, len);
        free(p);
    }
}

/* See util.h. */
void secret_str_free(char *s)
{
    if (s)
        secret_free(s, strlen(s));
}

/* See util.h. */
void secret_buf_free(struct buf *b)
{
    if (b->ptr)
        OPENSSL_cleanse(b->ptr, b->alloc);
    buf_free(b);
}
