/* rdc_main.c - rdcp's initiator: parse SRC... DST, start one rdpipe agent on the source host
 * and one on the destination host (ssh for remote ones, a local child otherwise), give them the
 * tree roles, pass the destination's resume manifest to the source, and report.
 * The data goes from the source host to the destination host directly (rd engine: RDMA where
 * both ends have it, TCP otherwise); this process only carries control lines.
 */
#include "copy/rdc_main.h"
#include "util/rd_clock.h"
#include "copy/rdc_note.h"
#include "copy/rdc_safe.h"
#include "copy/rdc_tree.h"
#include "util/rd_error.h"

#include "run/rd_cli.h"
#include "run/rd_report.h"
#include "remote/rdr_home.h"
#include "remote/rdr_hop.h"
#include "remote/rdr_line.h"
#include "remote/rdr_link.h"
#include "remote/rdr_opts.h"
#include "remote/rdr_proc.h"
#include "remote/rdr_role.h"
#include "remote/rdr_said.h"
#include "remote/rdr_spec.h"
#include "remote/rdr_warn.h"
#include "remote/rdr_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOGIN_TIMEOUT_S 60.0
/* how long a failure that may be a consequence waits for the other end to report (settled) */
#define SETTLE_S 1.0

static const char usage_text[] =
    "usage: rdcp [options] SRC... DST\n"
    "Copy files and trees between hosts; the data goes from the source host to the destination\n"
    "host directly (RDMA where both have it, TCP otherwise), ssh only starts and controls it.\n"
    "\n"
    "  rdcp -v big.img backup:/data/big.img          local -> remote\n"
    "  rdcp -r gpu1:/models/llama ./models           remote -> local\n"
    "  rdcp -r fs1:/srv/proj fs2:/srv/proj           remote -> remote, fs1 -> fs2 directly\n"
    "  rdcp -r --resume dataset/ node7:/scratch/dataset\n"
    "\n"
    "Paths are [user@]host:path ([user@][v6addr]:path) or local; on a host a relative path, or\n"
    "~/path, is in the login's home directory, and ~user/path in user's. Like cp -r: a\n"
    "directory copied into an existing directory DST becomes DST/NAME, into a missing DST\n"
    "becomes DST; a source directory written with a trailing '/' (like rsync) always puts its\n"
    "contents into DST. Several sources need DST to be a directory; sources on several hosts\n"
    "are copied one host after the other.\n"
    "\n"
    "options:\n"
    "  -r, --recursive     copy directories\n"
    "  -p, --preserve      modes, ACLs and times (owners when run as root)\n"
    "  -X, --xattrs        user.* extended attributes of files and directories\n"
    "  -a, --archive       -r -p -X (symlinks are copied as links unless -L)\n"
    "  -L, --dereference   follow symlinks in the sources (without -r, a symlink named as a\n"
    "                      source is followed anyway, as cp follows it)\n"
    "      --resume        skip files already complete at the destination (size and hash),\n"
    "                      continue partial files (temporary .rdcp.* files) from what they hold\n"
    "      --no-sync       do not wait until the copy is on disk (default: exit 0 only once the\n"
    "                      destination's filesystem was synced, so a power cut loses nothing)\n"
    "  -v, --verbose       summary: files, bytes, skipped bytes, rate, transport (-vv: the\n"
    "                      two ends' own -v lines too)\n"
    "  -P, --progress      progress line (default on a terminal); --no-progress\n"
    "      --json          one JSON summary on stderr\n"
    "      --ssh CMD       how to reach a host (default: ssh -o BatchMode=yes)\n"
    "      --transport T   auto (default), tcp or rdma\n"
    "      --encrypt       encrypt the stream end to end (rdsend/rdrecv --encrypt)\n"
    "      --compress[=auto|LEVEL]  compress it with zstd on the lanes (rdsend --compress)\n"
    "      --lanes N       both ends run N lanes (rdsend --lanes; default: each plans its own)\n"
    "      --streams N     stripe the stream over N connections (rdsend --streams)\n"
    "      --remote-path P rdpipe's path on remote hosts (rdcp must be next to it)\n"
    "  -H, --hostname A    the address other hosts reach this machine at\n"
    "  -h, --help, -V, --version\n"
    "\n"
    "exit status: 0 all copied (and on disk unless --no-sync); 23 some files not copied (each\n"
    "named on stderr: permission denied, no space left, source vanished, directory without -r,\n"
    "destination not a directory, directory loop with -L, or a record the destination refused:\n"
    "a name with '..', a leading '/', an empty component or a NUL, a path through a symlink);\n"
    "1 usage; 2 cannot connect; 3 authentication; 4 transfer broken; 5 local I/O error;\n"
    "101 --transport rdma and no RDMA device; 255 ssh could not log in to a host, found no\n"
    "rdpipe there, or the connection to it was lost; 128+N on signal N.\n";

struct end {
    char *dest;        /* ssh destination, NULL = local */
    char *host;        /* for messages */
    struct rdr_link l; /* the control link to its agent */
    char *said;        /* the last line its role said, shown as it came: its exit's reason, if
                        * the same, is not shown twice */
};

struct made { char **v; size_t n, cap; };

