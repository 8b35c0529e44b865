/* bench/engine.c - the real send and receive engines in one process, over the loop transport
 * (transport/rd_loop: frames change hands by pointer), so the machine's memory is the only
 * wire: what the engines reach on an infinitely fast NIC. bench/engine.sh drives it.
 *
 *   engine --source file:PATH|zero:BYTES|stdin --sink null|stdout|file:PATH [--lanes N]
 *          [--chunk BYTES] [--depth N] [--direct] [-v]
 *
 * --sink file:PATH writes a regular file (created or truncated, not synced: the page cache is
 * the disk here), which the receiver's lanes write in parallel with pwrite at their offsets;
 * --direct writes its whole aligned blocks with O_DIRECT, as rdrecv --direct does.
 *
 * One transfer: the handshake (a fixed long key) and the two engines on two threads. Prints
 * on stderr one line
 *   result BYTES WALL_S SEND_CPU_S RECV_CPU_S OTHER_CPU_S LOST_CPU_S
 * WALL_S runs from the first engine's start to the last one's return (the handshake is left
 * out). CPU per end: every thread belongs to the end of the thread that started it (a
 * thread-local mark that the wrapped pthread_create passes on), so the engines' reader,
 * monitor, writer and lane threads count for their end whatever the engine names them (it
 * names them since 2026-11-26: attributing by an inherited name then put nearly all CPU
 * under "other"). Each thread's CPU time is read as it exits:
 * the link wraps pthread_create (-Wl,--wrap=pthread_create, see the Makefile) so that every
 * thread, the library's included, runs a thread-exit hook that adds its CLOCK_THREAD_CPUTIME_ID
 * to its end by name. (Sampling /proc/self/task/ instead missed up to 17% of a short run's CPU time
 * on a loaded machine: a thread that exits between two samples takes its last stretch along.)
 * OTHER_CPU_S: the main thread; LOST_CPU_S: the process's total (getrusage) minus all that,
 * which stays near 0 unless something starts threads another way.
 */
#include "engine/rd_engine.h"
#include "engine/rd_io.h"
#include "engine/rd_lanes.h"
#include "run/rd_cli.h"
#include "transport/rd_loop.h"
#include "transport/rd_session.h"
#include "util/rd_clock.h"
#include "util/rd_error.h"
#include "wire/rd_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define NAME_SEND "rdb-send"  /* every thread of the sending end */
#define NAME_RECV "rdb-recv"
#define NAME_MAIN "rdb-main"

enum side { SIDE_OTHER, SIDE_SEND, SIDE_RECV };

/* ---- per-thread CPU time, by end ---- */

static _Atomic unsigned long long cpu_ns[3];   /* by enum side */
static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static int have_exit_key;
static int verbose;   /* -v: one line per thread as it exits */
static int direct;    /* --direct: the file sink with O_DIRECT */

static _Thread_local enum side my_side = SIDE_OTHER;   /* the end this thread works for */

