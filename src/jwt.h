/* jwt.h - the signed client assertion of a service principal with a
 * certificate: an RS256 JWT carrying the certificate's SHA-1 thumbprint
 * (x5t), made with OpenSSL. */
#ifndef AZTFS_JWT_H
#define AZTFS_JWT_H

#include <stddef.h>
#include <time.h>

struct jwt_signer;

/* How long an assertion is valid (the "exp" claim less "nbf"). */
#define JWT_ASSERTION_LIFETIME 600

/* Load the PEM file PATH holding a certificate and its private key (RSA;
 * PASSWORD decrypts an encrypted key, NULL: none). The file is read into
 * memory (at most 1 MiB) and that copy is wiped. Returns 0 and *OUT (free
 * with jwt_signer_free), or -errno with one line in ERR that names the file:
 * -ENOENT and other open errors, -EINVAL (no certificate, no key, a key that
 * is not RSA or does not match the certificate, a wrong password), -ENOMEM. */
int jwt_signer_load(const char *path, const char *password, struct jwt_signer **out,
                    char *err, size_t errlen);

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
int jwt_client_assertion(const struct jwt_signer *s, const char *client_id,
                         const char *audience, time_t now, char **out);

/* Base64url without padding of IN (LEN bytes): malloc'd, NULL on ENOMEM. */
char *jwt_b64url(const unsigned char *in, size_t len);

#endif