struct run {
    struct end e[2];   /* 0 = source, 1 = destination */
    struct rdr_init_opts o;    /* --ssh, --transport, --remote-path, -H */
    struct rdr_watch w; /* the links of e[0] and e[1] */
    int verbose, progress, json, recursive, preserve, xattrs, follow, resume, nosync;
    char **srcs;               /* this run's sources: all on e[0]'s host */
    int dst_lost;              /* the destination's host could not be logged into, or was lost */
    int dst_not_dir;           /* several sources, and DST is no directory: every run would fail */
    int nsrc, nsrc_all;        /* nsrc_all: sources of the whole command (cp's rules for DST) */
    char *dst;
    char key[65];
    char **manifest;
    size_t nman, capman;
    /* --resume with a contents source (SRC/): the source host lists the names it will write at
     * DST's top first (rdr_role.h), and the destination lists those alone (rdc_manifest.h) */
    int listing, listed, roots_over, dst_asked;
    struct made roots;         /* "r" + each name's hex, as the destination reads them */
    size_t roots_bytes;
    /* several source hosts: the names the runs before this one made in DST (hex), given to
     * this run's receiver, and those it reports (report_made: a run follows) added */
    struct made *made;
    int report_made;
    int interrupted;
    int fail_code, fail_rank;
    char *fail_msg;
    double settle_at;          /* the first failure + SETTLE_S: see settled() */
    int exit_code[2];
    int have_exit[2];
    /* statistics */
    unsigned long long files, bytes, skipped, tot_files, tot_bytes, sent[5], recvd[5];
    int have_sent, have_recvd, have_total;
    char transport_used[96];
    double t0, last_draw;
    int drawn;
};

/* what the runs of one command did, one run per source host */
struct totals {
    unsigned long long files, dirs, bytes, skipped, errors;
    double seconds;
    char transport[96];
};

#define warnx(...) rdr_warnx("rdcp", __VA_ARGS__)

static void clear_progress(struct run *r)
{
    if (r->drawn) {
        fprintf(stderr, "\r\033[K");
        r->drawn = 0;
    }
}

/* "[user@]host:path" / "[user@][v6]:path" / local. Returns 0 and fills *dest (NULL = local),
 * *host and *path (malloc'd); -1 when malformed, -2 when the host is one ssh must never see
 * (rdr_dest_check; already reported). */
static int parse_loc(const char *arg, char **dest, char **host, char **path)
{
    *dest = *host = *path = NULL;
    if (!*arg)   /* no file has an empty name (cp: ENOENT) */
        return -1;
    const char *colon = NULL;
    const char *at = NULL;
    if (arg[0] != '/' && strncmp(arg, "./", 2) != 0) {
        const char *p = arg;
        const char *a = strchr(arg, '@'), *s = strchr(arg, '/');
        const char *hstart = arg;
        if (a && (!s || a < s) && (!strchr(arg, ':') || a < strchr(arg, ':'))) {
            at = a;
            hstart = a + 1;
        }
        if (*hstart == '[') {
            const char *rb = strchr(hstart, ']');
            if (rb && rb[1] == ':')
                colon = rb + 1;
        } else {
            p = strchr(hstart, ':');
            if (p && (!s || p < s))
                colon = p;
        }
    }
    if (!colon) {
        *path = rdr_home_literal(arg);
        *host = strdup("localhost");
        return 0;
    }
    const char *hstart = at ? at + 1 : arg;
    char *h;
    if (*hstart == '[')
        h = strndup(hstart + 1, (size_t)(colon - 1 - hstart - 1));
    else
        h = strndup(hstart, (size_t)(colon - hstart));
    if (!*h) {
        free(h);
        return -1;
    }
    *path = strdup(*(colon + 1) ? colon + 1 : ".");
    /* localhost is this machine, as rdpipe's localhost: segments: no ssh, paths as local
     * ones. user@localhost asks for that user's login, so it goes through ssh as any host. */
    if (!at && strcmp(h, "localhost") == 0) {
        *host = h;
        return 0;
    }
    size_t ul = at ? (size_t)(at - arg) : 0;
    size_t len = ul + strlen(h) + 2;
    *dest = malloc(len);
    snprintf(*dest, len, "%.*s%s%s", (int)ul, arg, at ? "@" : "", h);
    *host = h;
    char why[256];
    if (rdr_dest_check(*dest, why, sizeof why)) {   /* "-oProxyCommand=...": never to ssh */
        warnx("%s", why);
        free(*dest);
        free(*host);
        free(*path);
        *dest = *host = *path = NULL;
        return -2;   /* reported */
    }
    return 0;
}

static int spawn_end(struct run *r, struct end *x)
{
    char *tool = x->dest ? NULL : rdr_sibling_tool("rdpipe");
    int rc = rdr_link_spawn(&x->l, &r->o.reach, x->dest, tool, -1, -1);
    free(tool);
    return rc;
}

static void say(struct end *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct end *x, const char *fmt, ...)
{
    if (x->l.wfd < 0)
        return;
    char *buf = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    /* a blocking write: the control channel is ours, lines are short or few */
    int fl = fcntl(x->l.wfd, F_GETFL);
    if (x->l.is_sock)
        fcntl(x->l.wfd, F_SETFL, fl & ~O_NONBLOCK);
    if (rdr_send(x->l.wfd, "%s", buf) < 0)
        rdr_link_close(&x->l);
    else if (x->l.is_sock)
        fcntl(x->l.wfd, F_SETFL, fl);
    free(buf);
}

