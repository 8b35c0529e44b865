/* rdp_opts.c - see rdp_opts.h. */
#include "remote/rdp_opts.h"

#include "run/rd_cli.h"
#include "run/rd_version.h"
#include "remote/rdp_warn.h"

#include <stdio.h>
#include <string.h>

void rdp_init_opts_default(struct rdp_init_opts *o)
{
    memset(o, 0, sizeof *o);
    o->reach.ssh_cmd = "ssh -o BatchMode=yes";
    o->transport = "auto";
}

int rdp_init_opt(struct rdp_init_opts *o, int c, const char *arg, const char *tool,
                 const char *usage)
{
    switch (c) {
    case RDP_OPT_SSH: o->reach.ssh_cmd = arg; return RDP_OPT_TAKEN;
    case RDP_OPT_TRANSPORT:
        if (strcmp(arg, "auto") && strcmp(arg, "tcp") && strcmp(arg, "rdma")) {
            rdp_warnx(tool, "--transport must be auto, tcp or rdma, not '%s'", arg);
            return 1;
        }
        o->transport = arg;
        return RDP_OPT_TAKEN;
    case RDP_OPT_REMOTE_PATH: o->reach.remote_path = arg; return RDP_OPT_TAKEN;
    case 'H': o->hostname = arg; return RDP_OPT_TAKEN;
    case 'h': fputs(usage, stdout); return 0;
    case 'V': rd_print_version(stdout, tool); return 0;
    default: rdp_warnx(tool, "try '%s --help'", tool); return 1;
    }
}

int rdp_init_opts_check(const struct rdp_init_opts *o, const char *tool, int noperands, int min,
                        const char *missing)
{
    if (noperands < min) {
        rdp_warnx(tool, "%s (try '%s --help')", missing, tool);
        return 1;
    }
    if (!*o->reach.ssh_cmd) {
        rdp_warnx(tool, "--ssh must not be empty");
        return 1;
    }
    return 0;
}
