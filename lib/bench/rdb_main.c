/* rdb_main.c - rdbench's command line: client (HOST PORT), --server PORT, or --io DIR alone.
 * Where it sits: tools/rdbench.c calls rdb_bench_main; it builds an rdb_bench_cfg and hands
 * it to the sweep (rdb_sweep.c) or the server (rdb_server.c), then writes the outputs. */
#include "bench/rdb_tools.h"

#include "bench/rdb_bench.h"
#include "bench/rdb_io.h"
#include "run/rd_cli.h"
#include "run/rd_version.h"
#include "util/rd_error.h"
#include "util/rd_opterr.h"
#include "util/rd_stdfd.h"
#include "wire/rd_auth.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: rdbench [options] HOST PORT [KEY]     measure the link to an rdbench --server\n"
    "       rdbench --server [options] PORT [KEY] answer rdbench clients on PORT\n"
    "       rdbench --io DIR [options]            measure only this host's disk and pipes\n"
    "The key is KEY, the first line of --key-file F, or RDPIPE_KEY, as for rdsend.\n"
    "Sweeps message size x depth; for each point: latency (p50, p99), operations/s and GB/s;\n"
    "then fits latency and bandwidth: GB/s = depth x size / (latency + size / bandwidth).\n"
    "\noptions:\n"
    "      --server           serve clients one at a time (until --timeout or a signal);\n"
    "                         another is told within a second that it is busy (exit 2)\n"
    "      --quick            a short sweep (4 sizes x 4 depths, 64M in flight), under 10 s\n"
    "      --json FILE        every result as one JSON object in FILE ('-' for stdout)\n"
    "      --svg FILE         bandwidth and latency against message size, a line per depth,\n"
    "                         measured (solid) and the model (dashed)\n"
    "      --transport T      auto (default: RDMA when possible, else TCP), tcp, rdma, or all\n"
    "                         (RDMA when this host has a device, then TCP)\n"
    "      --sizes MIN-MAX    message sizes, x4 apart (default 4K-64M; --quick 4K-16M, x16)\n"
    "      --depths MIN-MAX   depths, x2 apart (default 1-64; --quick 1-64, x4)\n"
    "      --max-inflight SIZE  skip the points whose depth x size is larger (default 256M;\n"
    "                         --quick 64M): each end holds that much in buffers\n"
    "      --point-time SEC   seconds measured per point and pass (default 0.25; --quick 0.1)\n"
    "      --passes N         times over the grid; each point keeps its best pass, the least\n"
    "                         disturbed by other work on the hosts (default 2)\n"
    "      --io DIR           also measure the ends, with a scratch file in DIR: writing and\n"
    "                         reading it with 1 and N lanes, buffered and O_DIRECT, and a\n"
    "                         pipe; the server's too (started with --io), and which part\n"
    "                         limits a transfer. --server: measure DIR when a client asks\n"
    "      --io-size SIZE     scratch file size (default 1G; --quick 256M)\n"
    "      --io-lanes N       lanes of the N-lane measurements (default 4)\n"
    "      --bind ADDR        local address (client: to connect from; server: to listen on)\n"
    "  -d, --device DEV       RDMA device to use\n"
    "      --key-file FILE    read the key from FILE (first line) instead of the command line\n"
    "      --timeout SECONDS  client: give up connecting; server: stop serving after that long\n"
    "  -v, --verbose          what was chosen, and each client the server serves, on stderr\n"
    "  -p, --progress         progress line on stderr (default: when stderr is a terminal)\n"
    "      --no-progress      never show the progress line\n"
    "  -h, --help             this help\n"
    "  -V, --version          version\n"
    "\nexit codes: 0 success, 1 usage, 2 cannot connect, timed out, or the server is busy,\n"
    "            3 authentication failed, 4 connection broken or protocol error, 5 local\n"
    "            input/output error (--json, --svg, --io), 101 --transport rdma and no RDMA device\n";

enum { O_SERVER = 256, O_QUICK, O_JSON, O_SVG, O_TRANSPORT, O_SIZES, O_DEPTHS, O_INFLIGHT, O_POINT,
       O_IO, O_IO_SIZE, O_IO_LANES, O_BIND, O_KEY_FILE, O_TIMEOUT, O_NO_PROGRESS, O_PASSES };