static void fail(struct run *r, int rank, int code, const char *msg)
{
    if (!r->fail_msg)
        r->settle_at = rd_now() + SETTLE_S;
    if (r->fail_msg && r->fail_rank <= rank)
        return;
    free(r->fail_msg);
    r->fail_msg = strdup(msg);
    r->fail_rank = rank;
    r->fail_code = code;
}

/* A failure ends the copy once its cause is known: one that names it (a role killed, no
 * agent) at once; one that may be a consequence (a role's error, most often the broken stream
 * its peer left) once the other end has reported too, or SETTLE_S later. Whichever end's exit
 * line came first decided before 2026-12-07, so a killed sender was sometimes named as the
 * receiver's "connection closed by peer". (Before the roles are started, nothing follows: the
 * caller does not wait.) */
static int settled(const struct run *r)
{
    if (r->fail_rank < 20 || rd_now() >= r->settle_at)
        return 1;
    for (int i = 0; i < 2; i++)
        if (!r->have_exit[i] && !r->e[i].l.eof)
            return 0;
    return 1;
}

static void draw(struct run *r, int force)
{
    if (!r->progress)
        return;
    double now = rd_now();
    if (!force && now - r->last_draw < 0.5)
        return;
    r->last_draw = now;
    char b[32], rate[32] = "-", eta[32] = "";
    rd_format_bytes(r->bytes + r->skipped, b, sizeof b);
    double dt = now - r->t0;
    double bps = dt > 0 ? r->bytes / dt : 0;
    if (dt > 0) {
        rd_format_bytes((uint64_t)bps, rate, sizeof rate);
        strcat(rate, "/s");
    }
    if (!force && r->have_total && bps > 0 && r->tot_bytes > r->bytes + r->skipped) {
        rd_format_eta((r->tot_bytes - r->bytes - r->skipped) / bps, eta, sizeof eta);
    }
    char tf[32] = "";
    if (r->have_total)
        snprintf(tf, sizeof tf, "/%llu", r->tot_files);
    fprintf(stderr, "\r\033[Krdcp: %llu%s files  %s  %s%s", r->files, tf, b, rate, eta);
    r->drawn = 1;
}

/* names kept for the later runs of several source hosts: a destination agent that says more
 * (a hostile one) costs this host no more memory (about 1 GiB of names) */
#define RDC_MADE_MAX (8u << 20)

static void add_made(struct made *m, const char *hex)
{
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 256;
        if (!(m->v = realloc(m->v, m->cap * sizeof *m->v)))
            rd_oom();
    }
    if (!(m->v[m->n++] = strdup(hex)))
        rd_oom();
}

/* A tree role ended: its status decides this copy's (fail ranks the causes). */
static void handle_exit(struct run *r, int i, const struct rdr_said *s)
{
    struct end *x = &r->e[i];
    int code = s->code;
    const char *m = s->text;
    if (strcmp(s->role, "send") == 0 || strcmp(s->role, "recv") == 0) {
        r->exit_code[i] = code;
        r->have_exit[i] = 1;
    }
    if (!code || s->killed || r->interrupted)
        return;
    char msg[2048];
    const char *what = i == 0 ? "sending the tree" : "receiving the tree";
    if (code == RD_EPARTIAL) {
        fail(r, 40, code, "");
    } else if (code == 127 || code == 126) {
        snprintf(msg, sizeof msg, "%s: cannot run rdcp there (exit %d): is rdcp installed next to rdpipe?", x->host, code);
        fail(r, 5, 5, msg);
    } else if (code > 128 && code <= 128 + 64) {
        /* killed there (the OOM killer, an admin): the transfer broke; 128+N is for
         * rdcp itself killed by N, as the exit codes say */
        snprintf(msg, sizeof msg, "%s: %s was killed by signal %d", x->host, what, code - 128);
        fail(r, 10, RD_ESTREAM, msg);
    } else if (x->said && strcmp(m, x->said) == 0) {
        fail(r, code == 4 ? 30 : 20, code, "");   /* said above */
    } else {
        snprintf(msg, sizeof msg, "%s: %s failed (exit %d)%s%s", x->host, what, code, *m ? ": " : "", m);
        fail(r, code == 4 ? 30 : 20, code, msg);
    }
}

/* A role's log line: the "@rdcp" notes (progress, totals, statistics, names made) or a
 * message for the user. */
static void handle_note(struct run *r, int i, const char *t)
{
    struct end *x = &r->e[i];
    struct rdc_note o;
    switch (rdc_note_parse(t, &o)) {
    case RDC_NOTE_PROGRESS:
        r->files = o.v[0];
        r->bytes = o.v[1];
        r->skipped = o.v[2];
        draw(r, 0);
        break;
    case RDC_NOTE_NOTDIR:
        r->dst_not_dir |= i == 1;
        break;
    case RDC_NOTE_MADE:
        /* the destination's own names, for its next run: bounded all the same */
        if (i == 1 && r->report_made && r->made->n < RDC_MADE_MAX)
            add_made(r->made, o.text);
        break;
    case RDC_NOTE_TOTAL:
        r->tot_files = o.v[0];
        r->tot_bytes = o.v[1];
        r->have_total = 1;
        break;
    case RDC_NOTE_SENT:
    case RDC_NOTE_RECV:
        memcpy(o.kind == RDC_NOTE_SENT ? r->sent : r->recvd, o.v, sizeof o.v);
        *(o.kind == RDC_NOTE_SENT ? &r->have_sent : &r->have_recvd) = 1;
        break;
    case RDC_NOTE_TEXT:
        clear_progress(r);
        warnx("%s: %s", x->host, o.text);
        free(x->said);
        x->said = strdup(o.text);
        break;
    case RDC_NOTE_TAGGED:
        break;
    }
}

