/* rdp_agent.c - `rdpipe --agent`: one segment of an rdpipe pipeline on its host.
 *
 * Process layout:   agent (session leader, child subreaper)
 *                     ├─ rdrecv ──pipe── bash -c CMD ──pipe── rdsend       (process group W)
 *                     └─ ...
 * A `cat` segment between two hops is one process instead: rdrecv --relay-fd, which passes
 * the frames on to the next hop unchanged (rd_relay.c) and is reported as role "relay".
 *                   watchdog W (not our child: double fork) leads the group of all children.
 * The watchdog blocks on a pipe only the agent holds. When the agent dies for any reason
 * (even SIGKILL) the pipe reaches EOF and the watchdog kills the whole group: no strays.
 * As subreaper the agent also collects descendants that bash leaves behind (process
 * substitutions), and says "done" only once there are none left.
 */
#include "pipe/rdp_agent.h"
#include "pipe/rdp_agent_int.h"

#include "remote/rdr_home.h"
#include "remote/rdr_line.h"
#include "remote/rdr_proc.h"
#include "remote/rdr_role.h"
#include "remote/rdr_said.h"
#include "remote/rdr_spec.h"
#include "util/rd_error.h"
#include "util/rd_secret.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void rdpa_say(struct agent *a, const char *fmt, const char *arg)
{
    if (rdr_send(a->cout, fmt, arg) < 0)
        a->cout = -1;
}

void rdpa_send_line(struct agent *a, const char *line)
{
    if (a->cout >= 0 && rdr_send(a->cout, "%s", line) < 0)
        a->cout = -1;
}

/* A pipe with a big buffer: fewer context switches between the stages (best effort). */
static int big_pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC))
        return -1;
    fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
    return 0;
}

static void fail_local(struct agent *a, const char *role, int code, const char *msg)
{
    char *h = rdr_hex_str(msg);
    if (a->cout >= 0 && rdr_send(a->cout, RDR_SAID_EXIT_FMT, role, code, 0, h) < 0)
        a->cout = -1;
    free(h);
    a->file_failed = 1;
}

/* fail_local with errno's text after msg: what could not be started, and why */
static void fail_errno(struct agent *a, const char *role, int code, const char *msg)
{
    char m[200];
    snprintf(m, sizeof m, "%s: %s", msg, strerror(errno));
    fail_local(a, role, code, m);
}

/* '> FILE' fed by rdrecv: rdrecv writes FILE itself, as rdrecv FILE does, so that FILE is
 * truncated only once a sender is in, and a FILE it created is removed when none came (an
 * upstream that failed before sending: '< missing' '> out' emptied out before 2026-11-29) */
static int recv_writes_file(const struct agent *a)
{
    return a->kind == RDR_WRITE && a->in == RDR_IN_RECV;
}

static void open_file(struct agent *a)
{
    if ((a->kind != RDR_READ && a->kind != RDR_WRITE && a->kind != RDR_APPEND) || recv_writes_file(a))
        return;
    char *p = rdr_home_expand(a->path);
    int flags = a->kind == RDR_READ ? O_RDONLY
              : O_WRONLY | O_CREAT | (a->kind == RDR_APPEND ? O_APPEND : O_TRUNC);
    a->file_fd = open(p, flags | O_CLOEXEC, 0666);
    if (a->file_fd < 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "cannot open '%s': %s", a->path, strerror(errno));
        fail_local(a, "file", 5, msg);
    }
    free(p);
}

/* The stream's options a role's tool gets (rdr_role.h), NULL-terminated in opts[6]; -v as
 * rdsend and rdrecv get it (common_args), its lines shown by the initiator. */
static void role_opts(const struct agent *a, const char *opts[6])
{
    int n = 0;
    if (a->verbose > 1)
        opts[n++] = "-v";
    if (a->encrypt)
        opts[n++] = "--encrypt";
    if (a->compress[0])
        opts[n++] = a->compress;
    if (a->lanes[0])
        opts[n++] = a->lanes;
    if (a->streams[0])
        opts[n++] = a->streams;
    opts[n] = NULL;
}