/* This thread's CPU time so far, to its end. */
static void count_thread(void)
{
    struct timespec ts;
    char name[16] = "";
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    pthread_getname_np(pthread_self(), name, sizeof name);
    unsigned long long ns = (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
    atomic_fetch_add(&cpu_ns[my_side], ns);
    if (verbose)
        fprintf(stderr, "thread %d %s: %.3f s CPU\n", (int)gettid(), name, (double)ns / 1e9);
}

/* A thread-specific value's destructor runs as the thread exits, however it exits. */
static void on_thread_exit(void *unused)
{
    count_thread();
}

struct trampoline {
    void *(*fn)(void *);
    void *arg;
    enum side side;   /* the creator's */
};

static void make_exit_key(void)
{
    have_exit_key = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

static void *trampoline_main(void *arg)
{
    struct trampoline t = *(struct trampoline *)arg;
    free(arg);
    my_side = t.side;
    if (have_exit_key)
        pthread_setspecific(exit_key, &exit_key);   /* any non-NULL value: the destructor runs */
    return t.fn(t.arg);
}

int __real_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

/* Every pthread_create of this program (the library's too: the link wraps them all). */
int __wrap_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    pthread_once(&exit_once, make_exit_key);   /* before the first thread, whoever starts it */
    struct trampoline *t = malloc(sizeof *t);
    if (!t)
        return EAGAIN;
    *t = (struct trampoline){ fn, arg, my_side };
    int rc = __real_pthread_create(th, attr, trampoline_main, t);
    if (rc)
        free(t);
    return rc;
}

static double process_cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

/* ---- the two ends ---- */

static const char bench_secret[] =
    "bench/engine.c: a fixed key, as long as a generated one, so the handshake costs what it costs";

struct end {
    struct rd_transport *tp;
    struct rd_params want;   /* sender: what it asks; receiver: its limits */
    struct rd_params agreed;
    uint32_t lanes;
    struct rd_source src;
    struct rd_sink dst;
    struct rd_counters cnt;
    int rc;
    double t0, t1;           /* the engine's start and return */
};

static void *sender_main(void *arg)
{
    struct end *e = arg;
    struct rd_key k;
    rd_key_derive(&k, bench_secret, strlen(bench_secret));
    e->rc = rd_session_sender(e->tp, &k, &e->want, &e->agreed);
    rd_key_wipe(&k);
    e->agreed.lanes = e->lanes;   /* local, like the tools set it after the handshake */
    e->t0 = rd_now();
    if (e->rc == RD_OK)
        e->rc = rd_engine_send(e->tp, &e->src, &e->agreed, &e->cnt);
    e->t1 = rd_now();
    return NULL;
}

static void *receiver_main(void *arg)
{
    struct end *e = arg;
    struct rd_key k;
    rd_key_derive(&k, bench_secret, strlen(bench_secret));
    e->rc = rd_session_receiver(e->tp, &k, &e->want, &e->agreed);
    rd_key_wipe(&k);
    e->agreed.lanes = e->lanes;
    e->t0 = rd_now();
    if (e->rc == RD_OK)
        e->rc = rd_sink_begin(&e->dst);
    if (e->rc == RD_OK)
        e->rc = rd_engine_recv(e->tp, &e->dst, &e->agreed, &e->cnt);
    e->t1 = rd_now();
    return NULL;
}

/* zero:BYTES - /dev/zero, but only so many bytes of it */
struct zero_src {
    int fd;
    unsigned long long left;
};

static ssize_t zero_read(void *ctx, void *buf, size_t cap)
{
    struct zero_src *z = ctx;
    size_t want = z->left < cap ? (size_t)z->left : cap;
    size_t got = 0;
    while (got < want) {
        ssize_t n = read(z->fd, (char *)buf + got, want - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rd_fail(RD_EIO, "cannot read /dev/zero: %s", n ? strerror(errno) : "end of file");
            return -1;
        }
        got += (size_t)n;
    }
    z->left -= got;
    return (ssize_t)got;
}

static int parse_size(const char *s, unsigned long long *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned long long mul = 1;
    switch (*end) {
    case 'K': case 'k': mul = 1ull << 10; end++; break;
    case 'M': case 'm': mul = 1ull << 20; end++; break;
    case 'G': case 'g': mul = 1ull << 30; end++; break;
    default: break;
    }
    if (errno || end == s || *end)
        return -1;
    *out = v * mul;
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: engine --source file:PATH|zero:BYTES|stdin --sink null|stdout|file:PATH [--lanes N]\n"
                    "              [--chunk BYTES] [--depth N] [--direct] [-v]\n");
    return RD_EUSAGE;
}

/* Start fn on a new thread of end `side`, named `name` from birth; every thread it starts
 * counts for the same end: the mark is the main thread's while it creates the thread. */
static int start_named(pthread_t *t, const char *name, enum side side, void *(*fn)(void *), void *arg)
{
    pthread_setname_np(pthread_self(), name);
    my_side = side;
    int rc = rd_thread_create(t, NULL, fn, arg);
    my_side = SIDE_OTHER;
    pthread_setname_np(pthread_self(), NAME_MAIN);
    return rc;
}

