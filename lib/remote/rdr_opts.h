/* rdr_opts.h - the command-line options rdpipe and rdcp share (how hosts are reached, which
 * transport the hops use, the address of this machine), parsed and checked in one place so
 * that both initiators accept and reject them alike. */
#ifndef RDR_OPTS_H
#define RDR_OPTS_H

#include "remote/rdr_link.h"

#include <getopt.h>

enum { RDR_OPT_SSH = 256, RDR_OPT_TRANSPORT, RDR_OPT_REMOTE_PATH, RDR_OPT_ENCRYPT, RDR_OPT_COMPRESS,
       RDR_OPT_LANES, RDR_OPT_STREAMS, RDR_OPT_FIRST_FREE };

/* The last getopt_long entries of both tools: these options, --help, --version and the end
 * of the table (-H is the short form of --hostname: put "H:hV" in optstring). */
#define RDR_INIT_LONG_OPTS_END \
    { "ssh", required_argument, NULL, RDR_OPT_SSH }, \
    { "transport", required_argument, NULL, RDR_OPT_TRANSPORT }, \
    { "encrypt", no_argument, NULL, RDR_OPT_ENCRYPT }, \
    { "compress", optional_argument, NULL, RDR_OPT_COMPRESS }, \
    { "lanes", required_argument, NULL, RDR_OPT_LANES }, \
    { "streams", required_argument, NULL, RDR_OPT_STREAMS }, \
    { "remote-path", required_argument, NULL, RDR_OPT_REMOTE_PATH }, \
    { "hostname", required_argument, NULL, 'H' }, \
    { "help", no_argument, NULL, 'h' }, \
    { "version", no_argument, NULL, 'V' }, \
    { NULL, 0, NULL, 0 }

struct rdr_init_opts {
    struct rdr_reach reach;    /* --ssh, --remote-path */
    const char *transport;     /* --transport: auto, tcp or rdma */
    const char *hostname;      /* -H: NULL = from each host's SSH_CONNECTION */
    int encrypt;               /* --encrypt: every hop's stream encrypted end to end */
    char compress[8];          /* --compress[=auto|LEVEL]: every hop's rdsend compresses ("" off) */
    unsigned lanes;            /* --lanes N: every hop's ends run N lanes (0: each plans its own) */
    unsigned streams;          /* --streams N: every hop striped over N connections (0: as rdsend) */
};

void rdr_init_opts_default(struct rdr_init_opts *o);
/* A count from 1 to max in decimal digits alone ("4": no sign, no space), as --lanes and
 * --streams take it, on the command line and in the seg line: its value, else 0. */
unsigned rdr_count(const char *s, unsigned max);
/* The seg line's ninth word for --encrypt, --compress, --lanes and --streams
 * (" encrypt,compress=auto,lanes=4,streams=2", with its leading space), or "" when none was
 * given: the line is then what it always was. */
void rdr_codecs_word(const struct rdr_init_opts *o, char *out, size_t n);
#define RDR_OPT_TAKEN (-1)
/* For the default branch of the tool's option switch: take option c (getopt_long's return)
 * with arg if it is one of the above and return RDR_OPT_TAKEN. Otherwise return the exit
 * status: 0 after printing usage (-h) or the version (-V), 1 after saying what is wrong on
 * stderr (a bad value, or an unknown option: "tool: try 'tool --help'"). */
int rdr_init_opt(struct rdr_init_opts *o, int c, const char *arg, const char *tool,
                 const char *usage);
/* "--compress 3": getopt leaves 3 for an operand (rdpipe took it for a segment, rdcp for a
 * source), as rdsend refuses it. 1 (said) when c is --compress without '=' before a level. */
int rdr_compress_space(int c, const char *arg, int argc, char *const argv[], const char *tool);
/* '?' or ':' from getopt_long (opterr 0, optstring starting with ':'): one line naming what
 * the user typed, and 1 (the usage exit code) */
int rdr_opt_refused(int c, char *const argv[], const char *tool);
/* After parsing: at least min operands (else "tool: missing (try 'tool --help')") and a
 * usable --ssh. 0, or 1 (the exit status) with the complaint on stderr. */
int rdr_init_opts_check(const struct rdr_init_opts *o, const char *tool, int noperands, int min,
                        const char *missing);

#endif
