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

char **rdr_role_argv(const struct rdr_role *r, const char *transport, const char *const *opts,
                     const char *host, const char *port, const char *words, size_t len)
{
    if (r->end == RDR_ROLE_SENDS && (!host || !port))
        return NULL;
    size_t nwords = 0;
    for (size_t i = 0; i < len; i++)
        if (i == 0 || words[i - 1] == '\0')
            nwords++;   /* a word starts here */
    /* tool, arg, --transport T, at most 4 more, the words, NULL */
    size_t nopts = 0;
    while (opts && opts[nopts])
        nopts++;
    char **v = calloc(nwords + nopts + 9, sizeof *v);
    if (!v)
        return NULL;
    int n = 0;
    v[n++] = rdr_sibling_tool(r->tool);
    if (!v[0]) {
        free(v);
        return NULL;
    }
    v[n++] = (char *)r->arg;
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
    for (size_t i = 0; i < len; i += strlen(words + i) + 1)
        v[n++] = (char *)words + i;   /* words[len] is a NUL: the last word ends there */
    v[n] = NULL;
    return v;
}

char **rdr_role_list_argv(const struct rdr_role *r, const char *words, size_t len)
{
    if (r->end != RDR_ROLE_SENDS)
        return NULL;
    size_t nwords = 0;
    for (size_t i = 0; i < len; i++)
        if (i == 0 || words[i - 1] == '\0')
            nwords++;
    char **v = calloc(nwords + 5, sizeof *v);
    if (!v)
        return NULL;
    int n = 0;
    if (!(v[n++] = rdr_sibling_tool(r->tool))) {
        free(v);
        return NULL;
    }
    v[n++] = (char *)r->arg;
    v[n++] = "--list-fd";
    v[n++] = "3";
    for (size_t i = 0; i < len; i += strlen(words + i) + 1)
        v[n++] = (char *)words + i;
    v[n] = NULL;
    return v;
}

void rdr_role_argv_free(char **v)
{
    if (v)
        free(v[0]);
    free(v);
}
