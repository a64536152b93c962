/* auth/credential.c - Microsoft Entra ID credentials: token requests for a
 * service principal (secret, certificate), a workload identity, a managed
 * identity and the Azure CLI. */
#include "auth/auth.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "auth/auth_i.h"
#include "util/util.h"

#define ANSWER_MAX (64 * 1024)         /* largest token answer read */
#define ASSERTION_FILE_MAX (64 * 1024) /* largest federated token file */
#define TOKEN_TIMEOUT_MS 30000         /* cap of one token request, and of az */
#define TOKEN_RETRIES 2                /* cap of the retries of one */
#define TOKEN_DEADLINE_MS 60000        /* no retry starts later than this */
#define DEFAULT_AUTHORITY "https://login.microsoftonline.com"
#define DEFAULT_IMDS "http://169.254.169.254"

struct credential {
    enum cred_kind kind;
    struct cred_settings s;
    const char *scope;
    char *resource;            /* SCOPE without "/.default" (managed, cli) */
    char *url;                 /* the token endpoint (GET/POST target) */
    struct jwt_signer *signer; /* CRED_CERTIFICATE */
    struct http_pool *pool;
    struct http_stats stats;
    const struct logger *lg;
    long timeout_ms; /* of one request, and of az */
};

const char *const cred_secret_env[] = { "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PASSWORD",
                                        "IDENTITY_HEADER", NULL };

static const char *const kind_names[CRED_KIND_COUNT] = { "secret", "certificate", "workload",
                                                         "managed", "cli" };

static const char *const kind_text[CRED_KIND_COUNT] = { "service principal with a client secret",
                                                        "service principal with a certificate",
                                                        "workload identity", "managed identity",
                                                        "Azure CLI" };

/* See auth/auth.h. */
int cred_kind_parse(const char *name, enum cred_kind *kind)
{
    for (int i = 0; i < CRED_KIND_COUNT; i++)
        if (strcmp(name, kind_names[i]) == 0) {
            *kind = (enum cred_kind)i;
            return 0;
        }
    return -EINVAL;
}

/* See auth/auth.h. */
const char *cred_kind_describe(enum cred_kind kind)
{
    return kind >= 0 && kind < CRED_KIND_COUNT ? kind_text[kind] : "?";
}

/* The settings: variable name and member. */
static const struct {
    const char *env;
    size_t off;
} setting_vars[] = {
    { "AZURE_TENANT_ID", offsetof(struct cred_settings, tenant_id) },
    { "AZURE_CLIENT_ID", offsetof(struct cred_settings, client_id) },
    { "AZURE_CLIENT_SECRET", offsetof(struct cred_settings, client_secret) },
    { "AZURE_CLIENT_CERTIFICATE_PATH", offsetof(struct cred_settings, certificate_path) },
    { "AZURE_CLIENT_CERTIFICATE_PASSWORD", offsetof(struct cred_settings, certificate_password) },
    { "AZURE_FEDERATED_TOKEN_FILE", offsetof(struct cred_settings, federated_token_file) },
    { "AZURE_AUTHORITY_HOST", offsetof(struct cred_settings, authority_host) },
    { "IDENTITY_ENDPOINT", offsetof(struct cred_settings, identity_endpoint) },
    { "IDENTITY_HEADER", offsetof(struct cred_settings, identity_header) },
    { "AZTFS_IMDS_ENDPOINT", offsetof(struct cred_settings, imds_endpoint) },
};
#define N_SETTINGS (sizeof(setting_vars) / sizeof(setting_vars[0]))

static char **setting_slot(struct cred_settings *s, size_t i)
{
    return (char **)((char *)s + setting_vars[i].off);
}

/* See auth/auth.h. */
int cred_settings_load(struct cred_settings *s, const char *(*config)(void *ctx, const char *name),
                       void *ctx, const char *client_id)
{
    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const char *v = config ? config(ctx, setting_vars[i].env) : NULL;
        char **slot = setting_slot(s, i);

        if (!v || !*v)
            v = getenv(setting_vars[i].env);
        if (slot == &s->client_id && client_id)
            v = client_id;
        if (v && *v && !(*slot = strdup(v))) {
            cred_settings_free(s);
            return -ENOMEM;
        }
    }
    return 0;
}

