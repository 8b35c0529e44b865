/* rdr_opts.c - see rdr_opts.h. */
#include "remote/rdr_opts.h"

#include "run/rd_cli.h"
#include "run/rd_version.h"
#include "remote/rdr_line.h"
#include "remote/rdr_warn.h"
#include "util/rd_number.h"
#include "util/rd_opterr.h"
#include "engine/rd_lanes.h"
#include "transport/rd_session.h"
#include "wire/rd_compress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rdr_codecs_word(const struct rdr_init_opts *o, char *out, size_t n)
{
    char item[4][32];
    int k = 0;
    if (o->encrypt)
        snprintf(item[k++], sizeof item[0], "encrypt");
    if (o->compress[0])
        snprintf(item[k++], sizeof item[0], "compress=%s", o->compress);
    if (o->lanes)
        snprintf(item[k++], sizeof item[0], "lanes=%u", o->lanes);
    if (o->streams)
        snprintf(item[k++], sizeof item[0], "streams=%u", o->streams);
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < k && len < n; i++)
        len += (size_t)snprintf(out + len, n - len, "%c%s", i ? ',' : ' ', item[i]);
}

unsigned rdr_count(const char *s, unsigned max)
{
    unsigned long long v;
    return rd_parse_decimal(s, max, &v) == 0 && v >= 1 ? (unsigned)v : 0;
}

void rdr_init_opts_default(struct rdr_init_opts *o)
{
    memset(o, 0, sizeof *o);
    o->reach.ssh_cmd = "ssh -o BatchMode=yes";
    o->transport = "auto";
}

int rdr_init_opt(struct rdr_init_opts *o, int c, const char *arg, const char *tool,
                 const char *usage)
{
    switch (c) {
    case RDR_OPT_SSH: o->reach.ssh_cmd = arg; return RDR_OPT_TAKEN;
    case RDR_OPT_TRANSPORT:
        if (strcmp(arg, "auto") && strcmp(arg, "tcp") && strcmp(arg, "rdma")) {
            rdr_warnx(tool, "--transport must be auto, tcp or rdma, not '%s'", arg);
            return 1;
        }
        o->transport = arg;
        return RDR_OPT_TAKEN;
    case RDR_OPT_REMOTE_PATH:
        if (!*arg) {
            rdr_warnx(tool, "--remote-path must not be empty");
            return 1;
        }
        o->reach.remote_path = arg;
        return RDR_OPT_TAKEN;
    case RDR_OPT_ENCRYPT: o->encrypt = 1; return RDR_OPT_TAKEN;
    case RDR_OPT_COMPRESS: {
        int level;
        if (rd_compress_parse(arg, &level)) {
            rdr_warnx(tool, "--compress must be auto or a zstd level from %d to %d (not 0), not '%s'",
                      RD_COMPRESS_MIN_LEVEL, RD_COMPRESS_MAX_LEVEL, arg);
            return 1;
        }
        snprintf(o->compress, sizeof o->compress, "%s", arg ? arg : "auto");
        return RDR_OPT_TAKEN;
    }
    case RDR_OPT_LANES:
    case RDR_OPT_STREAMS: {
        const char *name = c == RDR_OPT_LANES ? "--lanes" : "--streams";
        unsigned max = c == RDR_OPT_LANES ? RD_MAX_LANES : RD_MAX_STREAMS;
        unsigned v = rdr_count(arg, max);
        if (!v) {
            rdr_warnx(tool, "%s must be from 1 to %u, not '%s'", name, max, arg);
            return 1;
        }
        *(c == RDR_OPT_LANES ? &o->lanes : &o->streams) = v;
        return RDR_OPT_TAKEN;
    }
    case 'H': {
        /* it travels in control lines and rdsend's argv: one word, no option */
        int bad = !*arg || *arg == '-' || strlen(arg) > 255;
        for (const char *p = arg; *p && !bad; p++)
            bad = (unsigned char)*p <= ' ' || *p == 0x7f;
        if (bad) {
            char *show = rdr_printable(arg, strlen(arg) > 64 ? 64 : strlen(arg));
            rdr_warnx(tool, "-H/--hostname must be this machine's host name or address (one word, not "
                      "beginning with '-'), not '%s'", show ? show : "");
            free(show);
            return 1;
        }
        o->hostname = arg;
        return RDR_OPT_TAKEN;
    }
    case 'h': fputs(usage, stdout); return 0;
    case 'V': rd_print_version(stdout, tool); return 0;
    default: rdr_warnx(tool, "try '%s --help'", tool); return 1;
    }
}

int rdr_compress_space(int c, const char *arg, int argc, char *const argv[], const char *tool)
{
    if (c != RDR_OPT_COMPRESS || arg || optind >= argc)
        return 0;
    const char *w = argv[optind];
    char *end;
    int level;
    strtol(w, &end, 10);
    if (end == w || *end || rd_compress_parse(w, &level))
        return 0;
    rdr_warnx(tool, "a level after --compress needs '=': --compress=%s", w);
    return 1;
}

int rdr_opt_refused(int c, char *const argv[], const char *tool)
{
    char what[256];
    rd_opt_refused(what, sizeof what, c, argv, optind, optopt);
    rdr_warnx(tool, "%s (try '%s --help')", what, tool);
    return 1;
}

int rdr_init_opts_check(const struct rdr_init_opts *o, const char *tool, int noperands, int min,
                        const char *missing)
{
    if (noperands < min) {
        rdr_warnx(tool, "%s (try '%s --help')", missing, tool);
        return 1;
    }
    if (!*o->reach.ssh_cmd) {
        rdr_warnx(tool, "--ssh must not be empty");
        return 1;
    }
    return 0;
}