static void common_args(struct agent *a, char **v, int *n)
{
    v[(*n)++] = "--json";
    v[(*n)++] = "--no-progress";
    if (a->verbose > 1)
        v[(*n)++] = "-v";
    v[(*n)++] = "--transport";
    v[(*n)++] = a->transport;
    if (a->encrypt)   /* rdsend encrypts, rdrecv (a relay too) refuses plaintext */
        v[(*n)++] = "--encrypt";
    if (a->lanes[0])
        v[(*n)++] = a->lanes;
    if (a->streams[0])
        v[(*n)++] = a->streams;
}

/* The receiving tool (rdrecv or a receiving role) said its port: tell the initiator we are
 * ready. No port: it died or hangs; stop it, its exit is reported by the main loop. */
static void report_port(struct agent *a, int port)
{
    if (port <= 0) {
        a->killing = 1;
        kill(a->ch[C_RECV].pid, SIGTERM);
        a->killing = 0;
        return;
    }
    char line[64];
    snprintf(line, sizeof line, "port %d", port);
    rdpa_send_line(a, line);
    rdpa_send_line(a, "ready");
}

/* "cannot start TOOL ARG" for a role that did not start */
static void fail_role(struct agent *a, const char *role)
{
    char msg[128];
    snprintf(msg, sizeof msg, "cannot start %s %s", a->role->tool, a->role->arg);
    fail_local(a, role, 5, msg);
}

/* A receiving role gets on stdin the manifest lines given before setup (rdr_role.h), and
 * reports manifest lines, then its port, on fd 3; it may walk
 * and hash a big destination first (hours, for a big one on a slow disk), so there is no
 * timeout: it takes as long as the role lives. Its stderr is drained meanwhile, and the
 * initiator leaving (the control channel hung up) or a signal takes everything down, as in
 * the main loop. */
static void setup_role_recv(struct agent *a)
{
    int rdy[2];
    if (pipe2(rdy, O_CLOEXEC)) {
        fail_local(a, "recv", 5, "pipe failed");
        return;
    }
    const char *opts[6];
    role_opts(a, opts);
    char **v = rdr_role_argv(a->role, a->transport, opts, NULL, NULL, a->cmd, a->cmd_len);
    int in = -1;   /* the manifest lines the initiator gave before setup, if any */
    if (a->manifest_fd >= 0) {
        lseek(a->manifest_fd, 0, SEEK_SET);
        in = a->manifest_fd;
    }
    int rc = v ? rdpa_start_tool(a, C_RECV, v, a->in_key, in, -1, rdy[1]) : -1;
    rdr_role_argv_free(v);
    close(rdy[1]);
    if (rc) {
        close(rdy[0]);
        fail_role(a, "recv");
        return;
    }
    struct rdr_chan ch;
    rdr_chan_init(&ch, rdy[0], -1);
    int port = 0;
    while (!port && !ch.eof) {
        int r = rdpa_wait_report(a, &a->ch[C_RECV], rdy[0]);
        if (r < 0)
            break;
        if (!r)
            continue;
        rdr_chan_fill(&ch);
        char *line;
        while (rdr_chan_line(&ch, &line)) {
            if (strncmp(line, "m ", 2) == 0)
                rdpa_say(a, "manifest %s", line + 2);
            else
                port = atoi(line);
            free(line);
        }
    }
    rdr_chan_free(&ch);
    close(rdy[0]);
    report_port(a, port);
}

/* A sending role, once the next hop is known: the manifest lines on its stdin. */
static void start_role_send(struct agent *a)
{
    const char *opts[6];
    role_opts(a, opts);
    char **v = rdr_role_argv(a->role, a->transport, opts, a->next_host, a->next_port, a->cmd, a->cmd_len);
    int in = -1;
    if (a->manifest_fd >= 0) {
        lseek(a->manifest_fd, 0, SEEK_SET);
        in = a->manifest_fd;
    }
    if (!v || rdpa_start_tool(a, C_SEND, v, a->out_key, in, -1, -1))
        fail_role(a, "send");
    rdr_role_argv_free(v);
}

