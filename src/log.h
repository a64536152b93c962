/* log.h - leveled logging to stderr (foreground), a log file (-o logfile=)
 * or syslog (daemon), secrets redacted by callers. The logger also carries
 * the mount's ring of recent failures (failring.h), which the code that logs
 * a failure fills too. */
#ifndef AZTFS_LOG_H
#define AZTFS_LOG_H

#include <stddef.h>

#include "safefile.h"

/* QUIET drops everything (while the mount-time check prints its own verdict). */
enum log_level { LOG_LVL_QUIET = -1, LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

struct failring;     /* failring.h: the ring the logger carries, borrowed */

struct logger {
    enum log_level level;   /* messages above this level are dropped */
    int use_syslog;         /* 0: stderr, 1: syslog(3) (unless use_file) */
    int use_file;           /* 1: lines are appended to fd (log_open_file) */
    int fd;                 /* the log file, when use_file */
    struct safe_dir dir;    /* its checked directory (log_reopen opens NAME there) */
    char *name;             /* its name in DIR, malloc'd */
    char *path;             /* its resolved absolute path (messages), malloc'd */
    struct failring *failures;  /* borrowed; NULL: failures are only logged
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
#define log_warn(lg, ...)  log_msg((lg), LOG_LVL_WARN, __VA_ARGS__)
#define log_info(lg, ...)  log_msg((lg), LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(lg, ...) log_msg((lg), LOG_LVL_DEBUG, __VA_ARGS__)

#endif
