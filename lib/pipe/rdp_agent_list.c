/* rdp_agent_list.c - "list" before "setup" (rdr_role.h): a sending role names the sources'
 * top-level names before the destination walks DST for --resume. The role's tool runs once,
 * to its end, in the sending child's slot, which it leaves empty for the stream at "start". */
#include "pipe/rdp_agent_int.h"

#include "remote/rdr_proc.h"
#include "remote/rdr_role.h"
#include "util/rd_error.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* each "r HEX" line of the tool goes to the initiator as "root HEX" */
static void relay(struct agent *a, struct rdr_chan *ch)
{
    rdr_chan_fill(ch);
    char *line;
    while (rdr_chan_line(ch, &line)) {
        if (line[0] == 'r' && line[1])
            rdpa_say(a, "root %s", line + 1);
        free(line);
    }
}

int rdpa_list_roots(struct agent *a, char **why)
{
    *why = NULL;
    int fd[2];
    if (pipe2(fd, O_CLOEXEC))
        return 5;
    char **v = rdr_role_list_argv(a->role, a->cmd, a->cmd_len);
    int rc = v ? rdpa_start_tool(a, C_SEND, v, NULL, -1, -1, fd[1]) : -1;
    rdr_role_argv_free(v);
    close(fd[1]);
    if (rc) {
        close(fd[0]);
        return 5;
    }
    struct child *c = &a->ch[C_SEND];
    struct rdr_chan ch;
    rdr_chan_init(&ch, fd[0], -1);
    while (!ch.eof) {
        int r = rdpa_wait_report(a, c, fd[0]);
        if (r < 0)
            break;
        if (r)
            relay(a, &ch);
    }
    rdr_chan_free(&ch);
    close(fd[0]);
    int st = 0;
    while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
        ;
    while (c->cap >= 0) {   /* its last lines: it has ended, so the pipe ends too */
        struct pollfd p = { .fd = c->cap, .events = POLLIN };
        if (poll(&p, 1, 1000) <= 0)
            break;
        rdpa_read_capture(a, c);
    }
    rc = rdr_status_code(st);
    if (rc && c->error)
        *why = strdup(c->error);
    if (c->cap >= 0) {
        close(c->cap);
        rdr_chan_free(&c->capch);
    }
    free(c->error);
    memset(c, 0, sizeof *c);
    c->cap = -1;
    return rc;
}