/* rdrecv listening on a port of the kernel's choice, said on fd 3; a relay learns its next
 * hop on stdin; file: its FILE, or NULL. v[0] is the caller's to free. */
static void rdrecv_argv(struct agent *a, char **v, int relay, char *file)
{
    int n = 0;
    v[n++] = rdr_sibling_tool("rdrecv");
    common_args(a, v, &n);
    v[n++] = "--ready-fd";
    v[n++] = "3";
    if (relay) {
        v[n++] = "--relay-fd";
        v[n++] = "0";
    }
    if (file)
        v[n++] = "--";   /* the options end here: a FILE may begin with '-' */
    v[n++] = "0";
    if (file)
        v[n++] = file;
    v[n] = NULL;
}

/* The port rdrecv writes on its --ready-fd (0 if it died or said nothing within 30 s). */
static int wait_port(int fd)
{
    char buf[32] = "";
    size_t got = 0;
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    while (got < sizeof buf - 1 && !memchr(buf, '\n', got)) {
        int pr = poll(&pfd, 1, 30000);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break;
        ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
        buf[got] = '\0';
    }
    close(fd);
    return atoi(buf);
}

/* A relay: rdrecv --relay-fd 0 listens now and learns the next hop on its stdin at start. */
static void setup_relay(struct agent *a)
{
    int rdy[2], rl[2];
    if (pipe2(rdy, O_CLOEXEC)) {
        fail_local(a, "relay", 5, "pipe failed");
        return;
    }
    if (pipe2(rl, O_CLOEXEC)) {
        close(rdy[0]);
        close(rdy[1]);
        fail_local(a, "relay", 5, "pipe failed");
        return;
    }
    char *v[20];
    rdrecv_argv(a, v, 1, NULL);
    int rc = rdpa_start_tool(a, C_RECV, v, a->in_key, rl[0], -1, rdy[1]);
    free(v[0]);
    close(rdy[1]);
    close(rl[0]);
    if (rc) {
        close(rdy[0]);
        close(rl[1]);
        fail_errno(a, "relay", 5, "cannot start rdrecv");
        return;
    }
    a->relay_w = rl[1];
    report_port(a, wait_port(rdy[0]));
}

/* "setup": the file, and rdrecv listening on an ephemeral port. */
static void do_setup(struct agent *a)
{
    if (a->kind == RDR_ROLE && a->role->end == RDR_ROLE_RECEIVES) {
        setup_role_recv(a);
        return;
    }
    open_file(a);
    if (a->file_failed)
        return;
    if (a->kind == RDR_ROLE && a->want_list) {
        char *why;
        int rc = rdpa_list_roots(a, &why);
        if (rc) {
            fail_local(a, "send", rc, why ? why : "cannot list the sources");
            free(why);
            return;
        }
        rdpa_send_line(a, "listed");
    }
    if (a->in != RDR_IN_RECV) {
        rdpa_send_line(a, "ready");
        return;
    }
    if (a->kind == RDR_PASS && a->out == RDR_OUT_SEND) {
        setup_relay(a);
        return;
    }
    int target = -1;
    char *file = recv_writes_file(a) ? rdr_home_expand(a->path) : NULL;
    if (file && strcmp(file, "-") == 0) {   /* rdrecv's '-' is stdout; '> -' is a file named - */
        free(file);
        file = strdup("./-");
        if (!file)
            rd_oom();
    }
    if (a->kind == RDR_APPEND)
        target = a->file_fd;
    else if (a->kind == RDR_PASS && a->out == RDR_OUT_STDOUT)
        target = STDOUT_FILENO;
    int pp[2] = { -1, -1 };
    if (target < 0 && !file) {
        if (big_pipe(pp)) {
            fail_local(a, "recv", 5, "pipe failed");
            return;
        }
        target = pp[1];
        a->recv_out = pp[0];
    }
    int rdy[2];
    if (pipe2(rdy, O_CLOEXEC)) {
        free(file);
        fail_local(a, "recv", 5, "pipe failed");
        return;
    }
    char *v[20];
    rdrecv_argv(a, v, 0, file);
    int rc = rdpa_start_tool(a, C_RECV, v, a->in_key, -1, target, rdy[1]);
    free(v[0]);
    free(file);
    close(rdy[1]);
    if (pp[1] >= 0 && rc == 0)
        a->recv_hold = pp[1];   /* O_CLOEXEC: no stage inherits it */
    else if (pp[1] >= 0)
        close(pp[1]);
    if (rc) {
        close(rdy[0]);
        fail_errno(a, "recv", 5, "cannot start rdrecv");
        return;
    }
    report_port(a, wait_port(rdy[0]));
}