/* See auth/auth.h. */
void cred_settings_free(struct cred_settings *s)
{
    for (size_t i = 0; i < N_SETTINGS; i++)
        secret_str_free(*setting_slot(s, i));
    memset(s, 0, sizeof(*s));
}

/* Copy A into the zeroed *B. Returns 0 or -ENOMEM. */
static int settings_copy(struct cred_settings *b, const struct cred_settings *a)
{
    for (size_t i = 0; i < N_SETTINGS; i++) {
        const char *v = *setting_slot((struct cred_settings *)a, i);

        if (v && !(*setting_slot(b, i) = strdup(v)))
            return -ENOMEM;
    }
    return 0;
}

__attribute__((format(printf, 3, 4))) static int fail(struct cred_error *e, int rc, const char *fmt,
                                                      ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    e->unavailable = rc == -ENODATA;
    return rc;
}

/* Check that URL is http(s)://HOST[...] with no user info, query or
 * whitespace, and https unless HOST is loopback or ANY_HTTP is set (the
 * instance metadata service is plain http on a link-local address). WHAT
 * names it. */
static int check_url(const char *url, const char *what, int any_http, struct cred_error *e)
{
    struct account a = { 0 };
    const char *rest;
    char host[256];
    int https = strncasecmp(url, "https://", 8) == 0;

    if (!https && strncasecmp(url, "http://", 7) != 0)
        return fail(e, -EINVAL, "%s must be an http:// or https:// URL", what);
    rest = url + (https ? 8 : 7);
    snprintf(host, sizeof(host), "%.*s", (int)strcspn(rest, "/?#"), rest);
    for (const char *p = url; *p; p++)
        if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p) || *p == '#')
            return fail(e, -EINVAL, "%s contains whitespace or '#'", what);
    if (!host[0] || strchr(host, '@'))
        return fail(e, -EINVAL, "%s has no host, or user information", what);
    a.host = host;
    if (!https && !any_http && !account_is_loopback(&a))
        return fail(e, -EINVAL,
                    "%s must use https (plain http is accepted for loopback "
                    "addresses only): %s",
                    what, url);
    return 0;
}

/* Is S a tenant ID we may put in a URL path (letters, digits, '.', '-')? */
static int tenant_ok(const char *s)
{
    if (!*s || strlen(s) > 128)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '.' && *s != '-')
            return 0;
    return 1;
}

/* The token endpoint of a service principal: AUTHORITY/TENANT/oauth2/v2.0/token. */
static int entra_url(struct credential *c, struct cred_error *e)
{
    const char *auth = c->s.authority_host ? c->s.authority_host : DEFAULT_AUTHORITY;
    size_t n = strlen(auth);
    int rc;

    if (!c->s.tenant_id)
        return fail(e, -ENODATA, "AZURE_TENANT_ID is not set");
    if (!c->s.client_id)
        return fail(e, -ENODATA, "AZURE_CLIENT_ID is not set");
    if (!tenant_ok(c->s.tenant_id))
        return fail(e, -EINVAL, "AZURE_TENANT_ID must be a tenant ID or domain name");
    if ((rc = check_url(auth, "AZURE_AUTHORITY_HOST", 0, e)) < 0)
        return rc;
    while (n > 0 && auth[n - 1] == '/')
        n--;
    if (asprintf(&c->url, "%.*s/%s/oauth2/v2.0/token", (int)n, auth, c->s.tenant_id) < 0) {
        c->url = NULL;
        return fail(e, -ENOMEM, "out of memory");
    }
    return 0;
}

