/* verbs_smoke.c - drives rd_verbs_ops directly, without the engine, inside the rxe VM.
 *
 * usage: verbs_smoke SERVER_IP CLIENT_IP   (server listens on SERVER_IP, clients bind CLIENT_IP)
 * Each case forks a server and a client process (verbs state is never shared across fork)
 * and prints "ok NAME" or "FAIL NAME: why"; the exit status is the number of failures.
 *
 * Teardown is checked in every case, the killed-peer ones included: what the case's processes
 * write on stderr is collected (and echoed), and a line about "teardown", "ibv_" or "rdma_"
 * fails the case - the library's "RDMA teardown: CALL failed" warnings, and the complaints of
 * the wrappers below, which watch the library's verbs calls (linked with -Wl,--wrap, see the
 * Makefile): no MR may be deregistered while a QP of the process still exists, and every QP
 * created must be destroyed by the time the process exits normally.
 */
#include "util/rd_error.h"
#include "transport/rd_transport.h"

#include <rdma/rdma_cma.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#define FRAME (64u * 1024 + 32)
#define DEPTH 16u

static const char *srv_ip, *cli_ip;

/* ---- the library's verbs calls, watched (-Wl,--wrap=SYMBOL in the Makefile) ---- */

int __real_rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qa);
void __real_rdma_destroy_qp(struct rdma_cm_id *id);
int __real_ibv_destroy_qp(struct ibv_qp *qp);
int __real_ibv_dereg_mr(struct ibv_mr *mr);
int __wrap_rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qa);
void __wrap_rdma_destroy_qp(struct rdma_cm_id *id);
int __wrap_ibv_destroy_qp(struct ibv_qp *qp);
int __wrap_ibv_dereg_mr(struct ibv_mr *mr);

static int live_qps;   /* per process: fork copies it */

int __wrap_rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *qa)
{
    int rc = __real_rdma_create_qp(id, pd, qa);
    live_qps += rc == 0;
    return rc;
}

void __wrap_rdma_destroy_qp(struct rdma_cm_id *id)
{
    __real_rdma_destroy_qp(id);
    live_qps--;
}

int __wrap_ibv_destroy_qp(struct ibv_qp *qp)
{
    int rc = __real_ibv_destroy_qp(qp);
    live_qps -= rc == 0;
    return rc;
}

int __wrap_ibv_dereg_mr(struct ibv_mr *mr)
{
    if (live_qps > 0)
        fprintf(stderr, "verbs_smoke: teardown order: ibv_dereg_mr while %d QP(s) still exist\n",
                live_qps);
    return __real_ibv_dereg_mr(mr);
}

static void qps_left(void)
{
    if (live_qps > 0)
        fprintf(stderr, "verbs_smoke: teardown: %d QP(s) never destroyed (pid %d)\n", live_qps,
                (int)getpid());
}

/* ---- the stderr of a case's processes ---- */

static int cap_fd = -1;

static void capture_begin(void)
{
    char path[] = "/tmp/verbs_smoke.XXXXXX";
    cap_fd = mkstemp(path);
    if (cap_fd >= 0) {
        unlink(path);
        fcntl(cap_fd, F_SETFL, O_APPEND);   /* several processes write it at once */
    }
}

/* In each child: stderr into the capture, and the QP count checked at exit. */
static void capture_child(void)
{
    if (cap_fd >= 0)
        dup2(cap_fd, STDERR_FILENO);
    atexit(qps_left);
}

/* Echo the capture; its first teardown complaint (if any) into bad. Ends the capture. */
static int capture_end(char *bad, size_t n)
{
    int found = 0;
    FILE *f = cap_fd >= 0 ? fdopen(cap_fd, "r") : NULL;
    if (!f)
        return 0;
    rewind(f);
    char line[512];
    while (fgets(line, sizeof line, f)) {
        fputs(line, stderr);
        if (!found && (strstr(line, "teardown") || strstr(line, "ibv_") || strstr(line, "rdma_"))) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(bad, n, "%s", line);
            found = 1;
        }
    }
    fclose(f);
    cap_fd = -1;
    return found;
}

