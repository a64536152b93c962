/* auth_i.h - the private face of the auth/ folder: its parts below, each
 * with its own contract. */
#ifndef AZTFS_AUTH_AUTH_I_H
#define AZTFS_AUTH_AUTH_I_H

#include <stddef.h>
#include <time.h>

/* ---- auth/azcli.c: the Azure CLI as a token source: `az account get-access-token`
 * run without a shell, bounded in time and output. */

/* Run `az account get-access-token --output json --resource RESOURCE`
 * (and `--tenant TENANT` when TENANT is not NULL), `az` being the first
 * executable of that name on PATH, with stdin from /dev/null, in its own
 * process group, for at most TIMEOUT_MS (then the group is killed). No
 * shell is involved; the arguments hold no secret. Returns 0 and *OUT
 * (malloc'd NUL-terminated standard output, at most 64 KiB; the caller
 * wipes and frees it) when az exits 0; else -errno with one line in ERR:
 * -ENOENT az is not on PATH, -ETIMEDOUT, -EFBIG too much output, -EACCES
 * az failed (ERR: the first line of its error output, e.g. "Please run 'az
 * login'"), -ENOMEM, or the error of spawning it. */
int azcli_get_token(const char *resource, const char *tenant, long timeout_ms, char **out,
                    char *err, size_t errlen);

/* ---- auth/jwt.c: the signed client assertion of a service principal with a
 * certificate: an RS256 JWT carrying the certificate's SHA-1 thumbprint
 * (x5t), made with OpenSSL. */

struct jwt_signer;

/* How long an assertion is valid (the "exp" claim less "nbf"). */
#define JWT_ASSERTION_LIFETIME 600

/* Load the PEM file PATH holding a certificate and its private key (RSA;
 * PASSWORD decrypts an encrypted key, NULL: none). The file is read into
 * memory (at most 1 MiB) and that copy is wiped. Returns 0 and *OUT (free
 * with jwt_signer_free), or -errno with one line in ERR that names the file:
 * -ENOENT and other open errors, -EINVAL (no certificate, no key, a key that
 * is not RSA or does not match the certificate, a wrong password), -ENOMEM. */
int jwt_signer_load(const char *path, const char *password, struct jwt_signer **out, char *err,
                    size_t errlen);

/* The certificate's x5t: base64url (no padding) of the SHA-1 of its DER form. */
const char *jwt_signer_x5t(const struct jwt_signer *s);

/* Free S (NULL: nothing); the key is freed by OpenSSL, which wipes it. */
void jwt_signer_free(struct jwt_signer *s);

/* The client assertion for CLIENT_ID at the token endpoint AUDIENCE, made at
 * NOW: header {"alg":"RS256","typ":"JWT","x5t":..}, claims {"aud","iss" and
 * "sub" (CLIENT_ID),"jti" (random),"nbf","iat" (NOW),"exp" (NOW +
 * JWT_ASSERTION_LIFETIME)}, signed with RSASSA-PKCS1-v1_5 SHA-256.
 * Returns 0 and *OUT (malloc'd; wipe and free), -ENOMEM or -EIO (OpenSSL
 * failed). */
int jwt_client_assertion(const struct jwt_signer *s, const char *client_id, const char *audience,
                         time_t now, char **out);

/* Base64url without padding of IN (LEN bytes): malloc'd, NULL on ENOMEM. */
char *jwt_b64url(const unsigned char *in, size_t len);

/* ---- auth/tokenresp.c: the answer of a token endpoint (Entra ID, managed identity,
 * `az account get-access-token`) -> an access token and its expiry. */

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
int token_response_parse(const char *body, size_t len, time_t now, char **token, time_t *expires_at,
                         char *err, size_t errlen);

#endif
