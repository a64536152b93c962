/* test_credential.c - credential settings and set-up (no network), and the
 * token cache over the Azure CLI credential with a stand-in `az` on PATH:
 * concurrent callers share one fetch, a refused token is fetched again, a
 * failed fetch is held and reported. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "auth/auth.h"
#include "tap.h"

static char dir[] = "/tmp/aztfs-test-cred-XXXXXX";
static const struct http_config hc = { .connect_timeout_ms = 1000, .request_timeout_ms = 5000 };
static const struct logger quiet = { .level = LOG_LVL_QUIET };

/* Make a credential of KIND from S; returns rc, E filled. */
static int make(enum cred_kind kind, const struct cred_settings *s, struct cred_error *e)
{
    struct credential *c = NULL;
    int rc = credential_new(&c, kind, s, "https://storage.azure.com/.default", &hc, &quiet, e);

    ok((rc == 0) == (c != NULL), "credential_new: a credential exactly on success");
    credential_free(c);
    return rc;
}

static void test_setup(void)
{
    struct cred_settings s = { 0 };
    struct cred_error e;
    enum cred_kind k;
    int rc;

    ok(cred_kind_parse("managed", &k) == 0 && k == CRED_MANAGED, "auth=managed");
    ok(cred_kind_parse("key", &k) == -EINVAL, "auth=key is no Entra credential");

    is_int(make(CRED_MANAGED, &s, &e), 0,
           "managed identity: the default IMDS (plain http) is "
           "accepted (%s)",
           e.msg);
    rc = make(CRED_SECRET, &s, &e);
    ok(rc == -ENODATA && e.unavailable && strstr(e.msg, "AZURE_CLIENT_SECRET is not set"),
       "secret: missing setting is 'unavailable' (%s)", e.msg);
    s.client_secret = "x";
    rc = make(CRED_SECRET, &s, &e);
    ok(rc == -ENODATA && strstr(e.msg, "AZURE_TENANT_ID is not set"), "secret: no tenant (%s)",
       e.msg);
    s.tenant_id = "t/../evil";
    s.client_id = "c";
    rc = make(CRED_SECRET, &s, &e);
    ok(rc == -EINVAL && !e.unavailable, "secret: a tenant with '/' is refused (%s)", e.msg);
    s.tenant_id = "contoso.onmicrosoft.com";
    is_int(make(CRED_SECRET, &s, &e), 0, "secret: set up");
    s.authority_host = "http://login.example.com";
    rc = make(CRED_SECRET, &s, &e);
    ok(rc == -EINVAL && strstr(e.msg, "must use https"), "http authority refused (%s)", e.msg);
    s.authority_host = "http://127.0.0.1:8080/";
    is_int(make(CRED_SECRET, &s, &e), 0, "http authority on loopback accepted");
    s.authority_host = NULL;
    s.identity_endpoint = "http://10.0.0.1/msi/token";
    s.identity_header = "h";
    rc = make(CRED_MANAGED, &s, &e);
    ok(rc == -EINVAL && strstr(e.msg, "IDENTITY_ENDPOINT"),
       "plain http IDENTITY_ENDPOINT off "
       "loopback refused (%s)",
       e.msg);
    s.certificate_path = "/nonexistent.pem";
    rc = make(CRED_CERTIFICATE, &s, &e);
    ok(rc == -EINVAL && strstr(e.msg, "/nonexistent.pem"), "certificate: unreadable file (%s)",
       e.msg);
    rc = make(CRED_WORKLOAD, &s, &e);
    ok(rc == -ENODATA && strstr(e.msg, "AZURE_FEDERATED_TOKEN_FILE"), "workload: no file");
}

/* The stand-in az: counts its runs in DIR/runs, answers a token that
 * expires in LIFE seconds after 0.3 s, or fails when DIR/fail exists. */
