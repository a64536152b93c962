/* fuzz_connstr.c - libFuzzer target: arbitrary text -> connstr_parse, and the
 * same text as a config file (a private memfd) -> connstr_load_file, which
 * joins its lines first. Must not crash or leak. On failure the account is all zero and errbuf is a
 * NUL-terminated line; on success name, endpoint, scheme and host are set,
 * scheme is http/https, the endpoint has no trailing '/', and the error
 * buffer never echoes the key or signature. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth/auth.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int all_zero(const void *p, size_t n)
{
    const unsigned char *u = p;

    for (size_t i = 0; i < n; i++)
        if (u[i])
            return 0;
    return 1;
}

/* The outcome of a parse (RC, ACCT, ERRBUF) must be one of the two
 * documented shapes; frees the account. */
static void check_outcome(int rc, struct account *acct, const char *errbuf, size_t errlen)
{
    if (rc < 0) {
        FUZZ_CHECK(rc == -EINVAL || rc == -ENOMEM || rc == -EFBIG, "rc %d", rc);
        FUZZ_CHECK(all_zero(acct, sizeof(*acct)), "account not zeroed on failure");
        FUZZ_CHECK(memchr(errbuf, '\0', errlen) != NULL, "errbuf not terminated");
        FUZZ_CHECK(rc == -ENOMEM || errbuf[0] != '\0', "failure without a message");
        FUZZ_CHECK(strchr(errbuf, '\n') == NULL, "message is more than one line: %s", errbuf);
    } else {
        FUZZ_CHECK(rc == 0, "rc %d", rc);
        FUZZ_CHECK(acct->name && acct->endpoint && acct->scheme && acct->host && acct->base_path,
                   "incomplete account");
        FUZZ_CHECK(strcmp(acct->scheme, "http") == 0 || strcmp(acct->scheme, "https") == 0,
                   "scheme '%s'", acct->scheme);
        FUZZ_CHECK(acct->endpoint[0] && acct->endpoint[strlen(acct->endpoint) - 1] != '/',
                   "endpoint '%s' ends in '/'", acct->endpoint);
        FUZZ_CHECK(acct->host[0] != '\0', "empty host");
        account_free(acct);
        FUZZ_CHECK(all_zero(acct, sizeof(*acct)), "account_free left data");
    }
}

/* DATA as the contents of a private (0600) config file. */
static void fuzz_file(const uint8_t *data, size_t size)
{
    struct account acct;
    char errbuf[256], path[64];
    int fd = memfd_create("fuzz_config", MFD_CLOEXEC), rc;

    if (fd < 0)
        return;
    if (fchmod(fd, 0600) == 0 && write(fd, data, size) == (ssize_t)size) {
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        memset(errbuf, 'X', sizeof(errbuf));
        rc = connstr_load_file(path, &acct, errbuf, sizeof(errbuf));
        check_outcome(rc, &acct, errbuf, sizeof(errbuf));
    }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct account acct;
    char errbuf[256];
    char *s = malloc(size + 1);
    int rc;

    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    memset(&acct, 0, sizeof(acct));
    memset(errbuf, 'X', sizeof(errbuf));
    rc = connstr_parse(s, &acct, errbuf, sizeof(errbuf));
    check_outcome(rc, &acct, errbuf, sizeof(errbuf));
    fuzz_file(data, size);
    free(s);
    return 0;
}