enum { T_HELLO = 1, T_ACCEPT, T_DATA, T_END, T_CONFIRM };
struct hdr { uint32_t type, seq, len, sum; };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint32_t fnv(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    while (n--)
        h = (h ^ *p++) * 16777619u;
    return h;
}

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "  " __VA_ARGS__); \
    fprintf(stderr, " [%s]\n", rd_error_msg()); exit(1); } } while (0)

static int send_msg(struct rd_transport *tp, uint32_t type, uint32_t seq, size_t len)
{
    struct rd_buf *b;
    int rc = tp->ops->get_send_buf(tp, &b);
    if (rc)
        return rc;
    if (len < sizeof(struct hdr))
        len = sizeof(struct hdr);
    if (len > b->cap)
        len = b->cap;
    for (size_t i = sizeof(struct hdr); i < len; i++)
        b->data[i] = (uint8_t)rand();
    struct hdr h = { type, seq, (uint32_t)len, fnv(b->data + sizeof h, len - sizeof h) };
    memcpy(b->data, &h, sizeof h);
    b->len = len;
    return tp->ops->send(tp, b);
}

static int recv_msg(struct rd_transport *tp, struct hdr *h, int timeout_ms)
{
    struct rd_buf *b;
    int rc = tp->ops->recv(tp, &b, timeout_ms);
    if (rc)
        return rc;
    memcpy(h, b->data, sizeof *h);
    int bad = b->len != h->len || fnv(b->data + sizeof *h, b->len - sizeof *h) != h->sum;
    tp->ops->release(tp, b);
    return bad ? -1 : 0;
}

static struct rd_transport *serve(const char *port, const char *device)
{
    struct rd_addr a = { .bind = srv_ip, .port = port, .device = device, .timeout_ms = -1 };
    struct rd_transport *lis = rd_transport_new(&rd_verbs_ops), *tp = NULL;
    CHECK(lis->ops->listen(lis, &a) == 0, "listen");
    CHECK(lis->ops->accept(lis, &tp, 20000) == 0, "accept");
    lis->ops->close(lis);
    return tp;
}

static struct rd_transport *dial(const char *port, int timeout_ms)
{
    struct rd_addr a = { .host = srv_ip, .port = port, .bind = cli_ip, .timeout_ms = timeout_ms };
    struct rd_transport *tp = rd_transport_new(&rd_verbs_ops);
    int rc = tp->ops->connect(tp, &a);
    if (rc) {
        tp->ops->close(tp);
        return NULL;
    }
    return tp;
}

/* ---- case: a transfer of random frames, random sizes, one slow release phase ---- */

static void transfer_server(const char *port, unsigned frames)
{
    struct rd_transport *tp = serve(port, NULL);
    struct hdr h;
    CHECK(recv_msg(tp, &h, 5000) == 0 && h.type == T_HELLO, "hello");
    CHECK(tp->ops->setup_ring(tp, RD_DIR_RECV, FRAME, DEPTH) == 0, "setup_ring recv");
    CHECK(send_msg(tp, T_ACCEPT, 0, 100) == 0, "send accept");
    for (uint32_t seq = 0;; seq++) {
        int rc = recv_msg(tp, &h, 10000);
        CHECK(rc == 0, "frame %u: rc %d", seq, rc);
        if (h.type == T_END) {
            CHECK(h.seq == frames, "END after %u frames, expected %u", h.seq, frames);
            break;
        }
        CHECK(h.type == T_DATA && h.seq == seq, "frame %u: type %u seq %u", seq, h.type, h.seq);
        if (seq == frames / 2)
            usleep(300 * 1000);   /* the sender runs out of credits and must wait */
    }
    CHECK(send_msg(tp, T_CONFIRM, frames, 64) == 0, "send confirm");
    /* as rdrecv: CONFIRM is sent; a client that has it disconnects at once, and on 6.12's rxe
     * that can overtake the acknowledgement, so the drain may end flushed */
    (void)tp->ops->drain(tp);
    printf("  server: %s from %s\n", tp->desc, tp->peer);
    tp->ops->close(tp);
    exit(0);
}

