/* rdp_main.c - rdpipe's initiator: parse, plan, start one agent per segment, wire the hops,
 * watch, and tear everything down on the first failure or signal. */
#include "rdp_main.h"

#include "rd_cli.h"
#include "rd_report.h"
#include "rdp_agent.h"
#include "rdp_line.h"
#include "rdp_proc.h"
#include "rdp_spec.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SETUP_TIMEOUT_S 60.0   /* ssh login + agent start on every host */
#define SETTLE_S 0.5           /* after the first failure, how long to collect the others */
#define EXIT_GRACE_S 3.0       /* closed channels: how long agents get before SIGTERM */
#define LOST_CODE 255          /* like ssh: the connection to the host was lost */

static const char usage_text[] =
    "usage: rdpipe [options] [[user@]host:]'cmd' ...\n"
    "Run a pipeline whose segments run on different hosts; the stream goes from host to host\n"
    "directly (rdsend/rdrecv: RDMA where both ends have it, TCP otherwise).\n"
    "\n"
    "  echo hello | rdpipe host1:'tr a-z A-Z' host2:'rev'       prints OLLEH\n"
    "  rdpipe fs1:'zfs send tank@snap' backup:'zfs recv tank'   fs1 -> backup directly\n"
    "  rdpipe fs1:'< big.img' fs2:'tee >(sha256sum > sum)' backup:'> big.img'\n"
    "  rdpipe -v host1:'wc -c' < file                           bytes and bandwidth per hop\n"
    "\n"
    "Each argument is [user@]host:'cmd'; a bare 'cmd' or localhost:'cmd' runs here. Commands run\n"
    "under bash on their host. The local stdin feeds the first segment unless it is a terminal;\n"
    "the last segment's output comes back to the local stdout. A segment that is just '<file'\n"
    "(first only), '>file' or '>>file' (last only) reads or writes that file on its host.\n"
    "\n"
    "options:\n"
    "  -n, --dry-run          print the plan (hosts, commands, hops, ssh commands) and exit\n"
    "  -v, --verbose          per-hop bytes and bandwidth on stderr (-vv: rdsend/rdrecv -v too)\n"
    "      --ssh CMD          how to reach a host (default: ssh -o BatchMode=yes)\n"
    "      --transport T      auto (default), tcp or rdma: passed to every rdsend/rdrecv\n"
    "      --remote-path P    rdpipe's path on the remote hosts (default: rdpipe from PATH);\n"
    "                         rdsend and rdrecv are taken from the same directory\n"
    "  -H, --hostname ADDR    the address other hosts reach this machine at (default: the\n"
    "                         address each host's SSH connection came from, SSH_CONNECTION)\n"
    "  -h, --help             this help\n"
    "  -V, --version          version\n"
    "\n"
    "Addresses: a remote segment is reached at the address its sshd was reached at, this machine\n"
    "at the address its SSH connections came from. Data therefore takes the network SSH takes:\n"
    "to move data over an RDMA network (IPoIB/RoCE) while SSH uses another one, let ssh connect\n"
    "to the hosts' RDMA-network addresses (HostName in ~/.ssh/config) and give -H with this\n"
    "machine's RDMA-network address when it runs a segment or the stdin/stdout ends.\n"
    "\n"
    "exit status: 0 when every segment succeeded; otherwise that of the first failing segment\n"
    "(its command's status, or rdsend/rdrecv's: 2 connect, 3 auth, 4 stream, 5 local IO, 101 no\n"
    "RDMA device), 255 when the connection to a host was lost, 128+N on signal N, 1 usage.\n";

struct node {
    struct rdp_seg s;
    pid_t pid;
    int wfd, rfd, is_sock;
    struct rdp_chan ch;
    char srv[64], cli[64];
    int port;
    char key[65];              /* hex key of the hop into this node */
    int ready, done, eof, reaped, status;
    int has_recv_stat;
    unsigned long long recv_bytes;
    double recv_seconds;
    char recv_transport[32];
    char addr[80];             /* where the previous node sends to */
};

struct failure {
    int node, rank, code, seq;
    char role[8];
    char *msg;
};

