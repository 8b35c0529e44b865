/* rdp_main.c - rdpipe's initiator: parse, plan, start one agent per segment, wire the hops,
 * watch, and tear everything down on the first failure or signal. */
#include "pipe/rdp_main.h"
#include "util/rd_error.h"
#include "util/rd_clock.h"

#include "run/rd_cli.h"
#include "run/rd_report.h"
#include "pipe/rdp_agent.h"
#include "remote/rdr_hop.h"
#include "remote/rdr_line.h"
#include "remote/rdr_link.h"
#include "remote/rdr_opts.h"
#include "remote/rdr_proc.h"
#include "remote/rdr_said.h"
#include "remote/rdr_shell.h"
#include "remote/rdr_spec.h"
#include "remote/rdr_warn.h"
#include "remote/rdr_watch.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SETUP_TIMEOUT_S 60.0   /* ssh login + agent start on every host */
#define SETTLE_S 0.5           /* after the first failure, how long to collect the others */
#define EXIT_GRACE_S 3.0       /* closed channels: how long agents get before SIGTERM */

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
    "      --encrypt          encrypt every hop's stream end to end (rdsend/rdrecv --encrypt;\n"
    "                         relays pass the ciphertext on)\n"
    "      --compress[=auto|LEVEL]  every hop's rdsend compresses (rdsend --compress)\n"
    "      --lanes N          every hop's ends run N lanes (rdsend --lanes; default: each\n"
    "                         plans its own)\n"
    "      --streams N        every hop striped over N connections (rdsend --streams)\n"
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
    "exit status: 0 when every segment succeeded; otherwise that of the last command that failed\n"
    "(as set -o pipefail; what a failing command wrote still reaches the next segments), or of\n"
    "the first other failure: rdsend/rdrecv's 2 connect, 3 auth, 4 stream, 5 local IO, 101 no\n"
    "RDMA device, 255 when ssh could not log in to a host, found no rdpipe there, or the\n"
    "connection to it was lost, 128+N on signal N, 1 usage.\n";

struct node {
    struct rdr_seg s;
    struct rdr_link l;         /* the control link to this node's agent */
    char key[65];              /* hex key of the hop into this node */
    char in_stream[65];        /* the stream into this node, when it is that stream's sink: its
                                * end-to-end key, which relays in between never see */
    char out_stream[65];       /* the same key on the stream's origin */
    int has_recv_stat;
    unsigned long long recv_bytes;
    double recv_seconds;
    char recv_transport[96];
    char addr[80];             /* where the previous node sends to */
    char *shown;               /* its command text for messages: control bytes as \ooo */
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
    struct rdr_init_opts o;    /* --ssh, --transport, --remote-path, -H */
    struct rdr_watch w;        /* the links of n[0..count-1] while the pipeline runs */
    struct failure best;
    int have_failure, seq;
    int ending;                /* a failure that stops the pipeline (not a command's own) */
    unsigned char *ends;       /* per node: it had such a failure */
    int closed_below;          /* a command at this node closed its input early: the hops
                                * before it fail as a consequence, and stop nothing else */
    double settle_at;
    int interrupted;
};

#define warnx(...) rdr_warnx("rdpipe", __VA_ARGS__)

static const char *label(const struct node *x, char *buf, size_t len)
{
    if (x->s.pseudo == 1)
        snprintf(buf, len, "local stdin");
    else if (x->s.pseudo == 2)
        snprintf(buf, len, "local stdout");
    else
        snprintf(buf, len, "%s '%s'", x->s.host, x->shown);
    return buf;
}

/* What one segment does with the stream, for -n. */
static int is_relay(const struct node *x)
{
    return x->s.kind == RDR_PASS && x->s.in == RDR_IN_RECV && x->s.out == RDR_OUT_SEND;
}

/* Each stream between two ends that are not relays gets a key of its own, known to those
 * two ends only: the frames' tags then hold end to end, through any number of relays. */
