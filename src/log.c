/* log.c - leveled logging to stderr or syslog; one line per message. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

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
    char line[2048];
    va_list ap;

    if (level > max)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (lg && lg->use_syslog)
        syslog(prio[level], "%s", line);
    else
        fprintf(stderr, "aztfs: %s: %s\n", level_names[level], line);
}