struct run {
    struct node *n;
    int count;
    int verbose, dry_run;
    const char *ssh_cmd, *transport, *remote_path, *hostname;
    struct failure best;
    int have_failure, seq;
    double settle_at;
    int interrupted;
};

static void warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warnx(const char *fmt, ...)
{
    va_list ap;
    char buf[2048];
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rdpipe: %s\n", buf);
}

static const char *label(const struct node *x, char *buf, size_t len)
{
    if (x->s.pseudo == 1)
        snprintf(buf, len, "local stdin");
    else if (x->s.pseudo == 2)
        snprintf(buf, len, "local stdout");
    else
        snprintf(buf, len, "%s '%s'", x->s.host, x->s.text);
    return buf;
}

/* shell words: whitespace separated, '...' and "..." quoting (no expansions) */
static int split_words(const char *s, char **out, int max)
{
    int n = 0;
    while (*s && n < max - 1) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        char *w = malloc(strlen(s) + 1), *o = w;
        while (*s && *s != ' ' && *s != '\t') {
            if (*s == '\'' || *s == '"') {
                char q = *s++;
                while (*s && *s != q)
                    *o++ = *s++;
                if (*s)
                    s++;
            } else if (*s == '\\' && s[1]) {
                *o++ = s[1];
                s += 2;
            } else {
                *o++ = *s++;
            }
        }
        *o = '\0';
        out[n++] = w;
    }
    out[n] = NULL;
    return n;
}

static char *shell_quote(const char *s)
{
    size_t n = 3;
    for (const char *p = s; *p; p++)
        n += *p == '\'' ? 4 : 1;
    char *q = malloc(n), *o = q;
    *o++ = '\'';
    for (const char *p = s; *p; p++) {
        if (*p == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *p;
        }
    }
    *o++ = '\'';
    *o = '\0';
    return q;
}

static char *remote_command(const struct run *r)
{
    char *path = shell_quote(r->remote_path ? r->remote_path : "rdpipe");
    size_t len = strlen(path) + 32;
    char *c = malloc(len);
    snprintf(c, len, "exec %s --agent", r->remote_path ? path : "rdpipe");
    free(path);
    return c;
}

/* argv of the ssh command for one node (malloc'd strings, NULL-terminated). */
static char **ssh_argv(const struct run *r, const struct node *x)
{
    char **v = calloc(72, sizeof *v);
    int n = split_words(r->ssh_cmd, v, 68);
    v[n++] = strdup(x->s.dest);
    v[n++] = remote_command(r);
    v[n] = NULL;
    return v;
}

