/* test_connstr.c - connection string parsing and config file loading. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth/auth.h"
#include "util/util.h"
#include "tap.h"

/* base64 of "secret-key-for-tests":
 *   python3 -c 'import base64; print(base64.b64encode(b"secret-key-for-tests"))' */
#define TEST_KEY64 "c2VjcmV0LWtleS1mb3ItdGVzdHM="
#define TEST_KEY "secret-key-for-tests"

/* Is every member of A NULL/0 (the state after a failed parse)? */
static int is_zeroed(const struct account *a)
{
    return !a->name && !a->key && !a->key_len && !a->sas && !a->endpoint && !a->scheme &&
        !a->host && !a->base_path;
}

/* Does A hold the raw key K (LEN bytes)? */
static int key_is(const struct account *a, const void *k, size_t len)
{
    return a->key && a->key_len == len && memcmp(a->key, k, len) == 0;
}

/* Does A hold the decoded development storage key? */
static int key_is_devstore(const struct account *a)
{
    unsigned char *dev = NULL;
    size_t dev_len = 0;
    int r;

    if (b64_decode(DEVSTORE_KEY, &dev, &dev_len) != 0)
        return 0;
    r = key_is(a, dev, dev_len);
    free(dev);
    return r;
}

/* Parse S expecting failure RC; checks the account is left zeroed and that
 * the message is non-empty and does not contain SECRET (if given). */
static void parse_fails(const char *s, int want_rc, const char *want_msg, const char *secret,
                        const char *name)
{
    struct account a;
    char err[256] = "";
    int rc;

    memset(&a, 0, sizeof(a));
    rc = connstr_parse(s, &a, err, sizeof(err));
    is_int(rc, want_rc, "%s: rc", name);
    ok(is_zeroed(&a), "%s: account left zeroed", name);
    if (want_msg)
        is_str(err, want_msg, "%s: message", name);
    else
        ok(err[0] != '\0', "%s: message given (%s)", name, err);
    if (secret)
        ok(strstr(err, secret) == NULL, "%s: message does not contain the secret", name);
    account_free(&a);
}

static void test_devstore(void)
{
    struct account a;
    char err[256] = "";

    memset(&a, 0, sizeof(a));
    is_int(connstr_parse("UseDevelopmentStorage=true", &a, err, sizeof(err)), 0,
           "devstore: parses");
    is_str(a.name, DEVSTORE_ACCOUNT, "devstore: name");
    ok(key_is_devstore(&a), "devstore: key is the decoded DEVSTORE_KEY");
    is_int(a.key_len, 64, "devstore: key is 64 bytes");
    ok(a.sas == NULL, "devstore: no SAS");
    is_str(a.endpoint, "http://127.0.0.1:10002/devstoreaccount1", "devstore: endpoint");
    is_str(a.scheme, "http", "devstore: scheme");
    is_str(a.host, "127.0.0.1:10002", "devstore: host");
    is_str(a.base_path, "/devstoreaccount1", "devstore: base_path");
    account_free(&a);
    ok(is_zeroed(&a), "account_free zeroes the struct");

    is_int(connstr_parse(" usedevelopmentstorage = TRUE ;", &a, err, sizeof(err)), 0,
           "devstore: case-insensitive key and value, whitespace, trailing ';'");
    is_str(a.name, DEVSTORE_ACCOUNT, "devstore: name (variant)");
    account_free(&a);

    parse_fails("UseDevelopmentStorage=yes", -EINVAL, "UseDevelopmentStorage must be true or false",
                NULL, "devstore: bad value");
    parse_fails("UseDevelopmentStorage=true;AccountName=x", -EINVAL, NULL, NULL,
                "devstore: combined with AccountName");
    parse_fails("UseDevelopmentStorage=false", -EINVAL, "AccountName or TableEndpoint is required",
                NULL, "devstore: false means not set");
}