/* The managed identity endpoint URL with RESOURCE and the client ID. */
static int managed_url(struct credential *c, struct cred_error *e)
{
    char *res = http_escape(c->resource),
         *cid = c->s.client_id ? http_escape(c->s.client_id) : NULL;
    const char *base = c->s.imds_endpoint ? c->s.imds_endpoint : DEFAULT_IMDS;
    int rc = 0, app = c->s.identity_endpoint && c->s.identity_header;

    if (!res || (c->s.client_id && !cid))
        rc = fail(e, -ENOMEM, "out of memory");
    else if (app)
        rc = check_url(c->s.identity_endpoint, "IDENTITY_ENDPOINT", 0, e);
    else
        rc = check_url(base, "AZTFS_IMDS_ENDPOINT", 1, e);
    if (rc == 0 &&
        asprintf(&c->url, "%s%s?api-version=%s&resource=%s%s%s",
                 app ? c->s.identity_endpoint : base, app ? "" : "/metadata/identity/oauth2/token",
                 app ? "2019-08-01" : "2018-02-01", res, cid ? "&client_id=" : "",
                 cid ? cid : "") < 0) {
        c->url = NULL;
        rc = fail(e, -ENOMEM, "out of memory");
    }
    free(res);
    free(cid);
    return rc;
}

/* Kind-specific setup of C. */
static int setup(struct credential *c, struct cred_error *e)
{
    char err[400];
    int rc;

    switch (c->kind) {
    case CRED_SECRET:
        if (!c->s.client_secret)
            return fail(e, -ENODATA, "AZURE_CLIENT_SECRET is not set");
        return entra_url(c, e);
    case CRED_CERTIFICATE:
        if (!c->s.certificate_path)
            return fail(e, -ENODATA, "AZURE_CLIENT_CERTIFICATE_PATH is not set");
        if ((rc = entra_url(c, e)) < 0)
            return rc;
        rc = jwt_signer_load(c->s.certificate_path, c->s.certificate_password, &c->signer, err,
                             sizeof(err));
        return rc < 0 ? fail(e, rc == -ENOMEM ? rc : -EINVAL, "%s", err) : 0;
    case CRED_WORKLOAD:
        if (!c->s.federated_token_file)
            return fail(e, -ENODATA, "AZURE_FEDERATED_TOKEN_FILE is not set");
        return entra_url(c, e);
    case CRED_MANAGED:
        return managed_url(c, e);
    default:
        return 0;
    }
}

/* See auth/auth.h. */
int credential_new(struct credential **out, enum cred_kind kind, const struct cred_settings *s,
                   const char *scope, const struct http_config *hc, const struct logger *lg,
                   struct cred_error *e)
{
    struct credential *c = calloc(1, sizeof(*c));
    struct http_config cfg = *hc;
    size_t n = strlen(scope);
    int rc;

    memset(e, 0, sizeof(*e));
    *out = NULL;
    if (!c)
        return fail(e, -ENOMEM, "out of memory");
    c->kind = kind;
    c->scope = scope;
    c->lg = lg;
    if (n > 9 && strcmp(scope + n - 9, "/.default") == 0)
        n -= 9;
    /* a token request is small: bound it tighter than a table request */
    cfg.body_max = ANSWER_MAX;
    if (cfg.request_timeout_ms <= 0 || cfg.request_timeout_ms > TOKEN_TIMEOUT_MS)
        cfg.request_timeout_ms = TOKEN_TIMEOUT_MS;
    if (cfg.max_retries == 0 || cfg.max_retries > TOKEN_RETRIES)
        cfg.max_retries = TOKEN_RETRIES;
    if (cfg.retry_deadline_ms <= 0 || cfg.retry_deadline_ms > TOKEN_DEADLINE_MS)
        cfg.retry_deadline_ms = TOKEN_DEADLINE_MS;
    c->timeout_ms = cfg.request_timeout_ms;
    if ((rc = settings_copy(&c->s, s)) < 0 || !(c->resource = strndup(scope, n)) ||
        http_pool_new(&c->pool, &cfg, lg, &c->stats) < 0) {
        rc = fail(e, -ENOMEM, "out of memory");
        goto fail;
    }
    if ((rc = setup(c, e)) < 0)
        goto fail;
    *out = c;
    return 0;
fail:
    credential_free(c);
    return rc;
}

/* See auth/auth.h. */
void credential_free(struct credential *c)
{
    if (!c)
        return;
    cred_settings_free(&c->s);
    jwt_signer_free(c->signer);
    http_pool_free(c->pool);
    free(c->resource);
    free(c->url);
    free(c);
}

/* See auth/auth.h. */
enum cred_kind credential_kind(const struct credential *c)
{
    return c->kind;
}

/* The contents of the federated token file (whitespace trimmed), read anew:
 * Kubernetes rotates it. Returns 0 and *OUT (malloc'd) or -errno. */
