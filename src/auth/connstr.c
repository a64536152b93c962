/* auth/connstr.c - Azure connection strings and aztfs config files -> an account description. */
#include "auth/auth.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

/* Largest config file connstr_load_file accepts. */
#define CONFIG_MAX (64 * 1024)

/* The recognised fields of one connection string, pointing into a working
 * copy of it (NULL when absent). */
struct fields {
    const char *protocol;       /* DefaultEndpointsProtocol */
    const char *name;           /* AccountName */
    const char *key;            /* AccountKey (base64) */
    const char *endpoint;       /* TableEndpoint */
    const char *suffix;         /* EndpointSuffix */
    const char *sas;            /* SharedAccessSignature */
    const char *devstore;       /* UseDevelopmentStorage */
    const char *service;        /* Service (aztfs's own: storage or cosmos) */
    const char *auth[AS_COUNT]; /* sign-in settings (auth_setting_names) */
};

const char *const auth_setting_names[AS_COUNT] = {
    "Auth",
    "AZURE_TENANT_ID",
    "AZURE_CLIENT_ID",
    "AZURE_CLIENT_SECRET",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "AZURE_CLIENT_CERTIFICATE_PASSWORD",
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_AUTHORITY_HOST",
};

/* printf into ERRBUF (if any); always returns RC so callers can
 * "return seterr(...)". */
