#include "run/rd_cli.h"

#include "transport/rd_session.h"

#include "util/rd_error.h"
#include "util/rd_number.h"
#include "util/rd_opterr.h"
#include "util/rd_secret.h"
#include "util/rd_stdfd.h"
#include "wire/rd_compress.h"
#include "wire/rd_proto.h"
#include "run/rd_version.h"
#include "transport/rd_session.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio_ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char send_usage[] =
    "usage: rdsend [options] HOST PORT KEY [FILE]\n"
    "       rdsend [options] --key-file F HOST PORT [FILE]     (or RDPIPE_KEY=... in the environment)\n"
    "Send FILE (default: stdin) to rdrecv on HOST:PORT; exit 0 only once the receiver confirmed\n"
    "every byte.\n";
static const char recv_usage[] =
    "usage: rdrecv [options] PORT KEY [FILE]\n"
    "       rdrecv [options] --key-file F PORT [FILE]          (or RDPIPE_KEY=... in the environment)\n"
    "       rdrecv --check [--key-stdin] [options] PORT [KEY]  serve one rdcheck run (rdcheck starts it over ssh)\n"
    "Wait for one authenticated rdsend on PORT and write its stream to FILE (default: stdout).\n"
    "Senders with a wrong key are turned away and rdrecv keeps waiting.\n";
static const char common_help[] =
    "\noptions:\n"
    "  -v, --verbose          transport, peer and bandwidth on stderr\n"
    "  -p, --progress         progress line on stderr (default: when stderr is a terminal)\n"
    "      --no-progress      never show the progress line\n"
    "      --json             final statistics as one JSON object on stderr\n"
    "      --transport T      auto (default: RDMA when possible, else TCP), tcp or rdma\n"
    "      --bind ADDR        local address to bind (source address for rdsend)\n"
    "  -d, --device DEV       RDMA device to use (DEV1,DEV2: rails, see --streams in the man page)\n"
    "      --key-file FILE    read the key from FILE (first line) instead of the command line\n"
    "      --gen-key          print a fresh random key (256 bits, hex) and exit\n"
    "      --timeout SECONDS  rdrecv: give up waiting for a sender; rdsend: give up connecting\n"
    "      --chunk-size SIZE  bytes per frame (K/M/G suffixes; default 4M on RDMA, 1M on TCP)\n"
    "      --depth N          frames in flight: rdsend asks (default 8, more for more lanes or\n"
    "                         streams); rdrecv grants up to N (default 64)\n"
    "      --streams N        stripe the stream over N connections (TCP: a thread each; RDMA: a\n"
    "                         QP each); rdrecv grants up to N (default 16); rdsend asks, by\n"
    "                         default, one per port the receiver's RDMA ports pair with, else\n"
    "                         one per 10 Gb/s of the link on TCP (a core each at most), one QP\n"
    "                         per 100 Gb/s on RDMA, one where the link reports no speed\n"
    "      --lanes N          threads for the per-chunk work (tags, encryption, compression),\n"
    "                         1-64 (default: enough for the link's reported speed, leaving 2\n"
    "                         cores; half the cores, at most 8, where it reports none; every\n"
    "                         core, at most 8, for rdsend --compress)\n"
    "      --encrypt          rdsend: encrypt every chunk under the session's stream key\n"
    "                         (AES-256-OCB with AES instructions on both ends, AES-256-GCM with\n"
    "                         a receiver without OCB, else ChaCha20-Poly1305);\n"
    "                         rdrecv: refuse a sender that does not encrypt\n"
    "      --compress[=auto|LEVEL]  rdsend: zstd each chunk on the lanes (a chunk that does not\n"
    "                         shrink goes raw); auto (the default) picks the level, off included,\n"
    "                         from the lanes' and the link's measured rates; rdrecv: accepted,\n"
    "                         the receiver follows the sender\n"
    "      --direct           O_DIRECT on FILE (bypass the page cache)\n"
    "      --sync             rdrecv: make FILE durable (fdatasync; fsync a new file's directory)\n"
    "                         before confirming; the default when the output is a regular file\n"
    "      --no-sync          rdrecv: confirm once the bytes are written, without waiting for\n"
    "                         the disk (a crash right after exit 0 may lose them)\n"
    "      --ready-fd N       rdrecv: once listening, write the port number to fd N (PORT 0 = any)\n"
    "      --relay-fd N       rdrecv: pass the stream on unchanged to the receiver named by the\n"
    "                         line \"HOST PORT KEY\" on fd N, instead of writing it (rdpipe's relays)\n"
    "  -h, --help             this help\n"
    "  -V, --version          version\n"
    "\nexit codes: 0 success, 1 usage, 2 cannot connect or timed out, 3 authentication failed,\n"
    "            4 stream incomplete or corrupt, 5 local input/output error, 101 no RDMA device\n";