/* The most names and hex bytes a source's list may hold: a directory of a million entries is
 * listed, a flood costs this host at most 64 MiB; past either the destination tells nothing
 * of DST, and every file is sent whole (one warning). */
#define RDC_ROOTS_MAX (1u << 20)
#define RDC_ROOTS_BYTES (64u << 20)

/* hex: rdr_said_root_name's */
static void take_root(struct run *r, const char *hex)
{
    if (r->roots_over)
        return;
    size_t hl = strlen(hex);
    if (r->roots.n >= RDC_ROOTS_MAX || r->roots_bytes + hl > RDC_ROOTS_BYTES) {
        r->roots_over = 1;   /* none of them is used now */
        for (size_t k = 0; k < r->roots.n; k++)
            free(r->roots.v[k]);
        r->roots.n = 0;
        return;
    }
    if (r->roots.n == r->roots.cap) {
        r->roots.cap = r->roots.cap ? 2 * r->roots.cap : 256;
        if (!(r->roots.v = realloc(r->roots.v, r->roots.cap * sizeof *r->roots.v)))
            rd_oom();
    }
    char *w = malloc(hl + 2);
    if (!w)
        rd_oom();
    w[0] = 'r';
    memcpy(w + 1, hex, hl + 1);
    r->roots.v[r->roots.n++] = w;
    r->roots_bytes += hl;
}

/* What an agent says beyond the setup replies: the resume manifest, logs (progress and
 * statistics among them), exits. */
static void handle_line(void *ctx, int i, char **w, int n)
{
    struct run *r = ctx;
    struct end *x = &r->e[i];
    struct rdr_said s;
    switch (rdr_said_parse(w, n, &s)) {
    case RDR_SAID_MANIFEST:
        /* kept only from the destination, asked with --resume, before it is ready: an agent
         * that sends more costs this host no memory */
        if (i != 1 || !r->resume || x->l.ready)
            break;
        if (r->nman == r->capman) {
            r->capman = r->capman ? r->capman * 2 : 256;
            r->manifest = realloc(r->manifest, r->capman * sizeof *r->manifest);
            if (!r->manifest)
                rd_oom();
        }
        if (!(r->manifest[r->nman++] = strdup(s.word)))
            rd_oom();
        break;
    case RDR_SAID_ROOT:
        /* from the source, asked, before it is ready; a name the stream could not write at
         * DST's top is no root; past the bounds the destination tells nothing */
        if (i != 0 || !r->listing || x->l.ready)
            break;
        take_root(r, s.word);
        break;
    case RDR_SAID_LISTED:
        if (i == 0 && r->listing && !x->l.ready)
            r->listed = 1;
        break;
    case RDR_SAID_LOG:
        handle_note(r, i, s.text);
        break;
    case RDR_SAID_STAT:
        if (strcmp(s.role, "recv") == 0)
            rdr_stat_transport(s.word, r->transport_used, sizeof r->transport_used);
        break;
    case RDR_SAID_EXIT:
        handle_exit(r, i, &s);
        break;
    default:
        break;
    }
    rdr_said_free(&s);
}

static void lost(void *ctx, int i)
{
    struct run *r = ctx;
    struct end *x = &r->e[i];
    r->dst_lost |= i == 1;
    rdr_watch_settle(&r->w, i, 500);
    char msg[512];
    /* ssh exits 255 on its own failures, so any other status means it logged in and the remote
     * command ended before it spoke as an agent: 127 no rdpipe there, 126 one it cannot run
     * (a directory), else a program that is not rdpipe (--remote-path /bin/true) */
    int no_agent = x->l.status != 255;
    if (!x->l.hello && x->dest && x->l.reaped && !x->l.signal)   /* ssh failed before the agent spoke */
        snprintf(msg, sizeof msg, "%s: cannot %s (ssh exited with status %d%s)", x->host,
                 no_agent ? "start the agent" : "log in", x->l.status,
                 x->l.status == 126   ? "; the rdpipe there cannot be run, see --remote-path"
                 : x->l.status == 127 ? "; is rdpipe on the PATH there? see --remote-path"
                 : no_agent           ? "; it ended without speaking as an rdpipe agent, see --remote-path"
                                      : "; see its message above");
    else
        snprintf(msg, sizeof msg, "%s: lost the connection to the agent%s", x->host,
                 x->l.reaped && x->l.status == 127 && x->dest ? " (is rdpipe on the PATH there? see --remote-path)" : "");
    fail(r, 8, RD_ELOST, msg);
}

static void shut_down(struct run *r)
{
    rdr_watch_stop(&r->w, 5, 7);
}

/* NUL-terminated words, hex-encoded */
static char *args_hex(char **v, int n)
{
    struct rdc_buf b = { 0 };
    for (int i = 0; i < n; i++)
        rdc_put(&b, v[i], strlen(v[i]) + 1);
    char *h = rdr_hex(b.p, b.len);
    rdc_buf_free(&b);
    return h;
}