struct mon { struct rd_transport *tp; int confirmed; };

static void *monitor(void *arg)
{
    struct mon *m = arg;
    struct hdr h;
    m->confirmed = recv_msg(m->tp, &h, -1) == 0 && h.type == T_CONFIRM;
    return NULL;
}

static void transfer_client(const char *port, unsigned frames)
{
    struct rd_transport *tp = dial(port, 10000);
    CHECK(tp, "connect");
    struct hdr h;
    CHECK(send_msg(tp, T_HELLO, 0, 200) == 0, "send hello");
    CHECK(recv_msg(tp, &h, 5000) == 0 && h.type == T_ACCEPT, "accept");
    CHECK(tp->ops->setup_ring(tp, RD_DIR_SEND, FRAME, DEPTH) == 0, "setup_ring send");
    struct mon m = { tp, 0 };
    pthread_t th;
    pthread_create(&th, NULL, monitor, &m);
    double t0 = now();
    size_t bytes = 0;
    for (uint32_t seq = 0; seq < frames; seq++) {
        size_t len = seq % 7 == 0 ? FRAME : seq % 5 == 0 ? 40 : (size_t)rand() % FRAME;
        CHECK(send_msg(tp, T_DATA, seq, len) == 0, "send frame %u", seq);
        bytes += len;
    }
    CHECK(send_msg(tp, T_END, frames, 32) == 0, "send end");
    /* as rdsend: CONFIRM decides; the server's disconnect after it may flush END's send */
    int drained = tp->ops->drain(tp) == 0;
    pthread_join(th, NULL);
    CHECK(m.confirmed, "no confirm (drain %s)", drained ? "completed" : "failed");
    printf("  client: %s, %zu bytes in %.2fs\n", tp->desc, bytes, now() - t0);
    tp->ops->close(tp);
    exit(0);
}

/* ---- case: the peer is SIGKILLed mid-stream; the survivor must fail within seconds ---- */

static void stream_server(const char *port, int hold)
{
    struct rd_transport *tp = serve(port, NULL);
    struct hdr h;
    CHECK(recv_msg(tp, &h, 5000) == 0, "hello");
    CHECK(tp->ops->setup_ring(tp, RD_DIR_RECV, FRAME, DEPTH) == 0, "setup_ring");
    CHECK(send_msg(tp, T_ACCEPT, 0, 100) == 0, "send accept");
    printf("  server: streaming\n");
    fflush(stdout);
    double t_err = 0;
    for (;;) {
        int rc = recv_msg(tp, &h, hold ? 60000 : 60000);
        if (rc) {
            t_err = now();
            break;
        }
    }
    printf("  server: recv failed (code %d): %s\n", rd_error_code(), rd_error_msg());
    fflush(stdout);
    tp->ops->close(tp);
    (void)t_err;
    exit(rd_error_code() == RD_ESTREAM ? 0 : 1);
}

static void stream_client(const char *port)
{
    struct rd_transport *tp = dial(port, 10000);
    CHECK(tp, "connect");
    struct hdr h;
    CHECK(send_msg(tp, T_HELLO, 0, 200) == 0, "send hello");
    CHECK(recv_msg(tp, &h, 5000) == 0, "accept");
    CHECK(tp->ops->setup_ring(tp, RD_DIR_SEND, FRAME, DEPTH) == 0, "setup_ring");
    printf("  client: streaming\n");
    fflush(stdout);
    for (uint32_t seq = 0;; seq++)
        if (send_msg(tp, T_DATA, seq, FRAME)) {
            int rc = tp->ops->drain(tp);
            (void)rc;
            break;
        }
    printf("  client: send failed (code %d): %s\n", rd_error_code(), rd_error_msg());
    fflush(stdout);
    tp->ops->close(tp);
    exit(rd_error_code() == RD_ESTREAM ? 0 : 1);
}

