/* options.c - aztfs's own command-line options (the rest go to libfuse). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "names/names.h"
#include "table/table.h"
#include "options.h"

#define OPT(t, p)                            \
    {                                        \
        t, offsetof(struct aztfs_opts, p), 1 \
    }

enum {
    KEY_HELP,
    KEY_VERSION,
    KEY_ALLOW_OTHER,
    KEY_DEFAULT_PERMISSIONS,
    KEY_MANAGED,
    KEY_UMASK,
    KEY_FILE_MODE,
    KEY_DIR_MODE,
    KEY_FSNAME,
    KEY_SUBTYPE,
    KEY_DEBUG
};

#define SCRATCH_SIZE_MAX_MB (1024UL * 1024) /* 1 TiB: any bigger is a typo */

static const struct fuse_opt opt_spec[] = {
    OPT("config=%s", config), OPT("loglevel=%s", loglevel), OPT("cache_timeout=%lf", cache_timeout),
    OPT("negative_timeout=%lf", negative_timeout), OPT("attr_timeout=%lf", attr_timeout),
    OPT("cache_size=%lu", cache_size_mb), OPT("scan_parallel=%d", scan_parallel),
    OPT("fetch_threads=%d", fetch_threads), OPT("scratch_size=%lu", scratch_size_mb),
    OPT("connect_timeout=%ld", connect_timeout), OPT("timeout=%ld", timeout),
    OPT("retries=%d", retries), OPT("retry_time=%ld", retry_time), OPT("cafile=%s", cafile),
    OPT("merge", merge), OPT("allow_http", allow_http), OPT("tables=%s", tables),
    OPT("auth=%s", auth), OPT("client_id=%s", client_id), OPT("service=%s", service),
    OPT("no_default_permissions", no_default_permissions), OPT("logfile=%s", logfile),
    OPT("metrics_file=%s", metrics_file), OPT("metrics_interval=%u", metrics_interval),
    OPT("allow_shared_dirs", allow_shared_dirs), FUSE_OPT_KEY("umask=", KEY_UMASK),
    FUSE_OPT_KEY("file_mode=", KEY_FILE_MODE), FUSE_OPT_KEY("dir_mode=", KEY_DIR_MODE),
    OPT("ino32", ino32), OPT("writeback", writeback), OPT("writeback=%u", writeback_ms),
    OPT("journal_dir=%s", journal_dir), OPT("spool_dir=%s", spool_dir),
    OPT("writeback_queue=%lu", writeback_queue_mb), OPT("writeback_stop=%u", writeback_stop),
    OPT("max_rps=%lf", max_rps), OPT("forget_after=%lu", forget_after), OPT("nonempty", nonempty),
    OPT("unordered", unordered), OPT("uid=%u", uid), OPT("gid=%u", gid),
    /* libfuse's high-level API's, which aztfs answers itself (fs/lowlevel.c) */
    FUSE_OPT_KEY("entry_timeout=", KEY_MANAGED), FUSE_OPT_KEY("ac_attr_timeout=", KEY_MANAGED),
    FUSE_OPT_KEY("kernel_cache", KEY_MANAGED), FUSE_OPT_KEY("auto_cache", KEY_MANAGED),
    FUSE_OPT_KEY("noauto_cache", KEY_MANAGED), FUSE_OPT_KEY("direct_io", KEY_MANAGED),
    FUSE_OPT_KEY("use_ino", KEY_MANAGED), FUSE_OPT_KEY("readdir_ino", KEY_MANAGED),
    FUSE_OPT_KEY("hard_remove", KEY_MANAGED), FUSE_OPT_KEY("nullpath_ok", KEY_MANAGED),
    FUSE_OPT_KEY("modules=", KEY_MANAGED), FUSE_OPT_KEY("subdir=", KEY_MANAGED),
    FUSE_OPT_KEY("noforget", KEY_MANAGED), FUSE_OPT_KEY("remember=", KEY_MANAGED),
    FUSE_OPT_KEY("no_rofd_flush", KEY_MANAGED), FUSE_OPT_KEY("intr", KEY_MANAGED),
    FUSE_OPT_KEY("intr_signal=", KEY_MANAGED),
    /* libfuse's: seen here, and kept for it */
    FUSE_OPT_KEY("allow_other", KEY_ALLOW_OTHER),
    FUSE_OPT_KEY("default_permissions", KEY_DEFAULT_PERMISSIONS),
    FUSE_OPT_KEY("fsname=", KEY_FSNAME), FUSE_OPT_KEY("subtype=", KEY_SUBTYPE),
    FUSE_OPT_KEY("-h", KEY_HELP), FUSE_OPT_KEY("--help", KEY_HELP), FUSE_OPT_KEY("-V", KEY_VERSION),
    FUSE_OPT_KEY("--version", KEY_VERSION), FUSE_OPT_KEY("--debug", KEY_DEBUG),
    /* fstab options that mean something to mount(8) or systemd only */
    FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD), FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD), FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD), FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD), FUSE_OPT_KEY("comment=", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_END
};