static void give_stream_keys(struct run *r)
{
    for (int i = 1; i < r->count; i++) {
        struct node *sink = &r->n[i];
        if (sink->s.in != RDR_IN_RECV || is_relay(sink))
            continue;
        int o = i - 1;
        while (o > 0 && is_relay(&r->n[o]))
            o--;
        rdr_hop_key(sink->in_stream);
        memcpy(r->n[o].out_stream, sink->in_stream, sizeof sink->in_stream);
    }
}

static void print_role(const struct node *x)
{
    if (is_relay(x)) {
        printf("     relay: rdrecv --relay-fd (ephemeral port) forwards the frames unchanged\n");
        return;
    }
    const char *in = x->s.in == RDR_IN_RECV ? "rdrecv (ephemeral port)" : x->s.in == RDR_IN_STDIN ? "stdin" : "nothing";
    const char *out = x->s.out == RDR_OUT_SEND ? "rdsend" : x->s.out == RDR_OUT_STDOUT ? "stdout" : "nothing";
    printf("     input: %s; ", in);
    switch (x->s.kind) {
    case RDR_CMD: printf("runs: bash -c '%s'", x->s.cmd); break;
    case RDR_READ: printf("reads file %s", x->s.path); break;
    case RDR_WRITE: printf("writes file %s (created or truncated)", x->s.path); break;
    case RDR_APPEND: printf("appends to file %s", x->s.path); break;
    case RDR_PASS: printf("passes the stream"); break;
    case RDR_ROLE: printf("runs a role"); break;   /* agents only: never in a plan */
    }
    printf("; output: %s\n", out);
}

static void print_plan(const struct run *r)
{
    char lb[512], lb2[512];
    printf("rdpipe plan: %d segment%s\n", r->count, r->count == 1 ? "" : "s");
    for (int i = 0; i < r->count; i++) {
        const struct node *x = &r->n[i];
        printf("  %d. %s\n", i + 1, label(x, lb, sizeof lb));
        print_role(x);
        if (x->s.dest) {
            char **v = rdr_link_ssh_argv(&r->o.reach, x->s.dest);
            printf("     agent via:");
            for (char **p = v; *p; p++) {
                if (strpbrk(*p, " \t'\"$")) {
                    char *q = rdr_shell_quote(*p);
                    printf(" %s", q);
                    free(q);
                } else {
                    printf(" %s", *p);
                }
            }
            printf("\n");
            rdr_link_argv_free(v);
        } else {
            printf("     agent: local\n");
        }
        if (x->s.out == RDR_OUT_SEND && i + 1 < r->count)
            printf("     hop %d: %s -> %s (transport %s)\n", i + 1, x->s.host,
                   label(&r->n[i + 1], lb2, sizeof lb2), r->o.transport);
    }
}

static int spawn_node(struct run *r, struct node *x)
{
    char self[PATH_MAX] = "";
    if (!x->s.dest) {   /* a local agent is this very binary, on our stdin and stdout */
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            return -1;
        self[n] = '\0';
    }
    return rdr_link_spawn(&x->l, &r->o.reach, x->s.dest, self, STDIN_FILENO, STDOUT_FILENO);
}

static void send_to(struct node *x, const char *fmt, const char *a, const char *b, const char *c)
{
    if (x->l.wfd >= 0 && rdr_send(x->l.wfd, fmt, a, b, c) < 0)
        rdr_link_close(&x->l);
}

static void send_to4(struct node *x, const char *fmt, const char *a, const char *b, const char *c,
                     const char *d)
{
    if (x->l.wfd >= 0 && rdr_send(x->l.wfd, fmt, a, b, c, d) < 0)
        rdr_link_close(&x->l);
}

static int transport_role(const char *role)
{
    return !strcmp(role, "recv") || !strcmp(role, "relay") || !strcmp(role, "send");
}

/* "h1: the stream of h1 'yes' was cut: h2 'head -1' stopped reading (SIGPIPE)": what bash
 * reports as the writer's SIGPIPE (141) */
static const char *cut_msg(const struct run *r, int node, char *buf, size_t len)
{
    char a[512], b[512];
    const struct node *x = &r->n[node];
    snprintf(buf, len, "%s: the stream of %s was cut: %s stopped reading (SIGPIPE)", x->s.host,
             label(x, a, sizeof a), label(&r->n[r->closed_below], b, sizeof b));
    return buf;
}

