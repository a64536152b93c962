/* main.c - aztfs entry point: options, account, mount-time check, FUSE main loop. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <malloc.h>
#include <sys/prctl.h>

#include <curl/curl.h>

#include "util/util.h"
#include "fs/fs.h"
#include <fuse_lowlevel.h>
#include <openssl/sha.h>

#include "auth/auth.h"
#include "monitor/monitor.h"
#include "options.h"
#include "store/store.h"
#include "table/table.h"
#include "writeback/writeback.h"

/* Load the account and the sign-in settings (signin_load). Returns 0, or
 * -errno after printing one line that says what to fix. */
static int load_account(const struct aztfs_opts *o, struct account *acct, struct cred_settings *cs)
{
    char err[512];
    int rc = signin_load(o->config, o->client_id, acct, cs, err, sizeof(err));

    if (rc < 0)
        fprintf(stderr, "aztfs: %s\n", err);
    return rc;
}

/* The service behind ACCT's endpoint: -o service= (over the config's
 * Service=) put on ACCT, and checked. 0, or -1 after printing why. */
static int pick_service(const struct aztfs_opts *o, struct account *acct)
{
    const struct table_profile *prof;

    if (o->service && (free(acct->service), !(acct->service = strdup(o->service))))
        return fprintf(stderr, "aztfs: out of memory\n"), -1;
    if (table_profile_pick(acct->host, acct->service, &prof) < 0)
        return fprintf(stderr, "aztfs: unknown service=%s\n", acct->service), -1;
    return 0;
}

/* Sign in (signin_start) for the service of ACCT's endpoint. Returns 0,
 * or -1 after printing one line that names the fix. */
static int sign_in(struct account *acct, const char *auth, const struct cred_settings *cs,
                   const struct http_config *hc, const struct logger *lg)
{
    const struct table_profile *prof = NULL;
    char err[1280];

    if (table_profile_pick(acct->host, acct->service, &prof) < 0)
        return -1; /* pick_service has said why */
    if (signin_start(acct, auth, prof->scope, cs, hc, lg, err, sizeof(err)) < 0) {
        fprintf(stderr, "aztfs: %s\n", err);
        return -1;
    }
    return 0;
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
        fprintf(stderr, "aztfs: cannot reach the table endpoint %s: %s\n", acct->endpoint,
                st.message);
    else if (acct->tokens && st.http_status == 403 &&
             strncmp(st.code, "AuthorizationPermission", 23) == 0)
        fprintf(stderr,
                "aztfs: the signed-in identity has no data role on account '%s' "
                "(HTTP 403 %s): assign it Storage Table Data Reader (read only) or Storage "
                "Table Data Contributor on the storage account, then wait a few minutes\n",
                acct->name ? acct->name : "?", st.code);
    else if (acct->tokens && (st.http_status == 403 || st.http_status == 401))
        fprintf(stderr,
                "aztfs: the service refused the bearer token for account '%s' "
                "(HTTP %ld %s: %s): check that the token's tenant and audience fit the "
                "account\n",
                acct->name ? acct->name : "?", st.http_status, st.code, st.message);
    else if (st.http_status == 403 || st.http_status == 401)
        fprintf(stderr,
                "aztfs: the service refused the credentials for account '%s' "
                "(HTTP %ld %s): check AccountKey or SharedAccessSignature%s\n",
                acct->name ? acct->name : "?", st.http_status, st.code[0] ? st.code : "",
                a->store.tables ? "" : "; a SAS scoped to some tables needs -o tables=A:B");
    else
        fprintf(stderr, "aztfs: listing tables at %s failed: HTTP %ld %s %s\n", acct->endpoint,
                st.http_status, st.code, st.message);
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
    const char *mountpoint; /* borrowed */
    int notify;             /* $NOTIFY_SOCKET set: STATUS= every few seconds */
};

#define NOTIFY_STATUS_SECONDS 2 /* how often systemd's STATUS= is renewed */

/* Wait for a signal of U's set: 0 and *SIG, or 1 after a status interval
 * went by (U->notify: STATUS= was sent), or -1 when waiting failed. */
