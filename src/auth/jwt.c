/* auth/jwt.c - the RS256 client assertion of a certificate credential. */
#include "auth/auth_i.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "util/util.h"
#include "auth/auth.h"

#define PEM_MAX (1024 * 1024)

struct jwt_signer {
    EVP_PKEY *key;
    char *x5t;
};

/* See auth/auth_i.h. */
char *jwt_b64url(const unsigned char *in, size_t len)
{
    char *s = b64_encode(in, len), *p;

    if (!s)
        return NULL;
    for (p = s; *p; p++) {
        if (*p == '+')
            *p = '-';
        else if (*p == '/')
            *p = '_';
        else if (*p == '=') {
            *p = '\0';
            break;
        }
    }
    return s;
}

/* Read the file PATH (at most PEM_MAX bytes) into B. Returns 0 or -errno. */
static int read_pem(const char *path, struct buf *b)
{
    char chunk[4096];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), rc = 0;

    if (fd < 0)
        return -errno;
    while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || buf_add(b, chunk, (size_t)n) < 0) {
            rc = n < 0 ? -errno : b->err;
            break;
        }
    }
    OPENSSL_cleanse(chunk, sizeof(chunk));
    close(fd);
    return rc;
}

/* The x5t of CERT, malloc'd, or NULL. */
static char *thumbprint(X509 *cert)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    if (X509_digest(cert, EVP_sha1(), md, &n) != 1)
        return NULL;
    return jwt_b64url(md, n);
}

/* PEM password callback: the password given to jwt_signer_load. */
static int pem_password(char *out, int size, int rwflag, void *u)
{
    const char *pw = u;
    size_t n = pw ? strlen(pw) : 0;

    (void)rwflag;
    if (!pw || n > (size_t)size)
        return -1;
    memcpy(out, pw, n);
    return (int)n;
}

/* Certificate and key from the PEM text in B into S. Returns 0 or -EINVAL
 * with ERR set. */
static int parse_pem(const struct buf *b, const char *path, const char *password,
                     struct jwt_signer *s, char *err, size_t errlen)
{
    BIO *bio = BIO_new_mem_buf(b->ptr, (int)b->len);
    X509 *cert = NULL;
    int rc = -EINVAL;

    if (!bio)
        return -ENOMEM;
    if (!(cert = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
        snprintf(err, errlen, "%s holds no PEM certificate", path);
        goto out;
    }
    (void)BIO_reset(bio);
    s->key = PEM_read_bio_PrivateKey(bio, NULL, pem_password, (void *)password);
    if (!s->key) {
        snprintf(err, errlen, "%s holds no private key that can be read%s", path,
                 password ? " with the password given (AZURE_CLIENT_CERTIFICATE_PASSWORD)" :
                            " (an encrypted key needs AZURE_CLIENT_CERTIFICATE_PASSWORD)");
        goto out;
    }
    if (EVP_PKEY_base_id(s->key) != EVP_PKEY_RSA) {
        snprintf(err, errlen, "%s: the private key is not RSA (Entra ID needs RS256)", path);
        goto out;
    }
    if (X509_check_private_key(cert, s->key) != 1) {
        snprintf(err, errlen, "%s: the private key does not belong to the certificate", path);
        goto out;
    }
    if (!(s->x5t = thumbprint(cert))) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
        goto out;
    }
    rc = 0;
out:
    ERR_clear_error();
    X509_free(cert);
    BIO_free(bio);
    return rc;
}

/* See auth/auth_i.h. */
int jwt_signer_load(const char *path, const char *password, struct jwt_signer **out, char *err,
                    size_t errlen)
{
    struct buf b = BUF_INIT(PEM_MAX);
    struct jwt_signer *s = calloc(1, sizeof(*s));
    int rc;

    *out = NULL;
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    rc = read_pem(path, &b);
    if (rc == -EFBIG)
        snprintf(err, errlen, "certificate file %s is larger than %d bytes", path, PEM_MAX);
    else if (rc < 0)
        snprintf(err, errlen, "cannot read certificate file %s: %s", path, strerror(-rc));
    if (rc == 0 && b.ptr)
        rc = parse_pem(&b, path, password, s, err, errlen);
    else if (rc == 0) {
        snprintf(err, errlen, "certificate file %s is empty", path);
        rc = -EINVAL;
    }
    secret_buf_free(&b);
    if (rc < 0) {
        jwt_signer_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

/* See auth/auth_i.h. */
const char *jwt_signer_x5t(const struct jwt_signer *s)
{
    return s->x5t;
}

/* See auth/auth_i.h. */
void jwt_signer_free(struct jwt_signer *s)
{
    if (!s)
        return;
    EVP_PKEY_free(s->key);
    free(s->x5t);
    free(s);
}

/* base64url of the compact JSON of OBJ (consumed): malloc'd, or NULL. */
static char *b64_json(json_t *obj)
{
    char *txt = obj ? json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS) : NULL, *enc;

    json_decref(obj);
    if (!txt)
        return NULL;
    enc = jwt_b64url((const unsigned char *)txt, strlen(txt));
    free(txt);
    return enc;
}

/* "HEADER.CLAIMS" of the assertion: malloc'd, or NULL. */
static char *signing_input(const struct jwt_signer *s, const char *client_id, const char *audience,
                           time_t now)
{
    unsigned char rnd[16];
    char *jti, *h, *c, *out = NULL;

    if (RAND_bytes(rnd, sizeof(rnd)) != 1)
        return NULL;
    jti = jwt_b64url(rnd, sizeof(rnd));
    h = b64_json(json_pack("{s:s, s:s, s:s}", "alg", "RS256", "typ", "JWT", "x5t", s->x5t));
    c = jti ?
        b64_json(json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "aud", audience, "iss", client_id,
                           "sub", client_id, "jti", jti, "nbf", (json_int_t)now, "iat",
                           (json_int_t)now, "exp", (json_int_t)(now + JWT_ASSERTION_LIFETIME))) :
        NULL;
    if (h && c && asprintf(&out, "%s.%s", h, c) < 0)
        out = NULL;
    free(jti);
    free(h);
    free(c);
    return out;
}

/* See auth/auth_i.h. */
int jwt_client_assertion(const struct jwt_signer *s, const char *client_id, const char *audience,
                         time_t now, char **out)
{
    char *in = signing_input(s, client_id, audience, now), *sig64 = NULL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    unsigned char *sig = NULL;
    size_t siglen = 0;
    int rc = -EIO;

    *out = NULL;
    if (!in || !md) {
        rc = -ENOMEM;
        goto out;
    }
    if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, s->key) != 1 ||
        EVP_DigestSign(md, NULL, &siglen, (const unsigned char *)in, strlen(in)) != 1)
        goto out;
    if (!(sig = malloc(siglen))) {
        rc = -ENOMEM;
        goto out;
    }
    if (EVP_DigestSign(md, sig, &siglen, (const unsigned char *)in, strlen(in)) != 1)
        goto out;
    rc = -ENOMEM;
    if ((sig64 = jwt_b64url(sig, siglen)) && asprintf(out, "%s.%s", in, sig64) >= 0)
        rc = 0;
    else
        *out = NULL;
out:
    ERR_clear_error();
    EVP_MD_CTX_free(md);
    free(sig);
    free(sig64);
    free(in);
    return rc;
}
