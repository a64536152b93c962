/* options.h - aztfs's own command-line options (the rest go to libfuse). */
#ifndef AZTFS_OPTIONS_H
#define AZTFS_OPTIONS_H

#define FUSE_USE_VERSION 312

/* Seconds an absence is believed (-o negative_timeout). */
#define NEGATIVE_TIMEOUT_DEFAULT 1.0
/* Milliseconds a queued change waits for batch-mates (-o writeback). */
#define WRITEBACK_MS_DEFAULT 200
#include <fuse.h>

struct aztfs_opts {
    char *config;                  /* -o config=FILE, or the first of two positionals */
    char *loglevel;                /* -o loglevel=error|warn|info|debug */
    double cache_timeout;          /* -o cache_timeout=SECONDS */
    double attr_timeout;           /* -o attr_timeout=SECONDS (NAN until given) */
    double negative_timeout;       /* -o negative_timeout=SECONDS (NAN until given) */
    unsigned long cache_size_mb;   /* -o cache_size=MiB */
    int scan_parallel;             /* -o scan_parallel=N: listing fetches in flight ahead */
    int fetch_threads;             /* -o fetch_threads=N: page, split and prefetch threads */
    unsigned long scratch_size_mb; /* -o scratch_size=MiB: all scratch files together */
    long connect_timeout;          /* -o connect_timeout=SECONDS */
    long timeout;                  /* -o timeout=SECONDS (whole request) */
    int retries;                   /* -o retries=N */
    long retry_time;               /* -o retry_time=SECONDS: no retry starts later */
    double max_rps;                /* -o max_rps=N: requests per second at most (0: no cap) */
    unsigned long forget_after;    /* -o forget_after=N: names the kernel keeps (0: all) */
    char *cafile;                  /* -o cafile=FILE */
    int merge;                     /* -o merge */
    int unordered;                 /* -o unordered: trust no order in query results */
    int allow_http;                /* -o allow_http: plain http beyond loopback */
    char *tables;                  /* -o tables=A:B:C (as given) */
    char *auth;                    /* -o auth=key|sas|secret|certificate|workload|managed|cli */
    char *client_id;               /* -o client_id=ID: a user-assigned managed identity */
    char *service;                 /* -o service=storage|cosmos (NULL: from the host) */
    int allow_other;               /* -o allow_other seen (kept for libfuse) */
    int fsname_given;              /* -o fsname= seen (kept for libfuse) */
    int subtype_given;             /* -o subtype= seen (kept for libfuse) */
    int default_permissions;       /* -o default_permissions seen (kept for libfuse) */
    int no_default_permissions;    /* -o no_default_permissions: the opt-out */
    int unchecked;                 /* allow_other without permission checks: warn */
    char *logfile;                 /* -o logfile=PATH */
    char *metrics_file;            /* -o metrics_file=PATH */
    int allow_shared_dirs;         /* -o allow_shared_dirs: the files above (and the
                                 journal) may be in a directory others may write */
    unsigned metrics_interval;     /* -o metrics_interval=SECONDS */
    unsigned umask;                /* -o umask=OCTAL (UINT_MAX: not given) */
    unsigned uid, gid;             /* -o uid=N, gid=N: the owner shown (UINT_MAX: the
                                 mounting user's) */
    unsigned file_mode;            /* -o file_mode=OCTAL; after parsing, the mode of files */
    unsigned dir_mode;             /* -o dir_mode=OCTAL; after parsing, the mode of directories */
    int ino32;                     /* -o ino32: inode numbers below 2^32 */
    int nonempty;                  /* -o nonempty: mount on a directory that holds files */
    int writeback;                 /* -o writeback[=MS]: write-behind */
    unsigned writeback_ms;         /* its delay (UINT_MAX until given) */
    char *journal_dir;             /* -o journal_dir=DIR */
    char *spool_dir;               /* -o spool_dir=DIR */
    unsigned long writeback_queue_mb; /* -o writeback_queue=MiB: writers wait beyond it */
    unsigned writeback_stop;          /* -o writeback_stop=SECONDS: the send at the stop, at most */
    char *positional[2];              /* non-option arguments, in order */
    int n_positional;
    int show_help;
    int show_version;
};

/* Seconds the queue is sent for at unmount or SIGTERM (-o writeback_stop). */
#define WRITEBACK_STOP_DEFAULT 30

/* Partition listings fetched ahead of a walk at a time (-o scan_parallel). */
#define SCAN_PARALLEL_DEFAULT 4
#define SCAN_PARALLEL_DEFAULT_STR "4"

/* Names the kernel keeps before it is told to drop the oldest (fs/forget.c):
 * each costs about 200 bytes of libfuse's memory and 1 KiB of the kernel's. */
#define FORGET_AFTER_DEFAULT 32768
#define FORGET_AFTER_DEFAULT_STR "32768"
#define SCAN_PARALLEL_MAX 64

/* -o fetch_threads at most (table_client_set_threads; the default is
 * TABLE_THREADS_DEFAULT). */
#define FETCH_THREADS_MAX 1024

/* Parse aztfs's options out of ARGS (matched ones are removed, the rest are
 * left for libfuse), applying defaults first. With two positional arguments
 * the first is the config file (as mount.fuse3 passes it) and the second the
 * mount point; the mount point is put back into ARGS for libfuse.
 * allow_other brings default_permissions into ARGS (the kernel checks modes,
 * so other users do not act with the mounter's credentials unchecked) unless
 * no_default_permissions is given; then o->unchecked is set for a warning.
 * file_mode and dir_mode come out as the permission bits to show: as given,
 * else 0666 & ~umask and 0777 & ~umask when umask= is given (umask is
 * aztfs's, not libfuse's, which would give files x bits), else 0644, 0755.
 * FUSE options aztfs sets itself (entry_timeout, kernel_cache, modules=,
 * ...) are refused.
 * Returns 0, or -EINVAL with a message on stderr. Strings in *o are malloc'd;
 * release with options_free. */
int options_parse(struct fuse_args *args, struct aztfs_opts *o);
void options_free(struct aztfs_opts *o);

/* Split the -o tables= value SPEC ("a:b:c") into a NULL-terminated array of
 * malloc'd names (*out; free with options_free_tables). Every name must be a
 * valid table name, and at least one must be given. Returns 0, -ENOMEM, or
 * -EINVAL with a message on stderr. */
int options_split_tables(const char *spec, char ***out);
void options_free_tables(char **tables);

/* The arguments, as --help's first line, a call without a mount point and
 * the man page's SYNOPSIS give them (tests/integration/test_docs.py keeps
 * the three the same). */
#define AZTFS_USAGE "[options] [CONFIGFILE] MOUNTPOINT"

/* Print the usage: aztfs's options, then the FUSE options that apply. */
void options_usage(const char *progname);

#endif