/* The names in DST this run's sources are copied to, as the source's walk names its roots
 * (rdc_walk.c): the receiver's --resume manifest lists those alone. NULL (all of DST) for a
 * directory's contents ("d/", ".", "..", "/"). "~" or "~user" goes to DST/<the home's name>,
 * which only the source host knows: it is "/", which no name is, so nothing of DST is told
 * for it (--resume sends it whole again rather than tell the source all of DST). A
 * NULL-terminated, malloc'd array. */
static char **manifest_roots(const struct run *r)
{
    char **v = calloc((size_t)r->nsrc + 1, sizeof *v);
    if (!v)
        rd_oom();
    for (int k = 0; k < r->nsrc; k++) {
        const char *p = r->srcs[k];
        size_t len = strlen(p);
        int home = p[0] == '~' && !strchr(p, '/');
        char *b = home ? strdup("/") : len > 0 && p[len - 1] != '/' ? rdc_basename(p) : NULL;
        if (!b || (!home && (!strcmp(b, ".") || !strcmp(b, "..") || !strcmp(b, "/"))) || !b[0]) {
            free(b);
            for (int i = 0; i < k; i++)
                free(v[i]);
            free(v);
            return NULL;
        }
        v[k] = b;
    }
    return v;
}

/* the destination's seg words that every run shares */
struct dst_args {
    char **flags;
    int nf;
    const char *nsrc, *codecs;
};

/* The destination: its role, key, the names it must know (other runs' and, listing, the
 * source's), setup. */
static void ask_dst(struct run *r, const struct dst_args *da)
{
    r->dst_asked = 1;
    char **roots = NULL;
    int roots_in = 0;
    if (r->listing && r->listed && !r->roots_over) {
        roots_in = 1;
    } else if (r->listing) {
        /* an agent that cannot list (older), or a list past its bounds: tell it nothing */
        warnx("warning: %s: %s: --resume tells it nothing of %s; every file is sent whole",
              r->e[0].host, r->roots_over ? "the sources hold too many names at their top" : "its rdpipe cannot list the sources' names",
              r->dst);
        if (!(roots = calloc(2, sizeof *roots)) || !(roots[0] = strdup("/")))
            rd_oom();
    } else if (r->resume) {
        roots = manifest_roots(r);
    }
    char **v = calloc(2 * (size_t)r->nsrc + 17, sizeof *v);
    if (!v)
        rd_oom();
    int n = 0;
    for (int k = 0; k < da->nf; k++)
        v[n++] = da->flags[k];
    for (int k = 0; roots && roots[k]; k++) {
        v[n++] = "--root";
        v[n++] = roots[k];
    }
    if (roots_in)
        v[n++] = "--roots-in";
    if (r->made->n)
        v[n++] = "--earlier";
    if (r->report_made)
        v[n++] = "--report-made";
    v[n++] = (char *)da->nsrc;
    v[n++] = "--";
    v[n++] = r->dst;
    char *h = args_hex(v, n);
    for (int k = 0; roots && roots[k]; k++)
        free(roots[k]);
    free(roots);
    free(v);
    say(&r->e[1], "%s\nseg %s recv none %s %d %s -%s", RDR_PROTO, rdr_roles[RDR_ROLE_TREE_RECV].name,
        r->o.transport, r->verbose, h, da->codecs);
    free(h);
    rdr_hop_key(r->key);
    say(&r->e[1], "key %s", r->key);
    for (size_t k = 0; k < r->made->n; k++)
        say(&r->e[1], "manifest %s", r->made->v[k]);
    for (size_t k = 0; roots_in && k < r->roots.n; k++)
        say(&r->e[1], "manifest %s", r->roots.v[k]);
    say(&r->e[1], "setup");
}

