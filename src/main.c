/* main.c - aztfs entry point: options, account, mount-time check, FUSE main loop. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <malloc.h>
#include <sys/prctl.h>

#include <curl/curl.h>

#include "fs.h"      /* defines FUSE_USE_VERSION before fuse headers */
#include <fuse_lowlevel.h>

#include "connstr.h"
#include "fscommon.h"
#include "metrics.h"
#include "options.h"
#include "scan.h"
#include "secenv.h"
#include "view.h"
#include "stats.h"

/* Remove AZURE_STORAGE_CONNECTION_STRING, name and value, from the
 * environment and from where the kernel shows it (/proc/PID/environ,
 * `ps e`): env_scrub. */
static void scrub_env_secret(void)
{
    env_scrub("AZURE_STORAGE_CONNECTION_STRING");
}

/* Load the account from -o config= or AZURE_STORAGE_CONNECTION_STRING, then
 * scrub the variable (see scrub_env_secret) either way.
 * Returns 0 or -errno after printing one line that says what to fix. */
static int load_account(const struct aztfs_opts *o, struct account *acct)
{
    char err[256] = "";
    const char *env = getenv("AZURE_STORAGE_CONNECTION_STRING");
    int rc;

    memset(acct, 0, sizeof(*acct));
    if (o->config) {
        rc = connstr_load_file(o->config, acct, err, sizeof(err));
        if (rc < 0)
            fprintf(stderr, "aztfs: %s\n", err);
    } else if (!env || !*env) {
        fprintf(stderr, "aztfs: no account given: use -o config=FILE or set "
                "AZURE_STORAGE_CONNECTION_STRING (see aztfs --help)\n");
        rc = -EINVAL;
    } else {
        rc = connstr_parse(env, acct, err, sizeof(err));
        if (rc < 0)
            fprintf(stderr, "aztfs: AZURE_STORAGE_CONNECTION_STRING: %s\n", err);
    }
    scrub_env_secret();
    return rc;
}

/* Try the endpoint and credentials once, so a bad account fails the mount
 * with one clear line instead of a mount that answers EIO. */
static int probe_account(struct aztfs *a, const struct account *acct)
{
    struct az_status st;
    int rc = scan_list_root(&a->store, &st);

    if (rc == 0)
        return 0;
    if (st.http_status == 0)
        fprintf(stderr, "aztfs: cannot reach the table endpoint %s: %s\n",
                acct->endpoint, st.message);
    else if (st.http_status == 403 || st.http_status == 401)
        fprintf(stderr, "aztfs: the service refused the credentials for account '%s' "
                "(HTTP %ld %s): check AccountKey or SharedAccessSignature%s\n",
                acct->name ? acct->name : "?", st.http_status,
                st.code[0] ? st.code : "",
                a->store.tables ? "" : "; a SAS scoped to some tables needs -o tables=A:B");
    else
        fprintf(stderr, "aztfs: listing tables at %s failed: HTTP %ld %s %s\n",
                acct->endpoint, st.http_status, st.code, st.message);
    return rc;
}

/* The signal thread: logs the counters at each SIGUSR1 and, with -o
 * logfile=, reopens the log file at each SIGHUP (logrotate) instead of
 * libfuse's unmount. Both signals are blocked in every other thread (the
 * mask is inherited), so no handler runs: the thread takes them (sigwait). */
struct usr1 {
    struct aztfs *a;
    sigset_t set;
    atomic_int stop;
};

static void *usr1_thread(void *p)
{
    struct usr1 *u = p;
    int sig;

    while (sigwait(&u->set, &sig) == 0 && !atomic_load(&u->stop)) {
        char *json;

        if (sig == SIGHUP) {
            if (log_reopen(&u->a->store.log) == 0)
                log_info(&u->a->store.log, "log file reopened (SIGHUP)");
            continue;
        }
        json = stats_json(&u->a->store);

        log_info(&u->a->store.log, "stats %s", json ? json : "(out of memory)");
        free(json);
    }
    return NULL;
}

/* The warning an allow_other mount without permission checks gets (in the
 * log that lasts: syslog for a daemon). */
