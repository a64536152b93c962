/* test_jwt.c - the client assertion (RS256 JWT with x5t) against OpenSSL's
 * own verification, and the token-answer parser on the answers of Entra ID,
 * managed identity and the Azure CLI. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include "auth/auth_i.h"
#include "auth/auth.h"
#include "util/util.h"
#include "tap.h"

#define NOW ((time_t)1795335994)

static char dir[] = "/tmp/aztfs-test-jwt-XXXXXX";

/* A self-signed certificate for KEY. */
static X509 *make_cert(EVP_PKEY *key)
{
    X509 *c = X509_new();

    X509_set_version(c, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(c), 42);
    X509_gmtime_adj(X509_getm_notBefore(c), 0);
    X509_gmtime_adj(X509_getm_notAfter(c), 86400);
    X509_set_pubkey(c, key);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(c), "CN", MBSTRING_ASC,
                               (const unsigned char *)"aztfs test", -1, -1, 0);
    X509_set_issuer_name(c, X509_get_subject_name(c));
    X509_sign(c, key, EVP_sha256());
    return c;
}

/* Write CERT and KEY (encrypted with PASS when given) to DIR/NAME. */
static char *write_pem(const char *name, X509 *cert, EVP_PKEY *key, const char *pass)
{
    static char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    if (cert)
        PEM_write_X509(f, cert);
    if (key)
        PEM_write_PrivateKey(f, key, pass ? EVP_aes_256_cbc() : NULL, NULL, 0, NULL, (void *)pass);
    fclose(f);
    return path;
}

/* Base64url-decode S (N bytes) into a malloc'd NUL-terminated string. */
static char *unb64url(const char *s, size_t n)
{
    char *std = calloc(1, n + 4);
    unsigned char *out = NULL;
    size_t olen = 0;

    for (size_t i = 0; i < n; i++)
        std[i] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
    while (n % 4)
        std[n++] = '=';
    if (b64_decode(std, &out, &olen) < 0)
        out = NULL;
    free(std);
    if (out) {
        unsigned char *grown = realloc(out, olen + 1);

        if (!grown) {
            free(out);
            return NULL;
        }
        out = grown;
        out[olen] = 0;
    }
    return (char *)out;
}

static void test_b64url(void)
{
    char *s;

    is_str((s = jwt_b64url((const unsigned char *)"", 0)), "", "b64url: empty");
    free(s);
    is_str((s = jwt_b64url((const unsigned char *)"f", 1)), "Zg", "b64url: no padding");
    free(s);
    is_str((s = jwt_b64url((const unsigned char *)"\xfb\xff", 2)), "-_8",
           "b64url: '-' and '_' for '+' and '/'");
    free(s);
}

/* The assertion made with S for CERT: shape, claims, signature. */
static void check_assertion(struct jwt_signer *s, X509 *cert, const char *x5t_want)
{
    char *a = NULL, *a2 = NULL, *hdr, *claims, *dot1, *dot2;
    unsigned char *sig;
    json_t *h, *c;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    size_t siglen;
    int rc;

    rc = jwt_client_assertion(s, "client-1", "https://login.example/t/oauth2/v2.0/token", NOW, &a);
    is_int(rc, 0, "assertion: made");
    dot1 = strchr(a, '.');
    dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    ok(dot1 && dot2 && !strchr(dot2 + 1, '.'), "assertion: three parts");
    hdr = unb64url(a, (size_t)(dot1 - a));
    claims = unb64url(dot1 + 1, (size_t)(dot2 - dot1 - 1));
    h = json_loads(hdr, 0, NULL);
    c = json_loads(claims, 0, NULL);
    is_str(json_string_value(json_object_get(h, "alg")), "RS256", "header: alg RS256");
    is_str(json_string_value(json_object_get(h, "typ")), "JWT", "header: typ JWT");
    is_str(json_string_value(json_object_get(h, "x5t")), x5t_want, "header: x5t thumbprint");
    is_str(json_string_value(json_object_get(c, "aud")),
           "https://login.example/t/oauth2/v2.0/token", "claims: aud is the token endpoint");
    is_str(json_string_value(json_object_get(c, "iss")), "client-1", "claims: iss");
    is_str(json_string_value(json_object_get(c, "sub")), "client-1", "claims: sub");
    is_int(json_integer_value(json_object_get(c, "nbf")), NOW, "claims: nbf");
    is_int(json_integer_value(json_object_get(c, "exp")), NOW + JWT_ASSERTION_LIFETIME,
           "claims: exp");
    ok(json_string_length(json_object_get(c, "jti")) >= 16, "claims: jti");
    jwt_client_assertion(s, "client-1", "aud", NOW, &a2);
    ok(a2 && strcmp(a, a2) != 0, "assertion: a new jti each time");

    sig = (unsigned char *)unb64url(dot2 + 1, strlen(dot2 + 1));
    siglen = (strlen(dot2 + 1) * 3) / 4;
    rc = EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, X509_get0_pubkey(cert)) == 1 &&
        EVP_DigestVerify(md, sig, siglen, (const unsigned char *)a, (size_t)(dot2 - a)) == 1;
    ok(rc, "signature: verifies with the certificate's public key (RS256)");
    a[dot2 - a - 1] ^= 1; /* tamper with the claims */
    EVP_MD_CTX_reset(md);
    rc = EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, X509_get0_pubkey(cert)) == 1 &&
        EVP_DigestVerify(md, sig, siglen, (const unsigned char *)a, (size_t)(dot2 - a)) == 1;
    ok(!rc, "signature: a changed claim does not verify");
    EVP_MD_CTX_free(md);
    json_decref(h);
    json_decref(c);
    free(hdr);
    free(claims);
    free(sig);
    free(a);
    free(a2);
}

