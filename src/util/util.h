/* util.h - the public face of the util/ folder: its parts below, each
 * with its own contract. */
#ifndef AZTFS_UTIL_UTIL_H
#define AZTFS_UTIL_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- util/buf.c: the one growable byte buffer, in the spirit of curl's dynbuf:
 * always NUL-terminated, bounded by a size cap, and a failure is sticky. */

struct buf {
    char *ptr;    /* NULL until something is added; then NUL-terminated */
    size_t len;   /* bytes held, the terminating NUL not counted */
    size_t alloc; /* bytes allocated at ptr */
    size_t max;   /* LEN never exceeds this: adding more fails with -EFBIG */
    int err;      /* 0, or the first failure (-ENOMEM, -EFBIG): from then on
                       every add does nothing and returns it */
};

/* An empty buffer that may grow to MAX bytes (static initialiser). */
#define BUF_INIT(max)        \
    {                        \
        NULL, 0, 0, (max), 0 \
    }

/* Make B empty, with cap MAX, owning nothing. */
void buf_init(struct buf *b, size_t max);

/* Append N bytes of MEM. Returns 0, or -ENOMEM / -EFBIG (and so does every
 * later add: test once at the end). */
int buf_add(struct buf *b, const void *mem, size_t n);

/* Append the NUL-terminated string S. Returns as buf_add. */
int buf_adds(struct buf *b, const char *s);

/* Append printf-formatted text. Returns as buf_add. */
int buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Make B exactly LEN bytes: cut it, or grow it with zero bytes. Returns as
 * buf_add. */
int buf_setlen(struct buf *b, size_t len);

/* Make B own STR, a malloc'd NUL-terminated string of LEN bytes, in place
 * of what it held (freed), without copying it. Returns 0, or -EFBIG when
 * LEN exceeds B's cap (then STR is not taken and B is unchanged). */
int buf_attach(struct buf *b, char *str, size_t len);

/* Copy up to N bytes from offset OFF of B into OUT. Returns the number
 * copied (0 at or past the end). */
size_t buf_read(const struct buf *b, size_t off, void *out, size_t n);

/* Forget a failure, keeping the contents: for a buffer whose failed add
 * left it as it was, where a later, smaller change may still fit. */
void buf_clearerr(struct buf *b);

/* Forget the contents and any failure; keep the memory for reuse. */
void buf_reset(struct buf *b);

/* Hand over B's bytes: a malloc'd NUL-terminated string (an empty one when
 * nothing was added) the caller frees; *LEN (if non-NULL) gets its length.
 * B is left empty, owning nothing. NULL (and B freed) when B has failed or
 * memory is short. */
char *buf_take(struct buf *b, size_t *len);

/* Free what B holds and make it empty (cap and failure kept as they were
 * reset: err 0). */
void buf_free(struct buf *b);

/* ---- util/failring.c: the last failed operations of a mount, kept in a bounded ring
 * (xattr user.aztfs.errors on the mount root) and counted. Thread-safe. */

/* How many failures the ring keeps (the oldest is dropped first). */
#define FAILRING_SIZE 32

struct failring;

/* One failure as the caller knows it. */
struct failure {
    const char *op;      /* "save", "delete", "list", ... */
    const char *path;    /* the path it was about (any bytes; escaped when kept) */
    int err;             /* the positive errno the operation returned */
    long http_status;    /* the service's HTTP status; 0: none */
    const char *code;    /* the service's error code; NULL or "": none */
    const char *message; /* why, in words; NULL: strerror(err) */
};

/* A new, empty ring; NULL on ENOMEM. */
struct failring *failring_new(void);
void failring_free(struct failring *r);

/* Record F with the current time (a copy: nothing of F is kept). The path
 * and message are escaped as log lines are (log_escape) and cut (the path
 * at 512 bytes, the message at 1 KiB). R may be NULL (nothing happens). Never fails: when memory
 * runs out the entry is counted but not kept. */
void failring_add(struct failring *r, const struct failure *f);

/* How many failures were recorded since the ring was made (kept or not). */
unsigned long failring_count(struct failring *r);

