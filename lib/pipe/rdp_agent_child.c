/* rdp_agent_child.c - the agent's children: the watchdog that takes them down with the agent,
 * starting rdsend/rdrecv and the commands, what they report, and reaping them. */
#include "pipe/rdp_agent_int.h"
#include "util/rd_clock.h"
#include "util/rd_error.h"

#include "remote/rdr_proc.h"
#include "remote/rdr_role.h"
#include "remote/rdr_said.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pid_t rdpa_start_watchdog(int *death_w)
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

void rdpa_kill_children(struct agent *a, int sig)
{
    if (a->wpid > 0)
        kill(-a->wpid, sig);   /* the watchdog ignores SIGTERM */
}

/* Everything is going down: stop the children, let the watchdog finish the job. */
void rdpa_teardown(struct agent *a, int code)
{
    a->killing = 1;
    rdpa_kill_children(a, SIGTERM);
    /* and what left the children's group (setsid) but is still ours as subreaper */
    struct rdpa_orphan o[RDPA_ORPHANS];
    for (int k = rdpa_orphans(a, o, RDPA_ORPHANS); k-- > 0;)
        kill(o[k].pid, SIGTERM);
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
    rdpa_kill_children(a, SIGKILL);
    for (int k = rdpa_orphans(a, o, RDPA_ORPHANS); k-- > 0;)
        kill(o[k].pid, SIGKILL);
    _exit(code);   /* closing death_w makes the watchdog sweep whatever is left */
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
        c->json_error = 1;
    } else {
        free(e);
    }
    c->have_stat = 1;
}