static int usr1_wait(struct usr1 *u, int *sig)
{
    struct timespec ts = { NOTIFY_STATUS_SECONDS, 0 };

    if (!u->notify)
        return sigwait(&u->set, sig) == 0 ? 0 : -1;
    *sig = sigtimedwait(&u->set, NULL, &ts);
    if (*sig >= 0)
        return 0;
    if (errno != EAGAIN && errno != EINTR)
        return -1;
    if (!atomic_load(&u->stop))
        (void)notify_status(&u->a->store, u->mountpoint);
    return 1;
}

static void *usr1_main(void *p)
{
    struct usr1 *u = p;
    int sig;

    for (int w; (w = usr1_wait(u, &sig)) >= 0 && !atomic_load(&u->stop);) {
        char *json;

        if (w == 1)
            continue;

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
    log_warn(&a->store.log,
             "allow_other with no_default_permissions: the kernel checks no "
             "permissions, so every local user can read, change and delete entities and "
             "tables with the mounter's credentials");
}

/* libfuse's own messages (fuse_set_log_func), on stderr as libfuse's
 * default handler writes them, with aztfs's prefix instead of "fuse: ".
 * libfuse writes some lines in pieces (an unknown option: "fuse: unknown
 * option(s): `", "-o ", "NAME", "'\n"): only a piece that starts a line
 * ("fuse: ...") gets the prefix, the others go on as they are. */
static void fuse_message(enum fuse_log_level level, const char *fmt, va_list ap)
{
    char msg[1024];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (strncmp(msg, "fuse: ", 6) == 0)
        fprintf(stderr, "aztfs: %s%s", level <= FUSE_LOG_ERR ? "error: " : "", msg + 6);
    else
        fputs(msg, stderr);
}

/* A mount point already in use is refused: a second aztfs would hide the
 * first, and its queue and journal with it. An automount point (autofs:
 * x-systemd.automount) is what the mount is for, and is not looked into
 * (that would wait for this mount). Anything else must be an empty
 * directory unless NONEMPTY (mounts_check_place). Returns 0, or -1 after a
 * message. */
static int refuse_mounted(const char *dir, int nonempty)
{
    char type[64] = "", why[512];
    int rc = mounts_type_at("/proc/self/mountinfo", dir, type, sizeof(type));

    if (rc == 0 && mounts_check_place(dir, nonempty, why, sizeof(why)) < 0) {
        fprintf(stderr, "aztfs: %s\n", why);
        return -1;
    }
    if (rc <= 0 || strcmp(type, "autofs") == 0)
        return 0; /* -errno: no mount table to ask; the mount decides */
    fprintf(stderr,
            "aztfs: %s is already a mount point (%s): unmount it first "
            "(fusermount3 -u %s, or umount)\n",
            dir, type, dir);
    return -1;
}

/* What mount, findmnt and df show for the mount unless the user said:
 * source "aztfs:ACCOUNT" (the endpoint's host when the account has no
 * name), type "fuse.aztfs". Returns 0 or -ENOMEM. */
static int name_the_mount(struct fuse_args *args, const struct aztfs_opts *o,
                          const struct account *acct)
{
    const char *who = acct->name ? acct->name : acct->host;
    char *opt = NULL;
    int rc = 0;

    if (!o->fsname_given && who && !strpbrk(who, ",\\") &&
        (asprintf(&opt, "-ofsname=aztfs:%s", who) < 0 || fuse_opt_add_arg(args, opt) == -1))
        rc = -ENOMEM;
    free(opt);
    if (rc == 0 && !o->subtype_given && fuse_opt_add_arg(args, "-osubtype=aztfs") == -1)
        rc = -ENOMEM;
    return rc;
}

/* The mount's last log line: exit status RC, the requests it sent, the
 * failures it logged (user.aztfs.errors), LEFT changes left in the
 * journal. An error when RC is not 0, so that every destination (syslog
 * too) tells a clean end from another, and a crash by its absence. */
static void log_exit(struct aztfs *a, const char *mountpoint, int rc, size_t left)
{
    unsigned long sent = (unsigned long)atomic_load(&a->store.stats.requests);
    unsigned long failed = a->store.log.failures ? failring_count(a->store.log.failures) : 0;

    log_msg(&a->store.log, rc ? LOG_LVL_ERROR : LOG_LVL_INFO,
            "unmounted %s, exiting with status %d: %lu request%s sent, %lu failure%s "
            "logged, %zu change%s left in the journal",
            mountpoint, rc, sent, sent == 1 ? "" : "s", failed, failed == 1 ? "" : "s", left,
            left == 1 ? "" : "s");
}

/* Tell systemd (Type=notify) the mount at MOUNTPOINT serves: READY=1
 * once mounted, before the loop starts (the kernel holds requests until it
 * reads them). A failed notification is logged, and the mount goes on. */
static void notify_ready(struct aztfs *a, const char *mountpoint)
{
    int rc = notify_send("READY=1\nSTATUS=serving %s", mountpoint);

    if (rc < 0)
        log_warn(&a->store.log, "$NOTIFY_SOCKET: %s: systemd was not told the mount is ready",
                 strerror(-rc));
}

/* Tell systemd the mount stops: STOPPING=1 and, when write-behind still
 * holds changes, how many it sends and EXTEND_TIMEOUT_USEC for its bound
 * (-o writeback_stop, and 10 s for the exit). */
static void notify_stopping(struct aztfs *a, const struct aztfs_opts *o)
{
    struct store_pending_counts c;

    if (store_pending_counts(&a->store, &c) == 0 && c.queued + c.sending > 0)
        (void)notify_send("STOPPING=1\nSTATUS=sending %zu queued change%s before exiting "
                          "(at most %u s)\nEXTEND_TIMEOUT_USEC=%llu",
                          c.queued + c.sending, c.queued + c.sending == 1 ? "" : "s",
                          o->writeback_stop, (o->writeback_stop + 10ULL) * 1000000ULL);
    else
        (void)notify_send("STOPPING=1\nSTATUS=stopping");
}

/* Mount and serve until unmounted; returns the process exit status.
 * O: the options (o->unchecked: allow_other without default_permissions,
 * logged). METRICS (NULL: none): the metrics file's writer, started once
 * mounted; the caller stops it. */
static int run_fuse(struct fuse_args *args, struct aztfs *a, const struct fuse_cmdline_opts *cmd,
                    const struct aztfs_opts *o, struct metrics *metrics)
{
    struct fuse_session *se;
    struct fuse_loop_config *lc = NULL;
    struct usr1 u = { .a = a, .mountpoint = cmd->mountpoint };
    struct workers usr1_thread = { .n = 0 };
    int rc = 1, have_usr1 = 0, unmounted = 0;
    unsigned served;
    size_t left = 0;

    se = fs_session_new(args, a);
    if (!se) {
        fprintf(stderr,
                "aztfs: libfuse refused the options (above); aztfs --help lists "
                "the options of aztfs and of libfuse that apply\n");
        return 1;
    }
    if (fuse_session_mount(se, cmd->mountpoint) != 0)
        goto out_destroy;
    pthread_mutex_lock(&a->fuse_lock);
    a->se = se;
    pthread_mutex_unlock(&a->fuse_lock);
    if (!cmd->foreground)
        log_detach(&a->store.log, cmd->mountpoint);
    if (fuse_daemonize(cmd->foreground) != 0)
        goto out_unmount;
    if (fuse_set_signal_handlers(se) != 0)
        goto out_unmount;
    sigemptyset(&u.set);
    sigaddset(&u.set, SIGUSR1);
    if (a->store.log.use_file)
        sigaddset(&u.set, SIGHUP);
    u.notify = getenv("NOTIFY_SOCKET") != NULL;
    if (pthread_sigmask(SIG_BLOCK, &u.set, NULL) == 0 &&
        workers_add(&usr1_thread, "aztfs-signals", usr1_main, &u) == 0)
        have_usr1 = 1;
    log_info(&a->store.log, "mounted %s", cmd->mountpoint);
    if (o->unchecked)
        warn_unchecked(a);
    if (metrics)
        metrics_start(metrics, &a->store, cmd->mountpoint, o->metrics_interval);
    if (fs_forget_start(a->forget, se, cmd->mountpoint, a->handles, o->allow_other) < 0)
        log_warn(&a->store.log,
                 "the kernel will not be told to drop names: its memory and "
                 "aztfs's grow with every file named");
    if (store_writeback_start(&a->store) < 0) {
        log_error(&a->store.log, "write-behind cannot start its threads");
        goto out_signals;
    }
    notify_ready(a, cmd->mountpoint);
    if (cmd->singlethread) {
        rc = fuse_session_loop(se) < 0 ? 1 : 0;
    } else {
        lc = fuse_loop_cfg_create();
        if (!lc)
            goto out_signals;
        fuse_loop_cfg_set_clone_fd(lc, cmd->clone_fd);
        /* libfuse 3.14 leaves max_threads at UINT_MAX when not given */
        fuse_loop_cfg_set_max_threads(
            lc, cmd->max_threads > 0 && cmd->max_threads <= 1000 ? cmd->max_threads : 10);
        if (cmd->max_idle_threads <= 1000) /* UINT_MAX: not given */
            fuse_loop_cfg_set_idle_threads(lc, cmd->max_idle_threads);
        rc = fuse_session_loop_mt(se, lc) < 0 ? 1 : 0;
        fuse_loop_cfg_destroy(lc);
    }
    served = fs_serve_queued(a, se, 256);
    /* the forget thread ends before the unmount closes the descriptor it
     * writes to; a name it tells stale may wait for a directory's lock
     * that a queued request holds: those are served meanwhile */
    for (int i = 0; i < 100 && !fs_forget_stopped(a->forget, 100); i++)
        served += fs_serve_queued(a, se, 256);
    if (served > 0)
        log_debug(&a->store.log, "served %u request%s queued at the end", served,
                  served == 1 ? "" : "s");
out_signals:
    notify_stopping(a, o);
    fs_handles_close_all(a->handles); /* no callback runs any more; they use the store */
    prefetch_free(a->prefetch);       /* before the session goes: its requests ask */
    a->prefetch = NULL;               /* it whether to stop */
    fs_end_session(a);
    (void)fs_forget_stopped(a->forget, 0);
    /* unmounted before the queue's send, so that nothing waits on a mount
     * nobody serves; libfuse's signal handlers stay until the send ends
     * (a SIGTERM then, systemd's after ExecStop, must not cut it short) */
    fuse_session_unmount(se);
    unmounted = 1;
    left = store_writeback_close(&a->store);
    if (left > 0 && rc == 0)
        rc = 1; /* changes left in the journal: said in the log */
    log_exit(a, cmd->mountpoint, rc, left);
    if (have_usr1) {
        atomic_store(&u.stop, 1);
        pthread_kill(usr1_thread.tids[0], SIGUSR1);
        workers_join(&usr1_thread);
    }
    fuse_remove_signal_handlers(se);
    signal(SIGTERM, SIG_IGN); /* exiting: a late signal changes nothing */
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
out_unmount:
    fs_end_session(a);
    if (!unmounted)
        fuse_session_unmount(se);
out_destroy:
    fs_forget_free(a->forget); /* its thread, if any, before the session goes */
    a->forget = NULL;
    fuse_session_destroy(se);
    return rc;
}

/* -o writeback: the journal of ACCT's endpoint (DIR: -o journal_dir=, else
 * /var/lib/aztfs for root, else $XDG_STATE_HOME/aztfs or
 * ~/.local/state/aztfs), its queue loaded and sent before the mount
 * serves. Returns 0 or -1 after printing why. */
static int open_writeback(struct aztfs *a, const struct aztfs_opts *o, const struct account *acct,
                          const struct http_config *hc)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char *dir = NULL, *name = NULL, hex[17];
    int rc;

    SHA256((const unsigned char *)acct->endpoint, strlen(acct->endpoint), md);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    if (o->journal_dir)
        dir = strdup(o->journal_dir);
    else if (getuid() == 0)
        dir = strdup("/var/lib/aztfs");
    else if (xdg && *xdg == '/')
        rc = asprintf(&dir, "%s/aztfs", xdg) < 0 ? (dir = NULL, -1) : 0;
    else if (home && *home == '/')
        rc = asprintf(&dir, "%s/.local/state/aztfs", home) < 0 ? (dir = NULL, -1) : 0;
    if (!dir || asprintf(&name, "%s-%s.journal", acct->name ? acct->name : "account", hex) < 0) {
        fprintf(stderr, "aztfs: no journal directory (give -o journal_dir=)\n");
        free(dir);
        return -1;
    }
    struct wb_config cfg = { dir,
                             name,
                             o->writeback_ms / 1000.0,
                             (size_t)o->writeback_queue_mb * 1024 * 1024,
                             4,
                             o->writeback_stop,
                             o->allow_shared_dirs };
    rc = store_writeback_open(&a->store, &cfg, acct, hc);
    if (rc < 0)
        fprintf(stderr, "aztfs: the write-behind journal in %s cannot be used: %s\n", dir,
                strerror(-rc));
    free(dir);
    free(name);
    return rc < 0 ? -1 : 0;
}

