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

#include "remote/rdr_line.h"
#include "remote/rdr_proc.h"
#include "remote/rdr_role.h"
#include "remote/rdr_spec.h"

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

enum { C_RECV, C_CMD, C_SEND, C_COPY, NCHILD };
static const char *const role_name[NCHILD] = { "recv", "cmd", "send", "copy" };

struct child {
    pid_t pid;           /* 0 = not started */
    int exited, code, reported, killed;
    int cap;             /* read end of its stderr (rdsend/rdrecv), -1 if none */
    struct rdr_chan capch;
    int have_stat;
    unsigned long long bytes;
    double seconds;
    char transport[32];
    char *error;
};

struct agent {
    int cin, cout;
    pid_t wpid;          /* the watchdog = process group of the children */
    int death_w;         /* the watchdog's lifeline */
    enum rdr_kind kind;
    const struct rdr_role *role;   /* kind RDR_ROLE: the row of the role table */
    enum rdr_in in;
    enum rdr_out out;
    char transport[16];
    int verbose;
    int encrypt;         /* the seg said "encrypt": every rdsend/rdrecv here gets --encrypt */
    char compress[24];   /* the seg said "compress=L": every rdsend here gets --compress=L */
    char *cmd, *path;
    size_t cmd_len;
    int manifest_fd;     /* a sending role: the manifest lines received so far (memfd), -1 if none */
    char *in_key, *in_stream;   /* hop key in; the stream's end-to-end key when we are its sink */
    char *next_host, *next_port, *out_key, *out_stream;
    int file_fd;         /* read / write / append */
    int recv_out;        /* read end of rdrecv's stdout pipe, -1 if it writes elsewhere */
    int relay_w;         /* relay: where rdrecv --relay-fd learns the next hop at start, or -1 */
    struct child ch[NCHILD];
    int started, killing, no_children, file_failed;
    char ssh_server[64], ssh_client[64];
};

static void say(struct agent *a, const char *fmt, const char *arg)
{
    if (rdr_send(a->cout, fmt, arg) < 0)
        a->cout = -1;
}

static void send_line(struct agent *a, const char *line)
{
    if (a->cout >= 0 && rdr_send(a->cout, "%s", line) < 0)
        a->cout = -1;
}

static pid_t start_watchdog(int *death_w)
{
    int death[2], rdy[2];
    if (pipe2(death, O_CLOEXEC) || pipe2(rdy, O_CLOEXEC))
        return -1;
    pid_t x = fork();
    if (x < 0)
        return -1;
    if (x == 0) {
        pid_t w = fork();
        if (w == 0) {
            setpgid(0, 0);
            signal(SIGTERM, SIG_IGN);
            signal(SIGINT, SIG_IGN);
            signal(SIGHUP, SIG_IGN);
            signal(SIGPIPE, SIG_IGN);
            signal(SIGCHLD, SIG_DFL);
            int keep_d = death[0], keep_r = rdy[1];
            /* hold nothing of the agent's: the SSH channel must close when the agent exits */
            int nul = open("/dev/null", O_RDWR);
            dup2(nul, 0);
            dup2(nul, 1);
            dup2(nul, 2);
            for (int fd = 3; fd < 1024; fd++)
                if (fd != keep_d && fd != keep_r)
                    close(fd);
            pid_t me = getpid();
            if (write(keep_r, &me, sizeof me) != sizeof me)
                _exit(1);
            close(keep_r);
            char c = 0;
            ssize_t n;
            do
                n = read(keep_d, &c, 1);
            while (n < 0 && errno == EINTR);
            if (n == 1 && c == 'q')
                _exit(0);   /* the agent finished normally */
            kill(0, SIGTERM);
            struct timespec ts = { 0, 300 * 1000000L };
            nanosleep(&ts, NULL);
            kill(0, SIGKILL);
            _exit(0);
        }
        _exit(w > 0 ? 0 : 1);
    }
    int st;
    while (waitpid(x, &st, 0) < 0 && errno == EINTR)
        ;
    close(death[0]);
    close(rdy[1]);
    pid_t wpid = -1;
    ssize_t n;
    do
        n = read(rdy[0], &wpid, sizeof wpid);
    while (n < 0 && errno == EINTR);
    close(rdy[0]);
    if (n != sizeof wpid) {
        close(death[1]);
        return -1;
    }
    *death_w = death[1];
    return wpid;
}