static const struct option long_opts[] = {
    { "server", no_argument, NULL, O_SERVER },
    { "quick", no_argument, NULL, O_QUICK },
    { "json", required_argument, NULL, O_JSON },
    { "svg", required_argument, NULL, O_SVG },
    { "transport", required_argument, NULL, O_TRANSPORT },
    { "sizes", required_argument, NULL, O_SIZES },
    { "depths", required_argument, NULL, O_DEPTHS },
    { "max-inflight", required_argument, NULL, O_INFLIGHT },
    { "point-time", required_argument, NULL, O_POINT },
    { "passes", required_argument, NULL, O_PASSES },
    { "io", required_argument, NULL, O_IO },
    { "io-size", required_argument, NULL, O_IO_SIZE },
    { "io-lanes", required_argument, NULL, O_IO_LANES },
    { "bind", required_argument, NULL, O_BIND },
    { "device", required_argument, NULL, 'd' },
    { "key-file", required_argument, NULL, O_KEY_FILE },
    { "timeout", required_argument, NULL, O_TIMEOUT },
    { "verbose", no_argument, NULL, 'v' },
    { "progress", no_argument, NULL, 'p' },
    { "no-progress", no_argument, NULL, O_NO_PROGRESS },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
};

struct opts {
    int server, quick, progress, verbose, all;
    const char *json, *svg, *io_dir, *bind, *device, *key_file;
    const char *sizes, *depths;
    enum rd_transport_choice transport;
    uint64_t inflight, io_size;
    unsigned io_lanes, passes;
    double point_s;
    int timeout_s;
    int inflight_set, io_size_set, point_set, passes_set;
    char **pos;
    int npos;
};

/* "4K-64M": two sizes; "4K": one */
static int parse_range(const char *s, uint64_t *lo, uint64_t *hi)
{
    char a[64];
    const char *dash = strchr(s, '-');
    size_t n = dash ? (size_t)(dash - s) : strlen(s);
    if (n == 0 || n >= sizeof a)
        return -1;
    memcpy(a, s, n);
    a[n] = '\0';
    if (rd_parse_size(a, lo))
        return -1;
    if (!dash) {
        *hi = *lo;
        return 0;
    }
    return rd_parse_size(dash + 1, hi) || *hi < *lo ? -1 : 0;
}

static int is_pow2(uint64_t v)
{
    return v && !(v & (v - 1));
}

