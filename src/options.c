/* options.c - aztfs's own command-line options (the rest go to libfuse). */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fspath.h"
#include "options.h"

#define OPT(t, p) { t, offsetof(struct aztfs_opts, p), 1 }

enum { KEY_HELP, KEY_VERSION, KEY_ALLOW_OTHER, KEY_DEFAULT_PERMISSIONS };

#define SCRATCH_SIZE_MAX_MB (1024UL * 1024)   /* 1 TiB: any bigger is a typo */

static const struct fuse_opt opt_spec[] = {
    OPT("config=%s", config),
    OPT("loglevel=%s", loglevel),
    OPT("cache_timeout=%lf", cache_timeout),
    OPT("attr_timeout=%lf", attr_timeout),
    OPT("cache_size=%lu", cache_size_mb),
    OPT("scratch_size=%lu", scratch_size_mb),
    OPT("connect_timeout=%ld", connect_timeout),
    OPT("timeout=%ld", timeout),
    OPT("retries=%d", retries),
    OPT("retry_time=%ld", retry_time),
    OPT("cafile=%s", cafile),
    OPT("merge", merge),
    OPT("allow_http", allow_http),
    OPT("tables=%s", tables),
    OPT("auth=%s", auth),
    OPT("client_id=%s", client_id),
    OPT("no_default_permissions", no_default_permissions),
    /* libfuse's: seen here, and kept for it */
    FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
    FUSE_OPT_KEY("default_permissions", KEY_DEFAULT_PERMISSIONS),
    FUSE_OPT_KEY("-h", KEY_HELP),
    FUSE_OPT_KEY("--help", KEY_HELP),
    FUSE_OPT_KEY("-V", KEY_VERSION),
    FUSE_OPT_KEY("--version", KEY_VERSION),
    /* fstab options that mean something to mount(8) or systemd only */
    FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("comment=", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_END
};

/* Keys that need code: help/version flags and positional arguments. */
static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
    struct aztfs_opts *o = data;

    switch (key) {
    case KEY_HELP:
        o->show_help = 1;
        return 1;            /* keep: libfuse prints its own part */
    case KEY_VERSION:
        o->show_version = 1;
        return 1;
    case KEY_ALLOW_OTHER:
        o->allow_other = 1;
        return 1;
    case KEY_DEFAULT_PERMISSIONS:
        o->default_permissions = 1;
        return 1;
    case FUSE_OPT_KEY_NONOPT:
        if (o->n_positional == 2) {
            fprintf(stderr, "aztfs: too many arguments: '%s'\n", arg);
            return -1;
        }
        o->positional[o->n_positional] = strdup(arg);
        if (!o->positional[o->n_positional])
            return -1;
        o->n_positional++;
        return 0;            /* put back below, once we know which it is */
    case FUSE_OPT_KEY_OPT:
        /* x-* options (x-systemd.*, x-gvfs-*) are for other readers of fstab */
        return strncmp(arg, "x-", 2) == 0 ? 0 : 1;
    default:
        return 1;
    }
}

/* With allow_other, have the kernel check modes (default_permissions)
 * unless the user opted out. Returns 0, -EINVAL (contradiction) or -ENOMEM. */
static int permission_checks(struct fuse_args *args, struct aztfs_opts *o)
{
    if (o->no_default_permissions && o->default_permissions) {
        fprintf(stderr, "aztfs: default_permissions and no_default_permissions "
                "contradict each other: give one\n");
        return -EINVAL;
    }
    if (!o->allow_other || o->default_permissions)
        return 0;
    if (o->no_default_permissions) {
        o->unchecked = 1;
        return 0;
    }
    return fuse_opt_add_arg(args, "-odefault_permissions") == -1 ? -ENOMEM : 0;
}

/* Parse; see options.h. */
int options_parse(struct fuse_args *args, struct aztfs_opts *o)
{
    int rc;

    memset(o, 0, sizeof(*o));
    o->cache_timeout = 30.0;
    o->attr_timeout = NAN;    /* unset: 1, or cache_timeout when smaller */
    o->cache_size_mb = 32;
    o->scratch_size_mb = 64;
    o->connect_timeout = 10;
    o->timeout = 60;
    o->retries = 4;
    o->retry_time = 120;
    if (fuse_opt_parse(args, o, opt_spec, opt_proc) == -1)
        return -EINVAL;
    if (o->n_positional == 2) {
        if (o->config) {
            fprintf(stderr, "aztfs: config file given twice ('%s' and -o config=)\n",
                    o->positional[0]);
            return -EINVAL;
        }
        o->config = o->positional[0];
        o->positional[0] = NULL;
    }
    if (o->n_positional > 0 &&
        fuse_opt_add_arg(args, o->positional[o->n_positional - 1]) == -1)
        return -ENOMEM;
    if ((rc = permission_checks(args, o)) < 0)
        return rc;
    if (o->cache_timeout < 0 || o->cache_timeout > 86400) {
        fprintf(stderr, "aztfs: cache_timeout must be between 0 and 86400 seconds\n");
        return -EINVAL;
    }
    if (isnan(o->attr_timeout))
        o->attr_timeout = o->cache_timeout < 1 ? o->cache_timeout : 1;
    else if (!(o->attr_timeout >= 0 && o->attr_timeout <= 86400)) {
        fprintf(stderr, "aztfs: attr_timeout must be between 0 and 86400 seconds\n");
        return -EINVAL;
    }
    if (o->scratch_size_mb > SCRATCH_SIZE_MAX_MB ||
        o->scratch_size_mb > SIZE_MAX / (1024 * 1024)) {
        fprintf(stderr, "aztfs: scratch_size must be between 0 and %lu MiB\n",
                SCRATCH_SIZE_MAX_MB);
        return -EINVAL;
    }
    if (o->connect_timeout <= 0 || o->timeout <= 0 || o->retry_time <= 0 ||
        o->retries < 0) {
        fprintf(stderr, "aztfs: timeouts must be positive and retries not negative\n");
        return -EINVAL;
    }
    return 0;
}