/* Parse the octal mode after the '=' of ARG ("umask=027") into *out, up
 * to MAX. Returns 0, or -1 after a message (libfuse's %o would take
 * "0888" as 0). */
static int parse_mode(const char *arg, unsigned max, unsigned *out)
{
    const char *v = strchr(arg, '=') + 1;
    char *end;
    unsigned long m = strtoul(v, &end, 8);

    if (!*v || *end || *v == '-' || *v == '+' || m > max) {
        fprintf(stderr, "aztfs: -o %s: not an octal mode up to %04o\n", arg, max);
        return -1;
    }
    *out = (unsigned)m;
    return 0;
}

/* Keys that need code: help/version flags and positional arguments. */
static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
    struct aztfs_opts *o = data;

    switch (key) {
    case KEY_HELP:
        o->show_help = 1;
        return 1; /* keep: libfuse prints its own part */
    case KEY_VERSION:
        o->show_version = 1;
        return 1;
    case KEY_ALLOW_OTHER:
        o->allow_other = 1;
        return 1;
    case KEY_DEFAULT_PERMISSIONS:
        o->default_permissions = 1;
        return 1;
    case KEY_FSNAME:
        o->fsname_given = 1;
        return 1;
    case KEY_SUBTYPE:
        o->subtype_given = 1;
        return 1;
    case KEY_DEBUG: /* libfuse's lowlevel layer takes --debug, but only -d
                       keeps the process in the foreground: made one */
        return fuse_opt_add_arg(outargs, "-d") == -1 ? -1 : 0;
    case KEY_UMASK:
        return parse_mode(arg, 0777, &o->umask);
    case KEY_FILE_MODE:
        return parse_mode(arg, 07777, &o->file_mode);
    case KEY_DIR_MODE:
        return parse_mode(arg, 07777, &o->dir_mode);
    case KEY_MANAGED:
        fprintf(stderr,
                "aztfs: -o %s: aztfs sets this itself; see aztfs --help for the "
                "options that apply\n",
                arg);
        return -1;
    case FUSE_OPT_KEY_NONOPT:
        if (o->n_positional == 2) {
            fprintf(stderr, "aztfs: too many arguments: '%s'\n", arg);
            return -1;
        }
        o->positional[o->n_positional] = strdup(arg);
        if (!o->positional[o->n_positional])
            return -1;
        o->n_positional++;
        return 0; /* put back below, once we know which it is */
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
        fprintf(stderr,
                "aztfs: default_permissions and no_default_permissions "
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

/* The modes files and directories show (struct aztfs_opts, options.h). */
static void modes(struct aztfs_opts *o)
{
    if (o->file_mode == UINT_MAX)
        o->file_mode = o->umask == UINT_MAX ? 0644 : 0666 & ~o->umask;
    if (o->dir_mode == UINT_MAX)
        o->dir_mode = o->umask == UINT_MAX ? 0755 : 0777 & ~o->umask;
}

/* O's spool_dir made absolute (the daemon works from "/"): -o spool_dir=,
 * else $TMPDIR when absolute, else /var/tmp; NULL for "none" (or when the
 * default is missing). One given that is not a directory is refused now,
 * not at the first import that reads ahead. */
static int spool_dir(struct aztfs_opts *o)
{
    const char *env = getenv("TMPDIR"), *dir = o->spool_dir;
    struct stat st;
    char *real;

    if (dir && strcmp(dir, "none") == 0) {
        free(o->spool_dir);
        o->spool_dir = NULL;
        return 0;
    }
    if (!dir)
        dir = env && *env == '/' ? env : "/var/tmp";
    if (!(real = realpath(dir, NULL)) || stat(real, &st) < 0 || !S_ISDIR(st.st_mode)) {
        if (!real && errno == ENOMEM)
            return -ENOMEM;
        free(real);
        if (!o->spool_dir)
            return 0; /* the default, missing: no spool */
        fprintf(stderr, "aztfs: spool_dir '%s' is not a directory\n", dir);
        return -EINVAL;
    }
    free(o->spool_dir);
    o->spool_dir = real;
    return 0;
}

/* Parse; see options.h. */
int options_parse(struct fuse_args *args, struct aztfs_opts *o)
{
    int rc;

    memset(o, 0, sizeof(*o));
    o->cache_timeout = 30.0;
    o->attr_timeout = NAN; /* unset: 1, or cache_timeout when smaller */
    o->negative_timeout = NAN;
    o->cache_size_mb = 32;
    o->scan_parallel = SCAN_PARALLEL_DEFAULT;
    o->fetch_threads = TABLE_THREADS_DEFAULT;
    o->scratch_size_mb = 64;
    o->connect_timeout = 10;
    o->timeout = 60;
    o->retries = 4;
    o->retry_time = 120;
    o->forget_after = FORGET_AFTER_DEFAULT;
    o->metrics_interval = 60;
    o->umask = o->file_mode = o->dir_mode = UINT_MAX;
    o->uid = o->gid = UINT_MAX;
    o->writeback_ms = UINT_MAX;
    o->writeback_queue_mb = 16;
    o->writeback_stop = WRITEBACK_STOP_DEFAULT;
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
    if (o->n_positional > 0 && fuse_opt_add_arg(args, o->positional[o->n_positional - 1]) == -1)
        return -ENOMEM;
    if ((rc = permission_checks(args, o)) < 0 || (rc = spool_dir(o)) < 0)
        return rc;
    if (o->cache_timeout < 0 || o->cache_timeout > 86400) {
        fprintf(stderr, "aztfs: cache_timeout must be between 0 and 86400 seconds\n");
        return -EINVAL;
    }
    if (isnan(o->negative_timeout))
        o->negative_timeout = NEGATIVE_TIMEOUT_DEFAULT;
    else if (!(o->negative_timeout >= 0 && o->negative_timeout <= 86400)) {
        fprintf(stderr, "aztfs: negative_timeout must be between 0 and 86400 seconds\n");
        return -EINVAL;
    }
    if (o->negative_timeout > o->cache_timeout)
        o->negative_timeout = o->cache_timeout;
    if (isnan(o->attr_timeout))
        o->attr_timeout = o->cache_timeout < 1 ? o->cache_timeout : 1;
    else if (!(o->attr_timeout >= 0 && o->attr_timeout <= 86400)) {
        fprintf(stderr, "aztfs: attr_timeout must be between 0 and 86400 seconds\n");
        return -EINVAL;
    }
    if (o->scratch_size_mb > SCRATCH_SIZE_MAX_MB || o->scratch_size_mb > SIZE_MAX / (1024 * 1024)) {
        fprintf(stderr, "aztfs: scratch_size must be between 0 and %lu MiB\n", SCRATCH_SIZE_MAX_MB);
        return -EINVAL;
    }
    if (o->scan_parallel < 1 || o->scan_parallel > SCAN_PARALLEL_MAX) {
        fprintf(stderr, "aztfs: scan_parallel must be between 1 and %d\n", SCAN_PARALLEL_MAX);
        return -EINVAL;
    }
    if (o->fetch_threads < 1 || o->fetch_threads > FETCH_THREADS_MAX) {
        fprintf(stderr, "aztfs: fetch_threads must be between 1 and %d\n", FETCH_THREADS_MAX);
        return -EINVAL;
    }
    modes(o);
    if (o->metrics_interval < 1 || o->metrics_interval > 86400) {
        fprintf(stderr, "aztfs: metrics_interval must be between 1 and 86400 seconds\n");
        return -EINVAL;
    }
    if (o->writeback_ms != UINT_MAX)
        o->writeback = 1;
    else
        o->writeback_ms = WRITEBACK_MS_DEFAULT;
    if (o->writeback_ms > 60000 || o->writeback_queue_mb < 1 || o->writeback_queue_mb > 4096 ||
        o->writeback_stop > 3600) {
        fprintf(stderr,
                "aztfs: writeback= must be at most 60000 ms, writeback_queue "
                "between 1 and 4096 MiB and writeback_stop at most 3600 s\n");
        return -EINVAL;
    }
    if (!(o->max_rps >= 0 && o->max_rps <= 1e5)) {
        fprintf(stderr, "aztfs: max_rps must be between 0 (no cap) and 100000\n");
        return -EINVAL;
    }
    if (o->connect_timeout <= 0 || o->timeout <= 0 || o->retry_time <= 0 || o->retries < 0) {
        fprintf(stderr, "aztfs: timeouts must be positive and retries not negative\n");
        return -EINVAL;
    }
    return 0;
}

void options_free(struct aztfs_opts *o)
{
    free(o->config);
    free(o->journal_dir);
    free(o->spool_dir);
    free(o->loglevel);
    free(o->cafile);
    free(o->tables);
    free(o->logfile);
    free(o->metrics_file);
    free(o->auth);
    free(o->client_id);
    free(o->service);
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
            fprintf(stderr,
                    "aztfs: tables=: '%s' is not a table name (3-63 letters and "
                    "digits, starting with a letter)\n",
                    tok);
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
    printf("usage: %s " AZTFS_USAGE "\n\n"
           "Mounts an Azure Table Storage account: /TABLE/PARTITIONKEY/ROWKEY.json\n"
           "The account comes from -o config=FILE (or CONFIGFILE), else from\n"
           "the environment variable AZURE_STORAGE_CONNECTION_STRING.\n\n"
           "aztfs options:\n"
           "    -o config=FILE          connection string or its fields, one per line\n"
           "    -o loglevel=LEVEL       error, warn, info (default) or debug\n"
           "    -o cache_timeout=SECS   how long listings and entities stay fresh (30)\n"
           "    -o attr_timeout=SECS    how long the kernel keeps a stat (1)\n"
           "    -o negative_timeout=SECS how long \"does not exist\" is believed, and\n"
           "                            how old a copy may be when a file is opened (1)\n"
           "    -o cache_size=MIB       memory for cached listings and entities (32)\n"
           "    -o scan_parallel=N      requests in flight of a listing: a table or\n"
           "                            partition read as key ranges in parallel, and\n"
           "                            partition listings fetched ahead of a walk;\n"
           "                            an import's transactions at once\n"
           "                            (1-64; 1: one after another; " SCAN_PARALLEL_DEFAULT_STR
           ")\n"
           "    -o fetch_threads=N      threads fetching listings in the background,\n"
           "                            all listings, views and exports together; past\n"
           "                            it a listing is fetched by its reader "
           "(1-1024; " TABLE_THREADS_DEFAULT_STR ")\n"
           "    -o spool_dir=DIR        where an import reads ahead past cache_size, in\n"
           "                            an unnamed file (default $TMPDIR, else /var/tmp;\n"
           "                            none: as far as memory goes)\n"
           "    -o scratch_size=MIB     memory for all scratch files together (64)\n"
           "    -o connect_timeout=SECS TCP/TLS connect timeout (10)\n"
           "    -o timeout=SECS         timeout of one request (60)\n"
           "    -o retries=N            retries of a transient failure (4)\n"
           "    -o retry_time=SECS      no retry starts later than this after the first try (120)\n"
           "    -o forget_after=N       names the kernel keeps before it is told to drop\n"
           "                            the oldest, which bounds its memory and aztfs's\n"
           "                            (0: never) (" FORGET_AFTER_DEFAULT_STR ")\n"
           "    -o max_rps=N            requests started per second at most, all threads\n"
           "                            together (0: no cap; a throttling service slows\n"
           "                            the mount down either way) (0)\n"
           "    -o cafile=FILE          CA bundle for https endpoints\n"
           "    -o merge                writes to existing entities Merge instead of Replace\n"
           "    -o unordered            the service's query results are in no key order\n"
           "                            (Cosmos DB for Table): listings read whole\n"
           "    -o allow_http           allow plain http to a host that is not loopback\n"
           "    -o tables=A:B           show only these tables (for a SAS that cannot\n"
           "                            list the account's tables)\n"
           "    -o auth=METHOD          key, sas, or a Microsoft Entra ID sign-in: secret,\n"
           "                            certificate, workload, managed, cli (default: the\n"
           "                            key or SAS, else those in DefaultAzureCredential's\n"
           "                            order; see aztfs(1), AUTHENTICATION)\n"
           "    -o client_id=ID         client ID of a user-assigned managed identity\n"
           "    -o service=NAME         the service behind the endpoint: storage or cosmos\n"
           "                            (Cosmos DB for Table); default: told by the host\n"
           "                            (*.table.cosmos.azure.com is cosmos), else storage\n"
           "    -o logfile=PATH         append log lines to PATH (created 0600), reopened\n"
           "                            on SIGHUP (logrotate); default: stderr with -f,\n"
           "                            else syslog (if nothing listens on /dev/log,\n"
           "                            aztfs says so before it detaches)\n"
           "    -o metrics_file=PATH    write the counters there in the Prometheus text\n"
           "                            format (node_exporter's textfile collector)\n"
           "    -o metrics_interval=SECS  how often metrics_file is rewritten (60)\n"
           "    -o allow_shared_dirs    let logfile=, metrics_file= and journal_dir= be in\n"
           "                            a directory other users may write (refused by\n"
           "                            default: they could replace the files there);\n"
           "                            the files themselves are still never symlinks,\n"
           "                            FIFOs or others' files\n"
           "    -o uid=N,gid=N          owner of every file (default: the mounting user)\n"
           "    -o umask=M              files 0666 & ~M, directories 0777 & ~M (octal)\n"
           "    -o file_mode=M          permission bits of files (octal; default 0644)\n"
           "    -o dir_mode=M           permission bits of directories (octal; default 0755)\n"
           "    -o writeback[=MS]       write-behind: a change is acknowledged once the\n"
           "                            journal holds it on disk, and sent in batches of\n"
           "                            up to 100 per partition within MS (200)\n"
           "    -o journal_dir=DIR      its journal (default $XDG_STATE_HOME/aztfs, else\n"
           "                            ~/.local/state/aztfs; /var/lib/aztfs for root)\n"
           "    -o writeback_queue=MIB  queued changes at most; writers wait beyond (16)\n"
           "    -o writeback_stop=SECS  at unmount or SIGTERM, what is queued is sent for\n"
           "                            at most SECS (30); the rest stays in the journal\n"
           "    -o nonempty             mount on a directory that holds files, hiding\n"
           "                            them until the unmount (refused by default)\n"
           "    -o ino32                inode numbers below 2^32, for 32-bit programs\n"
           "                            (two files may then share one: doc/USAGE.md)\n"
           "    -o allow_other          let other users in; the kernel then checks the\n"
           "                            modes above (default_permissions is implied)\n"
           "    -o no_default_permissions\n"
           "                            with allow_other: no checks, every local user\n"
           "                            acts with the mounter's credentials\n\n"
           "FUSE options that apply:\n"
           "    -h   --help             print this help\n"
           "    -V   --version          print the version\n"
           "    -f                      stay in the foreground (log to stderr)\n"
           "    -d   --debug  -o debug  FUSE debug output (implies -f)\n"
           "    -s                      serve one request at a time\n"
           "    -o max_threads=N        at most N threads serve requests (10)\n"
           "    -o max_idle_threads=N   idle threads kept (default: libfuse's)\n"
           "    -o clone_fd             one /dev/fuse descriptor per thread\n"
           "    -o allow_root           let root in (not other users)\n"
           "    -o default_permissions  the kernel checks the modes above\n"
           "    -o auto_unmount         unmount when aztfs exits\n"
           "    -o ro                   read-only mount\n"
           "    -o fsname=NAME          the name df and mount show (aztfs:ACCOUNT)\n\n"
           "aztfs sets the rest of libfuse's options itself (entry_timeout,\n"
           "kernel_cache, auto_cache, direct_io, use_ino, modules=, subdir=, ...)\n"
           "and refuses them; negative_timeout is aztfs's own (above).\n",
           progname);
}