static void free_argv(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

static void print_plan(const struct run *r)
{
    char lb[512], lb2[512];
    printf("rdpipe plan: %d segment%s\n", r->count, r->count == 1 ? "" : "s");
    for (int i = 0; i < r->count; i++) {
        const struct node *x = &r->n[i];
        const char *in = x->s.in == RDP_IN_RECV ? "rdrecv (ephemeral port)" : x->s.in == RDP_IN_STDIN ? "stdin" : "nothing";
        const char *out = x->s.out == RDP_OUT_SEND ? "rdsend" : x->s.out == RDP_OUT_STDOUT ? "stdout" : "nothing";
        printf("  %d. %s\n", i + 1, label(x, lb, sizeof lb));
        printf("     input: %s; ", in);
        switch (x->s.kind) {
        case RDP_CMD: printf("runs: bash -c '%s'", x->s.cmd); break;
        case RDP_READ: printf("reads file %s", x->s.path); break;
        case RDP_WRITE: printf("writes file %s (created or truncated)", x->s.path); break;
        case RDP_APPEND: printf("appends to file %s", x->s.path); break;
        case RDP_PASS: printf("passes the stream"); break;
        case RDP_TSEND: case RDP_TRECV: printf("rdcp tree"); break;
        }
        printf("; output: %s\n", out);
        if (x->s.dest) {
            char **v = ssh_argv(r, x);
            printf("     agent via:");
            for (char **p = v; *p; p++) {
                if (strpbrk(*p, " \t'\"$")) {
                    char *q = shell_quote(*p);
                    printf(" %s", q);
                    free(q);
                } else {
                    printf(" %s", *p);
                }
            }
            printf("\n");
            free_argv(v);
        } else {
            printf("     agent: local\n");
        }
        if (x->s.out == RDP_OUT_SEND && i + 1 < r->count)
            printf("     hop %d: %s -> %s (transport %s)\n", i + 1, x->s.host,
                   label(&r->n[i + 1], lb2, sizeof lb2), r->transport);
    }
}

static int spawn_node(struct run *r, struct node *x)
{
    if (x->s.dest) {
        int to[2], from[2];
        if (pipe2(to, O_CLOEXEC))
            return -1;
        if (pipe2(from, O_CLOEXEC)) {
            close(to[0]);
            close(to[1]);
            return -1;
        }
        char **v = ssh_argv(r, x);
        x->pid = rdp_spawn(v, NULL, to[0], from[1], STDERR_FILENO, -1, -1);
        free_argv(v);
        close(to[0]);
        close(from[1]);
        x->wfd = to[1];
        x->rfd = from[0];
    } else {
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp))
            return -1;
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            return -1;
        self[n] = '\0';
        char *v[] = { self, "--agent", "--control-fd", "3", NULL };
        x->pid = rdp_spawn(v, NULL, STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO, sp[1], -1);
        close(sp[1]);
        x->wfd = x->rfd = sp[0];
        x->is_sock = 1;
    }
    if (x->pid < 0)
        return -1;
    rdp_set_nonblock(x->rfd);
    rdp_chan_init(&x->ch, x->rfd, x->wfd);
    return 0;
}

static void close_ctl(struct node *x)
{
    if (x->wfd < 0)
        return;
    if (x->is_sock)
        shutdown(x->wfd, SHUT_WR);
    else
        close(x->wfd);
    x->wfd = -1;
}

static void send_to(struct node *x, const char *fmt, const char *a, const char *b, const char *c)
{
    if (x->wfd >= 0 && rdp_send(x->wfd, fmt, a, b, c) < 0)
        close_ctl(x);
}

static void add_failure(struct run *r, int node, const char *role, int rank, int code, const char *msg)
{
    int seq = r->seq++;
    if (!r->have_failure)
        r->settle_at = rd_now() + SETTLE_S;
    if (r->have_failure && (r->best.rank < rank || (r->best.rank == rank && r->best.seq < seq)))
        return;
    free(r->best.msg);
    r->best = (struct failure){ .node = node, .rank = rank, .code = code, .seq = seq,
                                .msg = msg ? strdup(msg) : NULL };
    snprintf(r->best.role, sizeof r->best.role, "%s", role);
    r->have_failure = 1;
}

