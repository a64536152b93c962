/* tokenresp.h - the answer of a token endpoint (Entra ID, managed identity,
 * `az account get-access-token`) -> an access token and its expiry. */
#ifndef AZTFS_TOKENRESP_H
#define AZTFS_TOKENRESP_H

#include <stddef.h>
#include <time.h>

/* Longest access token accepted (Entra tokens are 1-3 KiB). */
#define TOKEN_MAX_LEN 16384

/* Parse the JSON answer BODY (LEN bytes, need not be NUL-terminated) of a
 * token request made at NOW. The token is "access_token" (OAuth, managed
 * identity) or "accessToken" (Azure CLI): 1..TOKEN_MAX_LEN printable ASCII
 * characters without spaces. Its expiry is, first found: "expires_in"
 * (seconds from NOW, number or decimal string), "expires_on" (Unix time,
 * number or decimal string), "expiresOn" ("YYYY-MM-DD HH:MM:SS[.ffffff]",
 * local time, the Azure CLI's older form); it must lie after NOW.
 * Returns 0 with *TOKEN (malloc'd NUL-terminated; the caller wipes it with
 * OPENSSL_cleanse and frees it) and *EXPIRES_AT; else *TOKEN is NULL and
 * ERR (ERRLEN bytes, one printable line that never holds the token) says
 * why: -EACCES when the body is an error answer ("error" and
 * "error_description", or "message"; the service's text, first line), -EINVAL
 * when it is no JSON object, or lacks a usable token or expiry, -ENOMEM. */
int token_response_parse(const char *body, size_t len, time_t now, char **token,
                         time_t *expires_at, char *err, size_t errlen);

#endif