/* The kept failures, oldest first, as one line of JSON:
 *   {"failures": TOTAL, "recent": [{"time": "2026-11-23T07:03:25Z",
 *    "op": "save", "path": "/t/p/a.json", "errno": 116, "error": "ESTALE",
 *    "http_status": 412, "code": "UpdateConditionNotSatisfied",
 *    "message": "..."}, ...]}
 * ("http_status" and "code" only when the service answered). When the whole
 * would exceed MAX_BYTES, the oldest entries are left out until it fits.
 * Malloc'd (caller frees); NULL on ENOMEM or when not even the empty list
 * fits. */
char *failring_json(struct failring *r, size_t max_bytes);

/* ---- hash: FNV-1a string hash shared by the cache, listings and inode numbers. */

/* 64-bit FNV-1a of the NUL-terminated string S. */
static inline uint64_t hash_fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 1099511628211ull;
    }
    return h;
}

/* ---- util/safefile.c: the files the daemon writes (log, metrics, journal), opened
 * so that another local user cannot redirect them: never through a symlink,
 * never blocking on a FIFO, never in a directory another user may write
 * unless the user says so (-o allow_shared_dirs).
 *
 * Ownership and the mode bits are what is checked; POSIX ACLs are not (a
 * directory whose ACL lets another user write passes): out of scope. */

/* A checked directory: FD is O_RDONLY|O_DIRECTORY|O_CLOEXEC, the directory
 * that was checked; PATH its resolved, absolute path (for messages),
 * malloc'd. A zeroed struct (PATH NULL) holds nothing. */
struct safe_dir {
    int fd;
    char *path;
};

/* Open directory PATH for files the daemon writes (a relative PATH is taken
 * from the current directory). With CREATE, missing components are created
 * 0700 (like `mkdir -p`; a missing ".." is refused). The path is resolved
 * (realpath of the longest existing prefix), then walked from "/" one
 * component at a time with openat(O_NOFOLLOW|O_DIRECTORY), so the descriptor
 * is the directory that was checked (no symlink swapped in between).
 * Unless ALLOW_SHARED:
 *  - a symlink on the way (in PATH as given) must belong to root or the
 *    effective user (the rule fs.protected_symlinks keeps in sticky
 *    directories, kept here everywhere);
 *  - the directory and every ancestor must belong to root or the effective
 *    user and be writable by no one else unless it has the sticky bit
 *    (/tmp is fine, as an ancestor and as the directory: no other user can
 *    remove or rename a file of ours there, and a name they made first is
 *    refused by safe_open's rules on the file);
 *  - the fix WHY offers for a shared directory is chmod only for one of
 *    the user's own (root's: of group 0), never for the system's.
 * Returns 0 with *OUT, or -errno with WHY (one sentence naming the path,
 * what is wrong and the fix, e.g. "chmod go-w DIR", or "-o
 * allow_shared_dirs if you mean it"): -ENOENT, -ENOTDIR, -ELOOP (a symlink
 * appeared during the walk), -EACCES (a rule above), -ENOMEM, ... */
int safe_dir_open(const char *path, int create, int allow_shared, struct safe_dir *out, char *why,
                  size_t whylen);

/* Close D's descriptor and free its path; D is zeroed. A zeroed D: nothing. */
void safe_dir_close(struct safe_dir *d);

/* Split the file path PATH ("DIR/NAME", possibly relative: taken from the
 * current directory now) into *DIR (absolute, malloc'd) and *NAME (its
 * last component, malloc'd). Returns 0, -EINVAL (empty, ends in '/', ".",
 * ".."), -ENOMEM or the errno of getcwd. */
int safe_path_split(const char *path, char **dir, char **name);

/* The directory of the file PATH opened with safe_dir_open (CREATE 0: it
 * must exist) and the file's name: safe_path_split, then safe_dir_open.
 * Returns 0 with *DIR and *NAME (malloc'd), or -errno with WHY. */
int safe_parent_open(const char *path, int allow_shared, struct safe_dir *dir, char **name,
                     char *why, size_t whylen);