static void test_azure(void)
{
    struct account a;
    char err[256] = "";

    memset(&a, 0, sizeof(a));
    is_int(connstr_parse("DefaultEndpointsProtocol=https;AccountName=myacct;AccountKey=" TEST_KEY64
                         ";EndpointSuffix=core.windows.net",
                         &a, err, sizeof(err)),
           0, "azure: full string parses");
    is_str(a.name, "myacct", "azure: name");
    ok(key_is(&a, TEST_KEY, strlen(TEST_KEY)), "azure: key decoded (value with '=')");
    ok(a.sas == NULL, "azure: no SAS");
    is_str(a.endpoint, "https://myacct.table.core.windows.net", "azure: endpoint");
    is_str(a.scheme, "https", "azure: scheme");
    is_str(a.host, "myacct.table.core.windows.net", "azure: host");
    is_str(a.base_path, "", "azure: base_path empty (host-style)");
    account_free(&a);

    is_int(connstr_parse("AccountName=a1;AccountKey=" TEST_KEY64, &a, err, sizeof(err)), 0,
           "azure: defaults");
    is_str(a.endpoint, "https://a1.table.core.windows.net", "azure: default protocol and suffix");
    account_free(&a);

    is_int(connstr_parse("DefaultEndpointsProtocol=HTTP;AccountName=a1;AccountKey=" TEST_KEY64
                         ";EndpointSuffix=core.chinacloudapi.cn;BlobEndpoint=https://x/;"
                         "QueueEndpoint=https://y/",
                         &a, err, sizeof(err)),
           0, "azure: EndpointSuffix, http, unknown keys ignored");
    is_str(a.endpoint, "http://a1.table.core.chinacloudapi.cn", "azure: endpoint from suffix");
    is_str(a.scheme, "http", "azure: scheme lower-cased");
    is_str(a.host, "a1.table.core.chinacloudapi.cn", "azure: host from suffix");
    account_free(&a);

    is_int(connstr_parse("accountname=a1;ACCOUNTKEY=" TEST_KEY64
                         ";tableENDPOINT=HTTPS://a1.table.core.windows.net/",
                         &a, err, sizeof(err)),
           0, "case-insensitive keys");
    is_str(a.name, "a1", "case-insensitive: name");
    ok(key_is(&a, TEST_KEY, strlen(TEST_KEY)), "case-insensitive: key");
    is_str(a.endpoint, "https://a1.table.core.windows.net", "case-insensitive: endpoint");
    account_free(&a);

    is_int(connstr_parse("  AccountName = a1 ;\t AccountKey =  " TEST_KEY64 "  ;; ; ", &a, err,
                         sizeof(err)),
           0, "whitespace and empty segments");
    is_str(a.name, "a1", "whitespace: name trimmed");
    ok(key_is(&a, TEST_KEY, strlen(TEST_KEY)), "whitespace: key trimmed");
    account_free(&a);
}