static int read_assertion_file(const char *path, char **out, struct cred_error *e)
{
    struct buf b = BUF_INIT(ASSERTION_FILE_MAX);
    char chunk[4096];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY), rc = 0;
    size_t start = 0, len;

    if (fd < 0)
        return fail(e, -EACCES, "cannot read AZURE_FEDERATED_TOKEN_FILE %s: %s", path,
                    strerror(errno));
    while (rc == 0 && (n = read(fd, chunk, sizeof(chunk))) != 0)
        if (n < 0 ? errno != EINTR : buf_add(&b, chunk, (size_t)n) < 0)
            rc = fail(e, n < 0 ? -errno : b.err, "cannot read AZURE_FEDERATED_TOKEN_FILE %s: %s",
                      path, n < 0 ? strerror(errno) : "too large");
    close(fd);
    OPENSSL_cleanse(chunk, sizeof(chunk));
    len = b.len;
    while (start < len && isspace((unsigned char)b.ptr[start]))
        start++;
    while (len > start && isspace((unsigned char)b.ptr[len - 1]))
        len--;
    if (rc == 0 && len == start)
        rc = fail(e, -EACCES, "AZURE_FEDERATED_TOKEN_FILE %s is empty", path);
    if (rc == 0 && !(*out = strndup(b.ptr + start, len - start)))
        rc = fail(e, -ENOMEM, "out of memory");
    secret_buf_free(&b);
    return rc;
}

/* Append "&NAME=" and VALUE percent-encoded to B; the copy is wiped. */
static void form_add(struct buf *b, const char *name, const char *value)
{
    char *v = http_escape(value);

    if (!v) {
        buf_setlen(b, (size_t)-1); /* fails: -ENOMEM or -EFBIG, sticky */
        return;
    }
    buf_addf(b, "&%s=%s", name, v);
    secret_str_free(v);
}

/* The form of a service principal's token request into B. Returns 0 or -errno. */
static int form_body(struct credential *c, struct buf *b, struct cred_error *e)
{
    char *assertion = NULL;
    int rc = 0;

    buf_adds(b, "grant_type=client_credentials");
    form_add(b, "client_id", c->s.client_id);
    form_add(b, "scope", c->scope);
    if (c->kind == CRED_SECRET) {
        form_add(b, "client_secret", c->s.client_secret);
    } else {
        if (c->kind == CRED_CERTIFICATE)
            rc = jwt_client_assertion(c->signer, c->s.client_id, c->url, time(NULL), &assertion);
        else
            rc = read_assertion_file(c->s.federated_token_file, &assertion, e);
        if (rc < 0)
            return c->kind == CRED_CERTIFICATE ? fail(e, rc,
                                                      "cannot sign the client "
                                                      "assertion: %s",
                                                      strerror(-rc)) :
                                                 rc;
        form_add(b, "client_assertion_type",
                 "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
        form_add(b, "client_assertion", assertion);
        secret_str_free(assertion);
    }
    return b->err < 0 ? fail(e, -ENOMEM, "out of memory") : 0;
}

/* What to check for a refusal whose text is DESC. */
static const char *hint(const struct credential *c, long status, const char *desc)
{
    static const struct {
        const char *code, *hint;
    } known[] = {
        { "AADSTS90002",
          "the tenant is unknown: check AZURE_TENANT_ID (and "
          "AZURE_AUTHORITY_HOST for a national cloud)" },
        { "AADSTS900023", "the tenant is unknown: check AZURE_TENANT_ID" },
        { "AADSTS700016",
          "the application (client) is unknown in this tenant: check "
          "AZURE_CLIENT_ID and AZURE_TENANT_ID" },
        { "AADSTS7000215",
          "the client secret is wrong: check AZURE_CLIENT_SECRET (the "
          "secret's value, not its ID)" },
        { "AADSTS7000222", "the client secret has expired: create a new one" },
        { "AADSTS700027",
          "the certificate is not registered for this application: upload "
          "it to the app registration (Certificates & secrets)" },
        { "AADSTS70021",
          "no federated credential of the application matches the token in "
          "AZURE_FEDERATED_TOKEN_FILE: check its issuer and subject" },
        { "AADSTS700211",
          "the issuer of the federated token is not registered: check the "
          "application's federated credentials" },
        { "AADSTS700213",
          "no federated credential matches the subject of the federated "
          "token: check the application's federated credentials" },
    };

    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strstr(desc, known[i].code))
            return known[i].hint;
    if (c->kind == CRED_MANAGED)
        return "check that a managed identity is assigned to this machine (a user-assigned "
               "one needs -o client_id=)";
    return status == 401 || status == 400 ? "check AZURE_TENANT_ID, AZURE_CLIENT_ID and the "
                                            "secret or certificate" :
                                            "see the message";
}