/* Open NAME (no '/') in D with FLAGS (O_RDONLY/O_WRONLY/O_RDWR, optionally
 * O_CREAT, O_EXCL, O_APPEND, O_TRUNC; other flags are ignored) and MODE:
 * always O_NOFOLLOW (a symlink is refused), O_NONBLOCK while opening (a FIFO
 * or device never blocks; then refused as not a regular file) then cleared,
 * O_CLOEXEC, O_NOCTTY; O_TRUNC is applied only after the checks
 * (ftruncate). The file must be a regular file with one link, owned by the
 * effective user, and writable by no one else (group/other read is
 * allowed: a metrics file is 0644). These checks hold whatever
 * allow_shared_dirs says. Returns the descriptor, or -errno with WHY:
 * -ELOOP (a symlink), -EINVAL (not a regular file, or a bad NAME), -EMLINK
 * (more than one link), -EACCES (owner or mode), or open's errno. */
int safe_open(const struct safe_dir *d, const char *name, int flags, mode_t mode, char *why,
              size_t whylen);

/* A new temporary file beside NAME in D for write-then-rename: a random
 * name "NAME.tmp-XXXXXX" (OpenSSL RAND_bytes, another name on EEXIST, at
 * most 100 tries), created O_RDWR|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC with
 * MODE (before the umask), so nothing planted at any name is ever opened.
 * *TMP gets the name (malloc'd). Returns the descriptor, or -errno (-EEXIST
 * after 100 taken names). */
int safe_tmp(const struct safe_dir *d, const char *name, mode_t mode, char **tmp);

/* Is NAME in D still the file open as FD (same st_dev and st_ino, checked
 * with fstatat(AT_SYMLINK_NOFOLLOW))? 1, 0 (removed or replaced), or
 * -errno. */
int safe_same_file(const struct safe_dir *d, const char *name, int fd);

/* Write all LEN bytes of DATA to FD at OFF (EINTR retried). Returns 0 or
 * -errno. */
int safe_pwrite_all(int fd, const char *data, size_t len, off_t off);

/* ---- util/log.c: leveled logging to stderr (foreground), a log file (-o logfile=)
 * or syslog (daemon), secrets redacted by callers. The logger also carries
 * the mount's ring of recent failures (util.h), which the code that logs
 * a failure fills too. */