static void test_endpoints(void)
{
    struct account a;
    char err[256] = "";

    memset(&a, 0, sizeof(a));
    is_int(connstr_parse("AccountName=devstoreaccount1;AccountKey=" DEVSTORE_KEY
                         ";TableEndpoint=http://127.0.0.1:10002/devstoreaccount1/",
                         &a, err, sizeof(err)),
           0, "path-style TableEndpoint");
    is_str(a.endpoint, "http://127.0.0.1:10002/devstoreaccount1",
           "path-style: trailing / stripped");
    is_str(a.scheme, "http", "path-style: scheme");
    is_str(a.host, "127.0.0.1:10002", "path-style: host");
    is_str(a.base_path, "/devstoreaccount1", "path-style: base_path");
    ok(key_is_devstore(&a), "path-style: dev key");
    account_free(&a);

    is_int(
        connstr_parse("DefaultEndpointsProtocol=https;AccountName=mycosmos;AccountKey=" TEST_KEY64
                      ";TableEndpoint=https://mycosmos.table.cosmos.azure.com:443/;",
                      &a, err, sizeof(err)),
        0, "Cosmos endpoint");
    is_str(a.name, "mycosmos", "Cosmos: name");
    is_str(a.endpoint, "https://mycosmos.table.cosmos.azure.com:443", "Cosmos: endpoint");
    is_str(a.host, "mycosmos.table.cosmos.azure.com:443", "Cosmos: host with port");
    is_str(a.base_path, "", "Cosmos: host-style");
    account_free(&a);

    is_int(connstr_parse("AccountName=x;AccountKey=" TEST_KEY64 ";TableEndpoint=http://h:1/a/b//",
                         &a, err, sizeof(err)),
           0, "deeper path");
    is_str(a.base_path, "/a/b", "deeper path: every trailing / stripped");
    account_free(&a);

    parse_fails("AccountName=x;AccountKey=" TEST_KEY64 ";TableEndpoint=ftp://h/", -EINVAL,
                "TableEndpoint must be an http:// or https:// URL", NULL, "ftp endpoint");
    parse_fails("AccountName=x;AccountKey=" TEST_KEY64 ";TableEndpoint=h.example.com", -EINVAL,
                "TableEndpoint must be an http:// or https:// URL", NULL,
                "endpoint without scheme");
    parse_fails("AccountName=x;AccountKey=" TEST_KEY64
                ";TableEndpoint=https://h/?sv=1&sig=SIGSECRET",
                -EINVAL, "TableEndpoint must not carry a query string or fragment", "SIGSECRET",
                "endpoint with query string");
    parse_fails("AccountName=x;AccountKey=" TEST_KEY64 ";TableEndpoint=https:///p", -EINVAL,
                "TableEndpoint has no host", NULL, "endpoint without host");
    parse_fails("AccountName=x;AccountKey=" TEST_KEY64 ";TableEndpoint=https://u:pw@h/", -EINVAL,
                "TableEndpoint must not contain user information", "pw", "endpoint with user info");
    parse_fails("AccountName=x;AccountKey=" TEST_KEY64 ";TableEndpoint=", -EINVAL,
                "TableEndpoint is empty", NULL, "empty endpoint");
    parse_fails("AccountKey=" TEST_KEY64 ";TableEndpoint=https://acct.table.core.windows.net",
                -EINVAL, "AccountName is required with AccountKey (it is part of the signature)",
                NULL, "key + TableEndpoint without AccountName");
    parse_fails("AccountKey=" TEST_KEY64, -EINVAL, "AccountName or TableEndpoint is required", NULL,
                "key alone");
    parse_fails("AccountName=a.b;AccountKey=" TEST_KEY64, -EINVAL, NULL, NULL, "bad account name");
    parse_fails("AccountName=a;AccountKey=" TEST_KEY64 ";EndpointSuffix=x/y", -EINVAL, NULL, NULL,
                "bad EndpointSuffix");
}