static int parse(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof *o);
    o->progress = -1;
    o->timeout_s = -1;
    o->io_lanes = 4;
    o->passes = 2;
    uint64_t v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":vpd:hV", long_opts, NULL)) != -1) {
        switch (c) {
        case O_SERVER: o->server = 1; break;
        case O_QUICK: o->quick = 1; break;
        case O_JSON: o->json = optarg; break;
        case O_SVG: o->svg = optarg; break;
        case O_TRANSPORT:
            if (!strcmp(optarg, "auto")) o->transport = RD_T_AUTO;
            else if (!strcmp(optarg, "tcp")) o->transport = RD_T_TCP;
            else if (!strcmp(optarg, "rdma")) o->transport = RD_T_RDMA;
            else if (!strcmp(optarg, "all")) o->all = 1;
            else return rd_fail(RD_EUSAGE, "--transport must be auto, tcp, rdma or all, not '%s'", optarg);
            break;
        case O_SIZES: o->sizes = optarg; break;
        case O_DEPTHS: o->depths = optarg; break;
        case O_INFLIGHT:
            if (rd_parse_size(optarg, &o->inflight) || o->inflight < RD_MIN_CHUNK)
                return rd_fail(RD_EUSAGE, "--max-inflight must be a size of at least 4K, not '%s'", optarg);
            o->inflight_set = 1;
            break;
        case O_POINT: {
            char *end;
            errno = 0;
            o->point_s = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(o->point_s >= 0.001 && o->point_s <= 60))
                return rd_fail(RD_EUSAGE, "--point-time takes seconds from 0.001 to 60, not '%s'", optarg);
            o->point_set = 1;
            break;
        }
        case O_PASSES:
            if (rd_parse_size(optarg, &v) || v < 1 || v > 10)
                return rd_fail(RD_EUSAGE, "--passes must be from 1 to 10, not '%s'", optarg);
            o->passes = (unsigned)v;
            o->passes_set = 1;
            break;
        case O_IO: o->io_dir = optarg; break;
        case O_IO_SIZE:
            if (rd_parse_size(optarg, &o->io_size) || o->io_size < RDB_IO_MIN || o->io_size > (1ull << 40))
                return rd_fail(RD_EUSAGE, "--io-size must be a size from 16M to 1T, not '%s'", optarg);
            o->io_size_set = 1;
            break;
        case O_IO_LANES:
            if (rd_parse_size(optarg, &v) || v < 1 || v > 64)
                return rd_fail(RD_EUSAGE, "--io-lanes must be from 1 to 64, not '%s'", optarg);
            o->io_lanes = (unsigned)v;
            break;
        case O_BIND: o->bind = optarg; break;
        case 'd': o->device = optarg; break;
        case O_KEY_FILE: o->key_file = optarg; break;
        case O_TIMEOUT: {
            char *end;
            long t = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end || t < 0 || t > 1000000)
                return rd_fail(RD_EUSAGE, "--timeout takes whole seconds, not '%s'", optarg);
            o->timeout_s = (int)t;
            break;
        }
        case 'v': o->verbose++; break;
        case 'p': o->progress = 1; break;
        case O_NO_PROGRESS: o->progress = 0; break;
        case 'h':
            fputs(usage, stdout);
            return RD_CLI_EXIT_OK;
        case 'V':
            rd_print_version(stdout, "rdbench");
            return RD_CLI_EXIT_OK;
        default: {
            char what[256];
            rd_opt_refused(what, sizeof what, c, argv, optind, optopt);
            return rd_fail(RD_EUSAGE, "%s (try 'rdbench --help')", what);
        }
        }
    }
    o->pos = argv + optind;
    o->npos = argc - optind;
    if (o->progress < 0)
        o->progress = isatty(STDERR_FILENO);
    return RD_OK;
}

/* The key as rdsend takes it (KEY, --key-file, RDPIPE_KEY), by rdsend's own parser, so the
 * rules and messages stay the same. "--" before the positionals: a key may start with '-'
 * (rdbench's own parse took it after a "--" already). */
static int load_key(const char *key_file, char *pos_key, struct rd_key *k)
{
    char *av[7];
    int ac = 0;
    av[ac++] = (char *)"rdbench";
    if (key_file) {
        av[ac++] = (char *)"--key-file";
        av[ac++] = (char *)key_file;
    }
    av[ac++] = (char *)"--";
    av[ac++] = (char *)"0";
    if (pos_key)
        av[ac++] = pos_key;
    av[ac] = NULL;
    struct rd_opts ro;
    int rc = rd_cli_parse(ac, av, 0, &ro);
    if (!rc && rd_key_derive(k, ro.key, ro.key_len))
        rc = rd_fail(RD_EIO, "libcrypto cannot derive the key");
    rd_cli_free(&ro);
    return rc;
}

static int key_positional(const struct opts *o)
{
    const char *env = getenv("RDPIPE_KEY");
    return !o->key_file && !(env && *env);
}

static int valid_port(const char *p)
{
    char *end;
    long v = strtol(p, &end, 10);
    return *p && !*end && v >= 0 && v <= 65535;
}

/* An output file must be writable before minutes of measuring; *created: it did not exist. */
static int check_out(const char *path, int *created)
{
    *created = 0;
    if (!path || !strcmp(path, "-"))
        return RD_OK;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
        *created = 1;
        close(fd);
        return RD_OK;
    }
    if (errno == EEXIST && (fd = open(path, O_WRONLY | O_CLOEXEC)) >= 0) {
        close(fd);
        return RD_OK;
    }
    return rd_fail(RD_EIO, "cannot write '%s': %s", path, strerror(errno));
}

/* said here, with its errno: the check at exit (rd_stdfd) adds no second line */
static int stdout_failed(void)
{
    int e = errno;
    rd_stdout_failed(e, 1);
    return rd_fail(RD_EIO, "cannot write to stdout: %s", strerror(e));
}