static void handle_line(struct run *r, int i, char *line)
{
    struct node *x = &r->n[i];
    char *w[8];
    int n = rdp_split(line, w, 8);
    char lb[512];
    if (n == 0)
        return;
    if (strcmp(w[0], "hello") == 0 && n >= 3) {
        snprintf(x->srv, sizeof x->srv, "%s", w[1]);
        snprintf(x->cli, sizeof x->cli, "%s", w[2]);
    } else if (strcmp(w[0], "port") == 0 && n == 2) {
        x->port = atoi(w[1]);
    } else if (strcmp(w[0], "ready") == 0) {
        x->ready = 1;
    } else if (strcmp(w[0], "log") == 0 && n == 2) {
        char *t = rdp_unhex(w[1], NULL);
        if (t && r->verbose)
            fprintf(stderr, "rdpipe: %s: %s\n", x->s.host, t);
        free(t);
    } else if (strcmp(w[0], "stat") == 0 && n == 5) {
        if (strcmp(w[1], "recv") == 0) {
            x->has_recv_stat = 1;
            x->recv_bytes = strtoull(w[2], NULL, 10);
            x->recv_seconds = strtod(w[3], NULL);
            snprintf(x->recv_transport, sizeof x->recv_transport, "%s", w[4]);
        }
    } else if (strcmp(w[0], "exit") == 0 && n == 5) {
        int code = atoi(w[2]), killed = atoi(w[3]);
        if (code == 0 || killed || r->interrupted)
            return;
        char *m = rdp_unhex(w[4], NULL);
        char msg[2048];
        const char *role = w[1];
        int rank;
        if (strcmp(role, "cmd") == 0) {
            rank = code == 128 + SIGPIPE ? 30 : 0;
            if (code > 128 && code < 128 + 65)
                snprintf(msg, sizeof msg, "%s: command '%s' was killed by signal %d", x->s.host,
                         x->s.text, code - 128);
            else
                snprintf(msg, sizeof msg, "%s: command '%s' failed with exit status %d", x->s.host,
                         x->s.text, code);
        } else if (strcmp(role, "recv") == 0) {
            rank = code > 128 ? 15 : 20;   /* killed: a cause; an error: often a consequence */
            snprintf(msg, sizeof msg, "%s: receiving the stream for %s from %s failed (rdrecv exit %d)%s%s",
                     x->s.host, label(x, lb, sizeof lb), i > 0 ? r->n[i - 1].s.host : "?", code,
                     m && *m ? ": " : "", m ? m : "");
        } else if (strcmp(role, "send") == 0) {
            rank = code > 128 ? 15 : 20;
            snprintf(msg, sizeof msg, "%s: sending the stream of %s to %s failed (rdsend exit %d)%s%s",
                     x->s.host, label(x, lb, sizeof lb), i + 1 < r->count ? r->n[i + 1].s.host : "?",
                     code, m && *m ? ": " : "", m ? m : "");
        } else {
            rank = strcmp(role, "file") == 0 ? 0 : 20;
            snprintf(msg, sizeof msg, "%s: %s failed (exit %d)%s%s", x->s.host, label(x, lb, sizeof lb),
                     code, m && *m ? ": " : "", m ? m : "");
        }
        add_failure(r, i, role, rank, code, msg);
        free(m);
    } else if (strcmp(w[0], "done") == 0) {
        x->done = 1;
    }
}

static void reap_nodes(struct run *r)
{
    for (int i = 0; i < r->count; i++) {
        struct node *x = &r->n[i];
        int st;
        if (x->pid > 0 && !x->reaped && waitpid(x->pid, &st, WNOHANG) == x->pid) {
            x->reaped = 1;
            x->status = rdp_status_code(st);
        }
    }
}

static void lost(struct run *r, int i)
{
    struct node *x = &r->n[i];
    char lb[512], msg[1024];
    if (r->interrupted)
        return;
    /* give ssh a moment to exit so that its status can be named */
    for (int k = 0; k < 20 && !x->reaped; k++) {
        struct timespec ts = { 0, 10 * 1000000L };
        nanosleep(&ts, NULL);
        reap_nodes(r);
    }
    char how[64] = "";
    if (x->reaped && x->status > 128)
        snprintf(how, sizeof how, " (%s killed by signal %d)", x->s.dest ? "ssh" : "agent", x->status - 128);
    else if (x->reaped)
        snprintf(how, sizeof how, " (%s exited with status %d)", x->s.dest ? "ssh" : "agent", x->status);
    snprintf(msg, sizeof msg, "%s: lost the connection to the agent running %s%s%s", x->s.host,
             label(x, lb, sizeof lb), how,
             x->reaped && x->status == 127 && x->s.dest ? "; is rdpipe on the PATH there? (see --remote-path)" : "");
    add_failure(r, i, "lost", 10, LOST_CODE, msg);
}