static void test_sas(void)
{
    struct account a;
    char err[256] = "";

    memset(&a, 0, sizeof(a));
    is_int(connstr_parse("TableEndpoint=https://acct.table.core.windows.net/;"
                         "SharedAccessSignature=?sv=2019-02-02&ss=t&srt=sco&sp=rl"
                         "&se=2026-12-31T00:00:00Z&sig=abc%2Bdef%3D==",
                         &a, err, sizeof(err)),
           0, "SAS with host-style TableEndpoint");
    is_str(a.sas, "sv=2019-02-02&ss=t&srt=sco&sp=rl&se=2026-12-31T00:00:00Z&sig=abc%2Bdef%3D==",
           "SAS: leading '?' stripped, '=' and '&' kept");
    ok(a.key == NULL && a.key_len == 0, "SAS: no key");
    is_str(a.name, "acct", "SAS: name derived from the host's first label");
    is_str(a.endpoint, "https://acct.table.core.windows.net", "SAS: endpoint");
    account_free(&a);

    is_int(connstr_parse("TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;"
                         "SharedAccessSignature=sv=x&sig=y",
                         &a, err, sizeof(err)),
           0, "SAS with path-style TableEndpoint");
    is_str(a.name, "devstoreaccount1", "SAS: name derived from the first path segment");
    is_str(a.sas, "sv=x&sig=y", "SAS: without '?' kept as is");
    account_free(&a);

    is_int(connstr_parse("AccountName=other;TableEndpoint=https://acct.table.core.windows.net;"
                         "SharedAccessSignature=sv=x&sig=y",
                         &a, err, sizeof(err)),
           0, "SAS with explicit AccountName");
    is_str(a.name, "other", "SAS: explicit AccountName wins");
    account_free(&a);

    is_int(connstr_parse("AccountName=acct;SharedAccessSignature=sv=x&sig=y", &a, err, sizeof(err)),
           0, "SAS with AccountName and no endpoint");
    is_str(a.endpoint, "https://acct.table.core.windows.net", "SAS: endpoint built from name");
    account_free(&a);

    parse_fails("TableEndpoint=http://127.0.0.1:10002;SharedAccessSignature=sv=x&sig=y", -EINVAL,
                "cannot derive the account name from TableEndpoint; set AccountName", NULL,
                "SAS: IP host without path");
    parse_fails("TableEndpoint=http://localhost:10002/;SharedAccessSignature=sv=x&sig=y", -EINVAL,
                "cannot derive the account name from TableEndpoint; set AccountName", NULL,
                "SAS: localhost without path");
    parse_fails("AccountName=a;SharedAccessSignature=?", -EINVAL, "SharedAccessSignature is empty",
                NULL, "SAS: only '?'");
    parse_fails("AccountName=a;SharedAccessSignature=sv=x&sig=SAS SECRET", -EINVAL, NULL, "SECRET",
                "SAS: space inside");
    parse_fails("AccountName=a;AccountKey=" TEST_KEY64 ";SharedAccessSignature=sv=x&sig=SASSECRET",
                -EINVAL, "give either AccountKey or SharedAccessSignature, not both", "SASSECRET",
                "key and SAS");
}

static void test_errors(void)
{
    struct account a;
    char err[256] = "";

    parse_fails("AccountName=a;AccountKey=NotBase64!!TopSecretKeyMaterial", -EINVAL,
                "AccountKey is not valid base64", "TopSecretKeyMaterial", "bad base64 key");
    parse_fails("AccountName=a;AccountKey=c2VjcmV0LWtleS1mb3ItdGVzdHM", -EINVAL,
                "AccountKey is not valid base64", "c2VjcmV0", "key missing padding");
    parse_fails("AccountName=a;AccountKey=", -EINVAL, "AccountKey is empty", NULL, "empty key");
    /* no key and no SAS: a Microsoft Entra ID sign-in (credential.h) */
    memset(&a, 0, sizeof(a));
    is_int(connstr_parse("AccountName=a", &a, err, sizeof(err)), 0,
           "no key, no SAS: parses (Entra ID sign-in)");
    ok(a.key == NULL && a.sas == NULL && a.name && strcmp(a.name, "a") == 0,
       "no key, no SAS: account without shared secrets");
    account_free(&a);
    parse_fails("", -EINVAL, "AccountName or TableEndpoint is required", NULL, "empty string");
    parse_fails("DefaultEndpointsProtocol=ftp;AccountName=a;AccountKey=" TEST_KEY64, -EINVAL,
                "DefaultEndpointsProtocol must be http or https", NULL, "bad protocol");
    parse_fails("AccountName=a;;AccountKey c2VjcmV0LWtleS1mb3ItdGVzdHMx", -EINVAL,
                "segment 2 has no '='", "c2VjcmV0", "segment without '=' (empty ones not counted)");
    /* A padded key pasted without "=" still has one: the segment becomes an
     * unknown (ignored) field, and the secret must not show up either. */
    memset(&a, 0, sizeof(a));
    is_int(connstr_parse("AccountName=a;AccountKey" TEST_KEY64, &a, err, sizeof(err)), 0,
           "key pasted without '=' but with padding: an ignored field");
    ok(a.key == NULL && a.sas == NULL, "key pasted without '=': no key kept");
    account_free(&a);
    parse_fails("AccountName=a;x=1;TopSecretKeyMaterial", -EINVAL, "segment 3 has no '='",
                "TopSecretKeyMaterial", "segment 3 without '='");
    parse_fails("=abc;AccountName=a", -EINVAL, "segment 1 has an empty name", NULL, "empty name");
    parse_fails("AccountName=a;AccountKey=" TEST_KEY64 ";accountkey=" DEVSTORE_KEY, -EINVAL,
                "AccountKey is given more than once", TEST_KEY64, "duplicate key");
}

