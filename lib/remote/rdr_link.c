/* rdr_link.c - see rdr_link.h. */
#include "remote/rdr_link.h"

#include "remote/rdr_proc.h"
#include "remote/rdr_said.h"
#include "remote/rdr_shell.h"
#include "remote/rdr_spec.h"
#include "util/rd_number.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static char *remote_command(const struct rdr_reach *how)
{
    char *path = rdr_shell_quote(how->remote_path ? how->remote_path : "rdpipe");
    size_t len = strlen(path) + 32;
    char *c = malloc(len);
    snprintf(c, len, "exec %s --agent", how->remote_path ? path : "rdpipe");
    free(path);
    return c;
}

char **rdr_link_ssh_argv(const struct rdr_reach *how, const char *dest)
{
    char **v = calloc(72, sizeof *v);
    if (!v)
        return NULL;
    int n = rdr_shell_split(how->ssh_cmd, v, 68);
    /* "--": whatever dest looks like, ssh takes it as the destination, never as an option */
    v[n++] = strdup("--");
    v[n++] = strdup(dest);
    v[n++] = remote_command(how);
    v[n] = NULL;
    return v;
}

void rdr_link_argv_free(char **v)
{
    for (char **p = v; p && *p; p++)
        free(*p);
    free(v);
}

int rdr_link_spawn(struct rdr_link *l, const struct rdr_reach *how, const char *dest,
                   const char *local_prog, int local_in, int local_out)
{
    l->wfd = l->rfd = -1;
    if (dest) {
        char why[256];
        if (rdr_dest_check(dest, why, sizeof why)) {
            errno = EINVAL;   /* the initiators refuse such a host before they get here */
            return -1;
        }
        int to[2], from[2];
        if (pipe2(to, O_CLOEXEC))
            return -1;
        if (pipe2(from, O_CLOEXEC)) {
            int e = errno;
            close(to[0]);
            close(to[1]);
            errno = e;
            return -1;
        }
        char **v = rdr_link_ssh_argv(how, dest);
        l->pid = v ? rdr_spawn(v, NULL, to[0], from[1], STDERR_FILENO, -1, -1) : -1;
        if (!v)
            errno = ENOMEM;
        rdr_link_argv_free(v);
        close(to[0]);
        close(from[1]);
        l->wfd = to[1];
        l->rfd = from[0];
    } else {
        int sp[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp))
            return -1;
        char *v[] = { (char *)local_prog, "--agent", "--control-fd", "3", NULL };
        l->pid = rdr_spawn(v, NULL, local_in, local_out, STDERR_FILENO, sp[1], -1);
        close(sp[1]);
        l->wfd = l->rfd = sp[0];
        l->is_sock = 1;
    }
    if (l->pid < 0)
        return -1;
    rdr_set_nonblock(l->rfd);
    rdr_chan_init(&l->ch, l->rfd, l->wfd);
    return 0;
}

void rdr_link_close(struct rdr_link *l)
{
    if (l->wfd < 0)
        return;
    if (l->is_sock)
        shutdown(l->wfd, SHUT_WR);   /* the socket is also our read end: keep reading */
    else
        close(l->wfd);
    l->wfd = -1;
}

void rdr_link_reap(struct rdr_link *l)
{
    int st;
    if (l->pid > 0 && !l->reaped && waitpid(l->pid, &st, WNOHANG) == l->pid) {
        l->reaped = 1;
        l->status = rdr_status_code(st);
        l->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    }
}

/* An address of SSH_CONNECTION as the agent said it: an IP address (an IPv6 one with a scope
 * made of letters, digits, '_', '.' or '-'), else "-". It becomes the next hop's address and
 * is shown with -v, so a hostile agent's word with control bytes in it is neither. */
static void take_addr(char *out, size_t n, const char *word)
{
    char ip[INET6_ADDRSTRLEN + 1], bin[sizeof(struct in6_addr)];
    size_t len = strcspn(word, "%");
    int ok = len < sizeof ip && strlen(word) < n;
    if (ok) {
        memcpy(ip, word, len);
        ip[len] = '\0';
        const char *scope = word + len;
        ok = (!*scope && inet_pton(AF_INET, ip, bin) == 1) ||
             (inet_pton(AF_INET6, ip, bin) == 1 &&
              (!*scope || (scope[1] && strspn(scope + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
                                          strlen(scope + 1))));
    }
    snprintf(out, n, "%s", ok ? word : "-");
}

int rdr_link_setup_line(struct rdr_link *l, char **w, int n)
{
    if (strcmp(w[0], "hello") == 0) {
        if (n >= 3) {
            take_addr(l->srv, sizeof l->srv, w[1]);
            take_addr(l->cli, sizeof l->cli, w[2]);
            l->hello = 1;
        }
    } else if (strcmp(w[0], "port") == 0) {
        unsigned long long port;
        /* a port the next hop can connect to; anything else leaves none (0), which fails there */
        if (n == 2 && rd_parse_decimal(w[1], 65535, &port) == 0 && port >= 1)
            l->port = (int)port;
    } else if (strcmp(w[0], "ready") == 0) {
        l->ready = 1;
    } else if (strcmp(w[0], "done") == 0) {
        l->done = 1;
    } else {
        return 0;
    }
    return 1;
}

void rdr_link_free(struct rdr_link *l)
{
    rdr_chan_free(&l->ch);
    if (l->wfd >= 0 && l->wfd != l->rfd)
        close(l->wfd);
    if (l->rfd >= 0)
        close(l->rfd);
    l->wfd = l->rfd = -1;
}