static int write_out(const char *path, int (*fn)(FILE *, const struct rdb_bench *), const struct rdb_bench *b)
{
    if (!strcmp(path, "-"))
        return fn(stdout, b) ? stdout_failed() : RD_OK;
    FILE *f = fopen(path, "w");
    if (!f)
        return rd_fail(RD_EIO, "cannot write '%s': %s", path, strerror(errno));
    int bad = fn(f, b);
    bad |= fclose(f) != 0;
    return bad ? rd_fail(RD_EIO, "cannot write '%s': %s", path, strerror(errno)) : RD_OK;
}

/* --io DIR must be a directory before anything is measured: a local IO error (5), as an
 * unwritable --json is */
static int io_dir_ok(const char *dir)
{
    struct stat st;
    if (stat(dir, &st))
        return rd_fail(RD_EIO, "--io %s: %s", dir, strerror(errno));
    return S_ISDIR(st.st_mode) ? RD_OK : rd_fail(RD_EIO, "--io %s: not a directory", dir);
}

static int run_server(const struct opts *o)
{
    int rc, need = 1 + key_positional(o);
    if (o->npos < need)
        return rd_fail(RD_EUSAGE, "missing %s (try 'rdbench --help')", o->npos == 0 ? "PORT" : "KEY");
    if (o->npos > need)
        return rd_fail(RD_EUSAGE, "too many arguments: '%s' (try 'rdbench --help')", o->pos[need]);
    if (!valid_port(o->pos[0]))
        return rd_fail(RD_EUSAGE, "invalid port '%s'", o->pos[0]);
    if (o->json || o->svg || o->quick || o->sizes || o->depths || o->point_set || o->inflight_set || o->all ||
        o->passes_set)
        return rd_fail(RD_EUSAGE, "--server measures nothing itself: --json, --svg, --quick, --sizes, "
                       "--depths, --point-time, --passes, --max-inflight and --transport all are the client's");
    if (o->io_dir && (rc = io_dir_ok(o->io_dir)))
        return rc;
    struct rd_key key;
    rc = load_key(o->key_file, need > 1 ? o->pos[1] : NULL, &key);
    if (rc)
        return rc;
    struct rd_reach reach = { .port = o->pos[0], .bind = o->bind, .device = o->device,
                              .timeout_s = o->timeout_s, .verbose = o->verbose, .transport = o->transport };
    struct rdb_server_cfg cfg = { .io_dir = o->io_dir, .io_size = o->io_size_set ? o->io_size : (1ull << 30),
                                  .io_lanes = o->io_lanes, .verbose = o->verbose, .watch_fd = -1 };
    rc = rdb_serve(&reach, &key, &cfg);
    rd_key_wipe(&key);
    return rc;
}

static int set_steps(const struct opts *o, struct rdb_bench_cfg *cfg)
{
    uint64_t lo = 4096, hi = o->quick ? 16u << 20 : RDB_MAX_SIZE;
    if (o->sizes && (parse_range(o->sizes, &lo, &hi) || !is_pow2(lo) || !is_pow2(hi) || lo < RD_MIN_CHUNK ||
                     hi > RDB_MAX_SIZE))
        return rd_fail(RD_EUSAGE, "--sizes takes MIN-MAX, powers of two from 4K to 64M, not '%s'", o->sizes);
    cfg->nsizes = rdb_size_steps((uint32_t)lo, (uint32_t)hi, o->quick ? 16 : 4, cfg->sizes, RDB_MAX_SIZES);
    uint64_t dlo = 1, dhi = RDB_MAX_DEPTH;
    if (o->depths) {
        char *end;
        const char *dash = strchr(o->depths, '-');
        errno = 0;
        dlo = strtoull(o->depths, &end, 10);
        dhi = dash ? strtoull(dash + 1, NULL, 10) : dlo;
        if (errno || end == o->depths || (*end && *end != '-') || !is_pow2(dlo) || !is_pow2(dhi) ||
            dhi < dlo || dhi > RDB_MAX_DEPTH || (dash && dash[1] == '\0') ||
            (dash && strspn(dash + 1, "0123456789") != strlen(dash + 1)))
            return rd_fail(RD_EUSAGE, "--depths takes MIN-MAX, powers of two from 1 to 64, not '%s'", o->depths);
    }
    cfg->ndepths = rdb_depth_steps((unsigned)dlo, (unsigned)dhi, o->quick ? 4 : 2, cfg->depths, RDB_MAX_DEPTHS);
    return RD_OK;
}

