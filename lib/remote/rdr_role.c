/* rdr_role.c - the table of roles an agent runs for a sibling tool (see rdr_role.h). */
#include "remote/rdr_role.h"

#include "remote/rdr_proc.h"

#include <stdlib.h>
#include <string.h>

const struct rdr_role rdr_roles[RDR_NROLES] = {
    [RDR_ROLE_TREE_SEND] = { "tsend", "rdcp", "--tree-send", RDR_ROLE_SENDS },
    [RDR_ROLE_TREE_RECV] = { "trecv", "rdcp", "--tree-recv", RDR_ROLE_RECEIVES },
};

const struct rdr_role *rdr_role_find(const char *name)
{
    for (int i = 0; i < RDR_NROLES; i++)
        if (strcmp(name, rdr_roles[i].name) == 0)
            return &rdr_roles[i];
    return NULL;
}

/* TOOL ARG, room for `more` words after them, then the words (len bytes of NUL-separated
 * words) and a NULL; *n: the next free slot. NULL when out of memory. */
static char **argv_new(const struct rdr_role *r, size_t more, const char *words, size_t len, int *n)
{
    size_t nwords = 0;
    for (size_t i = 0; i < len; i++)
        if (i == 0 || words[i - 1] == '\0')
            nwords++;   /* a word starts here */
    char **v = calloc(2 + more + nwords + 1, sizeof *v);
    if (!v)
        return NULL;
    if (!(v[0] = rdr_sibling_tool(r->tool))) {
        free(v);
        return NULL;
    }
    v[1] = (char *)r->arg;
    *n = 2;
    return v;
}

/* the words after what argv_new's caller put in, and the NULL */
static char **argv_end(char **v, int n, const char *words, size_t len)
{
    for (size_t i = 0; i < len; i += strlen(words + i) + 1)
        v[n++] = (char *)words + i;   /* words[len] is a NUL: the last word ends there */
    v[n] = NULL;
    return v;
}

char **rdr_role_argv(const struct rdr_role *r, const char *transport, const char *const *opts,
                     const char *host, const char *port, const char *words, size_t len)
{
    if (r->end == RDR_ROLE_SENDS && (!host || !port))
        return NULL;
    size_t nopts = 0;
    while (opts && opts[nopts])
        nopts++;
    int n;
    char **v = argv_new(r, 2 + nopts + 4, words, len, &n);   /* --transport T, opts, 4 more */
    if (!v)
        return NULL;
    v[n++] = "--transport";
    v[n++] = (char *)transport;
    for (size_t i = 0; i < nopts; i++)
        v[n++] = (char *)opts[i];
    if (r->end == RDR_ROLE_RECEIVES) {
        v[n++] = "--ready-fd";
        v[n++] = "3";
    } else {
        v[n++] = "--host";
        v[n++] = (char *)host;
        v[n++] = "--port";
        v[n++] = (char *)port;
    }
    return argv_end(v, n, words, len);
}

char **rdr_role_list_argv(const struct rdr_role *r, const char *words, size_t len)
{
    if (r->end != RDR_ROLE_SENDS)
        return NULL;
    int n;
    char **v = argv_new(r, 2, words, len, &n);
    if (!v)
        return NULL;
    v[n++] = "--list-fd";
    v[n++] = "3";
    return argv_end(v, n, words, len);
}

void rdr_role_argv_free(char **v)
{
    if (v)
        free(v[0]);
    free(v);
}