enum { OPT_NO_PROGRESS = 256, OPT_JSON, OPT_TRANSPORT, OPT_BIND, OPT_KEY_FILE, OPT_TIMEOUT,
       OPT_CHUNK, OPT_DEPTH, OPT_DIRECT, OPT_SYNC, OPT_NO_SYNC, OPT_READY_FD, OPT_RELAY_FD, OPT_STREAMS,
       OPT_GEN_KEY, OPT_LANES, OPT_ENCRYPT, OPT_COMPRESS };

static const struct option long_opts[] = {
    { "verbose", no_argument, NULL, 'v' },
    { "progress", no_argument, NULL, 'p' },
    { "gen-key", no_argument, NULL, OPT_GEN_KEY },
    { "lanes", required_argument, NULL, OPT_LANES },
    { "encrypt", no_argument, NULL, OPT_ENCRYPT },
    { "compress", optional_argument, NULL, OPT_COMPRESS },
    { "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
    { "json", no_argument, NULL, OPT_JSON },
    { "transport", required_argument, NULL, OPT_TRANSPORT },
    { "bind", required_argument, NULL, OPT_BIND },
    { "device", required_argument, NULL, 'd' },
    { "key-file", required_argument, NULL, OPT_KEY_FILE },
    { "timeout", required_argument, NULL, OPT_TIMEOUT },
    { "chunk-size", required_argument, NULL, OPT_CHUNK },
    { "depth", required_argument, NULL, OPT_DEPTH },
    { "streams", required_argument, NULL, OPT_STREAMS },
    { "direct", no_argument, NULL, OPT_DIRECT },
    { "sync", no_argument, NULL, OPT_SYNC },
    { "no-sync", no_argument, NULL, OPT_NO_SYNC },
    { "ready-fd", required_argument, NULL, OPT_READY_FD },
    { "relay-fd", required_argument, NULL, OPT_RELAY_FD },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
};

int rd_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || *s < '0' || *s > '9')   /* strtoull would skip spaces and accept signs: " -1" */
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: return -1;
    }
    if (*end == 'i' || *end == 'I')   /* accept "4MiB"-style spellings too */
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end || (shift && v > (~0ULL >> shift)))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* fd is open for writing and was not closed when the tool started (rd_stdfd_reserve) */
static int writable_fd(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && (fl & O_ACCMODE) != O_RDONLY && !(fl & O_PATH) && !rd_stdfd_was_closed(fd);
}

#define RD_KEY_FILE_MAX 4096   /* a key file's first line, at most (a generated key: 64) */

