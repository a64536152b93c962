/* util/log.c - leveled logging to stderr, a log file or syslog; one line per message. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "util/util.h"

static const char *const level_names[] = {
    [LOG_LVL_ERROR] = "error",
    [LOG_LVL_WARN] = "warn",
    [LOG_LVL_INFO] = "info",
    [LOG_LVL_DEBUG] = "debug",
};

/* Parse a level name (case-insensitive). Returns 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcasecmp(s, level_names[i]) == 0) {
            *out = (enum log_level)i;
            return 0;
        }
    }
    return -EINVAL;
}

/* Write the unit at *IN (a valid UTF-8 character, as utf8_char
 * reads them for keys, else a single byte) as log_escape says to UNIT, which
 * has room for 8 bytes, and step *IN past it. Returns the bytes written. */
static size_t escape_unit(const char **in, char *unit)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)*in;
    unsigned long cp = 0;
    int n = utf8_char(*in, strnlen(*in, 4), &cp);
    int escape = n == 0 || cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
    size_t w = 0;

    if (n == 0)
        n = 1; /* not valid UTF-8: this byte alone */
    *in += n;
    if (!escape) {
        if (cp == '\\')
            unit[w++] = '\\';
        memcpy(unit + w, u, (size_t)n);
        return w + (size_t)n;
    }
    for (int i = 0; i < n; i++) {
        unit[w++] = '\\';
        unit[w++] = 'x';
        unit[w++] = hex[u[i] >> 4];
        unit[w++] = hex[u[i] & 0x0F];
    }
    return w;
}

/* log_escape: see util/util.h. */
size_t log_escape(char *out, size_t outlen, const char *in)
{
    size_t len = 0, kept = 0; /* length of the whole text; of what OUT holds */

    while (*in) {
        char unit[8];
        size_t w = escape_unit(&in, unit);

        if (kept == len && len + w < outlen) { /* nothing cut so far, and it fits */
            memcpy(out + len, unit, w);
            kept += w;
        }
        len += w;
    }
    if (outlen)
        out[kept] = '\0';
    return len;
}

/* Append LINE (level NAME) to LG's log file with one write(2), so that
 * lines of concurrent threads never interleave (O_APPEND). */
static void file_line(const struct logger *lg, const char *name, const char *line)
{
    char out[LOG_LINE_MAX + 96], when[40];
    struct timespec now;
    struct tm tm;
    int n;

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
    n = snprintf(out, sizeof(out), "%s.%03ldZ aztfs[%ld]: %s: %s\n", when, now.tv_nsec / 1000000,
                 (long)getpid(), name, line);
    if (n > (int)sizeof(out) - 1)
        n = (int)sizeof(out) - 1;
    if (n > 0 && write(lg->fd, out, (size_t)n) < 0)
        return; /* nowhere left to say so */
}

/* Write one message if LEVEL is enabled; syslog priorities map one to one. */
static void log_vmsg(const struct logger *lg, enum log_level level, const char *fmt, va_list ap)
{
    static const int prio[] = {
        [LOG_LVL_ERROR] = LOG_ERR,
        [LOG_LVL_WARN] = LOG_WARNING,
        [LOG_LVL_INFO] = LOG_INFO,
        [LOG_LVL_DEBUG] = LOG_DEBUG,
    };
    enum log_level max = lg ? lg->level : LOG_LVL_INFO;
    char raw[LOG_LINE_MAX + 1], line[LOG_LINE_MAX + 1];

    if (level > max)
        return;
    vsnprintf(raw, sizeof(raw), fmt, ap);
    log_escape(line, sizeof(line), raw);
    if (lg && lg->use_file)
        file_line(lg, level_names[level], line);
    else if (lg && lg->use_syslog)
        syslog(prio[level], "%s", line);
    else
        fprintf(stderr, "aztfs: %s: %s\n", level_names[level], line);
}

/* See util/util.h. */
void log_msg(const struct logger *lg, enum log_level level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    log_vmsg(lg, level, fmt, ap);
    va_end(ap);
}

/* See util/util.h. */
int log_open_file(struct logger *lg, const char *path, int allow_shared)
{
    struct safe_dir dir;
    char why[512], *name = NULL, *full = NULL;
    int fd = safe_parent_open(path, allow_shared, &dir, &name, why, sizeof(why));

    if (fd == 0) /* the directory is fine: now the file */
        fd = safe_open(&dir, name, O_WRONLY | O_APPEND | O_CREAT, 0600, why, sizeof(why));
    if (fd >= 0 && asprintf(&full, "%s/%s", dir.path, name) < 0) {
        full = NULL;
        close(fd);
        fd = -ENOMEM;
        snprintf(why, sizeof(why), "out of memory");
    }
    if (fd < 0) {
        fprintf(stderr, "aztfs: cannot open the log file %s: %s\n", path, why);
        safe_dir_close(&dir);
        free(name);
        return fd;
    }
    log_close(lg);
    lg->fd = fd;
    lg->dir = dir;
    lg->name = name;
    lg->path = full;
    lg->use_file = 1;
    return 0;
}

/* See util/util.h. */
int log_reopen(struct logger *lg)
{
    char why[512];
    int fd, err;

    if (!lg->use_file)
        return 0;
    fd = safe_open(&lg->dir, lg->name, O_WRONLY | O_APPEND | O_CREAT, 0600, why, sizeof(why));
    if (fd < 0) {
        log_error(lg, "cannot reopen the log file %s: %s (still writing to the old one)", lg->path,
                  why);
        return fd;
    }
    err = dup3(fd, lg->fd, O_CLOEXEC) < 0 ? errno : 0;
    close(fd);
    if (err)
        log_error(lg, "cannot reopen the log file %s: %s", lg->path, strerror(err));
    return -err;
}

/* See util/util.h. */
void log_close(struct logger *lg)
{
    if (lg->use_file)
        close(lg->fd);
    safe_dir_close(&lg->dir);
    free(lg->name);
    free(lg->path);
    lg->name = lg->path = NULL;
    lg->use_file = 0;
}

/* Can a socket of TYPE connect to LOG_SYSLOG_SOCKET? */
static int syslog_connects(int type)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0), ok;

    if (fd < 0)
        return 0;
    memcpy(sa.sun_path, LOG_SYSLOG_SOCKET, sizeof(LOG_SYSLOG_SOCKET));
    ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

/* See util/util.h. syslog(3) tries a datagram socket, then a stream one. */
int log_syslog_listening(void)
{
    return syslog_connects(SOCK_DGRAM) || syslog_connects(SOCK_STREAM);
}

/* See util/util.h. */
void log_detach(struct logger *lg, const char *mountpoint)
{
    if (lg->use_file)
        return;
    if (log_syslog_listening()) {
        openlog("aztfs", LOG_PID, LOG_DAEMON);
        lg->use_syslog = 1;
        return;
    }
    fprintf(stderr,
            "aztfs: warning: nothing listens on %s (no syslog daemon), so the "
            "messages of this mount are lost: add -o logfile=PATH, or -f to keep them on "
            "this terminal; the last failures stay readable with: getfattr -n "
            "user.aztfs.errors %s\n",
            LOG_SYSLOG_SOCKET, mountpoint);
}