static int run_copy(struct run *r, struct totals *t)
{
    if (rdr_watch_signals()) {
        warnx("cannot set up signal handling: %s", strerror(errno));
        return 5;
    }
    r->w = (struct rdr_watch){ .l = (struct rdr_link *[]){ &r->e[0].l, &r->e[1].l }, .n = 2,
                               .interrupted = &r->interrupted, .ctx = r, .on_line = handle_line,
                               .on_lost = lost };
    for (int i = 0; i < 2; i++) {
        if (spawn_end(r, &r->e[i])) {
            int exec_failed = errno == ENOENT || errno == EACCES || errno == ENOEXEC;
            warnx("cannot start the agent for %s: %s%s", r->e[i].host,
                  !exec_failed ? "" : r->e[i].dest ? "cannot run the ssh program (--ssh): " : "cannot run rdpipe --agent: ",
                  strerror(errno));
            shut_down(r);
            return 5;
        }
    }
    /* the destination's role: tree-recv */
    char *flags[10];
    int nf = 0;
    if (r->recursive)
        flags[nf++] = "-r";
    if (r->preserve)
        flags[nf++] = "-p";
    if (r->xattrs)
        flags[nf++] = "-X";
    if (r->follow)
        flags[nf++] = "-L";
    if (r->resume)
        flags[nf++] = "--resume";
    if (r->nosync)
        flags[nf++] = "--no-sync";
    char nsrc[32];
    snprintf(nsrc, sizeof nsrc, "--nsrc=%d", r->nsrc_all);
    char codecs[48];
    rdr_codecs_word(&r->o, codecs, sizeof codecs);
    struct dst_args da = { flags, nf, nsrc, codecs };
    if (r->resume) {
        /* a contents source (SRC/) or a home (~): the initiator cannot name what they write
         * at DST's top, so the source host lists it first, and the destination is asked
         * once it has (in the loop below) */
        char **roots = manifest_roots(r);
        for (int k = 0; roots && roots[k]; k++)
            r->listing |= strcmp(roots[k], "/") == 0;
        r->listing |= !roots;
        for (int k = 0; roots && roots[k]; k++)
            free(roots[k]);
        free(roots);
    }
    if (!r->listing)
        ask_dst(r, &da);
    {
        char **v = calloc((size_t)r->nsrc + 16, sizeof *v);
        if (!v)
            rd_oom();
        int n = 0;
        for (int k = 0; k < nf; k++)
            v[n++] = flags[k];
        if (r->progress)
            v[n++] = "--count";
        v[n++] = nsrc;
        v[n++] = "--";
        for (int k = 0; k < r->nsrc; k++)
            v[n++] = r->srcs[k];
        char *h = args_hex(v, n);
        free(v);
        say(&r->e[0], "%s\nseg %s none send %s %d %s -%s", RDR_PROTO, rdr_roles[RDR_ROLE_TREE_SEND].name,
            r->o.transport, r->verbose, h, codecs);
        free(h);
        if (r->listing)
            say(&r->e[0], "list");
        say(&r->e[0], "setup");
    }
    double login_deadline = rd_now() + LOGIN_TIMEOUT_S;
    int started = 0;
    r->t0 = rd_now();
    for (;;) {
        if (r->interrupted > 0)
            break;
        if (r->fail_msg && r->fail_rank < 40 && (!started || settled(r)))
            break;
        if (started && r->e[0].l.done && r->e[1].l.done)
            break;
        if (r->listing && !r->dst_asked && r->e[0].l.ready)
            ask_dst(r, &da);
        if (!started && r->e[0].l.ready && r->e[1].l.ready) {
            for (size_t k = 0; k < r->nman; k++)
                say(&r->e[0], "manifest %s", r->manifest[k]);
            char addr[80];
            struct end *to = &r->e[1], *from = &r->e[0];
            rdr_hop_addr(to->dest, to->host, to->l.srv, from->dest, r->o.hostname, addr, sizeof addr);
            say(from, "next %s %d %s", addr, to->l.port, r->key);
            if (r->verbose)
                warnx("%s -> %s at %s port %d", from->host, to->host, addr, to->l.port);
            say(&r->e[1], "start");
            say(&r->e[0], "start");
            started = 1;
            r->t0 = rd_now();
        }
        if (!started && (!r->e[0].l.hello || !r->e[1].l.hello) && rd_now() > login_deadline) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s: the agent did not start within %.0f s",
                     r->e[r->e[0].l.hello ? 1 : 0].host, LOGIN_TIMEOUT_S);
            fail(r, 8, RD_ELOST, msg);
            break;
        }
        if (r->e[0].l.eof && r->e[1].l.eof)
            break;
        rdr_watch_pump(&r->w, 250);
        draw(r, 0);
    }
    int rc = 0;
    if (r->interrupted > 0) {
        clear_progress(r);
        warnx("interrupted by signal %d", r->interrupted);
        rc = 128 + r->interrupted;
    }
    /* a partial failure (23) still lets both ends finish; wait for their "done" */
    while (!rc && r->fail_msg && r->fail_rank >= 40 && !(r->e[0].l.done && r->e[1].l.done) &&
           !(r->e[0].l.eof && r->e[1].l.eof))
        rdr_watch_pump(&r->w, 250);
    if (!rc && r->fail_msg) {
        clear_progress(r);
        if (*r->fail_msg)
            warnx("%s", r->fail_msg);
        rc = r->fail_code ? r->fail_code : 1;
    }
    shut_down(r);
    if (r->progress && r->interrupted <= 0) {   /* after "interrupted": nothing more to draw */
        draw(r, 1);
        fprintf(stderr, "\n");
        r->drawn = 0;
    }
    t->seconds += rd_now() - r->t0;
    t->files += r->have_recvd ? r->recvd[0] : r->sent[0];
    t->dirs += r->have_recvd ? r->recvd[1] : r->sent[1];
    t->bytes += r->have_recvd ? r->recvd[2] : r->sent[2];
    t->skipped += r->have_sent ? r->sent[3] : r->recvd[3];
    t->errors += r->sent[4] + r->recvd[4];
    if (!t->transport[0] && r->transport_used[0])
        snprintf(t->transport, sizeof t->transport, "%s", r->transport_used);
    return rc;
}

