/* log.h - leveled logging to stderr (foreground) or syslog (daemon), secrets redacted by callers. */
#ifndef AZTFS_LOG_H
#define AZTFS_LOG_H

#include <stddef.h>

/* QUIET drops everything (while the mount-time check prints its own verdict). */
enum log_level { LOG_LVL_QUIET = -1, LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

struct logger {
    enum log_level level;   /* messages above this level are dropped */
    int use_syslog;         /* 0: stderr, 1: syslog(3) */
};

/* Longest message log_msg emits, escapes included (longer ones are cut). */
#define LOG_LINE_MAX 2047

/* Parse "error|warn|info|debug" into *out. Returns 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);

/* Emit one line at LEVEL if enabled. LG may be NULL (then: stderr, level info).
 * The formatted message goes through log_escape, so file names, keys and
 * service messages in it can neither break the line nor forge an escape. */
void log_msg(const struct logger *lg, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

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