static void kill_children(struct agent *a, int sig)
{
    if (a->wpid > 0)
        kill(-a->wpid, sig);   /* the watchdog ignores SIGTERM */
}

/* Everything is going down: stop the children, let the watchdog finish the job. */
static void teardown(struct agent *a, int code)
{
    a->killing = 1;
    kill_children(a, SIGTERM);
    struct timespec ts = { 0, 20 * 1000000L };
    for (int i = 0; i < 50; i++) {   /* up to 1 s for them to go */
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0)
            ;
        if (p < 0 && errno == ECHILD)
            break;
        nanosleep(&ts, NULL);
    }
    kill_children(a, SIGKILL);
    _exit(code);   /* closing death_w makes the watchdog sweep whatever is left */
}

static char *expand_path(const char *p)
{
    const char *home = getenv("HOME");
    if (home && (strcmp(p, "~") == 0 || strncmp(p, "~/", 2) == 0)) {
        size_t len = strlen(home) + strlen(p);
        char *s = malloc(len);
        if (s)
            snprintf(s, len, "%s%s", home, p + 1);
        return s;
    }
    return strdup(p);
}

/* ---- the JSON line rdsend/rdrecv --json print ---- */

static const char *json_find(const char *j, const char *key)
{
    char pat[40];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(j, pat);
    return p ? p + strlen(pat) : NULL;
}

static char *json_string_at(const char *p)
{
    if (!p || *p != '"')
        return NULL;
    p++;
    char *out = malloc(strlen(p) + 1), *o = out;
    if (!out)
        return NULL;
    while (*p && *p != '"') {
        if (*p == '\\' && p[1]) {
            p++;
            if (*p == 'u' && p[1] && p[2] && p[3] && p[4]) {
                *o++ = '?';
                p += 5;
                continue;
            }
            *o++ = *p == 'n' ? ' ' : *p;
            p++;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

static void take_json(struct child *c, const char *line)
{
    const char *p;
    if ((p = json_find(line, "bytes")))
        c->bytes = strtoull(p, NULL, 10);
    if ((p = json_find(line, "seconds")))
        c->seconds = strtod(p, NULL);
    char *t = json_string_at(json_find(line, "transport"));
    snprintf(c->transport, sizeof c->transport, "%s", t && *t ? t : "-");
    free(t);
    /* control lines are space separated: "rdma rxe_a port 1" travels as "rdma-rxe_a-port-1" */
    for (char *q = c->transport; *q; q++)
        if (*q == ' ')
            *q = '-';
    char *e = json_string_at(json_find(line, "error"));
    if (e && *e) {
        free(c->error);
        c->error = e;
    } else {
        free(e);
    }
    c->have_stat = 1;
}

static void read_capture(struct agent *a, struct child *c)
{
    if (c->cap < 0)
        return;
    for (;;) {
        ssize_t n = rdr_chan_fill(&c->capch);
        char *line;
        while (rdr_chan_line(&c->capch, &line)) {
            if (line[0] == '{') {
                take_json(c, line);
            } else if (line[0]) {
                char *h = rdr_hex_str(line);
                say(a, "log %s", h);
                free(h);
                /* "rdrecv: message": keep the first one as the reason; a role's reports are none */
                if (!c->error && line[0] != RDR_ROLE_REPORT) {
                    const char *m = strstr(line, ": ");
                    c->error = strdup(m ? m + 2 : line);
                }
            }
            free(line);
        }
        if (n <= 0)
            break;
    }
    if (c->capch.eof) {
        close(c->cap);
        c->cap = -1;
        rdr_chan_free(&c->capch);
    }
}

static void report(struct agent *a)
{
    for (int i = 0; i < NCHILD; i++) {
        struct child *c = &a->ch[i];
        if (!c->pid || !c->exited || c->reported || c->cap >= 0)
            continue;
        c->reported = 1;
        char line[256];
        if (c->have_stat) {
            snprintf(line, sizeof line, "stat %s %llu %.6f %s", role_name[i], c->bytes, c->seconds,
                     c->transport[0] ? c->transport : "-");
            send_line(a, line);
        }
        char *h = rdr_hex_str(c->code ? c->error : NULL);
        snprintf(line, sizeof line, "exit %s %d %d ", i == C_RECV && a->kind == RDR_PASS &&
                 a->out == RDR_OUT_SEND ? "relay" : role_name[i], c->code, c->killed);
        if (a->cout >= 0 && rdr_send(a->cout, "%s%s", line, h) < 0)
            a->cout = -1;
        free(h);
        if (c->code && !c->killed && !a->killing) {
            /* one failure ends the segment: above all no clean END may go downstream */
            a->killing = 1;
            kill_children(a, SIGTERM);
        }
    }
}

static void reap(struct agent *a)
{
    int st;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
        for (int i = 0; i < NCHILD; i++) {
            struct child *c = &a->ch[i];
            if (c->pid == p && !c->exited) {
                c->exited = 1;
                c->code = rdr_status_code(st);
                c->killed = a->killing && c->code != 0;
                if (c->cap >= 0)
                    read_capture(a, c);
            }
        }
    }
    if (p < 0 && errno == ECHILD)
        a->no_children = 1;
    else if (p == 0)
        a->no_children = 0;
}

/* A pipe with a big buffer: fewer context switches between the stages (best effort). */
static int big_pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC))
        return -1;
    fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
    return 0;
}

