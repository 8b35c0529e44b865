#include "remote/rdr_proc.h"
#include "util/rd_error.h"
#include "util/rd_secret.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int sig_pipe[2] = { -1, -1 };

void rdr_set_cloexec(int fd)
{
    int f = fcntl(fd, F_GETFD);
    if (f >= 0)
        fcntl(fd, F_SETFD, f | FD_CLOEXEC);
}

void rdr_set_nonblock(int fd)
{
    int f = fcntl(fd, F_GETFL);
    if (f >= 0)
        fcntl(fd, F_SETFL, f | O_NONBLOCK);
}

pid_t rdr_spawn(char *const argv[], char *const envp[], int in, int out, int err, int fd3, pid_t pgid)
{
    /* the child's exec failure comes back here (its errno through a pipe the exec closes), so
     * the caller names the program that could not run: a missing --ssh program used to exit
     * 127 as ssh does for a missing remote rdpipe, and was reported as that */
    int ep[2];
    if (pipe2(ep, O_CLOEXEC))
        return -1;
    pid_t pid = fork();
    if (pid != 0) {
        int e = errno;
        if (pid > 0 && pgid >= 0)
            setpgid(pid, pgid ? pgid : pid);   /* also in the parent: no race with kill(-pgid) */
        close(ep[1]);
        ssize_t n = -1;
        while (pid > 0 && (n = read(ep[0], &e, sizeof e)) < 0 && errno == EINTR)
            ;
        close(ep[0]);
        if (pid > 0 && n == (ssize_t)sizeof e) {
            while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
            pid = -1;
        }
        errno = e;
        return pid;
    }
    close(ep[0]);
    int efd = fcntl(ep[1], F_DUPFD_CLOEXEC, 10);   /* out of the way of fds 0-3 */
    if (pgid >= 0)
        setpgid(0, pgid);
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* move the sources out of the way first, so that e.g. in == 1 and out == 0 work */
    int src[4] = { in, out, err, fd3 };
    for (int i = 0; i < 4; i++) {
        if (src[i] < 0 && i < 3)
            src[i] = open("/dev/null", i == 0 ? O_RDONLY : O_WRONLY);
        if (src[i] >= 0)
            src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 10);
    }
    for (int i = 0; i < 4; i++) {
        if (src[i] >= 0) {
            if (dup2(src[i], i) < 0)
                _exit(127);
        } else if (i == 3) {
            close(3);
        }
    }
    if (envp)
        execvpe(argv[0], argv, envp);
    else
        execvp(argv[0], argv);
    int e = errno;
    if (write(efd, &e, sizeof e) != (ssize_t)sizeof e)
        dprintf(2, "%s: cannot run %s: %s\n", rd_progname(), argv[0], strerror(e));
    _exit(127);
}

int rdr_status_code(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return RD_ELOST;
}

char **rdr_env_with_keys(const char *key, const char *stream_key)
{
    size_t n = 0;
    for (char **e = environ; e && *e; e++)
        n++;
    char **env = calloc(n + 3, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, "RDPIPE_KEY=", 11) != 0 && strncmp(*e, "RDPIPE_STREAM_KEY=", 18) != 0)
            env[k++] = strdup(*e);
    const char *names[2] = { "RDPIPE_KEY", "RDPIPE_STREAM_KEY" }, *values[2] = { key, stream_key };
    for (int i = 0; i < 2; i++) {
        if (!values[i])
            continue;
        size_t len = strlen(names[i]) + strlen(values[i]) + 2;
        env[k] = malloc(len);
        if (env[k])
            snprintf(env[k++], len, "%s=%s", names[i], values[i]);
    }
    env[k] = NULL;
    return env;
}

void rdr_env_free(char **env)
{
    if (!env)
        return;
    for (char **e = env; *e; e++) {
        if (strncmp(*e, "RDPIPE_KEY=", 11) == 0 || strncmp(*e, "RDPIPE_STREAM_KEY=", 18) == 0)
            rd_secret_free(*e);
        else
            free(*e);
    }
    free(env);
}

char *rdr_sibling_tool(const char *name)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            slash[1] = '\0';
            size_t len = strlen(self) + strlen(name) + 1;
            char *p = malloc(len);
            if (p) {
                snprintf(p, len, "%s%s", self, name);
                if (access(p, X_OK) == 0)
                    return p;
                free(p);
            }
        }
    }
    return strdup(name);
}

static void on_signal(int s)
{
    int saved = errno;
    unsigned char b = (unsigned char)s;
    if (write(sig_pipe[1], &b, 1) < 0) {
        /* full pipe: the reader will see a signal anyway */
    }
    errno = saved;
}

int rdr_sig_setup(const int *sigs, int n)
{
    if (sig_pipe[0] < 0) {
        if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK))
            return -1;
    }
    for (int i = 0; i < n; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART | (sigs[i] == SIGCHLD ? SA_NOCLDSTOP : 0);
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
    return 0;
}

int rdr_sig_fd(void)
{
    return sig_pipe[0];
}

unsigned rdr_sig_drain(void)
{
    unsigned mask = 0;
    unsigned char b[64];
    ssize_t n;
    while ((n = read(sig_pipe[0], b, sizeof b)) > 0)
        for (ssize_t i = 0; i < n; i++)
            if (b[i] < 32)
                mask |= 1u << b[i];
    return mask;
}