static void report(const struct totals *t, int verbose, int json, int rc)
{
    const char *tr = t->transport[0] ? t->transport : "-";
    if (verbose) {
        char b[32], sk[32];
        rd_format_bytes(t->bytes, b, sizeof b);
        rd_format_bytes(t->skipped, sk, sizeof sk);
        /* errors counts the files that failed on their own (exit 23); a copy that failed as a
         * whole (a role out of memory, a lost host) says so, or "0 errors" would read as success */
        char whole[48] = "";
        if (rc && rc != 23)
            snprintf(whole, sizeof whole, "; %s (exit %d)", rc > 128 ? "interrupted" : "failed", rc);
        warnx("%llu files, %llu directories, %llu bytes (%s) copied in %.3f s (%.3f GB/s) over %s; "
              "skipped %llu bytes (%s) already at the destination; %llu errors%s",
              t->files, t->dirs, t->bytes, b, t->seconds, t->seconds > 0 ? t->bytes / t->seconds / 1e9 : 0.0,
              tr, t->skipped, sk, t->errors, whole);
    }
    if (json)
        fprintf(stderr,
                "{\"tool\":\"rdcp\",\"files\":%llu,\"dirs\":%llu,\"bytes\":%llu,\"skipped_bytes\":%llu,"
                "\"errors\":%llu,\"seconds\":%.6f,\"transport\":\"%s\",\"exit_code\":%d}\n",
                t->files, t->dirs, t->bytes, t->skipped, t->errors, t->seconds, tr, rc);
}

/* A local source copied onto itself (rdcp f f, rdcp -r d .) or a directory into itself (rdcp -r
 * d d/sub): cp refuses both ("are the same file", "into itself"); a copy would replace each
 * file by a new one (its owner, attributes and other links gone), or copy a tree into itself.
 * 1 (said) when p must not be copied to dst. */
static int onto_itself(const char *p, const char *dst, int follow)
{
    struct stat ss, ds, ts;
    if ((follow ? stat(p, &ss) : lstat(p, &ss)) != 0)
        return 0;   /* the walk says what is wrong with it */
    size_t pl = strlen(p);
    char *b = rdc_basename(p);
    int contents = (pl && p[pl - 1] == '/') || !strcmp(b, ".") || !strcmp(b, "..") || !strcmp(b, "/");
    int dst_dir = stat(dst, &ds) == 0 && S_ISDIR(ds.st_mode);
    char *target = contents || !dst_dir ? strdup(dst) : rdc_join(dst, b);
    int bad = 0;
    if (stat(target, &ts) == 0 && (contents ? stat(p, &ss) == 0 : 1) && ts.st_dev == ss.st_dev && ts.st_ino == ss.st_ino) {
        warnx("'%s' and '%s' are the same file", p, target);
        bad = 1;
    } else if (stat(p, &ss) == 0 && S_ISDIR(ss.st_mode) && (follow || contents || (lstat(p, &ts) == 0 && !S_ISLNK(ts.st_mode)))) {
        /* where the copy goes: DST, or (a new DST) its directory */
        char *at = dst_dir ? strdup(dst) : NULL;
        if (!at) {
            const char *nm;
            at = rdc_dir_of(dst, &nm);
            if (!*at) {
                free(at);
                at = strdup(".");
            }
        }
        char *rp = realpath(p, NULL), *ra = at ? realpath(at, NULL) : NULL;
        size_t rl = rp ? strlen(rp) : 0;
        if (rp && ra && !strncmp(ra, rp, rl) && (ra[rl] == '/' || ra[rl] == '\0' || rl == 1)) {
            warnx("cannot copy a directory, '%s', into itself, '%s'", p, target);
            bad = 1;
        }
        free(rp);
        free(ra);
        free(at);
    }
    free(target);
    free(b);
    return bad;
}