static int load_key_file(struct rd_opts *o, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return rd_fail(RD_EUSAGE, "cannot read key file '%s': %s", path, strerror(errno));
    /* the first line, read a byte budget at a time: --key-file /dev/zero or a big data file
     * named by mistake is an error at once, not gigabytes of memory */
    char *line = malloc(RD_KEY_FILE_MAX + 2);
    if (!line) {
        fclose(f);
        return rd_fail(RD_EIO, "out of memory");
    }
    ssize_t n = 0;
    int ch;
    while (n <= RD_KEY_FILE_MAX && (ch = getc(f)) != EOF) {
        line[n++] = (char)ch;
        if (ch == '\n')
            break;
    }
    line[n] = '\0';
    int e = ferror(f) ? errno : 0;   /* a directory reads as EISDIR, not as an empty file */
    fclose(f);
    if (n > RD_KEY_FILE_MAX && line[n - 1] != '\n') {
        explicit_bzero(line, (size_t)n);
        free(line);
        return rd_fail(RD_EUSAGE, "key file '%s': its first line is longer than %d bytes (is it the key file?)", path,
                       RD_KEY_FILE_MAX);
    }
    if (e || n == 0) {
        free(line);
        if (e)
            return rd_fail(RD_EUSAGE, "cannot read key file '%s': %s", path, strerror(e));
        return rd_fail(RD_EUSAGE, "key file '%s' is empty", path);
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    o->key = line;
    o->key_len = (size_t)n;
    return RD_OK;
}

static int set_key(struct rd_opts *o, const char *k)
{
    o->key = strdup(k);
    o->key_len = strlen(k);
    return o->key ? RD_OK : rd_fail(RD_EIO, "out of memory");
}

/* digits only (strtol would take a sign and leading blanks); 0 lets rdrecv pick a free port,
 * and is no port to connect to */
static int valid_port(const char *p, int is_sender)
{
    unsigned long long v;
    return rd_parse_decimal(p, 65535, &v) == 0 && (v > 0 || !is_sender);
}

/* A word that is a zstd level by itself ("3", "-5"; not "auto") */
static int is_level(const char *w)
{
    char *end;
    int level;
    strtol(w, &end, 10);
    return end != w && !*end && rd_compress_parse(w, &level) == 0;
}

/* A key worth its name: 32 random bytes in hex, so it survives shells and key files. */
static int gen_key(void)
{
    uint8_t k[32];
    if (rd_random(k, sizeof k))
        return rd_fail(RD_EIO, "no randomness available");
    for (size_t i = 0; i < sizeof k; i++)
        printf("%02x", k[i]);
    printf("\n");
    memset(k, 0, sizeof k);
    if (!fflush(stdout))
        return RD_CLI_EXIT_OK;
    int e = errno;
    __fpurge(stdout);   /* said here, once; and no copy of the key left to write at exit */
    clearerr(stdout);
    return rd_fail(RD_EIO, "cannot write the key: %s", strerror(e));
}

/* RDPIPE_STREAM_KEY, 64 hex digits: rdpipe gives both ends of a relayed stream the key that
 * tags it, which the relays in between never see. Removed from the environment once read. */
static int stream_key_from_env(struct rd_opts *o)
{
    const char *h = getenv("RDPIPE_STREAM_KEY");
    if (!h)
        return RD_OK;
    int ok = strlen(h) == 2 * sizeof o->stream_key;
    for (size_t i = 0; ok && i < sizeof o->stream_key; i++) {
        unsigned v = 0;
        ok = isxdigit((unsigned char)h[2 * i]) && isxdigit((unsigned char)h[2 * i + 1]) &&
             sscanf(h + 2 * i, "%2x", &v) == 1;
        o->stream_key[i] = (uint8_t)v;
    }
    rd_secret_env_drop("RDPIPE_STREAM_KEY");
    if (!ok)
        return rd_fail(RD_EUSAGE, "RDPIPE_STREAM_KEY must be 64 hex digits");
    o->has_stream_key = 1;
    return RD_OK;
}

int rd_cli_parse(int argc, char **argv, int is_sender, struct rd_opts *o)
{
    memset(o, 0, sizeof *o);
    o->is_sender = is_sender;
    o->timeout_s = -1;
    o->progress = -1;
    o->chunk_size = RD_DEFAULT_CHUNK;
    o->depth = RD_DEFAULT_DEPTH;
    o->streams = 1;
    o->ready_fd = -1;
    o->relay_fd = -1;
    o->sync = 1;   /* exit 0 means durable; --no-sync opts out */
    const char *key_file = NULL;
    uint64_t v;
    int c, want_key = 0;
    optind = 1;
    opterr = 0;   /* our own one-line messages, prefixed like every other error */
    while ((c = getopt_long(argc, argv, ":vpd:hV", long_opts, NULL)) != -1) {
        switch (c) {
        case 'v': o->verbose++; break;
        case 'p': o->progress = 1; break;
        case OPT_NO_PROGRESS: o->progress = 0; break;
        case OPT_JSON: o->json = 1; break;
        case OPT_TRANSPORT:
            if (!strcmp(optarg, "auto")) o->transport = RD_T_AUTO;
            else if (!strcmp(optarg, "tcp")) o->transport = RD_T_TCP;
            else if (!strcmp(optarg, "rdma")) o->transport = RD_T_RDMA;
            else return rd_fail(RD_EUSAGE, "--transport must be auto, tcp or rdma, not '%s'", optarg);
            break;
        case OPT_BIND:
            if (!*optarg)
                return rd_fail(RD_EUSAGE, "--bind needs an address, not ''");
            o->bind = optarg;
            break;
        case 'd': o->device = optarg; break;
        case OPT_KEY_FILE: key_file = optarg; break;
        case OPT_TIMEOUT: {
            unsigned long long t;
            if (rd_parse_decimal(optarg, 1000000, &t))
                return rd_fail(RD_EUSAGE, "--timeout takes whole seconds from 0 to 1000000 (11 days), not '%s'", optarg);
            o->timeout_s = (int)t;
            break;
        }
        case OPT_CHUNK:
            if (rd_parse_size(optarg, &v) || v < RD_MIN_CHUNK || v > RD_MAX_CHUNK)
                return rd_fail(RD_EUSAGE, "--chunk-size must be a size from 4K to 256M, not '%s'", optarg);
            o->chunk_size = (uint32_t)v;
            o->chunk_set = 1;
            break;
        case OPT_DEPTH:
            if (rd_parse_size(optarg, &v) || v < 1 || v > RD_MAX_DEPTH)
                return rd_fail(RD_EUSAGE, "--depth must be from 1 to %u, not '%s'", RD_MAX_DEPTH, optarg);
            o->depth = (uint32_t)v;
            o->depth_set = 1;
            break;
        case OPT_STREAMS:
            if (rd_parse_size(optarg, &v) || v < 1 || v > RD_MAX_STREAMS)
                return rd_fail(RD_EUSAGE, "--streams must be from 1 to %u, not '%s'", RD_MAX_STREAMS, optarg);
            o->streams = (uint32_t)v;
            o->streams_set = 1;
            break;
        case OPT_LANES:
            if (rd_parse_size(optarg, &v) || v < 1 || v > 64)
                return rd_fail(RD_EUSAGE, "--lanes must be from 1 to 64, not '%s'", optarg);
            o->lanes = (uint32_t)v;
            break;
        case OPT_ENCRYPT: o->encrypt = 1; break;
        case OPT_COMPRESS:
            /* "--compress 3" reads 3 as the next argument: rdrecv would listen on port 3 and
             * write a file named as the key */
            if (!optarg && optind < argc && is_level(argv[optind]))
                return rd_fail(RD_EUSAGE, "a level after --compress needs '=': --compress=%s", argv[optind]);
            if (rd_parse_compress(optarg, o))
                return RD_EUSAGE;
            break;
        case OPT_DIRECT: o->direct = 1; break;
        case OPT_SYNC: o->sync = 1; break;
        case OPT_NO_SYNC: o->sync = 0; break;
        case OPT_READY_FD:
        case OPT_RELAY_FD: {
            char *end;
            long fd = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end || fd < 0 || fd > 65535)
                return rd_fail(RD_EUSAGE, "%s takes a file descriptor number, not '%s'",
                               c == OPT_READY_FD ? "--ready-fd" : "--relay-fd", optarg);
            *(c == OPT_READY_FD ? &o->ready_fd : &o->relay_fd) = (int)fd;
            break;
        }
        case OPT_GEN_KEY:
            want_key = 1;   /* after the loop: operands with it are a mistake */
            break;
        case 'h':
            fputs(is_sender ? send_usage : recv_usage, stdout);
            fputs(common_help, stdout);
            return RD_CLI_EXIT_OK;
        case 'V':
            rd_print_version(stdout, is_sender ? "rdsend" : "rdrecv");
            return RD_CLI_EXIT_OK;
        default: {
            char what[256];
            rd_opt_refused(what, sizeof what, c, argv, optind, optopt);
            return rd_fail(RD_EUSAGE, "%s (try '%s --help')", what, is_sender ? "rdsend" : "rdrecv");
        }
        }
    }
    char **pos = argv + optind;
    int npos = argc - optind;
    if (want_key) {
        if (npos)
            return rd_fail(RD_EUSAGE, "--gen-key takes no operands, not '%s'", pos[0]);
        return gen_key();
    }
    const char *env_key = getenv("RDPIPE_KEY");
    int base = is_sender ? 2 : 1;   /* HOST PORT, or PORT */
    /* with RDPIPE_KEY set, a key argument still wins, as the man pages say: one more
     * operand than KEY FILE leaves room for, or the very key (else `rdrecv PORT $KEY` wrote
     * the stream into a file named after the key) */
    int key_positional = !key_file && (!(env_key && *env_key) || npos == base + 2 ||
                                       (npos == base + 1 && strcmp(pos[base], env_key) == 0));
    int need = base + key_positional;
    if (npos < need) {
        static const char *const send_names[] = { "HOST", "PORT", "KEY" };
        static const char *const recv_names[] = { "PORT", "KEY" };
        return rd_fail(RD_EUSAGE, "missing %s (try '%s --help')",
                       is_sender ? send_names[npos] : recv_names[npos], is_sender ? "rdsend" : "rdrecv");
    }
    if (npos > need + 1)
        return rd_fail(RD_EUSAGE, "too many arguments: '%s' (try '%s --help')", pos[need + 1],
                       is_sender ? "rdsend" : "rdrecv");
    int i = 0;
    if (is_sender)
        o->host = pos[i++];
    o->port = pos[i++];
    if (!valid_port(o->port, is_sender))
        return rd_fail(RD_EUSAGE, "invalid port '%s'", o->port);
    int rc;
    if (key_positional)
        rc = set_key(o, pos[i++]);
    else if (key_file)
        rc = load_key_file(o, key_file);
    else
        rc = set_key(o, env_key);
    if (!key_positional && !key_file)
        rd_secret_env_drop("RDPIPE_KEY");   /* copied: /proc/PID/environ no longer shows it */
    if (rc)
        return rc;
    if (o->key_len == 0)
        return rd_fail(RD_EUSAGE, "the key is empty");
    if (o->key_len < RD_KEY_WARN_LEN && !getenv("RDPIPE_WEAK_KEY_OK"))
        rd_warn("warning: the key has %zu characters; a key shorter than %d is easy to guess, one connection a guess (rdsend --gen-key makes a strong one)",
                o->key_len, RD_KEY_WARN_LEN);
    rc = stream_key_from_env(o);
    if (rc)
        return rc;
    if (i < npos)
        o->file = pos[i];
    if (!is_sender && o->ready_fd == STDOUT_FILENO && o->relay_fd < 0 && (!o->file || strcmp(o->file, "-") == 0))
        return rd_fail(RD_EUSAGE, "--ready-fd 1 is stdout, where the stream goes: give FILE, or another fd");
    const char *cipher = getenv("RDPIPE_CIPHER");   /* rd_seal.c reads it: a typo must not pass */
    if (cipher && *cipher && strcmp(cipher, "aes-256-ocb") && strcmp(cipher, "aes-256-gcm") &&
        strcmp(cipher, "chacha20-poly1305"))
        return rd_fail(RD_EUSAGE, "RDPIPE_CIPHER must be aes-256-ocb, aes-256-gcm or chacha20-poly1305, not '%s'", cipher);
    /* a closed one now would be the number FILE or a socket gets next: the port would be
     * written into FILE before any sender proved the key */
    if (o->ready_fd >= 0 && !writable_fd(o->ready_fd))
        return rd_fail(RD_EIO, "cannot write the port to --ready-fd %d: %s", o->ready_fd, strerror(EBADF));
    if (o->progress < 0)
        o->progress = isatty(STDERR_FILENO);
    return RD_OK;
}

void rd_cli_free(struct rd_opts *o)
{
    if (o->key) {
        memset(o->key, 0, o->key_len);
        free(o->key);
        o->key = NULL;
    }
}

int rd_parse_compress(const char *arg, struct rd_opts *o)
{
    int level;
    if (rd_compress_parse(arg, &level))
        return rd_fail(RD_EUSAGE, "--compress must be auto or a zstd level from %d to %d (not 0), not '%s'",
                       RD_COMPRESS_MIN_LEVEL, RD_COMPRESS_MAX_LEVEL, arg);
    o->compress_mode = level ? 2 : 1;
    o->compress_level = level;
    return RD_OK;
}

struct rd_reach rd_reach_of(const struct rd_opts *o)
{
    return (struct rd_reach){ .host = o->host, .port = o->port, .bind = o->bind, .device = o->device,
                              .timeout_s = o->timeout_s, .verbose = o->verbose, .transport = o->transport };
}
