/* rdc_recv_main.c - `rdcp --tree-recv`: run by an rdpipe agent on the destination host; the
 * key comes in RDPIPE_KEY. With --resume it first reports the manifest of DST on the ready
 * fd, then the port; it receives one rd engine stream into the tree receiver (rdc_recv.h).
 * With --earlier, stdin names what the runs from other source hosts made; with --roots-in, the
 * source's top-level names, which the manifest lists alone; with --report-made it says what it
 * made, for the runs after it. */
#include "copy/rdc_end.h"
#include "util/rd_clock.h"
#include "copy/rdc_manifest.h"
#include "copy/rdc_recv.h"
#include "copy/rdc_tree.h"

#include "run/rd_cli.h"
#include "util/rd_error.h"
#include "util/rd_secret.h"
#include "engine/rd_io.h"
#include "remote/rdr_home.h"
#include "remote/rdr_line.h"
#include "run/rd_report.h"
#include "run/rd_run.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* stdin, one a line (the initiator's, through the agent: rdr_role.h): with --earlier a hex
 * name that the runs of this copy from other source hosts made (only ever looked up, never
 * opened); with --roots-in "r" + the hex of one of the source's top-level names, which the
 * --resume manifest lists alone (rdc_manifest.h). A name with a '/', "." or ".." is no
 * top-level name: dropped (listing less only sends more again). */
static void read_stdin(struct rdc_rcv *r, int earlier, struct rdc_roots *roots)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        if (line[n - 1] == '\n')
            line[n - 1] = '\0';
        int root = line[0] == 'r';
        char *name = rdr_unhex(line + root, NULL);
        if (name && *name) {
            if (root && roots && !strchr(name, '/') && strcmp(name, ".") && strcmp(name, ".."))
                rdc_roots_add_name(roots, name);
            else if (!root && earlier)
                rdc_rcv_earlier(r, name);
        }
        free(name);
    }
    free(line);
}

int rdc_tree_recv_main(int argc, char **argv)
{
    enum { OPT_NO_SYNC = 256, OPT_ROOT, OPT_ROOTS_IN, OPT_EARLIER, OPT_REPORT_MADE };
    static const struct option opts[] = {
        { "transport", required_argument, NULL, 't' },
        { "ready-fd", required_argument, NULL, 'F' },
        { "resume", no_argument, NULL, 'R' },
        { "nsrc", required_argument, NULL, 'n' },
        { "no-sync", no_argument, NULL, OPT_NO_SYNC },
        { "root", required_argument, NULL, OPT_ROOT },   /* a name in DST this copy writes */
        { "roots-in", no_argument, NULL, OPT_ROOTS_IN },   /* stdin: the source's own names */
        { "earlier", no_argument, NULL, OPT_EARLIER },   /* stdin: names other runs made */
        { "report-made", no_argument, NULL, OPT_REPORT_MADE },
        { "encrypt", no_argument, NULL, 'E' },
        { "compress", optional_argument, NULL, 'Z' },   /* the sender's: a receiver follows */
        { "lanes", required_argument, NULL, 'l' },
        { "streams", required_argument, NULL, 's' },
        { NULL, 0, NULL, 0 },
    };
    struct rd_opts o;
    rdc_end_init(&o);
    o.timeout_s = 120;
    int resume = 0, nsrc = 1, preserve = 0, xattrs = 0, nosync = 0, nroots = 0, earlier = 0, report_made = 0, roots_in = 0;
    char **roots = calloc((size_t)argc + 1, sizeof *roots);   /* no more than the arguments */
    if (!roots)
        rd_oom();
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+rLpXv", opts, NULL)) != -1) {
        switch (c) {
        case 't': o.transport = rdc_end_transport(optarg); break;
        case 'F': o.ready_fd = atoi(optarg); break;
        case 'E': o.encrypt = 1; break;
        case 'Z': break;
        case 'l': o.lanes = rdc_end_lanes(optarg); break;
        case 's': rdc_end_streams(optarg, &o); break;
        case 'R': resume = 1; break;
        case 'n': nsrc = atoi(optarg); break;
        case 'p': preserve = 1; break;
        case 'X': xattrs = 1; break;
        case OPT_NO_SYNC: nosync = 1; break;
        case OPT_ROOT: roots[nroots++] = optarg; break;
        case OPT_EARLIER: earlier = 1; break;
        case OPT_ROOTS_IN: roots_in = 1; break;
        case OPT_REPORT_MADE: report_made = 1; break;
        case 'r': case 'L': break;
        case 'v': o.verbose++; break;
        default: free(roots); return 1;
        }
    }
    const char *key = getenv("RDPIPE_KEY");
    if (!key || optind + 1 != argc || o.ready_fd < 0) {
        rd_warn("tree-recv: missing key, ready fd or destination");
        free(roots);
        return 1;
    }
    char *dst_path = rdr_home_expand(argv[optind]);
    struct rdc_rcv *r = rdc_rcv_new(dst_path, nsrc, preserve, xattrs, nosync);
    if (!r) {
        free(dst_path);
        free(roots);
        return RD_EIO;
    }
    o.key = strdup(key);
    o.key_len = strlen(key);
    rd_secret_env_drop("RDPIPE_KEY");
    o.port = "0";
    struct rdc_roots only = { .pats = roots, .npats = nroots };
    if (earlier || roots_in)
        read_stdin(r, earlier, roots_in ? &only : NULL);
    if (resume)
        rdc_rcv_manifest(r, o.ready_fd, nroots || roots_in ? &only : NULL);
    rdc_roots_free(&only);
    free(roots);
    struct rd_sink dst;
    rd_sink_custom(&dst, dst_path, rdc_rcv_consume, rdc_rcv_finish, r);
    rdc_rcv_sink(r, &dst);
    double t0 = rd_now();
    int rc = rd_recv_sink(&o, &dst);
    rdc_rcv_report(r, rd_now() - t0);
    if (report_made)
        rdc_rcv_report_made(r);
    if (o.key)
        explicit_bzero(o.key, o.key_len);   /* the key outlives no use of it */
    free(o.key);
    uint64_t errors = rdc_rcv_errors(r);
    rdc_rcv_free(r);
    free(dst_path);
    if (rc)
        return rc;
    return errors ? RD_EPARTIAL : 0;
}
