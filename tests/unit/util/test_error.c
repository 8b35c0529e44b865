/* test_error.c - util/rd_error: one error context per transfer, owned by the thread that runs it
 * and shared with the threads it starts; the cause wins over what merely follows it. */
#include "check.h"

#include "util/rd_error.h"

#include <pthread.h>

static void *fail_stream(void *arg)
{
    (void)arg;
    rd_fail(RD_ESTREAM, "tag mismatch on frame 7");
    return NULL;
}

static void *fail_stranger(void *arg)
{
    (void)arg;
    rd_fail(RD_EAUTH, "a stranger failed its handshake");
    char msg[64];
    return (void *)(long)rd_error_copy(msg, sizeof msg);
}

/* A thread started with rd_thread_create records into its creator's transfer. */
static void t_started_thread_shares_the_context(void)
{
    rd_error_clear();
    pthread_t th;
    CHECK_OR(rd_thread_create(&th, NULL, fail_stream, NULL) == 0, return);
    pthread_join(th, NULL);
    CHECK_EQ_U(rd_error_code(), RD_ESTREAM);
    CHECK(strcmp(rd_error_msg(), "tag mismatch on frame 7") == 0);
    rd_error_clear();
}

/* A thread started otherwise keeps its failures: a stranger never becomes the transfer's error. */
static void t_stranger_keeps_its_own(void)
{
    rd_error_clear();
    pthread_t th;
    void *got;
    CHECK_OR(pthread_create(&th, NULL, fail_stranger, NULL) == 0, return);
    pthread_join(th, &got);
    CHECK_EQ_U((long)got, RD_EAUTH);
    CHECK_EQ_U(rd_error_code(), 0);
}

/* Threads started by a started thread still belong to the first owner's transfer. */
static void *start_grandchild(void *arg)
{
    (void)arg;
    pthread_t th;
    if (rd_thread_create(&th, NULL, fail_stream, NULL) == 0)
        pthread_join(th, NULL);
    return NULL;
}

static void t_inherited_through_generations(void)
{
    rd_error_clear();
    pthread_t th;
    CHECK_OR(rd_thread_create(&th, NULL, start_grandchild, NULL) == 0, return);
    pthread_join(th, NULL);
    CHECK_EQ_U(rd_error_code(), RD_ESTREAM);
    rd_error_clear();
}

/* Two transfers in one process, each run by its own thread: neither sees the other's error. */
struct transfer {
    int code;
    int seen;
    pthread_barrier_t *both_failed;
};

static void *run_transfer(void *arg)
{
    struct transfer *t = arg;
    rd_fail(t->code, "transfer failed with %d", t->code);
    pthread_barrier_wait(t->both_failed);
    t->seen = rd_error_code();
    return NULL;
}

static void t_two_transfers_apart(void)
{
    pthread_barrier_t b;
    pthread_barrier_init(&b, NULL, 2);
    struct transfer a = { RD_EIO, 0, &b }, c = { RD_EAUTH, 0, &b };
    pthread_t ta, tc;
    CHECK_OR(pthread_create(&ta, NULL, run_transfer, &a) == 0, return);
    CHECK_OR(pthread_create(&tc, NULL, run_transfer, &c) == 0, { pthread_join(ta, NULL); return; });
    pthread_join(ta, NULL);
    pthread_join(tc, NULL);
    pthread_barrier_destroy(&b);
    CHECK_EQ_U(a.seen, RD_EIO);
    CHECK_EQ_U(c.seen, RD_EAUTH);
}

/* First cause wins; a consequence (IO on a connection we shut down) never hides the cause,
 * whichever thread noticed first. */
static void t_cause_beats_consequence(void)
{
    rd_error_clear();
    rd_fail_after(RD_ESTREAM, "transfer aborted");
    CHECK_EQ_U(rd_error_code(), RD_ESTREAM);
    rd_fail(RD_EIO, "cannot write output: No space left on device");
    CHECK_EQ_U(rd_error_code(), RD_EIO);
    CHECK(strcmp(rd_error_msg(), "cannot write output: No space left on device") == 0);
    rd_fail(RD_ESTREAM, "a later cause");
    rd_fail_after(RD_ESTREAM, "another consequence");
    CHECK_EQ_U(rd_error_code(), RD_EIO);
    CHECK(strcmp(rd_error_msg(), "cannot write output: No space left on device") == 0);
    rd_error_clear();
    CHECK_EQ_U(rd_error_code(), 0);
    CHECK_EQ_U(rd_error_or(RD_EUSAGE), RD_EUSAGE);
}

/* rd_errctx_bind: a thread can be pointed at another context and back. */
static void t_bind_and_back(void)
{
    rd_error_clear();
    struct rd_errctx other = { PTHREAD_MUTEX_INITIALIZER, 0, 0, "" };
    struct rd_errctx *was = rd_errctx_bind(&other);
    rd_fail(RD_ECONNECT, "cannot connect");
    CHECK(rd_errctx_current() == &other);
    rd_errctx_bind(NULL);
    CHECK(rd_errctx_current() == was);
    CHECK_EQ_U(rd_error_code(), 0);
    CHECK_EQ_U(other.code, RD_ECONNECT);
}

int main(void)
{
    RUN(t_started_thread_shares_the_context);
    RUN(t_stranger_keeps_its_own);
    RUN(t_inherited_through_generations);
    RUN(t_two_transfers_apart);
    RUN(t_cause_beats_consequence);
    RUN(t_bind_and_back);
    return check_summary();
}
