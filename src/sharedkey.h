/* sharedkey.h - SharedKey request signing for the Table service (HMAC-SHA256). */
#ifndef AZTFS_SHAREDKEY_H
#define AZTFS_SHAREDKEY_H

#include <stddef.h>
#include <time.h>

#define RFC1123_LEN 30   /* "Sun, 22 Nov 2026 08:26:34 GMT" + NUL */

/* Format T as an RFC 1123 GMT date into OUT (at least RFC1123_LEN bytes). */
void sharedkey_rfc1123(time_t t, char out[RFC1123_LEN]);

/* Build the Table service string to sign:
 *   VERB \n Content-MD5 \n Content-Type \n Date \n CanonicalizedResource
 * where CanonicalizedResource = "/" ACCOUNT PATH [ "?comp=" COMP ].
 * PATH is the URL path exactly as sent (percent-encoded, no query string).
 * CONTENT_MD5, CONTENT_TYPE and COMP may be NULL (empty).
 * Returns a malloc'd string (caller frees) or NULL on allocation failure. */
char *sharedkey_string_to_sign(const char *verb, const char *content_md5,
                               const char *content_type, const char *date,
                               const char *account, const char *path,
                               const char *comp);

/* Compute the Authorization header value
 *   "SharedKey ACCOUNT:base64(HMAC-SHA256(KEY, string_to_sign))"
 * for the given request. KEY is the already base64-decoded account key.
 * Returns 0 and a malloc'd *out (caller frees), or -ENOMEM / -EINVAL. */
int sharedkey_authorization(const char *account, const unsigned char *key, size_t key_len,
                            const char *verb, const char *content_type, const char *date,
                            const char *path, const char *comp, char **out);

/* Base64 helpers (standard alphabet, with padding).
 * sharedkey_b64encode: returns malloc'd NUL-terminated string or NULL.
 * sharedkey_b64decode: returns 0 and malloc'd *out and *out_len, or -EINVAL on
 * malformed input (bad characters, bad padding), -ENOMEM. */
char *sharedkey_b64encode(const unsigned char *in, size_t len);
int sharedkey_b64decode(const char *in, unsigned char **out, size_t *out_len);

#endif