/* Read what the agents said; returns when something may have changed. */
static void pump(struct run *r, int timeout_ms)
{
    struct pollfd pfd[r->count + 1];
    int idx[r->count + 1];
    int np = 0;
    pfd[np] = (struct pollfd){ .fd = rdp_sig_fd(), .events = POLLIN };
    idx[np++] = -1;
    for (int i = 0; i < r->count; i++)
        if (!r->n[i].eof) {
            pfd[np] = (struct pollfd){ .fd = r->n[i].rfd, .events = POLLIN };
            idx[np++] = i;
        }
    int pr = poll(pfd, (nfds_t)np, timeout_ms);
    if (pr < 0 && errno != EINTR)
        return;
    unsigned sig = rdp_sig_drain();
    for (int s = 1; s < 32; s++)
        if ((sig & (1u << s)) && (s == SIGINT || s == SIGTERM || s == SIGHUP) && !r->interrupted)
            r->interrupted = s;
    reap_nodes(r);
    for (int k = 1; k < np; k++) {
        if (!pfd[k].revents)
            continue;
        int i = idx[k];
        struct node *x = &r->n[i];
        while (rdp_chan_fill(&x->ch) > 0)
            ;
        char *line;
        while (rdp_chan_line(&x->ch, &line)) {
            handle_line(r, i, line);
            free(line);
        }
        if (x->ch.eof) {
            x->eof = 1;
            if (!x->done)
                lost(r, i);
        }
    }
}

static void random_key(char out[65])
{
    unsigned char b[32];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = getrandom(b + got, sizeof b - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            /* no entropy source at all: fall back to the time (still a per-run secret) */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            for (size_t i = got; i < sizeof b; i++)
                b[i] = (unsigned char)(ts.tv_nsec >> (i % 4 * 8)) ^ (unsigned char)getpid();
            break;
        }
        got += (size_t)n;
    }
    char *h = rdp_hex(b, sizeof b);
    snprintf(out, 65, "%s", h);
    free(h);
}

static const char *in_name(enum rdp_in i)
{
    return i == RDP_IN_RECV ? "recv" : i == RDP_IN_STDIN ? "stdin" : "none";
}

static const char *out_name(enum rdp_out o)
{
    return o == RDP_OUT_SEND ? "send" : o == RDP_OUT_STDOUT ? "stdout" : "none";
}

/* Where node i sends to: the address of node i+1 as node i can reach it. */
static void next_addr(struct run *r, int i, char *out, size_t len)
{
    struct node *from = &r->n[i], *to = &r->n[i + 1];
    if (to->s.dest)
        snprintf(out, len, "%s", strcmp(to->srv, "-") && to->srv[0] ? to->srv : to->s.host);
    else if (!from->s.dest)
        snprintf(out, len, "%s", r->hostname ? r->hostname : "127.0.0.1");
    else
        snprintf(out, len, "%s", r->hostname ? r->hostname : "@initiator");
}

static void print_hops(struct run *r)
{
    char lb[512], lb2[512], b[32];
    int hop = 0;
    for (int i = 1; i < r->count; i++) {
        struct node *x = &r->n[i];
        if (x->s.in != RDP_IN_RECV)
            continue;
        hop++;
        if (!x->has_recv_stat) {
            fprintf(stderr, "rdpipe: hop %d %s -> %s: no statistics\n", hop,
                    label(&r->n[i - 1], lb, sizeof lb), label(x, lb2, sizeof lb2));
            continue;
        }
        rd_format_bytes(x->recv_bytes, b, sizeof b);
        double gbs = x->recv_seconds > 0 ? x->recv_bytes / x->recv_seconds / 1e9 : 0;
        fprintf(stderr, "rdpipe: hop %d %s -> %s: %llu bytes (%s) in %.3f s, %.3f GB/s over %s\n", hop,
                label(&r->n[i - 1], lb, sizeof lb), label(x, lb2, sizeof lb2), x->recv_bytes, b,
                x->recv_seconds, gbs, x->recv_transport);
    }
}

/* Close every control channel, give the agents EXIT_GRACE_S to go, then force them. */
static void shut_down(struct run *r, int forced)
{
    for (int i = 0; i < r->count; i++)
        close_ctl(&r->n[i]);
    double t0 = rd_now();
    int stage = 0;
    for (;;) {
        reap_nodes(r);
        int left = 0;
        for (int i = 0; i < r->count; i++)
            if (r->n[i].pid > 0 && !r->n[i].reaped)
                left++;
        if (!left)
            break;
        double dt = rd_now() - t0;
        double limit = forced ? EXIT_GRACE_S : 2 * EXIT_GRACE_S;
        if (stage == 0 && dt > limit) {
            for (int i = 0; i < r->count; i++)
                if (r->n[i].pid > 0 && !r->n[i].reaped)
                    kill(r->n[i].pid, SIGTERM);
            stage = 1;
        } else if (stage == 1 && dt > limit + 2) {
            for (int i = 0; i < r->count; i++)
                if (r->n[i].pid > 0 && !r->n[i].reaped)
                    kill(r->n[i].pid, SIGKILL);
            stage = 2;
        }
        int saved = r->interrupted;
        r->interrupted = r->interrupted ? r->interrupted : -1;   /* no new failures now */
        pump(r, 50);
        if (saved == 0 && r->interrupted == -1)
            r->interrupted = 0;
    }
}