/* E for an answer of STATUS that brought no token (PERR: the parser's
 * reason, the service's text when it is an error answer). */
static int refused(struct credential *c, long status, int prc, const char *perr,
                   struct cred_error *e)
{
    char desc[220];
    const char *trace = strstr(perr, " Trace ID:");

    snprintf(desc, sizeof(desc), "%.*s", trace ? (int)(trace - perr) : (int)strlen(perr), perr);
    if (prc != -EACCES && status < 400)
        return fail(e, -EPROTO,
                    "the identity endpoint %s answered HTTP %ld with no usable "
                    "token: %s",
                    c->url, status, desc);
    fail(e, -EACCES, "sign-in refused (HTTP %ld): %s; %s", status, desc, hint(c, status, desc));
    /* managed identity: IMDS answers 400 when no identity is assigned */
    e->unavailable = c->kind == CRED_MANAGED && status == 400;
    return -EACCES;
}

/* Send the token request (BODY: a POST form, NULL: a GET) and parse its
 * answer. Returns as credential_token. */
static int request_token(struct credential *c, const char *body, size_t len, char **token,
                         time_t *exp, struct cred_error *e)
{
    const char *hdrs[4] = { "Accept: application/json", NULL, NULL, NULL };
    char *idh = NULL, perr[400];
    struct http_response resp;
    struct http_request req = {
        .method = body ? "POST" : "GET",
        .url = c->url,
        .headers = hdrs,
        .body = body,
        .body_len = len,
        .log_what = "token request",
    };
    time_t now = time(NULL);
    int rc;

    if (body)
        hdrs[1] = "Content-Type: application/x-www-form-urlencoded";
    else if (c->s.identity_endpoint && c->s.identity_header) {
        if (asprintf(&idh, "X-IDENTITY-HEADER: %s", c->s.identity_header) < 0)
            return fail(e, -ENOMEM, "out of memory");
        hdrs[1] = idh;
    } else
        hdrs[1] = "Metadata: true";
    rc = http_perform(c->pool, &req, &resp);
    secret_str_free(idh);
    if (rc == -ENOMEM)
        rc = fail(e, rc, "out of memory");
    else if (rc < 0 && strstr(resp.transport_error, "response body over"))
        rc = fail(e, -EPROTO,
                  "the identity endpoint %s answered more than %d bytes: no "
                  "token",
                  c->url, ANSWER_MAX);
    else if (rc < 0)
        rc = fail(e, -EHOSTUNREACH, "cannot reach the identity endpoint %s: %s", c->url,
                  resp.transport_error);
    else if ((rc = token_response_parse(resp.body, resp.body_len, now, token, exp, perr,
                                        sizeof(perr))) == 0 &&
             resp.status == 200)
        rc = 0;
    else {
        if (rc == 0) { /* a token in an answer that is no success */
            secret_str_free(*token);
            *token = NULL;
        }
        rc = rc == -ENOMEM ? fail(e, rc, "out of memory") : refused(c, resp.status, rc, perr, e);
    }
    if (resp.body)
        OPENSSL_cleanse(resp.body, resp.body_len);
    http_response_clear(&resp);
    return rc;
}