static void write_az(void)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/az", dir);
    f = fopen(path, "w");
    fprintf(f,
            "#!/bin/sh\n"
            "echo run >> %s/runs\n"
            "/bin/sleep 0.3\n"
            "if [ -e %s/fail ]; then echo 'ERROR: Please run az login' >&2; exit 1; fi\n"
            "n=$(/usr/bin/wc -l < %s/runs)\n"
            "printf '{\"accessToken\":\"tok%%s\",\"expires_on\":%%s}' $n "
            "$(( $(/bin/date +%%s) + 3600 ))\n",
            dir, dir, dir);
    fclose(f);
    chmod(path, 0755);
}

static int runs(void)
{
    char path[256], line[64];
    int n = 0;
    FILE *f;

    snprintf(path, sizeof(path), "%s/runs", dir);
    if (!(f = fopen(path, "r")))
        return 0;
    while (fgets(line, sizeof(line), f))
        n++;
    fclose(f);
    return n;
}

struct caller {
    struct token_cache *c;
    char *line;
    unsigned long gen;
    int rc;
};

static void *call(void *p)
{
    struct caller *k = p;

    k->rc = token_cache_header(k->c, &k->line, &k->gen, NULL, 0);
    return NULL;
}

static void test_cache(void)
{
    struct cred_settings s = { 0 };
    struct cred_error e;
    struct credential *cred;
    struct token_cache *c;
    struct caller k[8];
    pthread_t t[8];
    char path[256], err[300], *line;
    unsigned long gen, fetched, failed;
    int same = 1, rc;

    write_az();
    setenv("PATH", dir, 1);
    rc = credential_new(&cred, CRED_CLI, &s, "https://storage.azure.com/.default", &hc, &quiet, &e);
    is_int(rc, 0, "cli credential");
    if (rc < 0 || token_cache_new(&c, cred, NULL, 0, &quiet) < 0)
        return;
    for (int i = 0; i < 8; i++) {
        k[i] = (struct caller){ .c = c };
        pthread_create(&t[i], NULL, call, &k[i]);
    }
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 8; i++)
        same &= k[i].rc == 0 && k[i].line && strcmp(k[i].line, k[0].line) == 0;
    ok(same, "8 concurrent callers get the same header");
    is_str(k[0].line, "Authorization: Bearer tok1", "the header line");
    is_int(runs(), 1, "8 concurrent callers: one az run");
    rc = token_cache_header(c, &line, &gen, NULL, 0);
    ok(rc == 0 && runs() == 1, "a fresh token is reused: no new run");
    free(line);
    token_cache_rejected(c, gen + 7);
    rc = token_cache_header(c, &line, &gen, NULL, 0);
    ok(rc == 0 && runs() == 1, "a refusal of another generation changes nothing");
    free(line);
    token_cache_rejected(c, gen);
    snprintf(path, sizeof(path), "%s/fail", dir);
    fclose(fopen(path, "w"));
    rc = token_cache_header(c, &line, &gen, err, sizeof(err));
    ok(rc < 0 && line == NULL && strstr(err, "az login"),
       "refused token, failing az: the "
       "error (%s)",
       err);
    rc = token_cache_header(c, &line, &gen, err, sizeof(err));
    ok(rc < 0 && runs() == 2, "the failure is held: no new run at once");
    unlink(path);
    sleep(5);
    rc = token_cache_header(c, &line, &gen, err, sizeof(err));
    ok(rc == 0 && line && strcmp(line, "Authorization: Bearer tok3") == 0,
       "after the hold: fetched again (%s)", line ? line : err);
    free(line);
    token_cache_counts(c, &fetched, &failed);
    ok(fetched == 2 && failed == 1, "counts: %lu fetched, %lu failed", fetched, failed);
    for (int i = 0; i < 8; i++)
        free(k[i].line);
    token_cache_free(c);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        ok(0, "mkdtemp");
        return done_testing();
    }
    test_setup();
    test_cache();
    if (fork() == 0)
        execlp("/bin/rm", "rm", "-rf", dir, (char *)NULL);
    return done_testing();
}