static int run_pipeline(struct run *r)
{
    static const int sigs[] = { SIGCHLD, SIGINT, SIGTERM, SIGHUP };
    signal(SIGPIPE, SIG_IGN);
    if (rdp_sig_setup(sigs, 4)) {
        warnx("cannot set up signal handling: %s", strerror(errno));
        return 5;
    }
    char lb[512];
    for (int i = 0; i < r->count; i++) {
        struct node *x = &r->n[i];
        x->wfd = x->rfd = -1;
        if (spawn_node(r, x)) {
            warnx("cannot start the agent for %s: %s", label(x, lb, sizeof lb), strerror(errno));
            r->count = i;
            shut_down(r, 1);
            return 5;
        }
    }
    for (int i = 0; i < r->count; i++) {
        struct node *x = &r->n[i];
        char *cmd = rdp_hex_str(x->s.cmd), *path = rdp_hex_str(x->s.path);
        char head[200];
        snprintf(head, sizeof head, "%s\nseg %s %s %s %s %d", RDP_PROTO, rdp_kind_name(x->s.kind),
                 in_name(x->s.in), out_name(x->s.out), r->transport, r->verbose);
        send_to(x, "%s %s %s", head, cmd, path);
        free(cmd);
        free(path);
        if (x->s.in == RDP_IN_RECV) {
            random_key(x->key);
            send_to(x, "key %s%s%s", x->key, "", "");
        }
        send_to(x, "setup%s%s%s", "", "", "");
    }
    double deadline = rd_now() + SETUP_TIMEOUT_S;
    int started = 0;
    for (;;) {
        if (r->interrupted > 0)
            break;
        int all_ready = 1, all_done = 1;
        for (int i = 0; i < r->count; i++) {
            if (!r->n[i].ready)
                all_ready = 0;
            if (!r->n[i].done)
                all_done = 0;
        }
        if (r->have_failure && (all_done || rd_now() >= r->settle_at))
            break;
        if (started && all_done)
            break;
        if (!started && all_ready && !r->have_failure) {
            for (int i = 0; i + 1 < r->count; i++) {
                struct node *x = &r->n[i];
                if (x->s.out != RDP_OUT_SEND)
                    continue;
                next_addr(r, i, r->n[i + 1].addr, sizeof r->n[i + 1].addr);
                char port[16];
                snprintf(port, sizeof port, "%d", r->n[i + 1].port);
                send_to(x, "next %s %s %s", r->n[i + 1].addr, port, r->n[i + 1].key);
                if (r->verbose)
                    fprintf(stderr, "rdpipe: hop %s -> %s at %s port %s\n", x->s.host,
                            label(&r->n[i + 1], lb, sizeof lb), r->n[i + 1].addr, port);
            }
            for (int i = r->count - 1; i >= 0; i--)
                send_to(&r->n[i], "start%s%s%s", "", "", "");
            started = 1;
        }
        if (!started && !r->have_failure && rd_now() >= deadline) {
            for (int i = 0; i < r->count; i++)
                if (!r->n[i].ready) {
                    char msg[1024];
                    snprintf(msg, sizeof msg, "%s: the agent for %s did not start within %.0f s", r->n[i].s.host,
                             label(&r->n[i], lb, sizeof lb), SETUP_TIMEOUT_S);
                    add_failure(r, i, "lost", 10, LOST_CODE, msg);
                    break;
                }
            break;
        }
        double wait = r->have_failure ? r->settle_at - rd_now() : started ? 1.0 : deadline - rd_now();
        pump(r, wait > 0 ? (int)(wait * 1000) + 1 : 0);
    }
    int rc = 0;
    if (r->interrupted > 0) {
        warnx("interrupted by signal %d: stopping the pipeline", r->interrupted);
        rc = 128 + r->interrupted;
    } else if (r->have_failure) {
        warnx("%s", r->best.msg ? r->best.msg : "failed");
        rc = r->best.code ? r->best.code : 1;
    }
    shut_down(r, rc != 0);
    if (r->verbose)
        print_hops(r);
    return rc;
}