/* "start": the command, the copies and rdsend. */
static void do_start(struct agent *a)
{
    a->started = 1;
    if (a->file_failed)
        return;
    int cur = -1;   /* the stream flowing into the next stage (ours to close) */
    int cur_own = 0;
    if (a->kind == RDR_ROLE) {
        if (a->role->end == RDR_ROLE_SENDS && a->next_host)
            start_role_send(a);
        return;
    }
    if (a->relay_w >= 0) {
        /* the key travels in this pipe, never in an argv */
        if (dprintf(a->relay_w, "%s %s %s\n", a->next_host, a->next_port, a->out_key) < 0)
            fail_local(a, "relay", 5, "cannot pass the next hop to the relay");
        close(a->relay_w);
        a->relay_w = -1;
        return;
    }
    if (a->in == RDR_IN_RECV && a->recv_out >= 0) {
        cur = a->recv_out;
        cur_own = 1;
        a->recv_out = -1;
    } else if (a->in == RDR_IN_STDIN) {
        cur = STDIN_FILENO;
    }
    if (a->kind == RDR_READ) {
        cur = a->file_fd;
        cur_own = 1;
        a->file_fd = -1;
    }
    if (a->kind == RDR_CMD) {
        int pp[2] = { -1, -1 };
        int out = -1;
        if (a->out == RDR_OUT_SEND) {
            if (big_pipe(pp)) {
                fail_local(a, "cmd", 5, "pipe failed");
                return;
            }
            out = pp[1];
        } else if (a->out == RDR_OUT_STDOUT) {
            out = STDOUT_FILENO;
        }
        /* --norc: bash started under sshd reads ~/.bashrc even with -c (SSH_CLIENT, and a
         * shell level of 1 after 'exec rdpipe --agent'), and whatever that prints would go
         * into the stream ahead of the command's output. The login shell that started the
         * agent read it already: its exports are in our environment. */
        char *v[] = { "bash", "--norc", "-c", a->cmd, NULL };
        pid_t pid = rdpa_start_plain(a, C_CMD, v, cur, out);
        if (cur_own)
            close(cur);
        if (pp[1] >= 0)
            close(pp[1]);
        cur = pp[0];
        cur_own = 1;
        if (pid < 0) {
            fail_errno(a, "cmd", 126, "cannot start bash");
            return;
        }
    }
    if ((a->kind == RDR_WRITE || a->kind == RDR_APPEND) && a->in == RDR_IN_STDIN) {
        char *v[] = { "cat", NULL };
        if (rdpa_start_plain(a, C_COPY, v, STDIN_FILENO, a->file_fd) < 0)
            fail_errno(a, "copy", 127, "cannot run cat");
    }
    if ((a->kind == RDR_READ && a->out == RDR_OUT_STDOUT) ||
        (a->kind == RDR_PASS && a->in == RDR_IN_STDIN && a->out == RDR_OUT_STDOUT)) {
        char *v[] = { "cat", NULL };
        if (rdpa_start_plain(a, C_COPY, v, cur, STDOUT_FILENO) < 0)
            fail_errno(a, "copy", 127, "cannot run cat");
    }
    if (a->out == RDR_OUT_SEND && a->next_host) {
        char *tool = rdr_sibling_tool("rdsend");
        char *v[20];
        int n = 0;
        v[n++] = tool;
        common_args(a, v, &n);
        if (a->compress[0])   /* the seg named a level */
            v[n++] = a->compress;
        v[n++] = a->next_host;
        v[n++] = a->next_port;
        v[n] = NULL;
        if (rdpa_start_tool(a, C_SEND, v, a->out_key, cur, -1, -1))
            fail_errno(a, "send", 5, "cannot start rdsend");
        free(tool);
    }
    if (cur_own && cur >= 0)
        close(cur);
    if (a->file_fd >= 0) {
        close(a->file_fd);
        a->file_fd = -1;
    }
}