static int start_tool(struct agent *a, int idx, char **argv, const char *key, int in, int out, int fd3)
{
    int cap[2];
    if (pipe2(cap, O_CLOEXEC))
        return -1;
    /* the stream key goes to the stream's two ends only, never to a relay */
    const char *stream = idx == C_RECV ? a->in_stream : idx == C_SEND ? a->out_stream : NULL;
    char **env = rdr_env_with_keys(key, stream);
    pid_t pid = rdr_spawn(argv, env, in, out, cap[1], fd3, a->wpid);
    rdr_env_free(env);
    close(cap[1]);
    if (pid < 0) {
        close(cap[0]);
        return -1;
    }
    rdr_set_nonblock(cap[0]);
    a->ch[idx].pid = pid;
    a->ch[idx].cap = cap[0];
    rdr_chan_init(&a->ch[idx].capch, cap[0], -1);
    a->no_children = 0;
    return 0;
}

static pid_t start_plain(struct agent *a, int idx, char **argv, int in, int out)
{
    char **env = rdr_env_with_keys(NULL, NULL);
    pid_t pid = rdr_spawn(argv, env, in, out, STDERR_FILENO, -1, a->wpid);
    rdr_env_free(env);
    if (pid > 0) {
        a->ch[idx].pid = pid;
        a->ch[idx].cap = -1;
        a->no_children = 0;
    }
    return pid;
}

static void fail_local(struct agent *a, const char *role, int code, const char *msg)
{
    char *h = rdr_hex_str(msg);
    if (a->cout >= 0 && rdr_send(a->cout, "exit %s %d 0 %s", role, code, h) < 0)
        a->cout = -1;
    free(h);
    a->file_failed = 1;
}

static void open_file(struct agent *a)
{
    if (a->kind != RDR_READ && a->kind != RDR_WRITE && a->kind != RDR_APPEND)
        return;
    char *p = expand_path(a->path);
    int flags = a->kind == RDR_READ ? O_RDONLY
              : O_WRONLY | O_CREAT | (a->kind == RDR_APPEND ? O_APPEND : O_TRUNC);
    a->file_fd = p ? open(p, flags | O_CLOEXEC, 0666) : -1;
    if (a->file_fd < 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "cannot open '%s': %s", a->path, strerror(errno));
        fail_local(a, "file", 5, msg);
    }
    free(p);
}

/* The stream's options a role's tool gets (rdr_role.h), NULL-terminated in opts[3]. */
static void role_opts(const struct agent *a, const char *opts[3])
{
    int n = 0;
    if (a->encrypt)
        opts[n++] = "--encrypt";
    if (a->compress[0])
        opts[n++] = a->compress;
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
    send_line(a, line);
    send_line(a, "ready");
}

/* "cannot start TOOL ARG" for a role that did not start */
static void fail_role(struct agent *a, const char *role)
{
    char msg[128];
    snprintf(msg, sizeof msg, "cannot start %s %s", a->role->tool, a->role->arg);
    fail_local(a, role, 5, msg);
}