/* ---- plumbing ---- */

static int failures;

static void result(const char *name, int ok, const char *why)
{
    char bad[600];
    if (capture_end(bad, sizeof bad)) {
        ok = 0;
        why = bad;
    }
    printf("%s %s%s%s\n", ok ? "ok" : "FAIL", name, ok ? "" : ": ", ok ? "" : why);
    fflush(stdout);
    failures += !ok;
}

static pid_t spawn(void (*fn)(const char *, unsigned), const char *port, unsigned arg)
{
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        capture_child();
        alarm(120);
        srand((unsigned)getpid());
        fn(port, arg);
        exit(1);
    }
    return p;
}

static int wait_ok(pid_t p)
{
    int st;
    return waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Wait for pid at most `secs`; returns seconds taken or -1 (and kills it) on timeout. */
static double wait_within(pid_t p, double secs, int *ok)
{
    double t0 = now();
    int st;
    while (now() - t0 < secs) {
        if (waitpid(p, &st, WNOHANG) == p) {
            *ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
            return now() - t0;
        }
        usleep(20 * 1000);
    }
    kill(p, SIGKILL);
    waitpid(p, &st, 0);
    *ok = 0;
    return -1;
}

static void case_transfer(const char *port, unsigned frames)
{
    pid_t s = spawn(transfer_server, port, frames);
    usleep(300 * 1000);
    pid_t c = spawn(transfer_client, port, frames);
    int cok = wait_ok(c), sok = wait_ok(s);
    char name[64];
    snprintf(name, sizeof name, "transfer %u frames", frames);
    result(name, cok && sok, cok ? "server failed" : "client failed");
}

static void srv_stream(const char *port, unsigned hold) { stream_server(port, (int)hold); }
static void cli_stream(const char *port, unsigned unused) { stream_client(port); }

static void case_kill(const char *port, int kill_client)
{
    pid_t s = spawn(srv_stream, port, 0);
    usleep(300 * 1000);
    pid_t c = spawn(cli_stream, port, 0);
    usleep(1500 * 1000);
    pid_t victim = kill_client ? c : s, survivor = kill_client ? s : c;
    kill(victim, SIGKILL);
    int st, ok;
    waitpid(victim, &st, 0);
    double t = wait_within(survivor, 10, &ok);
    char why[96];
    snprintf(why, sizeof why, t < 0 ? "survivor still blocked after 10 s" : "survivor exit not ESTREAM");
    result(kill_client ? "client killed: server recv fails" : "server killed: client send fails",
           ok, why);
    if (t >= 0)
        printf("  noticed after %.2fs\n", t);
}

static void case_refused(void)
{
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        capture_child();
        double t0 = now();
        struct rd_transport *tp = dial("7499", 1500);
        double t = now() - t0;
        printf("  %s after %.2fs: %s\n", tp ? "connected?!" : "refused", t, rd_error_msg());
        exit(!tp && rd_error_code() == RD_ECONNECT && t >= 1.0 && t < 5 ? 0 : 1);
    }
    result("connect without listener retries until the timeout", wait_ok(p), "wrong result");
}