enum { OPT_SSH = 256, OPT_TRANSPORT, OPT_REMOTE_PATH };

int rdp_main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--agent") == 0) {
        int fd = -1;
        if (argc >= 4 && strcmp(argv[2], "--control-fd") == 0)
            fd = atoi(argv[3]);
        return fd >= 0 ? rdp_agent_main(fd, fd) : rdp_agent_main(STDIN_FILENO, STDOUT_FILENO);
    }
    static const struct option opts[] = {
        { "dry-run", no_argument, NULL, 'n' },
        { "verbose", no_argument, NULL, 'v' },
        { "ssh", required_argument, NULL, OPT_SSH },
        { "transport", required_argument, NULL, OPT_TRANSPORT },
        { "remote-path", required_argument, NULL, OPT_REMOTE_PATH },
        { "hostname", required_argument, NULL, 'H' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, 'V' },
        { NULL, 0, NULL, 0 },
    };
    struct run r;
    memset(&r, 0, sizeof r);
    r.ssh_cmd = "ssh -o BatchMode=yes";
    r.transport = "auto";
    int c;
    while ((c = getopt_long(argc, argv, "+nvH:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'n': r.dry_run = 1; break;
        case 'v': r.verbose++; break;
        case OPT_SSH: r.ssh_cmd = optarg; break;
        case OPT_TRANSPORT:
            if (strcmp(optarg, "auto") && strcmp(optarg, "tcp") && strcmp(optarg, "rdma")) {
                warnx("--transport must be auto, tcp or rdma, not '%s'", optarg);
                return 1;
            }
            r.transport = optarg;
            break;
        case OPT_REMOTE_PATH: r.remote_path = optarg; break;
        case 'H': r.hostname = optarg; break;
        case 'h': fputs(usage_text, stdout); return 0;
        case 'V': printf("rdpipe (rdpipe) %s\n", RD_VERSION); return 0;
        default: warnx("try 'rdpipe --help'"); return 1;
        }
    }
    int nseg = argc - optind;
    if (nseg < 1) {
        warnx("no segments (try 'rdpipe --help')");
        return 1;
    }
    if (!*r.ssh_cmd) {
        warnx("--ssh must not be empty");
        return 1;
    }
    struct rdp_seg *segs = calloc((size_t)nseg, sizeof *segs);
    char err[1024];
    int rc = 1;
    for (int i = 0; i < nseg; i++)
        if (rdp_parse_segment(argv[optind + i], &segs[i], err, sizeof err)) {
            warnx("%s", err);
            goto out;
        }
    struct rdp_seg *plan;
    int nplan;
    if (rdp_plan(segs, nseg, !isatty(STDIN_FILENO), &plan, &nplan, err, sizeof err)) {
        warnx("%s", err);
        goto out;
    }
    r.n = calloc((size_t)nplan, sizeof *r.n);
    r.count = nplan;
    for (int i = 0; i < nplan; i++) {
        r.n[i].s = plan[i];
        r.n[i].wfd = r.n[i].rfd = -1;
    }
    free(plan);
    if (r.dry_run) {
        print_plan(&r);
        rc = 0;
    } else {
        fflush(stdout);
        rc = run_pipeline(&r);
    }
    for (int i = 0; i < r.count; i++) {
        rdp_chan_free(&r.n[i].ch);
        if (r.n[i].rfd >= 0)
            close(r.n[i].rfd);
    }
    free(r.n);
    free(r.best.msg);
out:
    for (int i = 0; i < nseg; i++)
        rdp_seg_free(&segs[i]);
    free(segs);
    return rc;
}
