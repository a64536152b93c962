/* test_send_split.c - write-behind's send when the service refuses a batch
 * without naming an operation (writeback/send.c: wb_send_batch): the batch
 * is cut in two, the first half sent at once and the second put back at
 * the head of its partition's queue, in order, to go once the first half
 * is settled. Against a small HTTP server of the test's own (httpd.h)
 * that answers every request from a script. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "httpd.h"
#include "wb_util.h"

#define REFUSED                                                                              \
    "{\"odata.error\":{\"code\":\"InvalidInput\",\"message\":{\"lang\":\"en-US\",\"value\":" \
    "\"One of the request inputs is not valid.\"}}}"
#define BUSY                                                                               \
    "{\"odata.error\":{\"code\":\"ServerBusy\",\"message\":{\"lang\":\"en-US\",\"value\":" \
    "\"The server is busy.\"}}}"

/* Every request's answer: STATUSES[n - 1] (the last one past the end).
 * POSTS: the $batch sends among them (a 503's answer may be settled by
 * reads first, when the send's window says it could have been applied:
 * how many depends on the clock, not on what is sent). */
static int statuses[8], n_statuses, posts;

static size_t answer(const char *head, int n, char *out, size_t size, int *keep)
{
    int status = statuses[n <= n_statuses ? n - 1 : n_statuses - 1];

    if (strncmp(head, "POST ", 5) == 0)
        __atomic_add_fetch(&posts, 1, __ATOMIC_SEQ_CST);
    *keep = 1;
    return httpd_response(out, size, status,
                          "Content-Type: application/json;odata=minimalmetadata\r\n",
                          status == 503 ? BUSY : REFUSED, 1);
}

static void script(const int *s, int n)
{
    pthread_mutex_lock(&httpd.lock);
    memcpy(statuses, s, (size_t)n * sizeof(*s));
    n_statuses = n;
    __atomic_store_n(&posts, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&httpd.lock);
    httpd_reset();
}

/* A queue over the test's server with four inserts queued in /t/p. */
static void start(struct wbt *t)
{
    char endpoint[64];

    snprintf(endpoint, sizeof(endpoint), "http://127.0.0.1:%d", httpd.port);
    wbt_start_at(t, endpoint);
    for (int i = 1; i <= 4; i++) {
        char path[32];

        snprintf(path, sizeof(path), "/t/p/r%d", i);
        if (wbt_put(t, path, WB_INSERT, "{\"v\": 1}", NULL, NULL) < 0) {
            printf("Bail out! cannot queue %s\n", path);
            exit(1);
        }
    }
}

/* The row keys of /t/p's queue, in order ("r2 r3 r4"; "" when none). */
static void queue_of(struct wbt *t, char *out, size_t size)
{
    struct wb_part *p;
    size_t o = 0;

    out[0] = '\0';
    pthread_mutex_lock(&t->wb->mu);
    p = wb_part_get(t->wb, "/t/p", 0);
    for (struct wb_op *op = p ? p->head : NULL; op && o < size; op = op->next)
        o += (size_t)snprintf(out + o, size - o, "%s%s", o ? " " : "", op->rk);
    pthread_mutex_unlock(&t->wb->mu);
}

/* Is a batch of /t/p out? */
static int part_sending(struct wbt *t)
{
    struct wb_part *p;
    int sending;

    pthread_mutex_lock(&t->wb->mu);
    p = wb_part_get(t->wb, "/t/p", 0);
    sending = p && p->sending;
    pthread_mutex_unlock(&t->wb->mu);
    return sending;
}

/* Refused three times with no operation named: r1 | r2 | r3 r4 are cut
 * apart one request each, r1 fails alone, and r2, r3 and r4 wait at the
 * head of the queue in their order, to go next (not, as before, each half
 * sent at once, so that every change failed for one refusal). */
static void test_refused_whole(void)
{
    const int s[] = { 400, 400, 400 };
    struct wb_op *ops[WBT_CAP];
    char q[64];
    struct wbt t;
    size_t n;

    script(s, 3);
    start(&t);
    is_int(n = wbt_take(&t, 1, ops), 4, "refused: the four inserts go as one batch");
    wb_send_batch(t.wb, ops, n);
    is_int(httpd_seen(), 3, "refused: three requests (4, then 2, then 1 change)");
    is_int(t.n_failed, 1, "refused: one change failed");
    is_str(t.failed_path, "/t/p/r1", "refused: r1, sent alone");
    queue_of(&t, q, sizeof(q));
    is_str(q, "r2 r3 r4", "refused: the others wait at the head, in order");
    ok(!part_sending(&t), "refused: the partition is free");
    is_int(n = wbt_take(&t, 0, ops), 3, "refused: they go next, without waiting for the delay");
    ok(n == 3 && !strcmp(ops[0]->rk, "r2") && !strcmp(ops[2]->rk, "r4"), "refused: in order");
    wbt_put_back(&t, ops, n);
    is_int(wbt_close(&t), 4, "refused: three queued and one failed left in the journal");
    wbt_finish(&t);
}

/* Refused, then the first half put back (busy): the second half is not
 * sent behind its back. All four wait at the head in their order, for the
 * backoff. */
static void test_busy_after_refusal(void)
{
    const int s[] = { 400, 503 };
    struct wb_op *ops[WBT_CAP];
    struct timespec until;
    char q[64];
    struct wbt t;
    size_t n;

    script(s, 2);
    start(&t);
    is_int(n = wbt_take(&t, 1, ops), 4, "busy: one batch of four");
    wb_send_batch(t.wb, ops, n);
    is_int(__atomic_load_n(&posts, __ATOMIC_SEQ_CST), 2,
           "busy: two batches sent (the second half not)");
    is_int(t.n_failed, 0, "busy: nothing failed");
    queue_of(&t, q, sizeof(q));
    is_str(q, "r1 r2 r3 r4", "busy: all four at the head, in order");
    pthread_mutex_lock(&t.wb->mu);
    n = wb_take_batch(t.wb, 0, ops, &until);
    pthread_mutex_unlock(&t.wb->mu);
    ok(n == 0 && until.tv_sec > 0, "busy: nothing goes before the backoff is over");
    is_int(wbt_close(&t), 4, "busy: four left in the journal");
    wbt_finish(&t);
}

int main(void)
{
    const int none[] = { 400 };

    script(none, 1);
    httpd_start(answer);
    test_refused_whole();
    test_busy_after_refusal();
    httpd_stop();
    return done_testing();
}