/* Set up mount A from the options O and account ACCT (borrowed: both
 * outlive the mount): its store, scratch files and handles; then try the
 * account once (probe_account). Returns 0, or -1 after printing why. */
static int open_mount(struct aztfs *a, const struct aztfs_opts *o, struct account *acct,
                      const struct cred_settings *cs)
{
    struct http_config hc = { 0 };
    enum log_level lvl = a->store.log.level;
    int rc;

    hc.connect_timeout_ms = o->connect_timeout * 1000;
    hc.request_timeout_ms = o->timeout * 1000;
    hc.max_retries = o->retries > 0 ? o->retries : -1;
    hc.retry_deadline_ms = o->retry_time * 1000;
    hc.ca_file = o->cafile;
    if (http_pace_new(&a->pace, o->max_rps, &a->store.log) < 0) {
        fprintf(stderr, "aztfs: out of memory\n");
        return -1;
    }
    hc.pace = a->pace;
    if (sign_in(acct, o->auth ? o->auth : acct->auth[AS_AUTH], cs, &hc, &a->store.log) < 0)
        return -1;
    a->store.cache_timeout = o->cache_timeout;
    a->store.negative_timeout = o->negative_timeout;
    a->store.merge = o->merge;
    a->store.mount_time = a->mount_time = time(NULL);
    a->attr_timeout = o->attr_timeout;
    a->uid = o->uid != UINT_MAX ? (uid_t)o->uid : getuid(); /* -o uid=: chown to */
    a->gid = o->gid != UINT_MAX ? (gid_t)o->gid : getgid(); /* what is shown works */
    a->file_mode = o->file_mode;
    a->dir_mode = o->dir_mode;
    a->ino32 = o->ino32;
    a->handles = fs_handles_new();
    a->inodes = fs_inodes_new();
    a->forget = fs_forget_new(o->forget_after, &a->store.log);
    a->views = view_pending_new();
    a->scratch = scratch_new((size_t)o->scratch_size_mb * 1024 * 1024, &a->store.log);
    if (!a->handles || !a->inodes || !a->scratch || !a->views || !a->forget ||
        store_open(&a->store, acct, &hc, (size_t)o->cache_size_mb * 1024 * 1024) < 0) {
        fprintf(stderr, "aztfs: out of memory\n");
        return -1;
    }
    a->store.scan_ways = o->scan_parallel;
    table_client_set_threads(a->store.tc, o->fetch_threads);
    a->store.spool_dir = o->spool_dir;
    if (o->unordered) /* the profile's answer otherwise (table_client_ordered) */
        table_client_set_ordered(a->store.tc, 0);
    if (!(a->prefetch = prefetch_new(&a->store, o->scan_parallel, &rc)) && rc < 0) {
        fprintf(stderr, "aztfs: out of memory\n");
        return -1;
    }
    /* the probe's own warnings would repeat its one-line verdict */
    if (lvl < LOG_LVL_DEBUG)
        a->store.log.level = LOG_LVL_QUIET;
    rc = probe_account(a, acct);
    a->store.log.level = lvl;
    if (rc < 0 || (o->writeback && open_writeback(a, o, acct, &hc) < 0))
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
    struct cred_settings cs = { 0 };
    struct aztfs a = { 0 };
    struct metrics *metrics = NULL;
    int rc = 1;

    memset(&acct, 0, sizeof(acct));
    lock_init(&a.fuse_lock);
    a.store.log.level = LOG_LVL_INFO;
    /* the account key lives in this process: no core dumps of it, and
     * /proc/PID/{mem,environ} readable by root only */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* glibc gives each FUSE thread its own malloc arena, and memory freed in
     * one is not reused by another: with two, the cache bound is what RSS
     * shows (doc/PERFORMANCE.md) */
    mallopt(M_ARENA_MAX, 2);
    /* and a fixed threshold for mmap: glibc's own rises to the largest block
     * freed (a page's 0.5-1 MiB buffer), after which those blocks are cut
     * from the arenas among the cache's small ones and RSS climbs through a
     * walk of a million entities (doc/PERFORMANCE.md, "Scale") */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    fuse_set_log_func(fuse_message);
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
        fprintf(stderr, "aztfs: no mount point given\nusage: %s " AZTFS_USAGE "\n", argv[0]);
        goto out;
    }
    if (refuse_mounted(cmd.mountpoint, o.nonempty) < 0)
        goto out;
    if (o.loglevel && log_level_parse(o.loglevel, &a.store.log.level) < 0) {
        fprintf(stderr, "aztfs: unknown loglevel '%s' (error, warn, info, debug)\n", o.loglevel);
        goto out;
    }
    /* checked here, before the mount detaches: a refused place fails it */
    if ((o.logfile && log_open_file(&a.store.log, o.logfile, o.allow_shared_dirs) < 0) ||
        (o.metrics_file && !(metrics = metrics_new(o.metrics_file, o.allow_shared_dirs))) ||
        !(a.store.log.failures = failring_new()))
        goto out;
    if (load_account(&o, &acct, &cs) < 0 || pick_service(&o, &acct) < 0)
        goto out;
    if (name_the_mount(&args, &o, &acct) < 0) {
        fprintf(stderr, "aztfs: out of memory\n");
        goto out;
    }
    if (strcmp(acct.scheme, "http") == 0 && !account_is_loopback(&acct) && !o.allow_http) {
        fprintf(stderr,
                "aztfs: refusing plain http to %s: requests and keys would cross the "
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
    rc = open_mount(&a, &o, &acct, &cs) < 0 ? 1 : run_fuse(&args, &a, &cmd, &o, metrics);
    metrics_stop(metrics); /* the last write, with the final counts */
    metrics = NULL;
    prefetch_free(a.prefetch);       /* its workers use the store */
    view_pending_free(a.views);      /* its queries use the store's client */
    store_writeback_close(&a.store); /* a failed start: what is queued is sent */
    store_free(&a.store);
    http_pace_free(a.pace); /* after every client that used it */
    token_cache_free(acct.tokens);
    scratch_free(a.scratch);
    fs_handles_free(a.handles); /* (closed at the loop's end, or never used) */
    fs_forget_free(a.forget);
    fs_inodes_free(a.inodes);
    curl_global_cleanup();
out:
    metrics_stop(metrics);
    account_free(&acct);
    cred_settings_free(&cs);
    free(cmd.mountpoint);
    options_free(&o);
    options_free_tables(a.store.tables);
    failring_free(a.store.log.failures);
    log_close(&a.store.log);
    fuse_opt_free_args(&args);
    return rc;
}
