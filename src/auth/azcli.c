/* auth/azcli.c - `az account get-access-token`, run without a shell, bounded. */
#include "auth/auth_i.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "util/util.h"

#define OUT_MAX (64 * 1024)
#define ERR_MAX 4096

extern char **environ;

/* The first executable "az" on PATH into OUT (OUTLEN bytes). 0 or -ENOENT. */
static int find_az(char *out, size_t outlen)
{
    const char *path = getenv("PATH"), *p, *end;

    for (p = path ? path : "/usr/bin:/bin"; p && *p; p = *end ? end + 1 : end) {
        end = strchr(p, ':');
        if (!end)
            end = p + strlen(p);
        if (end > p && (size_t)snprintf(out, outlen, "%.*s/az", (int)(end - p), p) < outlen &&
            access(out, X_OK) == 0)
            return 0;
    }
    return -ENOENT;
}

static long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Read FDS[0] into OUT and FDS[1] into ERRB until both end or DEADLINE
 * (monotonic ms). Returns 0, -ETIMEDOUT or -EFBIG. */
static int collect(int fds[2], struct buf *out, struct buf *errb, long deadline)
{
    struct buf *sink[2] = { out, errb };
    char chunk[4096];

    while (fds[0] >= 0 || fds[1] >= 0) {
        struct pollfd pf[2] = { { fds[0], POLLIN, 0 }, { fds[1], POLLIN, 0 } };
        long left = deadline - now_ms();

        if (left <= 0)
            return -ETIMEDOUT;
        if (poll(pf, 2, (int)left) < 0 && errno != EINTR)
            return -errno;
        for (int i = 0; i < 2; i++) {
            ssize_t n;

            if (fds[i] < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            n = read(fds[i], chunk, sizeof(chunk));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                close(fds[i]);
                fds[i] = -1;
            } else if (buf_add(sink[i], chunk, (size_t)n) < 0 && i == 0) {
                return out->err;
            } else if (i == 1) {
                buf_clearerr(errb); /* keep the start of the error output */
            }
        }
    }
    OPENSSL_cleanse(chunk, sizeof(chunk));
    return 0;
}

/* Wait for PID until DEADLINE; kill its group after it. Returns its wait
 * status, or -ETIMEDOUT. */
static int reap(pid_t pid, long deadline, int killnow)
{
    int status = 0;

    while (!killnow) {
        pid_t r = waitpid(pid, &status, WNOHANG);

        if (r == pid)
            return status;
        if (r < 0 && errno != EINTR)
            return -ECHILD;
        if (now_ms() >= deadline)
            break;
        usleep(10000);
    }
    kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return -ETIMEDOUT;
}

/* Spawn az (PATH) with ARGV, stdout and stderr into pipes FDS. */
static int spawn(const char *path, char *const argv[], pid_t *pid, int fds[2])
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none;
    int po[2], pe[2], rc;

    if (pipe2(po, O_CLOEXEC) < 0)
        return -errno;
    if (pipe2(pe, O_CLOEXEC) < 0) {
        rc = -errno;
        close(po[0]);
        close(po[1]);
        return rc;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, po[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
    sigemptyset(&none); /* the daemon blocks SIGUSR1: az need not */
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    posix_spawnattr_setpgroup(&at, 0);
    rc = -posix_spawn(pid, path, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(po[1]);
    close(pe[1]);
    if (rc < 0) {
        close(po[0]);
        close(pe[0]);
        return rc;
    }
    fds[0] = po[0];
    fds[1] = pe[0];
    return 0;
}

/* ERR: "az failed: " and the first non-empty line of its error output. */
static void failure_line(const struct buf *errb, int status, char *err, size_t errlen)
{
    const char *s = errb->ptr ? errb->ptr : "";
    size_t n, i;

    while (*s == '\n' || *s == '\r' || *s == ' ')
        s++;
    n = (size_t)snprintf(err, errlen, "az exited with status %d%s", WEXITSTATUS(status),
                         *s ? ": " : "");
    for (i = 0; s[i] && s[i] != '\n' && s[i] != '\r' && n + 1 < errlen; i++)
        err[n++] = (s[i] >= ' ' && s[i] < 0x7f) ? s[i] : '?';
    if (n < errlen)
        err[n] = '\0';
}

/* See auth/auth_i.h. */
int azcli_get_token(const char *resource, const char *tenant, long timeout_ms, char **out,
                    char *err, size_t errlen)
{
    char path[4096];
    char *argv[] = { "az",           "account",    "get-access-token", "--output",
                     "json",         "--resource", (char *)resource,   tenant ? "--tenant" : NULL,
                     (char *)tenant, NULL };
    struct buf ob = BUF_INIT(OUT_MAX), eb = BUF_INIT(ERR_MAX);
    long deadline = now_ms() + timeout_ms;
    int fds[2] = { -1, -1 }, rc, status;
    pid_t pid;

    *out = NULL;
    if (find_az(path, sizeof(path)) < 0) {
        snprintf(err, errlen, "az not found on PATH");
        return -ENOENT;
    }
    if ((rc = spawn(path, argv, &pid, fds)) < 0) {
        snprintf(err, errlen, "cannot run %s: %s", path, strerror(-rc));
        return rc;
    }
    rc = collect(fds, &ob, &eb, deadline);
    status = reap(pid, deadline, rc < 0);
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    if (rc == 0 && status < 0)
        rc = status;
    if (rc == -ETIMEDOUT)
        snprintf(err, errlen, "az did not answer within %ld ms", timeout_ms);
    else if (rc == -EFBIG)
        snprintf(err, errlen, "az wrote more than %d bytes", OUT_MAX);
    else if (rc < 0)
        snprintf(err, errlen, "az: %s", strerror(-rc));
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        failure_line(&eb, WIFEXITED(status) ? status : 255 << 8, err, errlen);
        rc = -EACCES;
    } else if (!(*out = buf_take(&ob, NULL))) {
        snprintf(err, errlen, "out of memory");
        rc = -ENOMEM;
    }
    secret_buf_free(&ob);
    buf_free(&eb);
    return rc;
}