/* A receiving role reports manifest lines, then its port, on fd 3 (rdr_role.h); it may walk
 * and hash a big destination first, so there is no short timeout, and its stderr is drained
 * meanwhile. */
static void setup_role_recv(struct agent *a)
{
    int rdy[2];
    if (pipe2(rdy, O_CLOEXEC)) {
        fail_local(a, "recv", 5, "pipe failed");
        return;
    }
    const char *opts[3];
    role_opts(a, opts);
    char **v = rdr_role_argv(a->role, a->transport, opts, NULL, NULL, a->cmd, a->cmd_len);
    int rc = v ? start_tool(a, C_RECV, v, a->in_key, -1, -1, rdy[1]) : -1;
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
        struct pollfd pfd[2] = { { .fd = rdy[0], .events = POLLIN }, { .fd = a->ch[C_RECV].cap, .events = POLLIN } };
        int pr = poll(pfd, a->ch[C_RECV].cap >= 0 ? 2 : 1, 600000);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break;
        if (pfd[1].revents && a->ch[C_RECV].cap >= 0)
            read_capture(a, &a->ch[C_RECV]);
        if (!pfd[0].revents)
            continue;
        rdr_chan_fill(&ch);
        char *line;
        while (rdr_chan_line(&ch, &line)) {
            if (strncmp(line, "m ", 2) == 0)
                say(a, "manifest %s", line + 2);
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
    const char *opts[3];
    role_opts(a, opts);
    char **v = rdr_role_argv(a->role, a->transport, opts, a->next_host, a->next_port, a->cmd, a->cmd_len);
    int in = -1;
    if (a->manifest_fd >= 0) {
        lseek(a->manifest_fd, 0, SEEK_SET);
        in = a->manifest_fd;
    }
    if (!v || start_tool(a, C_SEND, v, a->out_key, in, -1, -1))
        fail_role(a, "send");
    rdr_role_argv_free(v);
}

/* rdrecv listening on a port of the kernel's choice, said on fd 3; a relay learns its next
 * hop on stdin. v[0] is the caller's to free. */
static void rdrecv_argv(struct agent *a, char **v, int relay)
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
    v[n++] = "0";
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
    char *v[16];
    rdrecv_argv(a, v, 1);
    int rc = start_tool(a, C_RECV, v, a->in_key, rl[0], -1, rdy[1]);
    free(v[0]);
    close(rdy[1]);
    close(rl[0]);
    if (rc) {
        close(rdy[0]);
        close(rl[1]);
        fail_local(a, "relay", 5, "cannot start rdrecv");
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
    if (a->in != RDR_IN_RECV) {
        send_line(a, "ready");
        return;
    }
    if (a->kind == RDR_PASS && a->out == RDR_OUT_SEND) {
        setup_relay(a);
        return;
    }
    int target = -1;
    if (a->kind == RDR_WRITE || a->kind == RDR_APPEND)
        target = a->file_fd;
    else if (a->kind == RDR_PASS && a->out == RDR_OUT_STDOUT)
        target = STDOUT_FILENO;
    int pp[2] = { -1, -1 };
    if (target < 0) {
        if (big_pipe(pp)) {
            fail_local(a, "recv", 5, "pipe failed");
            return;
        }
        target = pp[1];
        a->recv_out = pp[0];
    }
    int rdy[2];
    if (pipe2(rdy, O_CLOEXEC)) {
        fail_local(a, "recv", 5, "pipe failed");
        return;
    }
    char *v[16];
    rdrecv_argv(a, v, 0);
    int rc = start_tool(a, C_RECV, v, a->in_key, -1, target, rdy[1]);
    free(v[0]);
    close(rdy[1]);
    if (pp[1] >= 0)
        close(pp[1]);
    if (rc) {
        close(rdy[0]);
        fail_local(a, "recv", 5, "cannot start rdrecv");
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
        char *v[] = { "bash", "-c", a->cmd, NULL };
        pid_t pid = start_plain(a, C_CMD, v, cur, out);
        if (cur_own)
            close(cur);
        if (pp[1] >= 0)
            close(pp[1]);
        cur = pp[0];
        cur_own = 1;
        if (pid < 0) {
            fail_local(a, "cmd", 126, "cannot start bash");
            return;
        }
    }
    if ((a->kind == RDR_WRITE || a->kind == RDR_APPEND) && a->in == RDR_IN_STDIN) {
        char *v[] = { "cat", NULL };
        start_plain(a, C_COPY, v, STDIN_FILENO, a->file_fd);
    }
    if ((a->kind == RDR_READ && a->out == RDR_OUT_STDOUT) ||
        (a->kind == RDR_PASS && a->in == RDR_IN_STDIN && a->out == RDR_OUT_STDOUT)) {
        char *v[] = { "cat", NULL };
        start_plain(a, C_COPY, v, cur, STDOUT_FILENO);
    }
    if (a->out == RDR_OUT_SEND && a->next_host) {
        char *tool = rdr_sibling_tool("rdsend");
        char *v[16];
        int n = 0;
        v[n++] = tool;
        common_args(a, v, &n);
        if (a->compress[0])   /* the seg named a level */
            v[n++] = a->compress;
        v[n++] = a->next_host;
        v[n++] = a->next_port;
        v[n] = NULL;
        if (start_tool(a, C_SEND, v, a->out_key, cur, -1, -1))
            fail_local(a, "send", 5, "cannot start rdsend");
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
        free(a->cmd);   /* a repeated seg line replaces the first */
        free(a->path);
        a->cmd = m.cmd;
        a->cmd_len = m.cmd_len;
        a->path = m.path;
        return 0;
    case RDP_OP_KEY:
        free(a->in_key);
        free(a->in_stream);
        a->in_key = strdup(m.arg[0]);   /* the key is this text (random hex), used as is */
        a->in_stream = m.arg[1] ? strdup(m.arg[1]) : NULL;
        return a->in_key && (a->in_stream || !m.arg[1]) ? 0 : -1;
    case RDP_OP_MANIFEST:
        if (a->manifest_fd < 0)
            a->manifest_fd = memfd_create("agent-manifest", MFD_CLOEXEC);
        if (a->manifest_fd < 0 || dprintf(a->manifest_fd, "%s\n", m.arg[0]) < 0)
            return -1;
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
        free(a->out_key);
        a->next_host = strdup(host);
        a->next_port = strdup(m.arg[1]);
        free(a->out_stream);
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
    a.wpid = start_watchdog(&a.death_w);
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
    send_line(&a, hello);

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
            teardown(&a, 5);
        unsigned sig = rdr_sig_drain();
        if (sig & ((1u << SIGTERM) | (1u << SIGINT) | (1u << SIGHUP)))
            teardown(&a, 128 + SIGTERM);
        reap(&a);
        for (int i = 0; i < NCHILD; i++)
            if (a.ch[i].cap >= 0)
                read_capture(&a, &a.ch[i]);
        report(&a);
        if (pfd[0].revents) {
            rdr_chan_fill(&ctl);
            char *line;
            while (rdr_chan_line(&ctl, &line)) {
                int rc = handle(&a, line);
                free(line);
                if (rc)
                    teardown(&a, 1);
            }
            if (ctl.eof)
                teardown(&a, 0);   /* the initiator is gone or gave up: take everything down */
            reap(&a);
            report(&a);
        }
        if (a.cout < 0)
            teardown(&a, 1);
        int busy = 0;
        for (int i = 0; i < NCHILD; i++)
            if (a.ch[i].pid && !a.ch[i].reported)
                busy = 1;
        if ((a.started || a.file_failed) && !busy) {
            reap(&a);
            if (a.no_children) {
                send_line(&a, "done");
                if (write(a.death_w, "q", 1) != 1) {
                    /* the watchdog is gone; nothing left to sweep */
                }
                rdr_chan_free(&ctl);
                free(a.cmd);
                free(a.path);
                free(a.in_key);
                free(a.in_stream);
                free(a.next_host);
                free(a.next_port);
                free(a.out_key);
                free(a.out_stream);
                for (int i = 0; i < NCHILD; i++)
                    free(a.ch[i].error);
                if (a.manifest_fd >= 0)
                    close(a.manifest_fd);
                return 0;
            }
        }
    }
}
