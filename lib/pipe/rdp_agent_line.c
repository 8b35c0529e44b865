/* rdp_agent_line.c - the agent's side of the control lines: one line from the initiator, split
 * and checked into a struct rdp_agent_msg (rdp_agent.h). Bytes only: the agent acts on it. */
#include "pipe/rdp_agent.h"

#include "engine/rd_lanes.h"
#include "transport/rd_session.h"
#include "remote/rdr_line.h"
#include "remote/rdr_opts.h"
#include "remote/rdr_role.h"
#include "remote/rdr_spec.h"
#include "wire/rd_compress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_enum(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

/* "NAME=N" with N a count from 1 to max (rdr_count): N, else 0. */
static unsigned count_item(const char *t, const char *name, unsigned max)
{
    size_t k = strlen(name);
    return strncmp(t, name, k) || t[k] != '=' ? 0 : rdr_count(t + k + 1, max);
}

/* The seg's ninth word: "encrypt", "compress=auto|LEVEL", "lanes=N" (1 to RD_MAX_LANES),
 * "streams=N" (1 to RD_MAX_STREAMS), comma-separated. 0 if every item is one of these (split
 * in place), -1 otherwise. */
static int parse_codecs(char *word, struct rdp_agent_msg *m)
{
    for (char *save = NULL, *t = strtok_r(word, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int level;
        unsigned n;
        if (strcmp(t, "encrypt") == 0) {
            m->encrypt = 1;
        } else if (strncmp(t, "compress=", 9) == 0 && rd_compress_parse(t + 9, &level) == 0) {
            if (level)
                snprintf(m->compress, sizeof m->compress, "%d", level);
            else
                snprintf(m->compress, sizeof m->compress, "auto");
        } else if ((n = count_item(t, "lanes", RD_MAX_LANES))) {
            m->lanes = n;
        } else if ((n = count_item(t, "streams", RD_MAX_STREAMS))) {
            m->streams = n;
        } else {
            return -1;
        }
    }
    return 0;
}

enum rdp_agent_op rdp_agent_parse(char *line, struct rdp_agent_msg *m)
{
    char *w[10];
    int n = rdr_split(line, w, 10);
    memset(m, 0, sizeof *m);
    if (n == 0 || strcmp(w[0], RDR_PROTO) == 0)
        return m->op = RDP_OP_IGNORE;
    if (strcmp(w[0], "seg") == 0 && (n == 8 || (n == 9 && parse_codecs(w[8], m) == 0))) {
        static const char *const kinds[] = { "cmd", "read", "write", "append", "pass" };
        static const char *const ins[] = { "none", "stdin", "recv" };
        static const char *const outs[] = { "none", "stdout", "send" };
        int k = parse_enum(w[1], kinds, 5), i = parse_enum(w[2], ins, 3), o = parse_enum(w[3], outs, 3);
        const struct rdr_role *role = k < 0 ? rdr_role_find(w[1]) : NULL;   /* not ours: a role? */
        if ((k < 0 && !role) || i < 0 || o < 0)
            return m->op = RDP_OP_BAD;
        if (role) {
            /* a role's in and out are those of its end */
            int recv = role->end == RDR_ROLE_RECEIVES;
            if (i != (recv ? RDR_IN_RECV : RDR_IN_NONE) || o != (recv ? RDR_OUT_NONE : RDR_OUT_SEND))
                return m->op = RDP_OP_BAD;
            k = RDR_ROLE;
        }
        m->kind = (enum rdr_kind)k;
        m->in = (enum rdr_in)i;
        m->out = (enum rdr_out)o;
        m->transport = w[4];
        m->verbose = atoi(w[5]);
        m->cmd = rdr_unhex(w[6], &m->cmd_len);
        m->path = rdr_unhex(w[7], NULL);
        if (!m->cmd || !m->path) {
            free(m->cmd);
            free(m->path);
            m->cmd = m->path = NULL;
            return m->op = RDP_OP_BAD;
        }
        m->role = role;   /* only with a seg that is kept (a refused one holds nothing) */
        return m->op = RDP_OP_SEG;
    }
    if (strcmp(w[0], "key") == 0 && (n == 2 || n == 3)) {
        m->arg[0] = w[1];
        m->arg[1] = n == 3 ? w[2] : NULL;   /* the stream key, when this end is the sink */
        return m->op = RDP_OP_KEY;
    }
    if (strcmp(w[0], "manifest") == 0 && n == 2) {
        m->arg[0] = w[1];
        return m->op = w[0][0] == 'k' ? RDP_OP_KEY : RDP_OP_MANIFEST;
    }
    if (strcmp(w[0], "next") == 0 && (n == 4 || n == 5)) {
        m->arg[0] = w[1];
        m->arg[1] = w[2];
        m->arg[2] = w[3];
        m->arg[3] = n == 5 ? w[4] : NULL;   /* the stream key, when this end is the origin */
        return m->op = RDP_OP_NEXT;
    }
    if (strcmp(w[0], "list") == 0)
        return m->op = RDP_OP_LIST;
    if (strcmp(w[0], "setup") == 0)
        return m->op = RDP_OP_SETUP;
    if (strcmp(w[0], "start") == 0)
        return m->op = RDP_OP_START;
    if (strcmp(w[0], "abort") == 0)
        return m->op = RDP_OP_ABORT;
    return m->op = RDP_OP_IGNORE;   /* unknown lines: ignore (newer initiator) */
}

/* One control line. Returns 0, or -1 when the agent must go down. */
