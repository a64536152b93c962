/* monitor/notify.c - the mount's state told to systemd (Type=notify): the
 * notification socket protocol of sd_notify(3), spoken directly (monitor.h). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util/util.h"
#include "monitor/monitor.h"

/* See monitor.h. */
int notify_send(const char *fmt, ...)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    char msg[512];
    size_t len;
    va_list ap;
    int fd, rc = 0;

    if (!path || !*path)
        return 0;
    len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
        return -EAFNOSUPPORT; /* vsock: and the like: not spoken here */
    memcpy(sa.sun_path, path, len);
    if (sa.sun_path[0] == '@')
        sa.sun_path[0] = '\0'; /* the abstract namespace */
    va_start(ap, fmt);
    if (vsnprintf(msg, sizeof(msg), fmt, ap) >= (int)sizeof(msg))
        rc = -EMSGSIZE;
    va_end(ap);
    if (rc < 0)
        return rc;
    if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return -errno;
    if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
               (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
        rc = -errno;
    close(fd);
    return rc;
}

/* See monitor.h. */
int notify_status(struct store *s, const char *mountpoint)
{
    struct store_pending_counts c;

    if (store_pending_counts(s, &c) < 0)
        return notify_send("STATUS=serving %s", mountpoint);
    return notify_send("STATUS=serving %s; write-behind: %zu queued, %zu sending, %zu failed",
                       mountpoint, c.queued, c.sending, c.failed);
}
