/* log.c - leveled logging to stderr or syslog; one line per message. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include "keycodec.h"
#include "log.h"

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

/* Write the unit at *IN (a valid UTF-8 character, as keycodec_utf8_char
 * reads them for keys, else a single byte) as log_escape says to UNIT, which
 * has room for 8 bytes, and step *IN past it. Returns the bytes written. */
static size_t escape_unit(const char **in, char *unit)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)*in;
    unsigned long cp = 0;
    int n = keycodec_utf8_char(*in, strnlen(*in, 4), &cp);
    int escape = n == 0 || cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
    size_t w = 0;

    if (n == 0)
        n = 1;              /* not valid UTF-8: this byte alone */
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

/* log_escape: see log.h. */
size_t log_escape(char *out, size_t outlen, const char *in)
{
    size_t len = 0, kept = 0;   /* length of the whole text; of what OUT holds */

    while (*in) {
        char unit[8];
        size_t w = escape_unit(&in, unit);

        if (kept == len && len + w < outlen) {  /* nothing cut so far, and it fits */
            memcpy(out + len, unit, w);
            kept += w;
        }
        len += w;
    }
    if (outlen)
        out[kept] = '\0';
    return len;
}

/* Write one message if LEVEL is enabled; syslog priorities map one to one. */
void log_msg(const struct logger *lg, enum log_level level, const char *fmt, ...)
{
    static const int prio[] = {
        [LOG_LVL_ERROR] = LOG_ERR,
        [LOG_LVL_WARN] = LOG_WARNING,
        [LOG_LVL_INFO] = LOG_INFO,
        [LOG_LVL_DEBUG] = LOG_DEBUG,
    };
    enum log_level max = lg ? lg->level : LOG_LVL_INFO;
    char raw[LOG_LINE_MAX + 1], line[LOG_LINE_MAX + 1];
    va_list ap;

    if (level > max)
        return;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    log_escape(line, sizeof(line), raw);
    if (lg && lg->use_syslog)
        syslog(prio[level], "%s", line);
    else
        fprintf(stderr, "aztfs: %s: %s\n", level_names[level], line);
}