/* Write CONTENT to a new temp file with MODE; PATH receives its name. */
static int write_tmp(const char *content, mode_t mode, char path[64])
{
    size_t len = strlen(content);
    int fd;

    snprintf(path, 64, "/tmp/aztfs-test-connstr-XXXXXX");
    fd = mkstemp(path);
    if (fd < 0)
        return -1;
    if (write(fd, content, len) != (ssize_t)len || fchmod(fd, mode) < 0) {
        close(fd);
        unlink(path);
        return -1;
    }
    close(fd);
    return 0;
}

/* Load CONTENT from a temp file of MODE; returns rc, fills *A and ERR. */
static int load_tmp(const char *content, mode_t mode, struct account *a, char *err, size_t errlen)
{
    char path[64];
    int rc;

    if (write_tmp(content, mode, path) < 0) {
        ok(0, "cannot create temp file");
        return -999;
    }
    memset(a, 0, sizeof(*a));
    rc = connstr_load_file(path, a, err, errlen);
    unlink(path);
    return rc;
}

static void test_files(void)
{
    struct account a;
    char err[512] = "", path[64], want[512];
    char *big;
    int rc;

    memset(&a, 0, sizeof(a));
    rc = load_tmp("DefaultEndpointsProtocol=https;AccountName=myacct;AccountKey=" TEST_KEY64
                  ";EndpointSuffix=core.windows.net\n",
                  0600, &a, err, sizeof(err));
    is_int(rc, 0, "file: connection string form, 0600");
    is_str(a.endpoint, "https://myacct.table.core.windows.net", "file: endpoint");
    ok(key_is(&a, TEST_KEY, strlen(TEST_KEY)), "file: key");
    account_free(&a);

    rc = load_tmp("# aztfs account\r\nDefaultEndpointsProtocol=https;AccountName=myacct;\r\n"
                  "AccountKey=" TEST_KEY64 ";\r\n",
                  0400, &a, err, sizeof(err));
    is_int(rc, 0, "file: connection string over several lines, CRLF, 0400");
    is_str(a.name, "myacct", "file: name (multi-line)");
    ok(key_is(&a, TEST_KEY, strlen(TEST_KEY)), "file: key (multi-line)");
    account_free(&a);

    rc = load_tmp("# Azure account for aztfs\n\nAccountName = myacct\n   # indented comment\n"
                  "AccountKey=" TEST_KEY64
                  "\n\t\nTableEndpoint=https://myacct.table.core.windows.net/\n",
                  0600, &a, err, sizeof(err));
    is_int(rc, 0, "file: one field per line with comments and blank lines");
    is_str(a.name, "myacct", "file: name (per line)");
    is_str(a.endpoint, "https://myacct.table.core.windows.net", "file: endpoint (per line)");
    account_free(&a);

    rc = write_tmp("AccountName=myacct\nAccountKey=" TEST_KEY64 "\n", 0644, path);
    ok(rc == 0, "file: temp file written");
    rc = connstr_load_file(path, &a, err, sizeof(err));
    is_int(rc, -EACCES, "file: key in a 0644 file -> -EACCES");
    ok(is_zeroed(&a), "file: account zeroed after -EACCES");
    snprintf(want, sizeof(want),
             "config file %s is readable or writable by group or others"
             " and holds a secret; run chmod 600 %s",
             path, path);
    is_str(err, want, "file: -EACCES message names the file and chmod 600");
    ok(strstr(err, TEST_KEY64) == NULL, "file: -EACCES message does not contain the key");
    unlink(path);

    rc = load_tmp("AccountName=a\nSharedAccessSignature=sv=x&sig=y\n", 0640, &a, err, sizeof(err));
    is_int(rc, -EACCES, "file: SAS in a 0640 file -> -EACCES");
    rc = load_tmp("AccountName=a\nAccountKey=" TEST_KEY64 "\n", 0602, &a, err, sizeof(err));
    is_int(rc, -EACCES, "file: key in a 0602 (others may write) file -> -EACCES");

    rc = load_tmp("# Azurite\nUseDevelopmentStorage=true\n", 0644, &a, err, sizeof(err));
    is_int(rc, 0, "file: UseDevelopmentStorage=true in a 0644 file is allowed");
    is_str(a.name, DEVSTORE_ACCOUNT, "file: devstore name");
    account_free(&a);

    rc = load_tmp("AccountName=devstoreaccount1\nAccountKey=" DEVSTORE_KEY
                  "\nTableEndpoint=http://127.0.0.1:10002/devstoreaccount1\n",
                  0644, &a, err, sizeof(err));
    is_int(rc, -EACCES, "file: any AccountKey written out, even the public dev key, needs 0600");
    account_free(&a);

    rc = load_tmp("AccountName=devstoreaccount1\nAccountKey=" DEVSTORE_KEY
                  "\nTableEndpoint=http://127.0.0.1:10002/devstoreaccount1\n",
                  0600, &a, err, sizeof(err));
    is_int(rc, 0, "file: the dev key with explicit TableEndpoint at 0600 is accepted");
    is_str(a.base_path, "/devstoreaccount1", "file: explicit Azurite base_path");
    account_free(&a);

    rc = load_tmp("AccountName=a\nAccountKey\n", 0600, &a, err, sizeof(err));
    is_int(rc, -EINVAL, "file: parse error -> -EINVAL");
    ok(strncmp(err, "config file /tmp/aztfs-test-connstr-", 36) == 0 &&
           strstr(err, ": segment 2 has no '='") != NULL,
       "file: parse error names the file (%s)", err);

    rc = load_tmp("", 0600, &a, err, sizeof(err));
    is_int(rc, -EINVAL, "file: empty file -> -EINVAL");
    ok(strstr(err, "AccountName or TableEndpoint is required") != NULL,
       "file: empty file message (%s)", err);

    /* sign-in settings: kept by name; a secret among them demands mode 0600 */
    rc = load_tmp("AccountName=a\nAuth=secret\nazure_tenant_id=t1\nAZURE_CLIENT_ID=c1\n"
                  "AZURE_CLIENT_SECRET=TopSecretClientValue\n",
                  0600, &a, err, sizeof(err));
    is_int(rc, 0, "file: sign-in settings parse");
    is_str(a.auth[AS_AUTH], "secret", "file: Auth kept");
    is_str(a.auth[AS_TENANT_ID], "t1", "file: AZURE_TENANT_ID kept (name case-insensitive)");
    is_str(a.auth[AS_CLIENT_SECRET], "TopSecretClientValue", "file: AZURE_CLIENT_SECRET kept");
    account_free(&a);
    rc = load_tmp("AccountName=a\nAZURE_CLIENT_SECRET=TopSecretClientValue\n", 0644, &a, err,
                  sizeof(err));
    is_int(rc, -EACCES, "file: client secret in a 0644 file -> -EACCES");
    ok(strstr(err, "chmod 600") && !strstr(err, "TopSecret"), "file: chmod message (%s)", err);
    rc = load_tmp("AccountName=a\nAZURE_CLIENT_CERTIFICATE_PASSWORD=pw\n", 0640, &a, err,
                  sizeof(err));
    is_int(rc, -EACCES, "file: certificate password in a 0640 file -> -EACCES");
    rc = load_tmp("AccountName=a\nAZURE_CLIENT_ID=c1\nAZURE_TENANT_ID=t\n", 0644, &a, err,
                  sizeof(err));
    is_int(rc, 0, "file: IDs alone are no secret: 0644 is fine");
    account_free(&a);
    parse_fails("AccountName=a;AZURE_CLIENT_ID=x;azure_client_id=y", -EINVAL,
                "AZURE_CLIENT_ID is given more than once", NULL, "sign-in setting twice");

    rc = load_tmp("AccountName=a\nAccountKey=NotBase64!!TopSecretKeyMaterial\n", 0600, &a, err,
                  sizeof(err));
    is_int(rc, -EINVAL, "file: bad key -> -EINVAL");
    ok(strstr(err, "TopSecretKeyMaterial") == NULL, "file: message does not contain the key");

    memset(&a, 0, sizeof(a));
    rc = connstr_load_file("/tmp/aztfs-test-connstr-does-not-exist", &a, err, sizeof(err));
    is_int(rc, -ENOENT, "file: missing -> -ENOENT");
    ok(strstr(err, "/tmp/aztfs-test-connstr-does-not-exist") != NULL,
       "file: -ENOENT message names the file");
    ok(is_zeroed(&a), "file: account zeroed after -ENOENT");

    rc = connstr_load_file("/tmp", &a, err, sizeof(err));
    is_int(rc, -EINVAL, "file: directory -> -EINVAL");

    big = malloc(64 * 1024 + 2);
    ok(big != NULL, "file: big buffer");
    if (big) {
        memset(big, '#', 64 * 1024 + 1);
        big[64 * 1024 + 1] = '\0';
        rc = load_tmp(big, 0600, &a, err, sizeof(err));
        is_int(rc, -EFBIG, "file: 64 KiB + 1 -> -EFBIG");
        big[64 * 1024] = '\0';
        memcpy(big, "UseDevelopmentStorage=true\n", 27);
        rc = load_tmp(big, 0600, &a, err, sizeof(err));
        is_int(rc, 0, "file: exactly 64 KiB is accepted");
        account_free(&a);
        free(big);
    }
}