static void mark_ending(struct run *r, int node)
{
    if (r->ends && node >= 0 && node < r->count)
        r->ends[node] = 1;
    if (!r->ending) {
        r->ending = 1;
        r->settle_at = rd_now() + SETTLE_S;
    }
}

/* Node i's command closed its input early (its agent said "closed"): as in a shell pipe the
 * hops before it are cut, and it and what follows run on to their end. The failures those
 * hops report stop nothing (a failure at or after i still does). */
static void closed_early(struct run *r, int i)
{
    if (i <= r->closed_below)
        return;
    r->closed_below = i;
    r->ending = 0;
    for (int k = i; k < r->count; k++)
        if (r->ends && r->ends[k])
            r->ending = 1;
    if (r->have_failure && r->best.node < i && transport_role(r->best.role)) {   /* it came first */
        char cut[1024];
        free(r->best.msg);
        r->best.msg = strdup(cut_msg(r, r->best.node, cut, sizeof cut));
        r->best.rank = 30;
        r->best.code = 128 + SIGPIPE;
    }
}

/* The failure named and whose status is the exit: the lowest rank (a cause before its
 * consequences), among commands the last one in the pipeline (as set -o pipefail names it),
 * else the first one seen. Any failure but a command's own ends the pipeline SETTLE_S later
 * (a command's output still flows to the end, as in a shell pipe), and so does none of the
 * hops cut by a command that closed its input early (closed_early). */
static void add_failure(struct run *r, int node, const char *role, int rank, int code, const char *msg)
{
    int seq = r->seq++, cmd = strcmp(role, "cmd") == 0;
    char cut[1024];
    if (!cmd && node < r->closed_below && transport_role(role)) {
        rank = 30;   /* cut by a consumer that closed its input (closed_early): SIGPIPE */
        code = 128 + SIGPIPE;
        msg = cut_msg(r, node, cut, sizeof cut);
    } else if (!cmd) {
        mark_ending(r, node);
    }
    if (r->have_failure && (r->best.rank < rank ||
                            (r->best.rank == rank && !(cmd && strcmp(r->best.role, "cmd") == 0 && node > r->best.node))))
        return;
    free(r->best.msg);
    r->best = (struct failure){ .node = node, .rank = rank, .code = code, .seq = seq,
                                .msg = msg ? strdup(msg) : NULL };
    snprintf(r->best.role, sizeof r->best.role, "%s", role);
    r->have_failure = 1;
}

/* An rdrecv's, relay's or rdsend's failure: killed is a cause; an error often a
 * consequence, "transfer broken" most often (its peer failed first: a sink that cannot
 * write, an input that cannot be read, both exit 5), whichever end's line came first. */
static int transport_rank(int code)
{
    return code > 128 && code <= 128 + 64 ? 15 : code == RD_ESTREAM ? 25 : 20;
}

/* Our stdout is a pipe or socket whose reader has closed it (poll: POLLERR on a pipe's
 * write end with no reader, POLLHUP on a socket). */
static int stdout_reader_gone(void)
{
    struct pollfd p = { .fd = STDOUT_FILENO, .events = 0 };
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP));
}