void rdpa_read_capture(struct agent *a, struct child *c)
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
                rdpa_say(a, "log %s", h);
                free(h);
                /* "rdrecv: message": the reason, until the JSON names one. The last such line,
                 * not the first: under -v the first says where it listens, and a death with
                 * no JSON (out of memory) says why last. Reports and warnings are no reason. */
                const char *m = strstr(line, ": ");
                m = m ? m + 2 : line;
                if (!c->json_error && line[0] != RDR_ROLE_REPORT && strncmp(m, "warning: ", 9) != 0) {
                    free(c->error);
                    c->error = strdup(m);
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

/* rdrecv failed while the command reads what it writes. Often that is because the command
 * quit early (rdrecv's write then fails with a broken pipe), and the command's own exit
 * status is the cause the user wants named, as a shell names the last command of a pipeline.
 * So the command gets up to 200 ms to exit by itself before it is stopped; rdsend after it is
 * stopped first, so no clean END goes downstream meanwhile. */
static void let_consumer_finish(struct agent *a)
{
    struct child *cmd = &a->ch[C_CMD], *snd = &a->ch[C_SEND];
    if (!cmd->pid || cmd->exited)
        return;
    if (snd->pid && !snd->exited) {
        snd->stopped = 1;
        kill(snd->pid, SIGTERM);
    }
    struct timespec ts = { 0, 10 * 1000000L };
    for (int k = 0; k < 20 && !cmd->exited; k++) {
        nanosleep(&ts, NULL);
        rdpa_reap(a);
    }
}

/* rdrecv could not write to the command because the command closed its input (head, or
 * 'exec 0<&-'): the command chose to stop reading, as in a shell pipe where the writer gets
 * SIGPIPE and the reader goes on. Its output is whole by its own measure, so it still goes
 * downstream; the hops before fail (they were cut), not this segment. Any other rdrecv
 * failure (exit 2-4: a stream that broke) still ends the segment. */
static int consumer_closed(const struct agent *a, const struct child *c)
{
    return a->kind == RDR_CMD && a->ch[C_CMD].pid && c->code == RD_EIO && c->error &&
           strstr(c->error, strerror(EPIPE));
}

void rdpa_report(struct agent *a)
{
    for (int i = 0; i < NCHILD; i++) {
        struct child *c = &a->ch[i];
        if (!c->pid || !c->exited || c->reported || c->cap >= 0)
            continue;
        c->reported = 1;
        int closed = i == C_RECV && c->code && !c->killed && !a->killing && consumer_closed(a, c);
        if (closed) {
            c->killed = 1;   /* a consequence of the command's choice: not a failure to name */
            rdpa_send_line(a, "closed");
        }
        char line[256];
        if (c->have_stat) {
            snprintf(line, sizeof line, RDR_SAID_STAT_FMT, role_name[i], c->bytes, c->seconds,
                     c->transport[0] ? c->transport : "-");
            rdpa_send_line(a, line);
        }
        char *h = rdr_hex_str(c->code ? c->error : NULL);
        const char *role = i == C_RECV && a->kind == RDR_PASS && a->out == RDR_OUT_SEND ? "relay" : role_name[i];
        if (a->cout >= 0 && rdr_send(a->cout, RDR_SAID_EXIT_FMT, role, c->code, c->killed, h) < 0)
            a->cout = -1;
        free(h);
        /* A failing rdrecv, rdsend or copy ends the segment: above all no clean END may go
         * downstream of a broken stream. The command's own failure does not: what it wrote
         * still goes on and ends cleanly, as a shell pipe passes it (diff, grep and tar exit
         * 1 with their output), and its status names the failure (rdpipe waits for the rest). */
        if (c->code && !c->killed && !a->killing && i != C_CMD) {   /* (closed: killed is set) */
            if (i == C_RECV)
                let_consumer_finish(a);
            a->killing = 1;
            rdpa_kill_children(a, SIGTERM);
        }
    }
}

int rdpa_orphans(const struct agent *a, struct rdpa_orphan *out, int max)
{
    int count = 0;
    DIR *d = opendir("/proc");
    struct dirent *de;
    while (d && (de = readdir(d)) && count < max) {
        char path[300], buf[512];
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = '\0';
        char *open = strchr(buf, '('), *close = strrchr(buf, ')');
        int ppid = 0;
        if (!open || !close || sscanf(close + 1, " %*c %d", &ppid) != 1 || ppid != (int)getpid() ||
            atoi(de->d_name) == (int)a->wpid)
            continue;
        out[count].pid = (pid_t)atoi(de->d_name);
        snprintf(out[count].name, sizeof out[count].name, "%.*s", (int)(close - open - 1), open + 1);
        count++;
    }
    if (d)
        closedir(d);
    return count;
}

void rdpa_note_leftovers(struct agent *a)
{
    double t = rd_now();
    if (a->left_since == 0)
        a->left_since = t;
    if (a->left_said || t - a->left_since < RDPA_LEFT_S)
        return;
    /* what is left is ours as subreaper: processes whose parent is now the agent */
    char list[512] = "";
    size_t n = 0;
    struct rdpa_orphan o[RDPA_ORPHANS];
    int count = rdpa_orphans(a, o, RDPA_ORPHANS);
    for (int k = 0; k < count && k < 4 && n < sizeof list - 40; k++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%d %s", n ? ", " : "", (int)o[k].pid, o[k].name);
    if (!count)
        return;   /* none found this time (one just ending): the next tick looks again */
    a->left_said = 1;
    char line[700];
    snprintf(line, sizeof line, "waiting for %d process%s the command left running (%s%s): rdpipe "
             "waits for every process a segment starts; Ctrl-C ends them", count, count > 1 ? "es" : "", list,
             count > 4 ? ", ..." : "");
    char *h = rdr_hex_str(line);
    rdpa_say(a, "note %s", h);
    free(h);
}

void rdpa_reap(struct agent *a)
{
    int st;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
        for (int i = 0; i < NCHILD; i++) {
            struct child *c = &a->ch[i];
            if (c->pid == p && !c->exited) {
                c->exited = 1;
                c->code = rdr_status_code(st);
                c->killed = (a->killing || c->stopped) && c->code != 0;
                /* the reading stage gets its EOF now: the stream is whole, or it reads no more */
                if (a->recv_hold >= 0 && ((i == C_RECV && c->code == 0) || i == C_CMD || i == C_COPY)) {
                    close(a->recv_hold);
                    a->recv_hold = -1;
                }
                if (c->cap >= 0)
                    rdpa_read_capture(a, c);
            }
        }
    }
    if (p < 0 && errno == ECHILD)
        a->no_children = 1;
    else if (p == 0)
        a->no_children = 0;
}

int rdpa_wait_report(struct agent *a, struct child *c, int fd)
{
    struct pollfd pfd[4] = { { .fd = fd, .events = POLLIN }, { .fd = a->cin, .events = POLLRDHUP },
                             { .fd = rdr_sig_fd(), .events = POLLIN }, { .fd = c->cap, .events = POLLIN } };
    int pr = poll(pfd, c->cap >= 0 ? 4 : 3, 1000);
    if (pr < 0)
        return errno == EINTR ? 0 : -1;
    if (rdr_sig_drain() & ((1u << SIGTERM) | (1u << SIGINT) | (1u << SIGHUP)))
        rdpa_teardown(a, 128 + SIGTERM);
    if (pfd[1].revents & (POLLHUP | POLLRDHUP | POLLERR))
        rdpa_teardown(a, 0);   /* the initiator is gone or gave up */
    if (pfd[3].revents && c->cap >= 0)
        rdpa_read_capture(a, c);
    return pfd[0].revents != 0;
}

int rdpa_start_tool(struct agent *a, int idx, char **argv, const char *key, int in, int out, int fd3)
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

pid_t rdpa_start_plain(struct agent *a, int idx, char **argv, int in, int out)
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
