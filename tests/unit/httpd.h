/* httpd.h - a tiny HTTP/1.1 server on 127.0.0.1 for the unit tests that
 * send requests (test_http.c, test_split.c): one thread, a listening
 * socket on an ephemeral port, one connection served at a time, each
 * request answered by the test's handler. */
#ifndef AZTFS_TEST_HTTPD_H
#define AZTFS_TEST_HTTPD_H

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* The answer to request number N (1-based since httpd_reset) whose head
 * (request line and headers, NUL-terminated) is HEAD: the whole response
 * written into OUT (OUT_SIZE bytes), its length returned; 0: the
 * connection is closed without an answer. *KEEP (0 on entry): keep the
 * connection open for another request. Called with the server's lock
 * held, one request at a time. */
typedef size_t (*httpd_fn)(const char *head, int n, char *out, size_t out_size, int *keep);

#define HTTPD_OUT_MAX 65536

static struct {
    int fd, port;
    pthread_t thread;
    pthread_mutex_t lock;
    httpd_fn fn;
    int seen; /* requests received since httpd_reset */
    atomic_int stop;
    /* the body of the request being answered, NUL-terminated, when
     * keep_body was set before httpd_start (else dropped); the handler
     * reads it */
    int keep_body;
    char *body;
    size_t body_len;
} httpd = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Count requests anew (from 1). */
static inline void httpd_reset(void)
{
    pthread_mutex_lock(&httpd.lock);
    httpd.seen = 0;
    pthread_mutex_unlock(&httpd.lock);
}

/* Requests received since httpd_reset. */
static inline int httpd_seen(void)
{
    pthread_mutex_lock(&httpd.lock);
    int n = httpd.seen;
    pthread_mutex_unlock(&httpd.lock);
    return n;
}

/* Read one request from C into HEAD (SIZE bytes: its head, NUL-terminated;
 * a Content-Length body is kept in httpd.body with httpd.keep_body, else
 * read and dropped). 1, or 0 when the connection ended or timed out first. */
static inline int httpd_read(int c, char *head, size_t size)
{
    size_t got = 0, have;
    char *end = NULL, *cl, drop[4096];
    long body = 0;

    while (!end) {
        ssize_t n = recv(c, head + got, size - 1 - got, 0);

        if (n <= 0)
            return 0;
        got += (size_t)n;
        head[got] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    if ((cl = strcasestr(head, "\r\nContent-Length:")))
        body = strtol(cl + 17, NULL, 10);
    have = got - (size_t)(end + 4 - head);
    if (httpd.keep_body) {
        free(httpd.body);
        if (!(httpd.body = malloc((size_t)body + 1)))
            abort();
        memcpy(httpd.body, end + 4, have);
        httpd.body_len = have;
    }
    body -= (long)have;
    end[2] = '\0';
    while (body > 0) {
        ssize_t n = httpd.keep_body ? recv(c, httpd.body + httpd.body_len, (size_t)body, 0) :
                                      recv(c, drop, sizeof(drop), 0);

        if (n <= 0)
            return 0;
        body -= n;
        if (httpd.keep_body)
            httpd.body_len += (size_t)n;
    }
    if (httpd.keep_body)
        httpd.body[httpd.body_len] = '\0';
    return 1;
}

/* Answer the requests on connection C with the handler. */
static inline void httpd_serve(int c)
{
    static char head[16384], out[HTTPD_OUT_MAX];
    struct timeval tv = { 1, 0 };

    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    while (httpd_read(c, head, sizeof(head))) {
        int keep = 0;
        size_t n;

        pthread_mutex_lock(&httpd.lock);
        n = httpd.fn(head, ++httpd.seen, out, sizeof(out), &keep);
        pthread_mutex_unlock(&httpd.lock);
        if (n == 0 || send(c, out, n, MSG_NOSIGNAL) != (ssize_t)n || !keep)
            return;
    }
}

static inline void *httpd_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&httpd.stop)) {
        struct pollfd p = { httpd.fd, POLLIN, 0 };
        int c;

        if (poll(&p, 1, 20) == 1 && (c = accept(httpd.fd, NULL, NULL)) >= 0) {
            httpd_serve(c);
            close(c);
        }
    }
    return NULL;
}

/* A listening socket on an ephemeral port of 127.0.0.1: its fd, the port
 * in *PORT. Exits on failure. */
static inline int httpd_listen_local(int *port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        abort();
    *port = ntohs(a.sin_port);
    return fd;
}

/* Serve with FN until httpd_stop; the port is in httpd.port. */
static inline void httpd_start(httpd_fn fn)
{
    httpd.fn = fn;
    httpd.fd = httpd_listen_local(&httpd.port);
    if (pthread_create(&httpd.thread, NULL, httpd_main, NULL) != 0)
        abort();
}

static inline void httpd_stop(void)
{
    atomic_store(&httpd.stop, 1);
    pthread_join(httpd.thread, NULL);
    close(httpd.fd);
}

/* A response of STATUS with extra header lines HEADERS ("Name: v\r\n"...;
 * NULL: none) and BODY into OUT; "Connection: close" unless KEEP. Its
 * length (0 when it does not fit). */
static inline size_t httpd_response(char *out, size_t size, int status, const char *headers,
                                    const char *body, int keep)
{
    int n =
        snprintf(out, size, "HTTP/1.1 %d Answer\r\nContent-Length: %zu\r\n%s%s\r\n%s", status,
                 strlen(body), keep ? "" : "Connection: close\r\n", headers ? headers : "", body);

    return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

#endif