static void test_signer(void)
{
    EVP_PKEY *key = EVP_RSA_gen(2048), *other = EVP_RSA_gen(2048), *ec = EVP_EC_gen("P-256");
    X509 *cert = make_cert(key), *eccert = make_cert(ec);
    unsigned char *der = NULL, md[SHA_DIGEST_LENGTH];
    int derlen = i2d_X509(cert, &der);
    struct jwt_signer *s = NULL;
    char err[400], *x5t;
    int rc;

    SHA1(der, (size_t)derlen, md);
    x5t = jwt_b64url(md, sizeof(md));
    rc = jwt_signer_load(write_pem("plain.pem", cert, key, NULL), NULL, &s, err, sizeof(err));
    is_int(rc, 0, "load: certificate and key (%s)", rc ? err : "ok");
    if (s) {
        is_str(jwt_signer_x5t(s), x5t, "load: x5t is base64url(SHA-1(DER))");
        check_assertion(s, cert, x5t);
        jwt_signer_free(s);
    }
    rc = jwt_signer_load(write_pem("enc.pem", cert, key, "pa55"), "pa55", &s, err, sizeof(err));
    is_int(rc, 0, "load: encrypted key with its password");
    jwt_signer_free(s);
    rc = jwt_signer_load(write_pem("enc2.pem", cert, key, "pa55"), "wrong", &s, err, sizeof(err));
    ok(rc == -EINVAL && strstr(err, "password") && !strstr(err, "wrong"),
       "load: wrong password refused, not echoed (%s)", err);
    rc = jwt_signer_load(write_pem("enc3.pem", cert, key, "pa55"), NULL, &s, err, sizeof(err));
    ok(rc == -EINVAL && strstr(err, "AZURE_CLIENT_CERTIFICATE_PASSWORD"),
       "load: encrypted key without password names the setting (%s)", err);
    rc = jwt_signer_load(write_pem("certonly.pem", cert, NULL, NULL), NULL, &s, err, sizeof(err));
    ok(rc == -EINVAL && strstr(err, "no private key"), "load: no key (%s)", err);
    rc = jwt_signer_load(write_pem("keyonly.pem", NULL, key, NULL), NULL, &s, err, sizeof(err));
    ok(rc == -EINVAL && strstr(err, "no PEM certificate"), "load: no certificate (%s)", err);
    rc = jwt_signer_load(write_pem("mismatch.pem", cert, other, NULL), NULL, &s, err, sizeof(err));
    ok(rc == -EINVAL && strstr(err, "does not belong"), "load: key of another cert (%s)", err);
    rc = jwt_signer_load(write_pem("ec.pem", eccert, ec, NULL), NULL, &s, err, sizeof(err));
    ok(rc == -EINVAL && strstr(err, "not RSA"), "load: EC key refused (%s)", err);
    rc = jwt_signer_load("/nonexistent/cert.pem", NULL, &s, err, sizeof(err));
    ok(rc == -ENOENT && strstr(err, "/nonexistent/cert.pem"), "load: missing file (%s)", err);
    ok(s == NULL, "load: no signer on failure");
    free(x5t);
    OPENSSL_free(der);
    X509_free(cert);
    X509_free(eccert);
    EVP_PKEY_free(key);
    EVP_PKEY_free(other);
    EVP_PKEY_free(ec);
}

/* Parse BODY; returns rc, *TOK (freed here) compared with WANT_TOK. */
static int parse(const char *body, const char *want_tok, time_t want_exp, const char *name)
{
    char *tok = (char *)"unset", err[300];
    time_t exp = 0;
    int rc = token_response_parse(body, strlen(body), NOW, &tok, &exp, err, sizeof(err));

    if (want_tok) {
        is_int(rc, 0, "%s: parsed (%s)", name, err);
        is_str(tok, want_tok, "%s: token", name);
        is_int(exp, want_exp, "%s: expiry", name);
    } else {
        ok(rc < 0 && tok == NULL && err[0] && !strchr(err, '\n'),
           "%s: refused with one line (%d: %s)", name, rc, err);
    }
    free(want_tok ? tok : NULL);
    return rc;
}

/* token_response_parse with LEN (size_t)-1 meaning strlen(BODY). */
static int tparse(const char *body, size_t len, time_t now, char **tok, time_t *exp, char *err,
                  size_t errlen)
{
    return token_response_parse(body, len == (size_t)-1 ? strlen(body) : len, now, tok, exp, err,
                                errlen);
}