static void warn_unchecked(struct aztfs *a)
{
    log_warn(&a->store.log, "allow_other with no_default_permissions: the kernel checks no "
             "permissions, so every local user can read, change and delete entities and "
             "tables with the mounter's credentials");
}

/* Mount and serve until unmounted; returns the process exit status.
 * O: the options (o->unchecked: allow_other without default_permissions,
 * logged; o->metrics_file). */
static int run_fuse(struct fuse_args *args, struct aztfs *a, const struct fuse_cmdline_opts *cmd,
                    const struct aztfs_opts *o)
{
    struct fuse *f;
    struct fuse_loop_config *lc = NULL;
    struct usr1 u = { .a = a };
    struct metrics *metrics = NULL;
    pthread_t usr1_tid;
    int rc = 1, have_usr1 = 0;

    f = fuse_new(args, &aztfs_ops, sizeof(aztfs_ops), a);
    if (!f)
        return 1;
    if (fuse_mount(f, cmd->mountpoint) != 0)
        goto out_destroy;
    if (!cmd->foreground)
        log_detach(&a->store.log, cmd->mountpoint);
    if (fuse_daemonize(cmd->foreground) != 0)
        goto out_unmount;
    if (fuse_set_signal_handlers(fuse_get_session(f)) != 0)
        goto out_unmount;
    sigemptyset(&u.set);
    sigaddset(&u.set, SIGUSR1);
    if (a->store.log.use_file)
        sigaddset(&u.set, SIGHUP);
    if (pthread_sigmask(SIG_BLOCK, &u.set, NULL) == 0 &&
        pthread_create(&usr1_tid, NULL, usr1_thread, &u) == 0)
        have_usr1 = 1;
    log_info(&a->store.log, "mounted %s", cmd->mountpoint);
    if (o->unchecked)
        warn_unchecked(a);
    if (o->metrics_file)
        metrics = metrics_start(&a->store, cmd->mountpoint, o->metrics_file,
                                o->metrics_interval);
    if (cmd->singlethread) {
        rc = fuse_loop(f) < 0 ? 1 : 0;   /* > 0: ended by a signal: clean */
    } else {
        lc = fuse_loop_cfg_create();
        if (!lc)
            goto out_signals;
        fuse_loop_cfg_set_clone_fd(lc, cmd->clone_fd);
        /* libfuse 3.14 leaves max_threads at UINT_MAX when not given */
        fuse_loop_cfg_set_max_threads(lc, cmd->max_threads > 0 && cmd->max_threads <= 1000
                                              ? cmd->max_threads : 10);
        if (cmd->max_idle_threads <= 1000)    /* UINT_MAX: not given */
            fuse_loop_cfg_set_idle_threads(lc, cmd->max_idle_threads);
        rc = fuse_loop_mt(f, lc) < 0 ? 1 : 0;
        fuse_loop_cfg_destroy(lc);
    }
out_signals:
    metrics_stop(metrics);
    if (have_usr1) {
        atomic_store(&u.stop, 1);
        pthread_kill(usr1_tid, SIGUSR1);
        pthread_join(usr1_tid, NULL);
    }
    fuse_remove_signal_handlers(fuse_get_session(f));
out_unmount:
    fuse_unmount(f);
out_destroy:
    fuse_destroy(f);
    return rc;
}

/* Set up mount A from the options O and account ACCT (borrowed: both
 * outlive the mount): its store, scratch files and handles; then try the
 * account once (probe_account). Returns 0, or -1 after printing why. */