/* A role of segment i failed with code (not 0, not a kill the agent chose), saying m. */
static void handle_exit(struct run *r, int i, const char *role, int code, const char *m)
{
    struct node *x = &r->n[i];
    char lb[512], msg[2048];
    int rank;
    if (strcmp(role, "cmd") == 0) {
        /* killed by SIGPIPE: a consequence of a failure after it (named before it, as
         * is the cut it met, closed_early), but the last one's reader is the caller's
         * stdout (rdpipe ... | head): its own cause, as in bash */
        rank = code == 128 + SIGPIPE && i + 1 < r->count ? 31 : 0;
        if (code > 128 && code < 128 + 65)
            snprintf(msg, sizeof msg, "%s: command '%s' was killed by signal %d", x->s.host,
                     x->shown, code - 128);
        else
            snprintf(msg, sizeof msg, "%s: command '%s' failed with exit status %d", x->s.host,
                     x->shown, code);
    } else if (strcmp(role, "recv") == 0 && x->s.out == RDR_OUT_STDOUT && !x->s.dest && stdout_reader_gone()) {
        /* our stdout's reader went away (rdpipe ... | head): as bash names that pipeline,
         * by the SIGPIPE of its last command, whatever the hop to here reported */
        rank = 0;
        code = 128 + SIGPIPE;
        snprintf(msg, sizeof msg, "the reader of stdout went away (SIGPIPE)");
    } else if (strcmp(role, "recv") == 0) {
        rank = transport_rank(code);
        snprintf(msg, sizeof msg, "%s: receiving the stream for %s from %s failed (rdrecv exit %d)%s%s",
                 x->s.host, label(x, lb, sizeof lb), i > 0 ? r->n[i - 1].s.host : "?", code,
                 *m ? ": " : "", m);
    } else if (strcmp(role, "relay") == 0) {
        rank = transport_rank(code);
        snprintf(msg, sizeof msg, "%s: relaying the stream from %s to %s failed (rdrecv exit %d)%s%s",
                 x->s.host, i > 0 ? r->n[i - 1].s.host : "?", i + 1 < r->count ? r->n[i + 1].s.host : "?",
                 code, *m ? ": " : "", m);
    } else if (strcmp(role, "send") == 0) {
        rank = transport_rank(code);
        snprintf(msg, sizeof msg, "%s: sending the stream of %s to %s failed (rdsend exit %d)%s%s",
                 x->s.host, label(x, lb, sizeof lb), i + 1 < r->count ? r->n[i + 1].s.host : "?",
                 code, *m ? ": " : "", m);
    } else {
        rank = strcmp(role, "file") == 0 ? 0 : 20;
        snprintf(msg, sizeof msg, "%s: %s failed (exit %d)%s%s", x->s.host, label(x, lb, sizeof lb),
                 code, *m ? ": " : "", m);
    }
    add_failure(r, i, role, rank, code, msg);
}

/* What an agent says beyond the setup replies: logs, statistics, exits. */
static void handle_line(void *ctx, int i, char **w, int n)
{
    struct run *r = ctx;
    struct node *x = &r->n[i];
    struct rdr_said s;
    switch (rdr_said_parse(w, n, &s)) {
    case RDR_SAID_CLOSED:
        closed_early(r, i);
        break;
    case RDR_SAID_NOTE:   /* for the user, -v or not */
        fprintf(stderr, "rdpipe: %s: %s\n", x->s.host, s.text);
        break;
    case RDR_SAID_LOG:
        if (r->verbose)
            fprintf(stderr, "rdpipe: %s: %s\n", x->s.host, s.text);
        break;
    case RDR_SAID_STAT:
        if (strcmp(s.role, "recv") == 0) {
            x->has_recv_stat = 1;
            x->recv_bytes = s.bytes;
            x->recv_seconds = s.seconds;
            rdr_stat_transport(s.word, x->recv_transport, sizeof x->recv_transport);
        }
        break;
    case RDR_SAID_EXIT:
        if (s.code && !s.killed && !r->interrupted)
            handle_exit(r, i, s.role, s.code, s.text);
        break;
    default:
        break;
    }
    rdr_said_free(&s);
}