__attribute__((format(printf, 4, 5))) static int seterr(int rc, char *errbuf, size_t errlen,
                                                        const char *fmt, ...)
{
    va_list ap;

    if (errbuf && errlen) {
        va_start(ap, fmt);
        vsnprintf(errbuf, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* Free every member, wiping key and SAS first; zeroes *acct. */
void account_free(struct account *acct)
{
    if (!acct)
        return;
    secret_free(acct->key, acct->key_len);
    secret_str_free(acct->sas);
    for (int i = 0; i < AS_COUNT; i++)
        secret_str_free(acct->auth[i]);
    free(acct->name);
    free(acct->endpoint);
    free(acct->scheme);
    free(acct->host);
    free(acct->base_path);
    free(acct->service);
    memset(acct, 0, sizeof(*acct));
}

/* Trim ASCII whitespace from both ends of S in place; returns the new start. */
static char *trim(char *s)
{
    char *e;

    while (*s && isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    *e = '\0';
    return s;
}

/* strndup that returns NULL only on allocation failure. */
static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);

    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Store VALUE for the recognised KEY in F. Returns 0, 1 if KEY is not one
 * we know (ignored), or -EINVAL if the key was already given. */
static int set_field(struct fields *f, const char *key, const char *value, char *errbuf,
                     size_t errlen)
{
    static const struct {
        const char *name;
        size_t off;
    } known[] = {
        { "DefaultEndpointsProtocol", offsetof(struct fields, protocol) },
        { "AccountName", offsetof(struct fields, name) },
        { "AccountKey", offsetof(struct fields, key) },
        { "TableEndpoint", offsetof(struct fields, endpoint) },
        { "EndpointSuffix", offsetof(struct fields, suffix) },
        { "SharedAccessSignature", offsetof(struct fields, sas) },
        { "UseDevelopmentStorage", offsetof(struct fields, devstore) },
        { "Service", offsetof(struct fields, service) },
    };
    size_t i;

    for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        const char **slot;

        if (strcasecmp(key, known[i].name) != 0)
            continue;
        slot = (const char **)((char *)f + known[i].off);
        if (*slot)
            return seterr(-EINVAL, errbuf, errlen, "%s is given more than once", known[i].name);
        *slot = value;
        return 0;
    }
    for (i = 0; i < AS_COUNT; i++) {
        if (strcasecmp(key, auth_setting_names[i]) != 0)
            continue;
        if (f->auth[i])
            return seterr(-EINVAL, errbuf, errlen, "%s is given more than once",
                          auth_setting_names[i]);
        f->auth[i] = value;
        return 0;
    }
    return 1;
}

/* Split the working copy BUF (modified in place) into F. Segments are
 * separated by ';' and counted from 1, empty segments not counted.
 * Returns 0 or -EINVAL. Error messages never quote a value. */
static int split_fields(char *buf, struct fields *f, char *errbuf, size_t errlen)
{
    char *seg = buf, *next, *eq, *key, *value;
    unsigned n = 0;
    int rc;

    for (; seg; seg = next) {
        next = strchr(seg, ';');
        if (next)
            *next++ = '\0';
        seg = trim(seg);
        if (!*seg)
            continue;
        n++;
        eq = strchr(seg, '=');
        if (!eq)
            return seterr(-EINVAL, errbuf, errlen, "segment %u has no '='", n);
        *eq = '\0';
        key = trim(seg);
        value = trim(eq + 1);
        if (!*key)
            return seterr(-EINVAL, errbuf, errlen, "segment %u has an empty name", n);
        rc = set_field(f, key, value, errbuf, errlen);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Is NAME usable as an account name (non-empty; letters, digits, '-')? */
static int valid_account_name(const char *name)
{
    const char *p;

    if (!*name)
        return 0;
    for (p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-')
            return 0;
    return 1;
}

/* Fill acct->endpoint, scheme, host and base_path from the URL EP, parsed
 * by libcurl (curl_url): it must be http:// or https:// (any case), have a
 * non-empty host right after the "//" (curl would take "https:///h" as
 * host h), no query or fragment, no user info, and be a URL curl accepts
 * (no whitespace or control characters, a numeric port). Trailing '/' are
 * dropped. The stored endpoint is rebuilt from the parts with the scheme
 * in lower case. Returns 0, -EINVAL or -ENOMEM. */
static int set_endpoint(struct account *acct, const char *ep, const char *what, char *errbuf,
                        size_t errlen)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *extra = NULL;
    const char *sep = strstr(ep, "://");
    CURLUcode uc;
    size_t plen;
    int rc;

    if (!u)
        return seterr(-ENOMEM, errbuf, errlen, "out of memory");
    uc = curl_url_set(u, CURLUPART_URL, ep, CURLU_NON_SUPPORT_SCHEME);
    if (uc == CURLUE_OK)
        uc = curl_url_get(u, CURLUPART_SCHEME, &scheme, 0);
    if (!sep || (uc == CURLUE_OK && strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0))
        rc = seterr(-EINVAL, errbuf, errlen, "%s must be an http:// or https:// URL", what);
    else if (sep[3] == '/' || uc == CURLUE_NO_HOST)
        rc = seterr(-EINVAL, errbuf, errlen, "%s has no host", what);
    else if (uc == CURLUE_OUT_OF_MEMORY)
        rc = seterr(-ENOMEM, errbuf, errlen, "out of memory");
    else if (uc != CURLUE_OK)
        rc = seterr(-EINVAL, errbuf, errlen, "%s is not a valid URL: %s", what,
                    curl_url_strerror(uc));
    else if (curl_url_get(u, CURLUPART_QUERY, &extra, 0) == CURLUE_OK ||
             curl_url_get(u, CURLUPART_FRAGMENT, &extra, 0) == CURLUE_OK)
        rc = seterr(-EINVAL, errbuf, errlen, "%s must not carry a query string or fragment", what);
    else if (curl_url_get(u, CURLUPART_USER, &extra, 0) == CURLUE_OK)
        rc = seterr(-EINVAL, errbuf, errlen, "%s must not contain user information", what);
    else if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
             curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
        rc = seterr(-ENOMEM, errbuf, errlen, "out of memory");
    else {
        curl_url_get(u, CURLUPART_PORT, &port, 0); /* only when given */
        for (plen = strlen(path); plen > 0 && path[plen - 1] == '/'; plen--)
            ;
        acct->scheme = strdup(scheme);
        acct->base_path = dup_n(path, plen);
        if (asprintf(&extra, "%s%s%s", host, port ? ":" : "", port ? port : "") < 0)
            extra = NULL;
        acct->host = extra; /* taken */
        if (extra &&
            asprintf(&acct->endpoint, "%s://%s%s", scheme, extra,
                     acct->base_path ? acct->base_path : "") < 0)
            acct->endpoint = NULL;
        extra = NULL;
        rc = acct->scheme && acct->base_path && acct->endpoint ?
            0 :
            seterr(-ENOMEM, errbuf, errlen, "out of memory");
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(extra);
    curl_url_cleanup(u);
    return rc;
}

/* Account name for a SAS without AccountName: the first path segment of a
 * path-style endpoint, else the first label of the host, unless the host
 * is an IP address or "localhost" (then nothing can be derived).
 * Returns a malloc'd name, or NULL with *rc set (-EINVAL / -ENOMEM). */
static char *derive_name(const struct account *acct, int *rc)
{
    const char *s, *p;
    size_t n;
    char *name;

    if (acct->base_path[0]) {
        s = acct->base_path + 1;
        n = strcspn(s, "/");
    } else {
        s = acct->host;
        n = strcspn(s, ".:");
        if (s[0] == '[' || (n == 9 && strncasecmp(s, "localhost", 9) == 0)) {
            *rc = -EINVAL;
            return NULL;
        }
        for (p = s; *p && *p != ':'; p++)
            if (!isdigit((unsigned char)*p) && *p != '.')
                break;
        if (!*p || *p == ':') { /* dotted IPv4 address */
            *rc = -EINVAL;
            return NULL;
        }
    }
    name = dup_n(s, n);
    if (!name) {
        *rc = -ENOMEM;
        return NULL;
    }
    if (!valid_account_name(name)) {
        free(name);
        *rc = -EINVAL;
        return NULL;
    }
    return name;
}

/* Set up the well-known development storage account. Returns 0, -EINVAL or -ENOMEM. */
static int use_devstore(const struct fields *f, struct account *acct, char *errbuf, size_t errlen)
{
    int rc;

    if (strcasecmp(f->devstore, "true") != 0)
        return seterr(-EINVAL, errbuf, errlen, "UseDevelopmentStorage must be true or false");
    if (f->name || f->key || f->sas || f->endpoint || f->suffix || f->protocol)
        return seterr(-EINVAL, errbuf, errlen,
                      "UseDevelopmentStorage=true cannot be combined with other settings;"
                      " give AccountName, AccountKey and TableEndpoint instead");
    acct->devstore = 1;
    acct->name = strdup(DEVSTORE_ACCOUNT);
    if (!acct->name)
        return seterr(-ENOMEM, errbuf, errlen, "out of memory");
    rc = b64_decode(DEVSTORE_KEY, &acct->key, &acct->key_len);
    if (rc < 0)
        return seterr(rc, errbuf, errlen, "cannot decode the development storage key");
    return set_endpoint(acct, DEVSTORE_ENDPOINT, "the development storage endpoint", errbuf,
                        errlen);
}

/* Check and store the credentials (AccountKey or SharedAccessSignature, at
 * most one: with neither, requests are signed in with Microsoft Entra ID).
 * Returns 0, -EINVAL or -ENOMEM; never quotes a secret. */
static int set_credentials(const struct fields *f, struct account *acct, char *errbuf,
                           size_t errlen)
{
    const char *sas, *p;
    int rc;

    if (f->key && f->sas)
        return seterr(-EINVAL, errbuf, errlen,
                      "give either AccountKey or SharedAccessSignature, not both");
    if (!f->key && !f->sas)
        return 0;
    if (f->key) {
        if (!*f->key)
            return seterr(-EINVAL, errbuf, errlen, "AccountKey is empty");
        rc = b64_decode(f->key, &acct->key, &acct->key_len);
        if (rc == -ENOMEM)
            return seterr(rc, errbuf, errlen, "out of memory");
        if (rc < 0)
            return seterr(rc, errbuf, errlen, "AccountKey is not valid base64");
        return 0;
    }
    sas = f->sas[0] == '?' ? f->sas + 1 : f->sas;
    if (!*sas)
        return seterr(-EINVAL, errbuf, errlen, "SharedAccessSignature is empty");
    for (p = sas; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == '#' || (unsigned char)*p == 0x7f)
            return seterr(-EINVAL, errbuf, errlen,
                          "SharedAccessSignature contains a space, control character or '#'");
    acct->sas = strdup(sas);
    if (!acct->sas)
        return seterr(-ENOMEM, errbuf, errlen, "out of memory");
    return 0;
}

/* Build the endpoint and account name for a non-devstore string. */
static int set_address(const struct fields *f, struct account *acct, char *errbuf, size_t errlen)
{
    const char *proto = f->protocol ? f->protocol : "https";
    const char *suffix = f->suffix ? f->suffix : "core.windows.net";
    const char *p;
    char *url;
    size_t len;
    int rc = 0;

    if (strcasecmp(proto, "https") != 0 && strcasecmp(proto, "http") != 0)
        return seterr(-EINVAL, errbuf, errlen, "DefaultEndpointsProtocol must be http or https");
    if (f->name && !valid_account_name(f->name))
        return seterr(-EINVAL, errbuf, errlen,
                      "AccountName must be non-empty letters, digits and '-'");

    if (f->endpoint) {
        if (!*f->endpoint)
            return seterr(-EINVAL, errbuf, errlen, "TableEndpoint is empty");
        rc = set_endpoint(acct, f->endpoint, "TableEndpoint", errbuf, errlen);
        if (rc < 0)
            return rc;
        if (f->name) {
            acct->name = strdup(f->name);
            if (!acct->name)
                return seterr(-ENOMEM, errbuf, errlen, "out of memory");
            return 0;
        }
        if (acct->key)
            return seterr(-EINVAL, errbuf, errlen,
                          "AccountName is required with AccountKey (it is part of the signature)");
        acct->name = derive_name(acct, &rc);
        if (!acct->name)
            return seterr(rc, errbuf, errlen,
                          rc == -ENOMEM ?
                              "out of memory" :
                              "cannot derive the account name from TableEndpoint; set AccountName");
        return 0;
    }

    if (!f->name)
        return seterr(-EINVAL, errbuf, errlen, "AccountName or TableEndpoint is required");
    if (!*suffix)
        return seterr(-EINVAL, errbuf, errlen, "EndpointSuffix is empty");
    for (p = suffix; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != ':')
            return seterr(-EINVAL, errbuf, errlen,
                          "EndpointSuffix must be a host name (letters, digits, '.', '-')");
    len = strlen(proto) + 3 + strlen(f->name) + 7 + strlen(suffix) + 1;
    url = malloc(len);
    if (!url)
        return seterr(-ENOMEM, errbuf, errlen, "out of memory");
    snprintf(url, len, "%s://%s.table.%s", proto, f->name, suffix);
    rc = set_endpoint(acct, url, "the endpoint built from AccountName and EndpointSuffix", errbuf,
                      errlen);
    free(url);
    if (rc < 0)
        return rc;
    acct->name = strdup(f->name);
    if (!acct->name)
        return seterr(-ENOMEM, errbuf, errlen, "out of memory");
    return 0;
}

/* Parse connection string S into the zeroed *ACCT (see auth/auth.h).
 * The working copy of S is wiped before it is freed. */
int connstr_parse(const char *s, struct account *acct, char *errbuf, size_t errlen)
{
    struct fields f;
    char *buf = NULL;
    size_t len = 0;
    int rc;

    if (errbuf && errlen)
        errbuf[0] = '\0';
    if (!s || !acct)
        return seterr(-EINVAL, errbuf, errlen, "no connection string");
    memset(acct, 0, sizeof(*acct));
    memset(&f, 0, sizeof(f));
    len = strlen(s);
    buf = strdup(s);
    if (!buf) {
        rc = seterr(-ENOMEM, errbuf, errlen, "out of memory");
        goto fail;
    }
    rc = split_fields(buf, &f, errbuf, errlen);
    if (rc < 0)
        goto fail;

    if (f.devstore && strcasecmp(f.devstore, "false") != 0) {
        rc = use_devstore(&f, acct, errbuf, errlen);
        if (rc < 0)
            goto fail;
        goto service;
    }
    rc = set_credentials(&f, acct, errbuf, errlen);
    if (rc < 0)
        goto fail;
    rc = set_address(&f, acct, errbuf, errlen);
    if (rc < 0)
        goto fail;
    for (int i = 0; i < AS_COUNT; i++)
        if (f.auth[i] && *f.auth[i] && !(acct->auth[i] = strdup(f.auth[i]))) {
            rc = seterr(-ENOMEM, errbuf, errlen, "out of memory");
            goto fail;
        }
service:
    if (f.service && *f.service && !(acct->service = strdup(f.service))) {
        rc = seterr(-ENOMEM, errbuf, errlen, "out of memory");
        goto fail;
    }
    secret_free(buf, len);
    return 0;
fail:
    account_free(acct);
    secret_free(buf, len);
    return rc;
}

/* Does the config that produced ACCT hold a secret? Any SAS or any
 * AccountKey written in the file does (even the published emulator key: a
 * rule without exceptions is the one people can check); only
 * UseDevelopmentStorage=true, where the key is implied, does not. Decided
 * from the parsed setting, never from the text (which could say
 * "UseDevelopmentStorage=false" next to a real key). */
static int holds_secret(const struct account *acct)
{
    return acct->sas || (acct->key && !acct->devstore) || acct->auth[AS_CLIENT_SECRET] ||
        acct->auth[AS_CERTIFICATE_PASSWORD];
}

/* Read all of FD (a regular file) into a malloc'd NUL-terminated buffer of
 * at most CONFIG_MAX bytes. Returns 0, -EFBIG, -EINVAL (NUL byte), -ENOMEM
 * or the read error. */
static int read_all(int fd, char **out, size_t *out_len)
{
    char *buf;
    size_t len = 0;
    ssize_t n;
    int rc;

    buf = malloc(CONFIG_MAX + 2);
    if (!buf)
        return -ENOMEM;
    for (;;) {
        n = read(fd, buf + len, CONFIG_MAX + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            goto fail;
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > CONFIG_MAX) {
            rc = -EFBIG;
            goto fail;
        }
    }
    buf[len] = '\0';
    if (memchr(buf, '\0', len)) {
        rc = -EINVAL;
        goto fail;
    }
    *out = buf;
    *out_len = len;
    return 0;
fail:
    secret_free(buf, CONFIG_MAX + 2);
    return rc;
}

/* Join the non-blank lines of TEXT that do not start with '#' (after
 * leading whitespace) with ';' into a malloc'd string (TEXT is modified).
 * Returns NULL on allocation failure. */
static char *join_lines(char *text, size_t len)
{
    char *out, *line, *next, *o;

    out = malloc(len + 2);
    if (!out)
        return NULL;
    o = out;
    for (line = text; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        line = trim(line); /* also drops a '\r' */
        if (!*line || *line == '#')
            continue;
        len = strlen(line);
        memcpy(o, line, len);
        o += len;
        *o++ = ';';
    }
    *o = '\0';
    return out;
}

/* Load config file PATH into the zeroed *ACCT (see auth/auth.h). Error
 * messages start with the file name. Returns 0, -EACCES (secret in a file
 * open to group/others), -ENOENT and other open/read errors, -EINVAL
 * (not a regular file, NUL byte, bad content), -EFBIG or -ENOMEM. */
int connstr_load_file(const char *path, struct account *acct, char *errbuf, size_t errlen)
{
    char msg[256];
    char *text = NULL, *joined = NULL;
    size_t len = 0, jlen = 0;
    struct stat st;
    int fd = -1, rc;

    if (errbuf && errlen)
        errbuf[0] = '\0';
    if (!path || !acct)
        return seterr(-EINVAL, errbuf, errlen, "no config file name");
    memset(acct, 0, sizeof(*acct));

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        rc = -errno;
        seterr(rc, errbuf, errlen, "cannot open config file %s: %s", path, strerror(-rc));
        goto fail;
    }
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        seterr(rc, errbuf, errlen, "cannot stat config file %s: %s", path, strerror(-rc));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = seterr(-EINVAL, errbuf, errlen, "config file %s is not a regular file", path);
        goto fail;
    }
    rc = read_all(fd, &text, &len);
    if (rc == -EFBIG)
        seterr(rc, errbuf, errlen, "config file %s is larger than %d bytes", path, CONFIG_MAX);
    else if (rc == -EINVAL)
        seterr(rc, errbuf, errlen, "config file %s contains a NUL byte", path);
    else if (rc < 0)
        seterr(rc, errbuf, errlen, "cannot read config file %s: %s", path, strerror(-rc));
    if (rc < 0)
        goto fail;

    joined = join_lines(text, len);
    if (!joined) {
        rc = seterr(-ENOMEM, errbuf, errlen, "out of memory");
        goto fail;
    }
    jlen = strlen(joined);
    rc = connstr_parse(joined, acct, msg, sizeof(msg));
    if (rc < 0) {
        seterr(rc, errbuf, errlen, "config file %s: %s", path, msg);
        goto fail;
    }
    if ((st.st_mode & 077) && holds_secret(acct)) {
        rc = seterr(-EACCES, errbuf, errlen,
                    "config file %s is readable or writable by group or others"
                    " and holds a secret; run chmod 600 %s",
                    path, path);
        goto fail;
    }
    rc = 0;
    goto out;
fail:
    account_free(acct);
out:
    if (fd >= 0)
        close(fd);
    secret_free(text, len);
    secret_free(joined, jlen);
    return rc;
}

/* Loopback check of the endpoint host; see auth/auth.h. */
int account_is_loopback(const struct account *acct)
{
    const char *h = acct->host;
    size_t n;

    if (!h)
        return 0;
    if (h[0] == '[') /* [::1] or [::1]:port */
        return strncmp(h, "[::1]", 5) == 0 && (h[5] == '\0' || h[5] == ':');
    n = strcspn(h, ":"); /* drop the port */
    if (n == 9 && strncasecmp(h, "localhost", 9) == 0)
        return 1;
    if (strncmp(h, "127.", 4) != 0)
        return 0;
    for (size_t i = 4; i < n; i++) /* 127.a.b.c: digits and dots */
        if (!isdigit((unsigned char)h[i]) && h[i] != '.')
            return 0;
    return 1;
}