static int open_mount(struct aztfs *a, const struct aztfs_opts *o, const struct account *acct)
{
    struct http_config hc = { 0 };
    enum log_level lvl = a->store.log.level;
    int rc;

    hc.connect_timeout_ms = o->connect_timeout * 1000;
    hc.request_timeout_ms = o->timeout * 1000;
    hc.max_retries = o->retries > 0 ? o->retries : -1;
    hc.retry_deadline_ms = o->retry_time * 1000;
    hc.ca_file = o->cafile;
    a->store.cache_timeout = o->cache_timeout;
    a->store.negative_timeout = o->negative_timeout;
    a->store.merge = o->merge;
    a->store.mount_time = a->mount_time = time(NULL);
    a->attr_timeout = o->attr_timeout;
    a->uid = getuid();
    a->gid = getgid();
    a->file_mode = o->file_mode;
    a->dir_mode = o->dir_mode;
    a->ino32 = o->ino32;
    a->handles = fs_handles_new();
    a->views = view_pending_new();
    a->scratch = scratch_new((size_t)o->scratch_size_mb * 1024 * 1024, &a->store.log);
    if (!a->handles || !a->scratch || !a->views ||
        store_open(&a->store, acct, &hc, (size_t)o->cache_size_mb * 1024 * 1024) < 0) {
        fprintf(stderr, "aztfs: out of memory\n");
        return -1;
    }
    /* the probe's own warnings would repeat its one-line verdict */
    if (lvl < LOG_LVL_DEBUG)
        a->store.log.level = LOG_LVL_QUIET;
    rc = probe_account(a, acct);
    a->store.log.level = lvl;
    if (rc < 0)
        return -1;
    for (char **t = a->store.tables; t && *t; t++)
        if (cache_dir_lookup(a->store.cache, "/", *t, NULL) == -ENOENT)
            log_warn(&a->store.log, "table '%s' named in -o tables= does not exist", *t);
    return 0;
}

int main(int argc, char *argv[])
{
    struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
    struct fuse_cmdline_opts cmd = { 0 };
    struct aztfs_opts o;
    struct account acct;
    struct aztfs a = { 0 };
    int rc = 1;

    memset(&acct, 0, sizeof(acct));
    a.store.log.level = LOG_LVL_INFO;
    /* the account key lives in this process: no core dumps of it, and
     * /proc/PID/{mem,environ} readable by root only */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* glibc gives each FUSE thread its own malloc arena, and memory freed in
     * one is not reused by another: with two, the cache bound is what RSS
     * shows (doc/PERFORMANCE.md) */
    mallopt(M_ARENA_MAX, 2);
    if (options_parse(&args, &o) < 0)
        goto out;
    if (fuse_parse_cmdline(&args, &cmd) != 0)
        goto out;
    if (cmd.show_version || o.show_version) {
        printf("aztfs version %s\n", PACKAGE_VERSION);
        printf("FUSE library version %s\n", fuse_pkgversion());
        rc = 0;
        goto out;
    }
    if (cmd.show_help || o.show_help) {
        options_usage(argv[0]);
        rc = 0;
        goto out;
    }
    if (!cmd.mountpoint) {
        fprintf(stderr, "aztfs: no mount point given (usage: aztfs [options] MOUNTPOINT; "
                "see --help)\n");
        goto out;
    }
    if (o.loglevel && log_level_parse(o.loglevel, &a.store.log.level) < 0) {
        fprintf(stderr, "aztfs: unknown loglevel '%s' (error, warn, info, debug)\n",
                o.loglevel);
        goto out;
    }
    if ((o.logfile && log_open_file(&a.store.log, o.logfile) < 0) ||
        !(a.store.log.failures = failring_new()))
        goto out;
    if (load_account(&o, &acct) < 0)
        goto out;
    if (strcmp(acct.scheme, "http") == 0 && !account_is_loopback(&acct) && !o.allow_http) {
        fprintf(stderr, "aztfs: refusing plain http to %s: requests and keys would cross the "
                "network unencrypted; use https, or add -o allow_http if you mean it\n",
                acct.host);
        goto out;
    }

    if (o.tables && options_split_tables(o.tables, &a.store.tables) < 0)
        goto out;
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "aztfs: libcurl could not be initialised\n");
        goto out;
    }
    rc = open_mount(&a, &o, &acct) < 0 ? 1 : run_fuse(&args, &a, &cmd, &o);
    view_pending_free(a.views);     /* its queries use the store's client */
    store_free(&a.store);
    scratch_free(a.scratch);
    fs_handles_free(a.handles);
    curl_global_cleanup();
out:
    account_free(&acct);
    free(cmd.mountpoint);
    options_free(&o);
    options_free_tables(a.store.tables);
    failring_free(a.store.log.failures);
    log_close(&a.store.log);
    fuse_opt_free_args(&args);
    return rc;
}