static void case_listen_errors(void)
{
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        capture_child();
        struct rd_addr a = { .bind = srv_ip, .port = "7498", .timeout_ms = -1 };
        struct rd_transport *l1 = rd_transport_new(&rd_verbs_ops);
        struct rd_transport *l2 = rd_transport_new(&rd_verbs_ops);
        CHECK(l1->ops->listen(l1, &a) == 0, "first listen");
        int rc = l2->ops->listen(l2, &a);
        printf("  second listen: %d %s\n", rc, rd_error_msg());
        CHECK(rc == RD_ECONNECT && strstr(rd_error_msg(), "in use"), "port in use");
        l2->ops->close(l2);
        rd_error_clear();
        struct rd_addr b = { .bind = srv_ip, .port = "7497", .device = "rxe_b", .timeout_ms = -1 };
        struct rd_transport *l3 = rd_transport_new(&rd_verbs_ops);
        rc = l3->ops->listen(l3, &b);
        printf("  listen on %s with -d rxe_b: %d %s\n", srv_ip, rc, rd_error_msg());
        CHECK(rc == RD_ECONNECT, "device pin");
        l3->ops->close(l3);
        rd_error_clear();
        struct rd_addr d = { .bind = srv_ip, .port = "7496", .device = "mlx5_9", .timeout_ms = -1 };
        struct rd_transport *l4 = rd_transport_new(&rd_verbs_ops);
        rc = l4->ops->listen(l4, &d);
        printf("  listen with -d mlx5_9: %d %s\n", rc, rd_error_msg());
        CHECK(rc == RD_ENODEV, "unknown device");
        free(l4);
        l1->ops->close(l1);
        exit(0);
    }
    result("listen errors: port in use, device pin, unknown device", wait_ok(p), "wrong result");
}

/* A raw rdma_cm client with garbage private data must be refused; the server keeps serving. */
static void garbage_client(const char *port, unsigned unused)
{
    struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res, *src;
    struct rdma_addrinfo sh = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
    CHECK(!rdma_getaddrinfo(srv_ip, port, &hints, &res), "getaddrinfo");
    CHECK(!rdma_getaddrinfo(cli_ip, NULL, &sh, &src), "getaddrinfo src");
    hints.ai_src_addr = src->ai_src_addr;
    hints.ai_src_len = src->ai_src_len;
    rdma_freeaddrinfo(res);
    CHECK(!rdma_getaddrinfo(srv_ip, port, &hints, &res), "getaddrinfo");
    struct ibv_qp_init_attr qa = { .cap = { 4, 4, 1, 1, 0 }, .qp_type = IBV_QPT_RC };
    struct rdma_cm_id *id;
    CHECK(!rdma_create_ep(&id, res, NULL, &qa), "create_ep");
    char junk[32];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)rand();
    struct rdma_conn_param p = { .private_data = junk, .private_data_len = sizeof junk,
                                 .retry_count = 6, .rnr_retry_count = 7 };
    int rc = rdma_connect(id, &p);
    printf("  garbage connect: %s\n", rc ? "refused" : "accepted?!");
    fflush(stdout);
    exit(rc ? 0 : 1);
}

static void case_garbage(const char *port)
{
    pid_t s = spawn(transfer_server, port, 50);
    usleep(300 * 1000);
    pid_t g = spawn(garbage_client, port, 0);
    int gok = wait_ok(g);
    pid_t c = spawn(transfer_client, port, 50);
    int cok = wait_ok(c), sok = wait_ok(s);
    result("garbage CM private data refused, server keeps serving", gok && cok && sok,
           !gok ? "garbage accepted" : "transfer after garbage failed");
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s SERVER_IP CLIENT_IP\n", argv[0]);
        return 2;
    }
    srv_ip = argv[1];
    cli_ip = argv[2];
    rd_set_progname("verbs_smoke");
    capture_begin();
    case_transfer("7471", 400);
    capture_begin();
    case_transfer("7472", 3000);
    capture_begin();
    case_refused();
    capture_begin();
    case_listen_errors();
    capture_begin();
    case_garbage("7473");
    capture_begin();
    case_kill("7474", 1);
    capture_begin();
    case_kill("7475", 0);
    printf("%d failed\n", failures);
    return failures;
}