/* The Azure CLI's token. */
static int cli_token(struct credential *c, char **token, time_t *exp, struct cred_error *e)
{
    char *out = NULL, err[400];
    int rc = azcli_get_token(c->resource, NULL, c->timeout_ms, &out, err, sizeof(err));

    if (rc == -ENOENT)
        return fail(e, -ENODATA, "%s", err);
    if (rc < 0) {
        fail(e, rc == -ETIMEDOUT ? rc : -EACCES, "Azure CLI: %s%s", err,
             strstr(err, "az login") ? "" : " (is `az login` done for this user?)");
        e->unavailable = rc == -EACCES;
        return rc == -ETIMEDOUT ? rc : -EACCES;
    }
    rc = token_response_parse(out, strlen(out), time(NULL), token, exp, err, sizeof(err));
    secret_str_free(out);
    if (rc < 0)
        return fail(e, rc == -ENOMEM ? rc : -EPROTO,
                    "Azure CLI: unusable answer of "
                    "`az account get-access-token`: %s",
                    err);
    return 0;
}

/* See auth/auth.h. */
int credential_token(struct credential *c, char **token, time_t *expires_at, struct cred_error *e)
{
    struct buf b = BUF_INIT(ASSERTION_FILE_MAX * 4);
    int rc;

    memset(e, 0, sizeof(*e));
    *token = NULL;
    if (c->kind == CRED_CLI)
        return cli_token(c, token, expires_at, e);
    if (c->kind == CRED_MANAGED) {
        rc = request_token(c, NULL, 0, token, expires_at, e);
        if (rc == -EHOSTUNREACH)
            e->unavailable = 1;
        return rc;
    }
    rc = form_body(c, &b, e);
    if (rc == 0)
        rc = request_token(c, b.ptr, b.len, token, expires_at, e);
    secret_buf_free(&b);
    return rc;
}

/* Try KIND for credential_default. Returns 0 (*OUT, *TOKEN), or -errno. */
static int try_kind(enum cred_kind kind, struct credential **out, const struct cred_settings *s,
                    const char *scope, const struct http_config *hc, const struct logger *lg,
                    char **token, time_t *exp, struct cred_error *e)
{
    struct http_config probe = *hc;
    struct credential *c;
    int rc;

    if (kind == CRED_MANAGED) { /* off Azure, IMDS does not answer: ask briefly */
        if (probe.connect_timeout_ms <= 0 || probe.connect_timeout_ms > 2000)
            probe.connect_timeout_ms = 2000;
        probe.max_retries = -1;
    }
    if ((rc = credential_new(&c, kind, s, scope, &probe, lg, e)) < 0)
        return rc;
    rc = credential_token(c, token, exp, e);
    credential_free(c);
    if (rc < 0)
        return rc;
    /* again with the mount's own timeouts and retries for the refreshes */
    if ((rc = credential_new(out, kind, s, scope, hc, lg, e)) < 0) {
        secret_str_free(*token);
        *token = NULL;
    }
    return rc;
}

/* See auth/auth.h. */
int credential_default(struct credential **out, const struct cred_settings *s, const char *scope,
                       const struct http_config *hc, const struct logger *lg, char **token,
                       time_t *expires_at, struct cred_error *e)
{
    static const enum cred_kind order[] = { CRED_SECRET, CRED_CERTIFICATE, CRED_WORKLOAD,
                                            CRED_MANAGED, CRED_CLI };
    char tried[sizeof(e->msg)] = "";
    size_t n = 0;

    *out = NULL;
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        int rc;

        if (order[i] == CRED_CERTIFICATE && s->client_secret)
            continue; /* the environment credential took the secret */
        rc = try_kind(order[i], out, s, scope, hc, lg, token, expires_at, e);
        if (rc == 0) {
            log_info(lg, "signed in with the %s (DefaultAzureCredential order)",
                     cred_kind_describe(order[i]));
            return 0;
        }
        if (!e->unavailable) { /* set up, but failed: say which */
            char msg[sizeof(e->msg)];

            snprintf(msg, sizeof(msg), "%s", e->msg);
            snprintf(e->msg, sizeof(e->msg), "%.64s: %.900s", cred_kind_describe(order[i]), msg);
            return rc;
        }
        if (n < sizeof(tried))
            n += (size_t)snprintf(tried + n, sizeof(tried) - n, "%s%s (%.160s)", n ? "; " : "",
                                  kind_names[order[i]], e->msg);
    }
    return fail(e, -ENOENT,
                "no credential found: give AccountKey or SharedAccessSignature, "
                "or set up a sign-in (aztfs(1), AUTHENTICATION). Tried: %s",
                tried);
}