static int run_client(const struct opts *o)
{
    int rc, io_only = o->io_dir && o->npos == 0;
    int need = io_only ? 0 : 2 + key_positional(o);
    if (o->npos < need) {
        static const char *const names[] = { "HOST", "PORT", "KEY" };
        return rd_fail(RD_EUSAGE, "missing %s (try 'rdbench --help')", names[o->npos]);
    }
    if (o->npos > need)
        return rd_fail(RD_EUSAGE, "too many arguments: '%s' (try 'rdbench --help')", o->pos[need]);
    if (!io_only && !valid_port(o->pos[1]))
        return rd_fail(RD_EUSAGE, "invalid port '%s'", o->pos[1]);
    if (o->io_dir && (rc = io_dir_ok(o->io_dir)))
        return rc;
    if (io_only && o->svg)
        return rd_fail(RD_EUSAGE, "--svg draws the link sweep: give HOST and PORT too");
    if (o->json && o->svg && !strcmp(o->json, "-") && !strcmp(o->svg, "-"))
        return rd_fail(RD_EUSAGE, "--json - and --svg - would both write standard output: give one a file");
    struct rdb_bench_cfg cfg = {
        .all_transports = o->all,
        .max_inflight = o->inflight_set ? o->inflight : o->quick ? (64u << 20) : (256u << 20),
        .point_s = o->point_set ? o->point_s : o->quick ? 0.1 : 0.25,
        .passes = o->passes,
        .budget_s = o->quick ? 8.0 : 0,
        .progress = o->progress,
        .quick = o->quick,
        .io_dir = o->io_dir,
        .io_size = o->io_size_set ? o->io_size : o->quick ? (256u << 20) : (1ull << 30),
        .io_lanes = o->io_lanes,
    };
    rc = set_steps(o, &cfg);
    if (rc)
        return rc;
    int json_new = 0, svg_new = 0;
    if ((rc = check_out(o->json, &json_new)) || (rc = check_out(o->svg, &svg_new)))
        return rc;
    struct rd_key key;
    if (!io_only && (rc = load_key(o->key_file, need > 2 ? o->pos[2] : NULL, &key)))
        goto remove_outputs;
    cfg.key = &key;
    cfg.reach = (struct rd_reach){ .host = io_only ? NULL : o->pos[0], .port = io_only ? NULL : o->pos[1],
                                   .bind = o->bind, .device = o->device, .timeout_s = o->timeout_s,
                                   .verbose = o->verbose, .transport = o->transport };
    struct rdb_bench b;
    rc = rdb_bench_run(&cfg, &b);
    if (!io_only)
        rd_key_wipe(&key);
    if (!rc) {
        int to_stdout = (o->json && !strcmp(o->json, "-")) || (o->svg && !strcmp(o->svg, "-"));
        if (!to_stdout && rdb_print_table(stdout, &b))   /* stdout holds the JSON or the SVG alone */
            rc = stdout_failed();
        if (!rc && o->json)
            rc = write_out(o->json, rdb_write_json, &b);
        if (!rc && o->svg)
            rc = write_out(o->svg, rdb_write_svg, &b);
    }
    rdb_bench_free(&b);
remove_outputs:
    if (rc) {   /* no half-written or empty outputs of a run that failed */
        if (json_new)
            unlink(o->json);
        if (svg_new)
            unlink(o->svg);
    }
    return rc;
}

int rdb_bench_main(int argc, char **argv)
{
    struct opts o;
    rd_set_progname("rdbench");
    signal(SIGPIPE, SIG_IGN);
    int rc = parse(argc, argv, &o);
    if (rc == RD_CLI_EXIT_OK)
        return 0;
    if (!rc)
        rc = o.server ? run_server(&o) : run_client(&o);
    if (rc)
        rd_report();
    return rc;
}