static void lost(void *ctx, int i)
{
    struct run *r = ctx;
    struct node *x = &r->n[i];
    char lb[512], msg[1024];
    if (r->interrupted)
        return;
    /* give ssh a moment to exit so that its status can be named */
    rdr_watch_settle(&r->w, i, 200);
    char how[64] = "";
    if (x->l.reaped && x->l.signal)
        snprintf(how, sizeof how, " (%s killed by signal %d)", x->s.dest ? "ssh" : "agent", x->l.signal);
    else if (x->l.reaped)
        snprintf(how, sizeof how, " (%s exited with status %d)", x->s.dest ? "ssh" : "agent", x->l.status);
    /* ssh exits 255 on its own failures, so any other status means it logged in and the remote
     * command ended before it spoke as an agent: 127 no rdpipe there, 126 one it cannot run
     * (a directory), else a program that is not rdpipe (--remote-path /bin/true) */
    int no_agent = x->l.reaped && x->l.status != 255 && x->s.dest;
    const char *why = x->l.status == 126 ? "; the rdpipe there cannot be run (see --remote-path)"
                    : x->l.status == 127 ? "; is rdpipe on the PATH there? (see --remote-path)"
                                         : "; it ended without speaking as an rdpipe agent (see --remote-path)";
    if (!x->l.hello && x->s.dest && x->l.reaped && !x->l.signal)   /* ssh failed before the agent spoke */
        snprintf(msg, sizeof msg, "%s: cannot %s to run %s%s%s", x->s.host, no_agent ? "start the agent" : "log in",
                 label(x, lb, sizeof lb), how, no_agent ? why : "; see ssh's message above");
    else
        snprintf(msg, sizeof msg, "%s: lost the connection to the agent running %s%s%s", x->s.host,
                 label(x, lb, sizeof lb), how, no_agent ? why : "");
    add_failure(r, i, "lost", 10, RD_ELOST, msg);
}

static const char *in_name(enum rdr_in i)
{
    return i == RDR_IN_RECV ? "recv" : i == RDR_IN_STDIN ? "stdin" : "none";
}

static const char *out_name(enum rdr_out o)
{
    return o == RDR_OUT_SEND ? "send" : o == RDR_OUT_STDOUT ? "stdout" : "none";
}