static int handle(struct agent *a, char *line)
{
    struct rdp_agent_msg m;
    switch (rdp_agent_parse(line, &m)) {
    case RDP_OP_IGNORE:
        return 0;
    case RDP_OP_SEG:
        a->kind = m.kind;
        a->role = m.role;
        a->in = m.in;
        a->out = m.out;
        snprintf(a->transport, sizeof a->transport, "%s", m.transport);
        a->verbose = m.verbose;
        a->encrypt = m.encrypt;
        snprintf(a->compress, sizeof a->compress, "%s%s", m.compress[0] ? "--compress=" : "", m.compress);
        a->lanes[0] = '\0';
        if (m.lanes)
            snprintf(a->lanes, sizeof a->lanes, "--lanes=%u", m.lanes);
        a->streams[0] = '\0';
        if (m.streams)
            snprintf(a->streams, sizeof a->streams, "--streams=%u", m.streams);
        free(a->cmd);   /* a repeated seg line replaces the first */
        free(a->path);
        a->cmd = m.cmd;
        a->cmd_len = m.cmd_len;
        a->path = m.path;
        return 0;
    case RDP_OP_KEY:
        rd_secret_free(a->in_key);
        rd_secret_free(a->in_stream);
        a->in_key = strdup(m.arg[0]);   /* the key is this text (random hex), used as is */
        a->in_stream = m.arg[1] ? strdup(m.arg[1]) : NULL;
        return a->in_key && (a->in_stream || !m.arg[1]) ? 0 : -1;
    case RDP_OP_MANIFEST:
        if (a->manifest_fd < 0)
            a->manifest_fd = memfd_create("agent-manifest", MFD_CLOEXEC);
        if (a->manifest_fd < 0 || dprintf(a->manifest_fd, "%s\n", m.arg[0]) < 0)
            return -1;
        return 0;
    case RDP_OP_LIST:
        a->want_list = a->kind == RDR_ROLE && a->role->end == RDR_ROLE_SENDS;
        return 0;
    case RDP_OP_SETUP:
        do_setup(a);
        return 0;
    case RDP_OP_NEXT: {
        const char *host = m.arg[0];
        if (strcmp(host, "@initiator") == 0) {
            if (!a->ssh_client[0] || strcmp(a->ssh_client, "-") == 0) {
                fail_local(a, "send", 2, "SSH_CONNECTION is not set: cannot tell the initiator's address (use -H)");
                return 0;
            }
            host = a->ssh_client;
        }
        free(a->next_host);   /* a repeated next line replaces the first */
        free(a->next_port);
        rd_secret_free(a->out_key);
        a->next_host = strdup(host);
        a->next_port = strdup(m.arg[1]);
        rd_secret_free(a->out_stream);
        a->out_key = strdup(m.arg[2]);
        a->out_stream = m.arg[3] ? strdup(m.arg[3]) : NULL;
        return a->next_host && a->next_port && a->out_key && (a->out_stream || !m.arg[3]) ? 0 : -1;
    }
    case RDP_OP_START:
        do_start(a);
        return 0;
    default:   /* abort, or a malformed seg */
        return -1;
    }
}

