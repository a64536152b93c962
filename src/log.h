/* log.h - leveled logging to stderr (foreground) or syslog (daemon), secrets redacted by callers. */
#ifndef AZTFS_LOG_H
#define AZTFS_LOG_H

/* QUIET drops everything (while the mount-time check prints its own verdict). */
enum log_level { LOG_LVL_QUIET = -1, LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

struct logger {
    enum log_level level;   /* messages above this level are dropped */
    int use_syslog;         /* 0: stderr, 1: syslog(3) */
};

/* Parse "error|warn|info|debug" into *out. Returns 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *out);

/* Emit one line at LEVEL if enabled. LG may be NULL (then: stderr, level info). */
void log_msg(const struct logger *lg, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define log_error(lg, ...) log_msg((lg), LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(lg, ...)  log_msg((lg), LOG_LVL_WARN, __VA_ARGS__)
#define log_info(lg, ...)  log_msg((lg), LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(lg, ...) log_msg((lg), LOG_LVL_DEBUG, __VA_ARGS__)

#endif