static void print_hops(struct run *r)
{
    char lb[512], lb2[512], b[32];
    int hop = 0;
    for (int i = 1; i < r->count; i++) {
        struct node *x = &r->n[i];
        if (x->s.in != RDR_IN_RECV)
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
    double limit = forced ? EXIT_GRACE_S : 2 * EXIT_GRACE_S;
    rdr_watch_stop(&r->w, limit, limit + 2);
}

static int run_pipeline(struct run *r)
{
    if (rdr_watch_signals()) {
        warnx("cannot set up signal handling: %s", strerror(errno));
        return 5;
    }
    char lb[512];
    struct rdr_link **links = calloc((size_t)r->count, sizeof *links);
    for (int i = 0; i < r->count; i++)
        links[i] = &r->n[i].l;
    r->w = (struct rdr_watch){ .l = links, .n = r->count, .interrupted = &r->interrupted, .ctx = r,
                               .on_line = handle_line, .on_lost = lost };
    for (int i = 0; i < r->count; i++) {
        struct node *x = &r->n[i];
        if (spawn_node(r, x)) {
            int exec_failed = errno == ENOENT || errno == EACCES || errno == ENOEXEC;
            warnx("cannot start the agent for %s: %s%s", label(x, lb, sizeof lb),
                  !exec_failed ? "" : x->s.dest ? "cannot run the ssh program (--ssh): " : "cannot run rdpipe --agent: ",
                  strerror(errno));
            r->count = r->w.n = i;
            shut_down(r, 1);
            free(links);
            return 5;
        }
    }
    give_stream_keys(r);
    for (int i = 0; i < r->count; i++) {
        struct node *x = &r->n[i];
        char *cmd = rdr_hex_str(x->s.cmd), *path = rdr_hex_str(x->s.path);
        char head[200];
        snprintf(head, sizeof head, "%s\nseg %s %s %s %s %d", RDR_PROTO, rdr_kind_name(x->s.kind),
                 in_name(x->s.in), out_name(x->s.out), r->o.transport, r->verbose);
        /* --encrypt, --compress: a ninth word; without them the line is what it always was */
        char codecs[48];
        rdr_codecs_word(&r->o, codecs, sizeof codecs);
        send_to4(x, "%s %s %s%s", head, cmd, path, codecs);
        free(cmd);
        free(path);
        if (x->s.in == RDR_IN_RECV) {
            rdr_hop_key(x->key);
            send_to(x, "key %s%s%s", x->key, x->in_stream[0] ? " " : "", x->in_stream);
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
            if (!r->n[i].l.ready)
                all_ready = 0;
            if (!r->n[i].l.done)
                all_done = 0;
        }
        if (r->have_failure && (all_done || (r->ending && rd_now() >= r->settle_at)))
            break;
        if (started && all_done)
            break;
        if (!started && all_ready && !r->have_failure) {
            for (int i = 0; i + 1 < r->count; i++) {
                struct node *x = &r->n[i];
                if (x->s.out != RDR_OUT_SEND)
                    continue;
                struct node *to = &r->n[i + 1];
                rdr_hop_addr(to->s.dest, to->s.host, to->l.srv, x->s.dest, r->o.hostname, to->addr,
                             sizeof to->addr);
                char port[16];
                snprintf(port, sizeof port, "%d", to->l.port);
                char keys[140];
                snprintf(keys, sizeof keys, "%s%s%s", r->n[i + 1].key, x->out_stream[0] ? " " : "",
                         x->out_stream);
                send_to(x, "next %s %s %s", r->n[i + 1].addr, port, keys);
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
                if (!r->n[i].l.ready) {
                    char msg[1024];
                    snprintf(msg, sizeof msg, "%s: the agent for %s did not start within %.0f s", r->n[i].s.host,
                             label(&r->n[i], lb, sizeof lb), SETUP_TIMEOUT_S);
                    add_failure(r, i, "lost", 10, RD_ELOST, msg);
                    break;
                }
            break;
        }
        double wait = r->ending ? r->settle_at - rd_now() : started ? 1.0 : deadline - rd_now();
        rdr_watch_pump(&r->w, wait > 0 ? (int)(wait * 1000) + 1 : 0);
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
    free(links);
    if (r->verbose)
        print_hops(r);
    return rc;
}

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
        RDR_INIT_LONG_OPTS_END,
    };
    struct run r;
    memset(&r, 0, sizeof r);
    rdr_init_opts_default(&r.o);
    int c;
    opterr = 0;   /* rdr_init_opt says what was refused, in one line */
    while ((c = getopt_long(argc, argv, "+:nvH:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'n': r.dry_run = 1; break;
        case 'v': r.verbose++; break;
        case '?':
        case ':':
            return rdr_opt_refused(c, argv, "rdpipe");
        default: {
            if (rdr_compress_space(c, optarg, argc, argv, "rdpipe"))
                return 1;
            int st = rdr_init_opt(&r.o, c, optarg, "rdpipe", usage_text);
            if (st != RDR_OPT_TAKEN)
                return st;
        }
        }
    }
    int nseg = argc - optind;
    if (rdr_init_opts_check(&r.o, "rdpipe", nseg, 1, "no segments"))
        return 1;
    struct rdr_seg *segs = calloc((size_t)nseg, sizeof *segs);
    char err[1024];
    int rc = 1;
    for (int i = 0; i < nseg; i++)
        if (rdr_parse_segment(argv[optind + i], &segs[i], err, sizeof err)) {
            warnx("%s", err);
            goto out;
        }
    struct rdr_seg *plan;
    int nplan;
    if (rdr_plan(segs, nseg, !isatty(STDIN_FILENO), &plan, &nplan, err, sizeof err)) {
        warnx("%s", err);
        goto out;
    }
    r.n = calloc((size_t)nplan, sizeof *r.n);
    r.count = nplan;
    if (!(r.ends = calloc((size_t)nplan, 1)))
        rd_oom();
    for (int i = 0; i < nplan; i++) {
        r.n[i].s = plan[i];
        r.n[i].l.wfd = r.n[i].l.rfd = -1;
        const char *t = plan[i].text ? plan[i].text : "";
        if (!(r.n[i].shown = rdr_printable(t, strlen(t))))
            rd_oom();
    }
    free(plan);
    if (r.dry_run) {
        print_plan(&r);
        rc = 0;
    } else {
        fflush(stdout);
        rc = run_pipeline(&r);
    }
    for (int i = 0; i < r.count; i++)
        rdr_link_free(&r.n[i].l);
    for (int i = 0; i < nplan; i++)   /* r.count stops at a node that could not be started */
        free(r.n[i].shown);
    free(r.ends);
    free(r.n);
    free(r.best.msg);
out:
    for (int i = 0; i < nseg; i++)
        rdr_seg_free(&segs[i]);
    free(segs);
    return rc;
}
