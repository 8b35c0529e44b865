/* test_error.c - util/rd_error: one error context per transfer, owned by the thread that runs it
 * and shared with the threads it starts; the cause wins over what merely follows it. */
#include "check.h"

#include "util/rd_error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* rd_fail_instead replaces any error in one step, and what it records is a cause: a
 * consequence recorded after it (another thread's IO on the connection shut down) does not
 * take its place. Clearing and then failing let such a consequence in between, and it stayed
 * (a receiver's "cannot write /dev/full" reported as "transfer aborted"). */
static void *fail_after_in_thread(void *arg)
{
    (void)arg;
    rd_fail_after(RD_ESTREAM, "transfer aborted");
    return NULL;
}

static void t_instead_replaces_in_one_step(void)
{
    rd_error_clear();
    rd_fail(RD_EIO, "write error: broken pipe");
    CHECK_EQ_U(rd_fail_instead(RD_ESTREAM, "receiver: cannot write /dev/full"), RD_ESTREAM);
    CHECK_EQ_U(rd_error_code(), RD_ESTREAM);
    CHECK(strcmp(rd_error_msg(), "receiver: cannot write /dev/full") == 0);
    pthread_t th;
    CHECK(rd_thread_create(&th, NULL, fail_after_in_thread, NULL) == 0);
    pthread_join(th, NULL);
    rd_fail(RD_EIO, "a later cause");
    CHECK_EQ_U(rd_error_code(), RD_ESTREAM);
    CHECK(strcmp(rd_error_msg(), "receiver: cannot write /dev/full") == 0);
    rd_fail_after(RD_ESTREAM, "transfer aborted");
    rd_fail_instead(RD_EAUTH, "receiver: wrong key");   /* over a consequence too */
    CHECK_EQ_U(rd_error_code(), RD_EAUTH);
    rd_error_clear();
    rd_fail_instead(RD_ECONNECT, "timed out");   /* and over nothing */
    CHECK_EQ_U(rd_error_code(), RD_ECONNECT);
    rd_error_clear();
}

/* The one step, under contention: another thread of the transfer keeps recording causes of
 * its own; after each rd_fail_instead the message is still ours. */
static atomic_int spinning;

static void *fail_in_a_loop(void *arg)
{
    (void)arg;
    while (atomic_load(&spinning))
        rd_fail(RD_EIO, "the other thread's cause");
    return NULL;
}

static void t_instead_under_contention(void)
{
    rd_error_clear();
    atomic_store(&spinning, 1);
    pthread_t th;
    CHECK_OR(rd_thread_create(&th, NULL, fail_in_a_loop, NULL) == 0, return);
    int lost = 0;
    char msg[64];
    for (int i = 0; i < 200000; i++) {
        rd_fail_instead(RD_ESTREAM, "ours");
        if (rd_error_copy(msg, sizeof msg) != RD_ESTREAM || strcmp(msg, "ours") != 0)
            lost++;
    }
    atomic_store(&spinning, 0);
    pthread_join(th, NULL);
    CHECK_EQ_I(lost, 0);
    rd_error_clear();
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

/* A message longer than its slot loses its middle, never its end: the reason after a long
 * path is what the user needs (it was cut off at 512 bytes before). */
static void t_long_message_keeps_its_reason(void)
{
    char path[2000];
    memset(path, 'p', sizeof path - 1);
    path[sizeof path - 1] = '\0';
    rd_error_clear();
    rd_fail(RD_EIO, "cannot write '/%s': No space left on device", path);
    const char *m = rd_error_msg();
    CHECK_EQ_U(strlen(m), 511);
    CHECK(strncmp(m, "cannot write '/ppp", 18) == 0);
    CHECK(strstr(m, "ppp ... ppp") != NULL);
    const char *end = "ppp': No space left on device";
    CHECK(strlen(m) > strlen(end) && strcmp(m + strlen(m) - strlen(end), end) == 0);
    rd_error_clear();

    char out[16];
    CHECK_EQ_U(rd_elide(out, sizeof out, "short", 5), 5);
    CHECK(strcmp(out, "short") == 0);
    CHECK_EQ_U(rd_elide(out, sizeof out, "0123456789abcdefXYZ", 19), 15);
    CHECK(strcmp(out, "01234 ... efXYZ") == 0);
    /* a cut never splits a UTF-8 character: "é" is 2 bytes */
    CHECK_EQ_U(rd_elide(out, 12, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 14), 9);
    CHECK(strcmp(out, "\xc3\xa9 ... \xc3\xa9") == 0);
}

/* rd_warn prints a line of a few KiB whole (a deep path), on one line; past RD_WARN_MAX it
 * elides as a recorded error does. */
static void t_warn_prints_long_lines_whole(void)
{
    FILE *tmp = tmpfile();
    CHECK_OR(tmp != NULL, return);
    fflush(stderr);
    int saved = dup(2);
    CHECK_OR(saved >= 0 && dup2(fileno(tmp), 2) == 2, fclose(tmp); return);
    static char path[3001], huge[RD_WARN_MAX + 100];
    memset(path, 'q', sizeof path - 1);
    memset(huge, 'h', sizeof huge - 1);
    rd_set_progname("t");
    rd_warn("cannot open '%s': Permission denied", path);
    rd_warn("%s: the end", huge);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    static char got[2 * RD_WARN_MAX];
    size_t n = fread(got, 1, sizeof got - 1, tmp);
    fclose(tmp);
    got[n] = '\0';
    char *nl = strchr(got, '\n');
    CHECK_OR(nl != NULL, return);
    *nl = '\0';
    CHECK_EQ_U(strlen(got), strlen("t: cannot open '': Permission denied") + 3000);
    CHECK(strncmp(got, "t: cannot open 'qqq", 19) == 0 && strstr(got, "qqq': Permission denied") != NULL);
    char *second = nl + 1;
    CHECK_EQ_U(strlen(second), strlen("t: ") + RD_WARN_MAX - 1 + 1);   /* the slot, and the newline */
    CHECK(strstr(second, "hhh ... hhh") != NULL);
    CHECK(strcmp(second + strlen(second) - strlen("h: the end\n"), "h: the end\n") == 0);
}

/* Out of memory: one line and exit 5, from any thread (abort() gave 134 and no word). */
static void *oom_thread(void *arg)
{
    (void)arg;
    rd_oom();
}

static void t_oom_says_so_and_exits_5(void)
{
    int p[2];
    CHECK_OR(pipe(p) == 0, return);
    pid_t pid = fork();
    CHECK_OR(pid >= 0, return);
    if (pid == 0) {
        dup2(p[1], 2);
        rd_set_progname("/usr/bin/rdcp");
        pthread_t th;
        if (pthread_create(&th, NULL, oom_thread, NULL) == 0)
            pthread_join(th, NULL);
        _exit(99);
    }
    close(p[1]);
    char got[128] = "";
    ssize_t n = read(p[0], got, sizeof got - 1);
    close(p[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == RD_EIO);
    CHECK(n > 0 && strcmp(got, "rdcp: out of memory\n") == 0);
}

int main(void)
{
    RUN(t_started_thread_shares_the_context);
    RUN(t_stranger_keeps_its_own);
    RUN(t_inherited_through_generations);
    RUN(t_two_transfers_apart);
    RUN(t_cause_beats_consequence);
    RUN(t_instead_replaces_in_one_step);
    RUN(t_instead_under_contention);
    RUN(t_bind_and_back);
    RUN(t_long_message_keeps_its_reason);
    RUN(t_warn_prints_long_lines_whole);
    RUN(t_oom_says_so_and_exits_5);
    return check_summary();
}
