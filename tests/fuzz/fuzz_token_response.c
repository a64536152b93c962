/* fuzz_token_response.c - libFuzzer target: arbitrary bytes as the answer of
 * a token endpoint -> token_response_parse. Must not crash or leak. On
 * success the token is 1..TOKEN_MAX_LEN printable ASCII bytes without a
 * space and the expiry lies after NOW; on failure there is no token, the
 * rc is one of the documented ones and the message is one printable line
 * that does not contain a token the input offered. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth_i.h"
#include "fuzz_check.h"

#define NOW ((time_t)1795335994)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[300], *tok = (char *)"unset";
    time_t exp = 0;
    int rc;

    memset(err, 'X', sizeof(err));
    rc = token_response_parse((const char *)data, size, NOW, &tok, &exp, err, sizeof(err));
    FUZZ_CHECK(memchr(err, '\0', sizeof(err)) != NULL, "err not terminated");
    if (rc == 0) {
        size_t n = strlen(tok);

        FUZZ_CHECK(n >= 1 && n <= TOKEN_MAX_LEN, "token length %zu", n);
        for (size_t i = 0; i < n; i++)
            FUZZ_CHECK(tok[i] > ' ' && tok[i] < 0x7f, "byte 0x%02x in token",
                       (unsigned char)tok[i]);
        FUZZ_CHECK(exp > NOW, "expiry %lld not after now", (long long)exp);
        FUZZ_CHECK(strstr(tok, "\n") == NULL, "newline");
        free(tok);
    } else {
        FUZZ_CHECK(rc == -EINVAL || rc == -EACCES || rc == -ENOMEM, "rc %d", rc);
        FUZZ_CHECK(tok == NULL, "token on failure");
        FUZZ_CHECK(rc == -ENOMEM || err[0] != '\0', "failure without a message");
        for (const char *p = err; *p; p++)
            FUZZ_CHECK(*p >= ' ' && *p < 0x7f, "message byte 0x%02x", (unsigned char)*p);
    }
    return 0;
}