static void test_parse(void)
{
    char err[300], *tok, *big;
    time_t exp;
    struct tm tm = { .tm_year = 126,
                     .tm_mon = 10,
                     .tm_mday = 23,
                     .tm_hour = 10,
                     .tm_min = 0,
                     .tm_sec = 0,
                     .tm_isdst = -1 };
    time_t local = mktime(&tm);
    int rc;

    parse("{\"token_type\":\"Bearer\",\"expires_in\":3599,\"ext_expires_in\":3599,"
          "\"access_token\":\"eyJ0.eyJ1.sig-_\"}",
          "eyJ0.eyJ1.sig-_", NOW + 3599, "Entra v2");
    parse("{\"access_token\":\"abc\",\"expires_in\":\"86399\",\"expires_on\":\"1\","
          "\"resource\":\"https://storage.azure.com\",\"token_type\":\"Bearer\"}",
          "abc", NOW + 86399, "IMDS: numbers as strings, expires_in first");
    parse("{\"access_token\":\"abc\",\"expires_on\":\"1795339594\",\"token_type\":\"Bearer\"}",
          "abc", 1795339594, "App Service: expires_on");
    parse("{\"accessToken\":\"cli\",\"expiresOn\":\"2026-11-23 10:00:00.000000\","
          "\"expires_on\":1795339594,\"tokenType\":\"Bearer\"}",
          "cli", 1795339594, "Azure CLI: expires_on wins");
    if (local > NOW)
        parse("{\"accessToken\":\"cli\",\"expiresOn\":\"2026-11-23 10:00:00.000000\"}", "cli",
              local, "Azure CLI (old): expiresOn in local time");
    parse("{\"access_token\":\"a b\",\"expires_in\":10}", NULL, 0, "token with a space");
    parse("{\"access_token\":\"\",\"expires_in\":10}", NULL, 0, "empty token");
    parse("{\"access_token\":\"abc\"}", NULL, 0, "no expiry");
    parse("{\"access_token\":\"abc\",\"expires_on\":1000}", NULL, 0, "already expired");
    parse("{\"access_token\":\"abc\",\"expires_in\":-5}", NULL, 0, "negative expires_in");
    parse("{\"access_token\":\"abc\",\"expires_in\":\"12x\"}", NULL, 0, "expires_in not a number");
    parse("{\"access_token\":7,\"expires_in\":10}", NULL, 0, "token not a string");
    parse("[1,2]", NULL, 0, "not an object");
    parse("<html>502 Bad Gateway</html>", NULL, 0, "not JSON");
    parse("", NULL, 0, "empty body");
    rc = parse("{\"access_token\":\"a\\u0000b\",\"expires_in\":10}", NULL, 0, "NUL in token");
    is_int(rc, -EINVAL, "NUL in token: -EINVAL");
    big = malloc(TOKEN_MAX_LEN + 64);
    snprintf(big, TOKEN_MAX_LEN + 64, "{\"access_token\":\"%0*d\",\"expires_in\":9}",
             TOKEN_MAX_LEN + 1, 0);
    parse(big, NULL, 0, "token over TOKEN_MAX_LEN");
    free(big);

    rc = tparse("{\"error\":\"invalid_client\",\"error_description\":"
                "\"AADSTS7000215: Invalid client secret provided.\\r\\nTrace ID: x\","
                "\"error_codes\":[7000215]}",
                (size_t)-1, NOW, &tok, &exp, err, sizeof(err));
    is_int(rc, -EACCES, "error answer: -EACCES");
    is_str(err, "invalid_client: AADSTS7000215: Invalid client secret provided.",
           "error answer: code and first line of the description");
    rc = tparse("{\"statusCode\":400,\"message\":\"No managed identity\"}", (size_t)-1, NOW, &tok,
                &exp, err, sizeof(err));
    ok(rc == -EACCES && strcmp(err, "No managed identity") == 0,
       "managed identity error: message (%s)", err);
    rc = tparse("{\"error\":{\"code\":\"Bad\",\"message\":\"m\"}}", (size_t)-1, NOW, &tok, &exp,
                err, sizeof(err));
    ok(rc == -EACCES && strcmp(err, "Bad: m") == 0, "nested error object (%s)", err);
    rc = tparse("{\"access_token\":\"SECRETTOKEN\",\"expires_in\":\"x\"}", (size_t)-1, NOW, &tok,
                &exp, err, sizeof(err));
    ok(rc == -EINVAL && !strstr(err, "SECRETTOKEN"), "a refusal never quotes the token");
    rc = tparse("{\"access_token\":\"abc\",\"expires_in\":5} trailing", (size_t)-1, NOW, &tok, &exp,
                err, sizeof(err));
    is_int(rc, -EINVAL, "text after the JSON value: refused");
}

int main(void)
{
    if (!mkdtemp(dir)) {
        ok(0, "mkdtemp");
        return done_testing();
    }
    test_b64url();
    test_signer();
    test_parse();
    if (fork() == 0)
        execlp("rm", "rm", "-rf", dir, (char *)NULL);
    return done_testing();
}