/* two sources' ssh destinations (NULL: this machine) name the same host */
static int same_host(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

enum { OPT_RESUME = RDR_OPT_FIRST_FREE, OPT_JSON, OPT_NO_PROGRESS, OPT_NO_SYNC };

int rdc_main(int argc, char **argv)
{
    /* the roles an agent runs us in (the table in remote/rdr_role.c) */
    if (argc >= 2 && strcmp(argv[1], rdr_roles[RDR_ROLE_TREE_SEND].arg) == 0)
        return rdc_tree_send_main(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], rdr_roles[RDR_ROLE_TREE_RECV].arg) == 0)
        return rdc_tree_recv_main(argc - 1, argv + 1);
    static const struct option opts[] = {
        { "recursive", no_argument, NULL, 'r' },
        { "preserve", no_argument, NULL, 'p' },
        { "archive", no_argument, NULL, 'a' },
        { "xattrs", no_argument, NULL, 'X' },
        { "dereference", no_argument, NULL, 'L' },
        { "verbose", no_argument, NULL, 'v' },
        { "progress", no_argument, NULL, 'P' },
        { "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
        { "json", no_argument, NULL, OPT_JSON },
        { "resume", no_argument, NULL, OPT_RESUME },
        { "no-sync", no_argument, NULL, OPT_NO_SYNC },
        RDR_INIT_LONG_OPTS_END,
    };
    struct run r;
    memset(&r, 0, sizeof r);
    rdr_init_opts_default(&r.o);
    for (int i = 0; i < 2; i++)
        r.e[i].l.wfd = r.e[i].l.rfd = -1;
    r.progress = -1;
    int c;
    opterr = 0;   /* rdr_init_opt says what was refused, in one line */
    while ((c = getopt_long(argc, argv, ":rpaXLvPH:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'r': r.recursive = 1; break;
        case 'p': r.preserve = 1; break;
        case 'a': r.recursive = r.preserve = r.xattrs = 1; break;
        case 'X': r.xattrs = 1; break;
        case 'L': r.follow = 1; break;
        case 'v': r.verbose++; break;
        case 'P': r.progress = 1; break;
        case OPT_NO_PROGRESS: r.progress = 0; break;
        case OPT_JSON: r.json = 1; break;
        case OPT_RESUME: r.resume = 1; break;
        case OPT_NO_SYNC: r.nosync = 1; break;
        case '?':
        case ':':
            return rdr_opt_refused(c, argv, "rdcp");
        default: {
            if (rdr_compress_space(c, optarg, argc, argv, "rdcp"))
                return 1;
            int st = rdr_init_opt(&r.o, c, optarg, "rdcp", usage_text);
            if (st != RDR_OPT_TAKEN)
                return st;
        }
        }
    }
    if (r.progress < 0)
        r.progress = isatty(STDERR_FILENO);
    int nargs = argc - optind;
    if (rdr_init_opts_check(&r.o, "rdcp", nargs, 2, "need at least one source and a destination"))
        return 1;
    int nsrc = nargs - 1, rc = 1;
    struct loc { char *dest, *host, *path; } *src = calloc((size_t)nsrc, sizeof *src);
    char **paths = calloc((size_t)nsrc, sizeof *paths);
    char *dd = NULL, *dh = NULL, *dst = NULL;
    if (!src || !paths)
        rd_oom();
    for (int i = 0; i < nsrc; i++) {
        int bad = parse_loc(argv[optind + i], &src[i].dest, &src[i].host, &src[i].path);
        if (bad) {
            if (bad == -1)
                warnx("bad source '%s'", argv[optind + i]);
            goto out;
        }
    }
    int bad = parse_loc(argv[argc - 1], &dd, &dh, &dst);
    if (bad) {
        if (bad == -1)
            warnx("bad destination '%s'", argv[argc - 1]);
        goto out;
    }
    fflush(stdout);
    /* One run per source host, in the order the hosts are first named: each copies that host's
     * sources, in their order, into DST (a directory, as cp wants for several sources). */
    struct totals t;
    memset(&t, 0, sizeof t);
    struct made made = { 0 };
    /* cp's rules for DST count the sources; a pattern the source host may expand into several
     * (rdc_is_pattern: remote, or local and no file of that name) counts as several, so DST
     * must be a directory, as for `scp 'host:*.log' DST` */
    int nsrc_all = 0;
    for (int i = 0; i < nsrc; i++)
        nsrc_all += src[i].dest ? (rdc_is_pattern(src[i].path) ? 2 : 1) : (rdc_expands_here(src[i].path) ? 2 : 1);
    rc = 0;
    int itself = 0;
    for (int i = 0; i < nsrc && !dd; i++) {
        glob_t g;
        if (src[i].dest)
            continue;
        if (rdc_expands_here(src[i].path) && glob(src[i].path, 0, NULL, &g) == 0) {
            for (size_t k = 0; k < g.gl_pathc; k++)   /* what the sending end will expand it to */
                itself |= onto_itself(g.gl_pathv[k], dst, r.follow);
            globfree(&g);
        } else {
            itself |= onto_itself(src[i].path, dst, r.follow);
        }
    }
    if (itself) {
        rc = 1;
        goto out;
    }
    for (int g = 0; g < nsrc; g++) {
        int first = 1;
        for (int k = 0; k < g && first; k++)
            first = !same_host(src[k].dest, src[g].dest);
        if (!first)
            continue;
        int later = 0;   /* a host not run yet follows this one */
        for (int k = g + 1; k < nsrc && !later; k++) {
            later = 1;
            for (int j = 0; j <= g && later; j++)
                later = !same_host(src[k].dest, src[j].dest);
        }
        struct run run = r;
        run.made = &made;
        run.report_made = later;
        run.nsrc = 0;
        run.nsrc_all = nsrc_all;
        run.srcs = paths;
        for (int k = g; k < nsrc; k++)
            if (same_host(src[k].dest, src[g].dest))
                paths[run.nsrc++] = src[k].path;
        run.e[0].dest = src[g].dest ? strdup(src[g].dest) : NULL;
        run.e[0].host = strdup(src[g].host);
        run.e[1].dest = dd ? strdup(dd) : NULL;
        run.e[1].host = strdup(dh);
        run.dst = strdup(dst);
        int got = run_copy(&run, &t);
        for (int i = 0; i < 2; i++) {
            rdr_link_free(&run.e[i].l);
            free(run.e[i].dest);
            free(run.e[i].host);
            free(run.e[i].said);
        }
        free(run.dst);
        for (size_t k = 0; k < run.nman; k++)
            free(run.manifest[k]);
        free(run.manifest);
        for (size_t k = 0; k < run.roots.n; k++)
            free(run.roots.v[k]);
        free(run.roots.v);
        free(run.fail_msg);
        if (!rc)
            rc = got;   /* the first failure's code; the other hosts' sources are still copied */
        if ((got > 128 && got != RD_ELOST) || got == 1 || run.dst_lost || run.dst_not_dir)
            break;    /* interrupted, a usage error every run would repeat, or no destination
                       * (a source host that cannot be logged into, 255, is that host's alone) */
    }
    report(&t, r.verbose, r.json, rc);
    for (size_t k = 0; k < made.n; k++)
        free(made.v[k]);
    free(made.v);
out:
    for (int i = 0; i < nsrc; i++) {
        free(src[i].dest);
        free(src[i].host);
        free(src[i].path);
    }
    free(src);
    free(paths);
    free(dd);
    free(dh);
    free(dst);
    return rc;
}