int main(int argc, char **argv)
{
    const char *source = NULL, *sink = NULL;
    unsigned long long lanes = 1, chunk = RD_DEFAULT_CHUNK, depth = RD_DEFAULT_DEPTH;
    rd_set_progname("engine");
    signal(SIGPIPE, SIG_IGN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-v") == 0) {
            verbose = 1;
            continue;
        }
        if (strcmp(a, "--direct") == 0) {
            direct = 1;
            continue;
        }
        if (!v)
            return usage();
        i++;
        int bad = 0;
        if (strcmp(a, "--source") == 0)
            source = v;
        else if (strcmp(a, "--sink") == 0)
            sink = v;
        else if (strcmp(a, "--lanes") == 0)
            bad = parse_size(v, &lanes) || lanes < 1 || lanes > RD_MAX_LANES;
        else if (strcmp(a, "--chunk") == 0)
            bad = parse_size(v, &chunk) || chunk < RD_MIN_CHUNK || chunk > RD_RECV_MAX_CHUNK;
        else if (strcmp(a, "--depth") == 0)
            bad = parse_size(v, &depth) || depth < 1 || depth > RD_MAX_DEPTH;
        else
            bad = 1;
        if (bad)
            return usage();
    }
    if (!source || !sink)
        return usage();

    struct end snd = { .lanes = (uint32_t)lanes }, rcv = { .lanes = (uint32_t)lanes };
    snd.want = (struct rd_params){ .chunk_size = (uint32_t)chunk, .depth = (uint32_t)depth };
    rcv.want = (struct rd_params){ .chunk_size = RD_RECV_MAX_CHUNK, .depth = RD_MAX_DEPTH };
    struct zero_src zero = { .fd = -1 };
    unsigned long long expect = 0;
    int rc;
    if (strncmp(source, "zero:", 5) == 0) {
        if (parse_size(source + 5, &expect))
            return usage();
        zero.left = expect;
        zero.fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
        if (zero.fd < 0) {
            rd_fail(RD_EIO, "cannot open /dev/zero: %s", strerror(errno));
            return rd_report();
        }
        rd_source_custom(&snd.src, "/dev/zero", zero_read, &zero);
    } else if (strncmp(source, "file:", 5) == 0 || strcmp(source, "stdin") == 0) {
        if (rd_source_open(&snd.src, source[0] == 'f' ? source + 5 : NULL, 0))
            return rd_report();
        expect = snd.src.size;   /* 0 for stdin: unknown */
    } else {
        return usage();
    }
    const char *out = strcmp(sink, "null") == 0 ? "/dev/null" : strcmp(sink, "stdout") == 0 ? NULL
                    : strncmp(sink, "file:", 5) == 0 && sink[5] ? sink + 5 : "";
    if (out && !*out)
        return usage();
    if (rd_sink_open(&rcv.dst, out))
        return rd_report();
    if (direct)
        rd_sink_use_direct(&rcv.dst);   /* as rdrecv --direct: aligned blocks with O_DIRECT */
    if (rd_loop_pair(&snd.tp, &rcv.tp))
        return rd_report();

    pthread_t ts, tr;
    if (start_named(&tr, NAME_RECV, SIDE_RECV, receiver_main, &rcv) || start_named(&ts, NAME_SEND, SIDE_SEND, sender_main, &snd)) {
        fprintf(stderr, "engine: cannot start threads\n");
        return RD_EIO;   /* exiting ends whatever did start */
    }
    pthread_join(ts, NULL);   /* every thread has exited, and so been counted, once both are back */
    pthread_join(tr, NULL);
    count_thread();           /* the main thread: "other" */
    double total = process_cpu_s();
    double cpu[3], counted = 0;
    for (int i = 0; i < 3; i++)
        counted += cpu[i] = (double)atomic_load(&cpu_ns[i]) / 1e9;
    rc = snd.rc ? snd.rc : rcv.rc;
    unsigned long long bytes = atomic_load(&rcv.cnt.bytes);
    if (!rc && expect && bytes != expect)
        rc = rd_fail(RD_ESTREAM, "%llu bytes arrived, %llu expected", bytes, expect);
    snd.tp->ops->close(snd.tp);
    rcv.tp->ops->close(rcv.tp);
    rd_source_close(&snd.src);
    rd_sink_close(&rcv.dst);
    if (zero.fd >= 0)
        close(zero.fd);
    if (rc) {
        fprintf(stderr, "engine: sender %d, receiver %d\n", snd.rc, rcv.rc);
        return rd_report();
    }
    double t0 = snd.t0 < rcv.t0 ? snd.t0 : rcv.t0, t1 = snd.t1 > rcv.t1 ? snd.t1 : rcv.t1;
    double lost = total - counted;
    fprintf(stderr, "result %llu %.6f %.6f %.6f %.6f %.6f\n", bytes, t1 - t0, cpu[SIDE_SEND], cpu[SIDE_RECV],
            cpu[SIDE_OTHER], lost > 0 ? lost : 0);
    if (verbose)
        fprintf(stderr, "chunk %u depth %u lanes %u; %.1f MB/s\n", snd.agreed.chunk_size, snd.agreed.depth,
                snd.agreed.lanes, (double)bytes / (t1 - t0) / 1e6);
    return RD_OK;
}