/* QUIET drops everything (while the mount-time check prints its own verdict). */
enum log_level { LOG_LVL_QUIET = -1, LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

struct failring; /* util.h: the ring the logger carries, borrowed */

struct logger {
    enum log_level level;      /* messages above this level are dropped */
    int use_syslog;            /* 0: stderr, 1: syslog(3) (unless use_file) */
    int use_file;              /* 1: lines are appended to fd (log_open_file) */
    int fd;                    /* the log file, when use_file */
    struct safe_dir dir;       /* its checked directory (log_reopen opens NAME there) */
    char *name;                /* its name in DIR, malloc'd */
    char *path;                /* its resolved absolute path (messages), malloc'd */
    struct failring *failures; /* borrowed; NULL: failures are only logged
                                   (store_log_failure adds to it) */
};

/* Where a daemon's syslog(3) lines go; without a listener there, they are
 * lost (containers, minimal systems). */
#define LOG_SYSLOG_SOCKET "/dev/log"

/* Longest message log_msg emits, escapes included (longer ones are cut). */
#define LOG_LINE_MAX 2047

/* Parse "error|warn|info|debug" into *out. Returns 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);

/* Emit one line at LEVEL if enabled. LG may be NULL (then: stderr, level info).
 * The formatted message goes through log_escape, so file names, keys and
 * service messages in it can neither break the line nor forge an escape. */
void log_msg(const struct logger *lg, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Send LG's lines to the file PATH from now on: opened for appending
 * (created with mode 0600), each line prefixed with the UTC time. A relative
 * PATH is taken from the current directory now (a daemon changes to "/").
 * The file's directory must exist and pass safe_dir_open's checks (unless
 * ALLOW_SHARED: -o allow_shared_dirs), and the file safe_open's (never a
 * symlink, a FIFO, a hard link, a file of another user or one others may
 * write); the directory stays open for log_reopen.
 * Returns 0, or -errno after printing why on stderr. */
int log_open_file(struct logger *lg, const char *path, int allow_shared);

/* Open LG's log file again by its name in the directory checked by
 * log_open_file (after logrotate moved it), with the same checks of the
 * file, and put it in place of the old one atomically (dup3), so that
 * threads logging meanwhile write to one or the other, never to a closed
 * descriptor. Returns 0 or -errno (the old file stays in use; the failure
 * is logged). */
int log_reopen(struct logger *lg);

/* Close LG's log file, if any; lines go to stderr again. */
void log_close(struct logger *lg);

/* Does something listen on LOG_SYSLOG_SOCKET? 1 or 0. */
int log_syslog_listening(void);

/* Choose where LG's lines go once the process detaches from the terminal
 * (stderr is then /dev/null): the log file if there is one, else syslog if
 * log_syslog_listening(), else nowhere, and then one line on stderr (still
 * the terminal: call this before detaching) says so and how to keep them. */
void log_detach(struct logger *lg, const char *mountpoint);

/* Copy the NUL-terminated IN to OUT, a buffer of OUTLEN bytes, so that it is
 * printable text on one line:
 *  - a byte that is not part of a valid UTF-8 character (RFC 3629: no
 *    overlong forms, surrogates or code points past U+10FFFF), and every
 *    byte of a control character (U+0000-U+001F, U+007F, U+0080-U+009F),
 *    becomes "\xhh" (two lower-case hex digits; "\n" -> "\x0a", U+0085 ->
 *    "\xc2\x85");
 *  - a backslash becomes "\\", so an escape in IN cannot pass for one of ours;
 *  - everything else (printable ASCII, valid UTF-8) is copied as is.
 * OUT is cut, when it must be, before an escape or a character, never inside
 * one, and is NUL-terminated whenever OUTLEN > 0 (OUT may be NULL when OUTLEN
 * is 0). Returns the length of the whole escaped text, NUL excluded, as
 * snprintf does: OUT was cut exactly when the result is >= OUTLEN.
 * Allocates nothing. */
size_t log_escape(char *out, size_t outlen, const char *in);

#define log_error(lg, ...) log_msg((lg), LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(lg, ...) log_msg((lg), LOG_LVL_WARN, __VA_ARGS__)
#define log_info(lg, ...) log_msg((lg), LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(lg, ...) log_msg((lg), LOG_LVL_DEBUG, __VA_ARGS__)

/* ---- secret.c: secrets wiped (OPENSSL_cleanse) before their memory is
 * given back; those passed in environment variables removed from the
 * process once read, including the copy the kernel shows others. Every
 * secret the daemon frees goes through one of these. */

/* Wipe LEN bytes at P, then free P (NULL: nothing). */
void secret_free(void *p, size_t len);

/* Wipe the NUL-terminated string S, then free it (NULL: nothing). */
void secret_str_free(char *s);

/* Wipe every byte B holds (all it allocated), then buf_free it. */
void secret_buf_free(struct buf *b);

/* Remove every variable NAME from the environment (unsetenv) and wipe its
 * bytes (OPENSSL_cleanse) where they lie: for a variable the process was
 * started with, that is the environment block the kernel shows in
 * /proc/PID/environ and `ps e`, and there the whole "NAME=value" string is
 * zeroed, so neither the value nor the name shows any more (the block keeps
 * its length: the kernel shows a run of NUL bytes in its place). A
 * variable set later by the process (setenv) is not in that block: only
 * its value is wiped, as the C library may keep the string. Pointers from
 * an earlier getenv(NAME) then see an empty string. Not thread-safe (like
 * unsetenv): call before starting threads. */
void env_scrub(const char *name);

/* ---- mounts.c: the kernel's mount table. */

/* Is DIR (an absolute path without symbolic links, as realpath gives it) a
 * mount point in the mount table TABLE (/proc/self/mountinfo)? Returns 1
 * and the type of the mount on top there in TYPE (LEN bytes, cut to fit:
 * "fuse.aztfs", "autofs"), 0 when nothing is mounted on DIR, or -errno
 * when TABLE cannot be read. */
int mounts_type_at(const char *table, const char *dir, char *type, size_t len);

/* Can DIR (absolute, as realpath gives it) take a mount without hiding
 * anything? It must be a directory (a mount on a file would fail every
 * access), and empty unless ALLOW_NONEMPTY (-o nonempty). Returns 0 (also
 * when DIR cannot be read, or is "/dev/fd/N": the mount decides), or
 * -ENOTDIR / -ENOTEMPTY with one sentence in WHY (LEN bytes) naming DIR,
 * what it holds and the fix. */
int mounts_check_place(const char *dir, int allow_nonempty, char *why, size_t len);

/* Call FN(CTX, DIR) for each mount point DIR of the mount table TABLE
 * (decoded), in its order, until FN returns other than 0. Returns what FN
 * returned last, 0, or -errno when TABLE cannot be read. */
int mounts_each(const char *table, int (*fn)(void *ctx, const char *dir), void *ctx);

/* ---- encoding.c: base64 and one UTF-8 character, by OpenSSL. */

/* Base64 helpers (standard alphabet, with padding).
 * b64_encode: returns malloc'd NUL-terminated string or NULL.
 * b64_decode: returns 0 and malloc'd *out and *out_len, or -EINVAL on
 * malformed input (bad characters, bad padding), -ENOMEM. */
char *b64_encode(const unsigned char *in, size_t len);
int b64_decode(const char *in, unsigned char **out, size_t *out_len);

/* Length (1 to 4) of the valid UTF-8 character that starts the LEN bytes at
 * S, with its code point in *cp; 0 when they start with none (an invalid or
 * cut-short sequence, an overlong form, a surrogate, a code point past
 * U+10FFFF) or LEN is 0. */
int utf8_char(const char *s, size_t len, unsigned long *cp);

/* ---- util/jsontok.c: JSON tokens found in place (RFC 8259), for readers of
 * one known shape that make the values themselves or through jansson.
 * Nothing is copied, decoded or allocated. A reading is the text left. */
struct jtok {
    const char *p, *end;
};

/* Skip white space at R. */
void jtok_ws(struct jtok *r);

/* Is the next character C (after white space)? Taken when it is. */
int jtok_take(struct jtok *r, char c);

/* Is the literal WORD at R (no white space skipped)? Taken when it is; what
 * follows it is the caller's to check. */
int jtok_word(struct jtok *r, const char *word);

/* The string token at R (after white space): its bytes between the quotes
 * in *S and *N, as written (escapes not decoded), *FLAGS what it holds
 * (JTOK_ESCAPED: a backslash; JTOK_NONASCII: a byte past 0x7F, not
 * checked as UTF-8). Returns 0 (taken), or -1 when no string token starts
 * there (no quote, a control character, no closing quote). */
#define JTOK_ESCAPED 1
#define JTOK_NONASCII 2
int jtok_string(struct jtok *r, const char **s, size_t *n, int *flags);

/* The length of the number token at R->p (nothing taken): the longest run
 * of number characters when it is a JSON number, else 0; *INTEGRAL when it
 * has neither fraction nor exponent. */
size_t jtok_number(const struct jtok *r, int *integral);

/* ---- util/lock.c: mutexes whose holder is checked in debug builds. A debug
 * build is one configured with --enable-sanitizers or --enable-tsan, which
 * define AZTFS_DEBUG (and never NDEBUG: the asserts stay). Every mutex of
 * the daemon is made by lock_init; every field a mutex guards says so
 * where it is declared ("guarded by LOCK"), and a function that must be
 * called with a mutex held starts with LOCK_HELD(&that mutex). */

#ifdef AZTFS_DEBUG
#include <assert.h>
#ifdef NDEBUG
#error "a debug build (AZTFS_DEBUG) needs assert: do not define NDEBUG"
#endif
#endif

/* Initialise M: an error-checking mutex (PTHREAD_MUTEX_ERRORCHECK) in a
 * debug build, so that lock_held can tell its owner (and a second lock by
 * the owner, or an unlock by another thread, fails instead of hanging or
 * corrupting it); a default mutex otherwise. Destroy it with
 * pthread_mutex_destroy as any other. Returns 0 or -errno of
 * pthread_mutexattr_init / pthread_mutex_init. */
int lock_init(pthread_mutex_t *m);

/* Does the calling thread hold M, an error-checking mutex (what lock_init
 * makes in a debug build)? 1 when it does; 0 when nobody holds M or another
 * thread does. M is left as it was either way (hence const: a function
 * given a const struct may assert the lock of it), and the call never
 * blocks. Of a default mutex (lock_init's in other builds) it cannot tell:
 * LOCK_HELD asks it only in debug builds. Meant for asserts, never to
 * decide what to do. */
int lock_held(const pthread_mutex_t *m);

/* Assert that the calling thread holds M (a pthread_mutex_t *): the first
 * statement of a function whose contract says "lock held". Nothing in
 * other than debug builds. */
#ifdef AZTFS_DEBUG
#define LOCK_HELD(m) assert(lock_held(m))
#else
#define LOCK_HELD(m) ((void)0)
#endif

/* ---- worker.c: the one place threads start (named, every signal blocked). */

/* Threads a group holds at most (scan_parallel's and the split's maximum). */
#define WORKERS_MAX 64

/* One bound on the threads of many groups and workers together (the
 * mount's listing work: page, split and prefetch threads, table/'s
 * struct table_client): a thread starts only with a place free and gives
 * it back when joined. Whoever finds none does the work on its own
 * thread, so that nothing waits for a place (a queue of jobs could wait
 * forever: a split's reader waits for its fetchers). */
struct worker_budget {
    pthread_mutex_t lock;
    int limit;             /* places; 0: no bound; set before any thread starts */
    int used, peak;        /* places taken now, and the most at once; guarded by lock */
    unsigned long refused; /* threads not started for want of a place; guarded by lock */
};

/* Set B up with LIMIT places (0: no bound). 0 or -errno. */
int worker_budget_init(struct worker_budget *b, int limit);

/* Free B's lock (no thread of it left). */
void worker_budget_destroy(struct worker_budget *b);

/* A budget's counters, read together (worker_budget_read). */
struct worker_budget_counts {
    int limit, used, peak;
    unsigned long refused;
};

/* B's counters into *OUT. */
void worker_budget_read(struct worker_budget *b, struct worker_budget_counts *out);

/* A group of threads, each running one function until it returns (the
 * caller tells them to stop, then joins). Zero-initialised before use. */
struct workers {
    pthread_t tids[WORKERS_MAX];
    int n;                        /* started, not yet joined */
    struct worker_budget *budget; /* where its threads take a place (borrowed);
                                     NULL: none; set before the first add */
};

/* Start one more thread of W running FN(ARG), named NAME (the kernel keeps
 * 15 bytes). Returns 0, -EAGAIN when W holds WORKERS_MAX or its budget has
 * no place free, or -errno of pthread_create. Not thread-safe: one thread
 * adds and joins. */
int workers_add(struct workers *w, const char *name, void *(*fn)(void *), void *arg);

/* Start up to N threads of W as workers_add does: returns how many
 * started (0..N); the caller decides whether fewer will do. */
int workers_start(struct workers *w, const char *name, int n, void *(*fn)(void *), void *arg);

/* Join every thread of W (their functions must be returning) and empty W. */
void workers_join(struct workers *w);

/* One thread that runs the jobs posted to it, one at a time, in order (a
 * cursor's next page fetched while the current one is parsed). */
struct worker;

/* Start a worker named NAME, taking a place in BUDGET (NULL: none) until
 * it is freed. Returns 0 with *OUT, -EAGAIN (no place free), -ENOMEM or
 * -errno of pthread_create (*OUT NULL). */
int worker_new(struct worker **out, const char *name, struct worker_budget *budget);

/* Run JOB(ARG) on W's thread, after the job posted before it, if any, is
 * done (W has one slot: a second post waits for it). */
void worker_post(struct worker *w, void (*job)(void *arg), void *arg);

/* Wait until every job posted to W is done. */
void worker_wait(struct worker *w);

/* Free W (NULL: nothing): the job posted, if any, runs to its end first. */
void worker_free(struct worker *w);

#endif