int rdp_agent_main(int cin, int cout)
{
    struct agent a;
    memset(&a, 0, sizeof a);
    a.cin = cin;
    a.cout = cout;
    a.file_fd = -1;
    a.recv_out = -1;
    a.recv_hold = -1;
    a.relay_w = -1;
    a.manifest_fd = -1;
    for (int i = 0; i < NCHILD; i++)
        a.ch[i].cap = -1;
    snprintf(a.transport, sizeof a.transport, "auto");
    signal(SIGPIPE, SIG_IGN);
    if (cin > STDERR_FILENO)
        rdr_set_cloexec(cin);
    if (cout > STDERR_FILENO)
        rdr_set_cloexec(cout);
    if (getpgrp() != getpid())
        setsid();   /* away from any terminal's job control; sshd already did this */
    a.wpid = rdpa_start_watchdog(&a.death_w);
    if (a.wpid < 0) {
        fprintf(stderr, "rdpipe agent: cannot start the watchdog: %s\n", strerror(errno));
        return 5;
    }
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP };
    rdr_sig_setup(sigs, 4);

    const char *sc = getenv("SSH_CONNECTION");
    snprintf(a.ssh_client, sizeof a.ssh_client, "-");
    snprintf(a.ssh_server, sizeof a.ssh_server, "-");
    if (sc && *sc) {
        char c1[64], c2[16], s1[64], s2[16];
        if (sscanf(sc, "%63s %15s %63s %15s", c1, c2, s1, s2) == 4) {
            snprintf(a.ssh_client, sizeof a.ssh_client, "%s", c1);
            snprintf(a.ssh_server, sizeof a.ssh_server, "%s", s1);
        }
    }
    char hello[200];
    snprintf(hello, sizeof hello, "hello %s %s %d", a.ssh_server, a.ssh_client, (int)getpid());
    rdpa_send_line(&a, hello);

    struct rdr_chan ctl;
    rdr_chan_init(&ctl, cin, cout);
    for (;;) {
        struct pollfd pfd[2 + NCHILD];
        int np = 0;
        pfd[np++] = (struct pollfd){ .fd = cin, .events = POLLIN };
        pfd[np++] = (struct pollfd){ .fd = rdr_sig_fd(), .events = POLLIN };
        for (int i = 0; i < NCHILD; i++)
            if (a.ch[i].cap >= 0)
                pfd[np++] = (struct pollfd){ .fd = a.ch[i].cap, .events = POLLIN };
        int pr = poll(pfd, (nfds_t)np, 1000);
        if (pr < 0 && errno != EINTR)
            rdpa_teardown(&a, 5);
        unsigned sig = rdr_sig_drain();
        if (sig & ((1u << SIGTERM) | (1u << SIGINT) | (1u << SIGHUP)))
            rdpa_teardown(&a, 128 + SIGTERM);
        rdpa_reap(&a);
        for (int i = 0; i < NCHILD; i++)
            if (a.ch[i].cap >= 0)
                rdpa_read_capture(&a, &a.ch[i]);
        rdpa_report(&a);
        if (pfd[0].revents) {
            rdr_chan_fill(&ctl);
            char *line;
            while (rdr_chan_line(&ctl, &line)) {
                int rc = handle(&a, line);
                free(line);
                if (rc)
                    rdpa_teardown(&a, 1);
            }
            if (ctl.eof)
                rdpa_teardown(&a, 0);   /* the initiator is gone or gave up: take everything down */
            rdpa_reap(&a);
            rdpa_report(&a);
        }
        if (a.cout < 0)
            rdpa_teardown(&a, 1);
        int busy = 0;
        for (int i = 0; i < NCHILD; i++)
            if (a.ch[i].pid && !a.ch[i].reported)
                busy = 1;
        if ((a.started || a.file_failed) && !busy) {
            rdpa_reap(&a);
            if (!a.no_children)
                rdpa_note_leftovers(&a);
            if (a.no_children) {
                rdpa_send_line(&a, "done");
                if (write(a.death_w, "q", 1) != 1) {
                    /* the watchdog is gone; nothing left to sweep */
                }
                rdr_chan_free(&ctl);
                free(a.cmd);
                free(a.path);
                rd_secret_free(a.in_key);
                rd_secret_free(a.in_stream);
                free(a.next_host);
                free(a.next_port);
                rd_secret_free(a.out_key);
                rd_secret_free(a.out_stream);
                for (int i = 0; i < NCHILD; i++)
                    free(a.ch[i].error);
                if (a.manifest_fd >= 0)
                    close(a.manifest_fd);
                return 0;
            }
        }
    }
}