static void test_loopback(void)
{
    static const struct {
        const char *ep;
        int want;
    } cases[] = {
        { "http://127.0.0.1:10002/devstoreaccount1", 1 }, { "http://127.1.2.3", 1 },
        { "http://localhost:10002/devstoreaccount1", 1 }, { "http://LOCALHOST", 1 },
        { "http://[::1]:10002/devstoreaccount1", 1 },     { "http://127.evil.example.com", 0 },
        { "http://10.0.0.1:10002/devstoreaccount1", 0 },  { "http://localhost.example.com", 0 },
        { "https://acct.table.core.windows.net", 0 },     { "http://[::2]:10002/x", 0 },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct account a;
        char err[256], cs[300];

        snprintf(cs, sizeof(cs), "AccountName=devstoreaccount1;AccountKey=%s;TableEndpoint=%s",
                 DEVSTORE_KEY, cases[i].ep);
        memset(&a, 0, sizeof(a));
        if (connstr_parse(cs, &a, err, sizeof(err)) != 0) {
            ok(0, "loopback: %s parses (%s)", cases[i].ep, err);
            continue;
        }
        is_int(account_is_loopback(&a), cases[i].want, "loopback: %s", cases[i].ep);
        account_free(&a);
    }
}

int main(void)
{
    test_devstore();
    test_azure();
    test_endpoints();
    test_sas();
    test_errors();
    test_files();
    test_loopback();
    return done_testing();
}