void options_free(struct aztfs_opts *o)
{
    free(o->config);
    free(o->loglevel);
    free(o->cafile);
    free(o->tables);
    free(o->auth);
    free(o->client_id);
    free(o->positional[0]);
    free(o->positional[1]);
    memset(o, 0, sizeof(*o));
}

/* Split -o tables=; see options.h. */
int options_split_tables(const char *spec, char ***out)
{
    char *copy = strdup(spec), *save = NULL, *tok;
    char **v = calloc(strlen(spec) / 2 + 2, sizeof(*v));
    size_t n = 0;
    int rc = -ENOMEM;

    *out = NULL;
    if (!copy || !v)
        goto fail;
    for (tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
        if (!fspath_valid_table_name(tok)) {
            fprintf(stderr, "aztfs: tables=: '%s' is not a table name (3-63 letters and "
                    "digits, starting with a letter)\n", tok);
            rc = -EINVAL;
            goto fail;
        }
        if (!(v[n++] = strdup(tok)))
            goto fail;
    }
    if (n == 0) {
        fprintf(stderr, "aztfs: tables= names no table (give them as tables=a:b:c)\n");
        rc = -EINVAL;
        goto fail;
    }
    free(copy);
    *out = v;
    return 0;
fail:
    free(copy);
    options_free_tables(v);
    return rc;
}

void options_free_tables(char **tables)
{
    for (size_t i = 0; tables && tables[i]; i++)
        free(tables[i]);
    free(tables);
}

void options_usage(const char *progname)
{
    printf("usage: %s [options] [CONFIGFILE] MOUNTPOINT\n\n"
           "Mounts an Azure Table Storage account: /TABLE/PARTITIONKEY/ROWKEY.json\n"
           "The account comes from -o config=FILE (or CONFIGFILE), else from\n"
           "the environment variable AZURE_STORAGE_CONNECTION_STRING.\n\n"
           "aztfs options:\n"
           "    -o config=FILE          connection string or its fields, one per line\n"
           "    -o loglevel=LEVEL       error, warn, info (default) or debug\n"
           "    -o cache_timeout=SECS   how long listings and entities stay fresh (30)\n"
           "    -o attr_timeout=SECS    how long the kernel keeps a stat (1)\n"
           "    -o cache_size=MIB       memory for cached listings and entities (32)\n"
           "    -o scratch_size=MIB     memory for all scratch files together (64)\n"
           "    -o connect_timeout=SECS TCP/TLS connect timeout (10)\n"
           "    -o timeout=SECS         timeout of one request (60)\n"
           "    -o retries=N            retries of a transient failure (4)\n"
           "    -o retry_time=SECS      no retry starts later than this after the first try (120)\n"
           "    -o cafile=FILE          CA bundle for https endpoints\n"
           "    -o merge                writes to existing entities Merge instead of Replace\n"
           "    -o allow_http           allow plain http to a host that is not loopback\n"
           "    -o tables=A:B           show only these tables (for a SAS that cannot\n"
           "                            list the account's tables)\n"
           "    -o auth=METHOD          key, sas, or a Microsoft Entra ID sign-in: secret,\n"
           "                            certificate, workload, managed, cli (default: the\n"
           "                            key or SAS, else those in DefaultAzureCredential's\n"
           "                            order; see aztfs(1), AUTHENTICATION)\n"
           "    -o client_id=ID         client ID of a user-assigned managed identity\n"
           "    -o uid=N,gid=N,umask=M  owner and permissions of every file\n"
           "    -o allow_other          let other users in; the kernel then checks the\n"
           "                            modes above (default_permissions is implied)\n"
           "    -o no_default_permissions\n"
           "                            with allow_other: no checks, every local user\n"
           "                            acts with the mounter's credentials\n\n",
           progname);
}
