/* rdb_check.c - rdcheck: one line per check, ✓ or ✗, the reason and, for ✗, the fix; and
 * `rdrecv --check`, the short-lived bench server rdcheck starts on HOST over ssh.
 * Where it sits: tools/rdcheck.c and tools/rdrecv.c call in here; it uses rdb_dev.c for what
 * this host has and the bench client (rdb_client.c) against the agent. */
#include "bench/rdb_tools.h"

#include "bench/rdb_dev.h"
#include "bench/rdb_net.h"
#include "run/rd_cli.h"
#include "run/rd_plan.h"
#include "util/rd_memlock.h"
#include "run/rd_version.h"
#include "util/rd_clock.h"
#include "util/rd_error.h"
#include "util/rd_opterr.h"
#include "util/rd_stdfd.h"
#include "wire/rd_auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define AGENT_START_MS 30000    /* ssh login and the agent's start */
#define READY_FORM "ready PORT TRANSPORTS PORT-RANGE"   /* what rdrecv --check says once it listens */
#define AGENT_TIMEOUT_S 60      /* the agent gives up on its own after this */
#define CONNECT_S 5             /* a port that does not answer by then is blocked */

static const char usage[] =
    "usage: rdcheck [options] [HOST]\n"
    "Check what rdpipe needs on this host (RDMA devices, port states, GIDs, MTU, the\n"
    "locked-memory limit, huge pages) and, with HOST, between here and HOST: the route, an\n"
    "`rdrecv --check` started there over ssh, its port over TCP and RDMA, and a second of\n"
    "traffic each way on each. One line per check: ✓ or ✗, why, and for ✗ the fix.\n"
    "\noptions:\n"
    "      --ssh CMD          ssh command (default: ssh -o BatchMode=yes)\n"
    "      --remote-path P    rdrecv on HOST (default: rdrecv on its PATH)\n"
    "      --bind ADDR        local address to reach HOST from\n"
    "  -d, --device DEV       RDMA device to use\n"
    "      --port PORT        port of the check on HOST (default 0: a free one, as rdpipe's hops)\n"
    "      --transport T      auto (default: RDMA where both hosts have it, and TCP), tcp or rdma\n"
    "      --seconds N        traffic each way on each transport (default 1)\n"
    "      --chunk-size SIZE  the chunk rdsend will use over RDMA, for the locked memory it\n"
    "                         pins (default 4M)\n"
    "      --depth N          the depth rdsend will use (default 8)\n"
    "  -v, --verbose          what each check did, on stderr\n"
    "  -h, --help             this help\n"
    "  -V, --version          version\n"
    "\nexit codes: 0 every check passed, 1 a check failed, 2 usage error, 5 output not written\n";

struct copts {
    const char *ssh, *remote_path, *bind, *device, *port, *host;
    const char *net;         /* what the connections reach: host, or ssh's HostName for an alias */
    enum rd_transport_choice transport;
    unsigned seconds;
    uint32_t chunk, depth;
    int verbose;
};

static int failures;

/* One check's line: "✓ name: reason" or "✗ name: reason; fix: fix". */
__attribute__((format(printf, 4, 5)))
static void line(int ok, const char *name, const char *fix, const char *fmt, ...)
{
    char reason[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    if (ok)
        printf("✓ %s: %s\n", name, reason);
    else
        printf("✗ %s: %s%s%s\n", name, reason, fix ? "; fix: " : "", fix ? fix : "");
    if (fflush(stdout))
        rd_stdout_failed(errno, 0);   /* named at exit, which stdio alone cannot */
    failures += !ok;
}

static void kib(uint64_t b, char *out, size_t n)
{
    if (b >= (1u << 20))
        snprintf(out, n, "%.1f MiB", b / 1048576.0);
    else
        snprintf(out, n, "%llu KiB", (unsigned long long)(b / 1024));
}

/* The interface of the default route, for the Soft-RoCE recipe ("eth0" when unknown). */
static void default_if(char *out, size_t n)
{
    char l[256], ifn[64], dst[16];
    FILE *f = fopen("/proc/net/route", "r");
    snprintf(out, n, "eth0");
    while (f && fgets(l, sizeof l, f))
        if (sscanf(l, "%63s %15s", ifn, dst) == 2 && !strcmp(dst, "00000000")) {
            snprintf(out, n, "%s", ifn);
            break;
        }
    if (f)
        fclose(f);
}

/* "10.0.0.1 (va, rxe_a), 10.0.0.2 (vb, rxe_b)": where RDMA can be reached on this host */
static void rdma_addrs(const struct rdb_port *p, size_t np, char *out, size_t n)
{
    struct ifaddrs *ifs, *i;
    size_t used = 0;
    out[0] = '\0';
    if (getifaddrs(&ifs))
        return;
    for (size_t k = 0; k < np; k++)
        for (i = ifs; i && p[k].netdev[0]; i = i->ifa_next) {
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || strcmp(i->ifa_name, p[k].netdev))
                continue;
            char a[INET_ADDRSTRLEN];
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a, sizeof a);
            int w = snprintf(out + used, n - used, "%s%s (%s, %s)", used ? ", " : "", a, p[k].netdev, p[k].dev);
            if (w > 0 && (size_t)w < n - used)
                used += (size_t)w;
        }
    freeifaddrs(ifs);
}

/* ---- local ---- */

static size_t check_devices(struct rdb_port *ports, const struct copts *o)
{
    unsigned ndev;
    size_t np = rdb_ports(ports, RDB_MAX_PORTS, &ndev);
    char names[512] = "", ifn[64], fix[512];
    if (!np) {
        default_if(ifn, sizeof ifn);
        snprintf(fix, sizeof fix, "install the RDMA drivers (apt install rdma-core ibverbs-providers) for "
                 "a NIC that has RDMA, or to test without one make a Soft-RoCE device: modprobe rdma_rxe && "
                 "rdma link add rxe0 type rxe netdev %s", ifn);
        line(0, "RDMA devices", fix, "no RDMA device on this host (rdpipe will use TCP)");
        return 0;
    }
    size_t used = 0, usable = 0;
    for (size_t i = 0; i < np; i++) {
        if (i && !strcmp(ports[i].dev, ports[i - 1].dev))
            continue;
        int w = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : "", ports[i].dev);
        if (w > 0 && (size_t)w < sizeof names - used)
            used += (size_t)w;
    }
    for (size_t i = 0; i < np; i++) {
        if (!ports[i].open_errno) {
            usable++;
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "RDMA device %.31s", ports[i].dev);
        line(0, name, "check the permissions of /dev/infiniband/uverbs* (the rdma group, or udev rules "
             "of rdma-core) and that the provider library is installed (ibverbs-providers)",
             "cannot be opened: %s", strerror(ports[i].open_errno));
    }
    if (usable)
        line(1, "RDMA devices", NULL, "%s", names);
    if (o->device) {
        int found = 0;
        for (size_t i = 0; i < np; i++)
            found |= !strcmp(ports[i].dev, o->device);
        if (!found)
            line(0, "RDMA device", "pick one of the devices listed above with -d, or leave -d out",
                 "-d %s: no such device (there are: %s)", o->device, names);
    }
    return np;
}

static void check_ports(const struct rdb_port *ports, size_t np)
{
    for (size_t i = 0; i < np; i++) {
        const struct rdb_port *p = &ports[i];
        char name[80], fix[256];
        if (p->open_errno)
            continue;
        snprintf(name, sizeof name, "port %.31s/%u", p->dev, p->port);
        if (p->state == 4 /* IBV_PORT_ACTIVE */) {
            if (p->ethernet)
                line(1, name, NULL, "ACTIVE, Ethernet (RoCE) on %s", p->netdev[0] ? p->netdev : "?");
            else
                line(1, name, NULL, "ACTIVE, InfiniBand");
        } else if (p->ethernet) {
            snprintf(fix, sizeof fix, "ip link set %s up (and check its cable or veth peer)",
                     p->netdev[0] ? p->netdev : "DEV");
            line(0, name, fix, "%s: its network device %s is %s", p->state_name, p->netdev[0] ? p->netdev : "?",
                 p->netdev_up ? "up but has no link" : "down");
        } else if (p->state == 2 /* IBV_PORT_INIT */) {
            line(0, name, "run a subnet manager on the fabric (systemctl start opensm on one host, or "
                 "the switch's)", "INIT: the link is up but no subnet manager configured it");
        } else {
            line(0, name, "check the cable and the switch port (ibstat, ibstatus)", "%s: no link", p->state_name);
        }
        /* GIDs */
        snprintf(name, sizeof name, "GIDs %.31s/%u", p->dev, p->port);
        if (!p->ethernet) {
            if (p->ngids)
                line(1, name, NULL, "%s", p->gid_desc);
            else
                line(0, name, "check the port with ibstat; it needs to be ACTIVE", "no GID");
        } else if (p->nroce2) {
            line(1, name, NULL, "%s, %u in all", p->gid_desc, p->ngids);
        } else {
            snprintf(fix, sizeof fix, "give %s an IP address (ip addr add ADDR/PREFIX dev %s): RoCE v2 GIDs "
                     "follow the device's addresses, and rdma_cm connects by address",
                     p->netdev[0] ? p->netdev : "the network device", p->netdev[0] ? p->netdev : "DEV");
            line(0, name, fix, "no RoCE v2 GID with an IP address (%u GIDs%s%s)", p->ngids,
                 p->gid_desc[0] ? ", first: " : "", p->gid_desc);
        }
        /* MTU */
        snprintf(name, sizeof name, "MTU %.31s/%u", p->dev, p->port);
        if (!p->active_mtu) {
            line(0, name, "check the port with ibv_devinfo -v", "the active MTU is unknown");
        } else if (p->active_mtu < 1024) {
            snprintf(fix, sizeof fix, "ip link set %s mtu 1500 or more (9000 on every host and switch "
                     "gives RDMA MTU 4096)", p->netdev[0] ? p->netdev : "DEV");
            line(0, name, fix, "active MTU %u (%s MTU %u): every message is cut in tiny packets",
                 p->active_mtu, p->netdev[0] ? p->netdev : "network device", p->netdev_mtu);
        } else if (p->ethernet && p->netdev[0]) {
            line(1, name, NULL, "active %u of %u (%s MTU %u)%s", p->active_mtu, p->max_mtu, p->netdev,
                 p->netdev_mtu, p->active_mtu < p->max_mtu ? "; an MTU of 9000 on every host and switch gives 4096" : "");
        } else {
            line(1, name, NULL, "active %u of %u", p->active_mtu, p->max_mtu);
        }
    }
}

static void size_text(uint64_t b, char *out, size_t n)
{
    if (b % (1u << 20) == 0)
        snprintf(out, n, "%llu MiB", (unsigned long long)(b >> 20));
    else
        snprintf(out, n, "%llu KiB", (unsigned long long)(b >> 10));
}

static void check_memlock(const struct copts *o)
{
    int cap;
    uint64_t lim = rd_memlock_limit(&cap), need = rd_verbs_pin_bytes(o->chunk, o->depth),
             relay = rd_verbs_pin_relay(o->chunk, o->depth, 1);
    unsigned long long need_k = (need + 1023) / 1024, relay_k = (relay + 1023) / 1024;
    char mib[32], chunk[32], fix[256];
    kib(need, mib, sizeof mib);
    size_text(o->chunk, chunk, sizeof chunk);
    if (lim == UINT64_MAX) {
        line(1, "locked memory", NULL, "unlimited (ulimit -l); rdsend and rdrecv pin %llu KiB (%s) each over "
             "RDMA (chunk %s x depth %u)", need_k, mib, chunk, o->depth);
    } else if (lim >= relay) {
        line(1, "locked memory", NULL, "limit %llu KiB (ulimit -l) covers the %llu KiB (%s) that rdsend and "
             "rdrecv pin over RDMA (chunk %s x depth %u), and the %llu KiB of a relay", (unsigned long long)(lim / 1024),
             need_k, mib, chunk, o->depth, relay_k);
    } else if (lim >= need) {
        /* a relay (rdpipe's cat segment) pins both hops' rings and the upstream one twice:
         * under this limit it grants fewer frames in flight; it works, so no cross */
        line(1, "locked memory", NULL, "limit %llu KiB (ulimit -l) covers the %llu KiB (%s) that rdsend and "
             "rdrecv pin over RDMA (chunk %s x depth %u); a relay (rdpipe's cat segment) would pin %llu KiB, "
             "and grants fewer frames in flight", (unsigned long long)(lim / 1024), need_k, mib, chunk, o->depth,
             relay_k);
    } else if (cap) {
        line(1, "locked memory", NULL, "limit %llu KiB (ulimit -l) is below the %llu KiB (%s) that rdsend pins "
             "over RDMA, but this process has CAP_IPC_LOCK (root), which lifts it", (unsigned long long)(lim / 1024),
             need_k, mib);
    } else {
        snprintf(fix, sizeof fix, "ulimit -l %llu (or unlimited) in the shell that runs rdsend/rdrecv; for "
                 "good: '* - memlock %llu' in /etc/security/limits.conf, LimitMEMLOCK= for services", need_k, need_k);
        line(0, "locked memory", fix, "limit %llu KiB (ulimit -l) is below the %llu KiB (%s) that rdsend and "
             "rdrecv pin over RDMA (chunk %s x depth %u): registering their buffers fails",
             (unsigned long long)(lim / 1024), need_k, mib, chunk, o->depth);
    }
}

/* rdsend and rdrecv take their RDMA rings (2 MiB and more) from reserved huge pages when some
 * are free, else ask for transparent ones (madvise): with neither, the rings are 4 KiB pages,
 * 512 times as many for the HCA to translate and the kernel to pin. */
static void check_hugepages(void)
{
    char thp[128] = "?", l[256];
    unsigned long long free_pages = 0, size_kb = 0;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f) {
        if (fgets(thp, sizeof thp, f)) {
            char *a = strchr(thp, '['), *b = a ? strchr(a, ']') : NULL;
            if (a && b) {
                *b = '\0';
                memmove(thp, a + 1, (size_t)(b - a));
            } else {
                thp[strcspn(thp, "\n")] = '\0';
            }
        }
        fclose(f);
    }
    f = fopen("/proc/meminfo", "r");
    while (f && fgets(l, sizeof l, f)) {
        sscanf(l, "HugePages_Free: %llu", &free_pages);
        sscanf(l, "Hugepagesize: %llu", &size_kb);
    }
    if (f)
        fclose(f);
    unsigned long long free_mib = free_pages * size_kb / 1024;
    int thp_on = strcmp(thp, "always") == 0 || strcmp(thp, "madvise") == 0;
    if (thp_on || free_mib >= 2)
        line(1, "huge pages", NULL, "RDMA rings get huge pages: transparent huge pages %s, %llu MiB reserved and free",
             thp, free_mib);
    else
        line(0, "huge pages", "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled, or reserve some "
             "(sysctl vm.nr_hugepages=N)", "transparent huge pages are %s and no reserved ones are free: RDMA "
             "rings get 4 KiB pages, 512 times as many for the HCA to translate", thp);
}

/* ---- the agent over ssh ---- */

struct agent {
    pid_t pid;
    int in, out, err;        /* its stdin (we write), stdout, stderr */
    char port[16], kinds[32], range[32];
    char errtext[512];
    int status;              /* its exit status once it failed to start (-1: still running) */
    int exec_failed;         /* the ssh program itself could not be run here */
};

static int split_words(const char *s, char **argv, int max, char *buf, size_t cap)
{
    int n = 0;
    snprintf(buf, cap, "%s", s);
    for (char *t = strtok(buf, " \t"); t && n < max; t = strtok(NULL, " \t"))
        argv[n++] = t;
    return n;
}

/* HOST as ssh takes it: an alias of ~/.ssh/config (Host h1, HostName 10.0.0.11) is no name
 * the resolver knows, and rdpipe, rdcp and the completion take it. Its HostName from
 * `SSH -G HOST` into out; 0 when ssh says nothing else. */
static int ssh_hostname(const struct copts *o, char *out, size_t n)
{
    char buf[1024], *argv[40], got[8192];
    int k = split_words(o->ssh, argv, 30, buf, sizeof buf), p[2];
    if (!k || pipe2(p, O_CLOEXEC))
        return 0;
    argv[k++] = (char *)"-G";
    argv[k++] = (char *)"--";
    argv[k++] = (char *)o->host;
    argv[k] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        int nul = open("/dev/null", O_RDWR);
        dup2(nul, 0);
        dup2(p[1], 1);
        dup2(nul, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(p[1]);
    size_t len = 0;
    double deadline = rd_now() + 5;
    while (pid > 0 && len + 1 < sizeof got) {
        int left = (int)((deadline - rd_now()) * 1000);
        struct pollfd pf = { .fd = p[0], .events = POLLIN };
        if (left <= 0 || poll(&pf, 1, left) <= 0)
            break;
        ssize_t r = read(p[0], got + len, sizeof got - 1 - len);
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    got[len] = '\0';
    close(p[0]);
    int st = 0;
    if (pid > 0) {
        kill(pid, SIGKILL);   /* it is done, or it took too long */
        waitpid(pid, &st, 0);
    }
    char *h = strstr(got, "\nhostname ");
    h = h ? h + 1 : strncmp(got, "hostname ", 9) == 0 ? got : NULL;
    if (!h)
        return 0;
    h += 9;
    size_t hl = strcspn(h, "\n");
    if (!hl || hl >= n)
        return 0;
    memcpy(out, h, hl);
    out[hl] = '\0';
    return strcmp(out, o->host) != 0;
}

/* Read what fd has until a newline, deadline, or EOF (bounded). 1 if a whole line came. */
static int read_line_fd(int fd, char *out, size_t cap, double deadline)
{
    size_t got = 0;
    out[0] = '\0';
    while (got + 1 < cap) {
        int left = (int)((deadline - rd_now()) * 1000);
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        if (left <= 0 || poll(&pf, 1, left) <= 0)
            return 0;
        ssize_t n = read(fd, out + got, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        if (out[got] == '\n') {
            out[got] = '\0';
            return 1;
        }
        out[++got] = '\0';
    }
    return 0;
}

static void read_err(struct agent *a)
{
    size_t got = strlen(a->errtext);
    while (got + 1 < sizeof a->errtext) {
        struct pollfd pf = { .fd = a->err, .events = POLLIN };
        if (poll(&pf, 1, 200) <= 0)
            break;
        ssize_t n = read(a->err, a->errtext + got, sizeof a->errtext - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    a->errtext[got] = '\0';
    for (char *p = a->errtext; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = *(p + 1) ? ' ' : '\0';
}

static void agent_stop(struct agent *a)
{
    if (a->in >= 0)
        close(a->in);
    a->in = -1;
    if (a->pid > 0) {
        double until = rd_now() + 5;
        int st;
        while (waitpid(a->pid, &st, WNOHANG) == 0) {
            if (rd_now() > until) {
                kill(a->pid, SIGTERM);
                waitpid(a->pid, &st, 0);
                break;
            }
            usleep(20000);
        }
        a->pid = 0;
    }
    if (a->out >= 0)
        close(a->out);
    if (a->err >= 0)
        close(a->err);
    a->out = a->err = -1;
}

static int agent_start(const struct copts *o, const char *key, struct agent *a)
{
    char buf[1024], cmd[512], *argv[40];
    int in[2], out[2], err[2];
    memset(a, 0, sizeof *a);
    a->in = a->out = a->err = -1;
    a->status = -1;
    int n = split_words(o->ssh, argv, 30, buf, sizeof buf);
    snprintf(cmd, sizeof cmd, "%s --check --key-stdin --timeout %d%s%s %s",
             o->remote_path ? o->remote_path : "rdrecv", AGENT_TIMEOUT_S,
             o->transport == RD_T_TCP ? " --transport tcp" : o->transport == RD_T_RDMA ? " --transport rdma" : "",
             o->verbose ? " -v" : "", o->port);
    argv[n++] = (char *)"--";
    argv[n++] = (char *)o->host;
    argv[n++] = cmd;
    argv[n] = NULL;
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
        snprintf(a->errtext, sizeof a->errtext, "pipe: %s", strerror(errno));
        return -1;
    }
    if (o->verbose)
        fprintf(stderr, "rdcheck: running %s ... -- %s '%s'\n", argv[0], o->host, cmd);
    a->pid = fork();
    if (a->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        execvp(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    a->in = in[1];
    a->out = out[0];
    a->err = err[0];
    if (a->pid < 0) {
        snprintf(a->errtext, sizeof a->errtext, "fork: %s", strerror(errno));
        agent_stop(a);
        return -1;
    }
    dprintf(a->in, "%s\n", key);   /* the key goes over the channel, never into an argv */
    char l[256];
    struct rdb_ready r;
    if (!read_line_fd(a->out, l, sizeof l, rd_now() + AGENT_START_MS / 1000.0) || rdb_ready_parse(l, &r)) {
        read_err(a);
        /* its status tells who failed: 255 ssh, 127/126 the remote command (the fix) */
        int st, got = 0;
        for (int i = 0; i < 20 && (got = (int)waitpid(a->pid, &st, WNOHANG)) == 0; i++)
            usleep(10000);   /* its output's end comes just before its exit */
        if (got == a->pid) {
            a->pid = 0;
            a->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        char ours[300];
        snprintf(ours, sizeof ours, "cannot run %s: ", argv[0]);
        a->exec_failed = a->status == 127 && !strncmp(a->errtext, ours, strlen(ours));
        if (!a->errtext[0] && l[0]) {   /* what it said is shown, so made printable first */
            char said[200];
            rdb_text_clean((const uint8_t *)l, strlen(l), said, sizeof said);
            snprintf(a->errtext, sizeof a->errtext, "it said '%s', not '%s'", said, READY_FORM);
        } else if (!a->errtext[0] && a->status >= 0) {   /* an ssh that ended without a word (BatchMode) */
            snprintf(a->errtext, sizeof a->errtext, "%s exited with status %d and said nothing", argv[0], a->status);
        } else if (!a->errtext[0]) {
            snprintf(a->errtext, sizeof a->errtext, "no answer within 30 s");
        }
        agent_stop(a);
        return -1;
    }
    snprintf(a->port, sizeof a->port, "%s", r.port);
    snprintf(a->kinds, sizeof a->kinds, "%s", r.kinds);
    snprintf(a->range, sizeof a->range, "%s", r.range);
    return 0;
}

/* ---- with HOST ---- */

static int find_port(const struct rdb_port *p, size_t np, const char *dev, unsigned port)
{
    for (size_t i = 0; i < np; i++)
        if (!strcmp(p[i].dev, dev) && p[i].port == port)
            return (int)i;
    return -1;
}

static void traffic(struct rdb_conn *c, const char *kind, const struct copts *o, uint32_t size)
{
    char name[64], a[32];
    struct rdb_result r;
    unsigned depth = c->agreed.depth < 8 ? c->agreed.depth : 8;
    kib(size, a, sizeof a);
    snprintf(name, sizeof name, "%s here → %s", kind, o->host);
    int rc = rdb_point(c, size, depth, o->seconds, o->seconds * 4.0 + 5, 1, &r);
    if (rc)
        line(0, name, "see the line above; run rdbench against HOST for more", "%s", rd_error_msg());
    else
        line(1, name, NULL, "%.3f GB/s (%.1f s, %s messages at depth %u)", r.bps / 1e9, r.seconds, a, depth);
    rd_error_clear();
    if (rc)
        return;
    snprintf(name, sizeof name, "%s %s → here", kind, o->host);
    rc = rdb_reverse(c, size, depth, o->seconds * 1000, &r);
    if (rc)
        line(0, name, "see the line above; run rdbench against HOST for more", "%s", rd_error_msg());
    else
        line(1, name, NULL, "%.3f GB/s (%.1f s, %s messages at depth %u)", r.bps / 1e9, r.seconds, a, depth);
    rd_error_clear();
}

/* What rdsend here plans for this connection's link when no option says (run/rd_plan): the
 * speed it reads there, and the connections and lanes that follow. A link that reports no
 * speed, or less than it carries, is a reason for a slow transfer that no error names. */
static void plan_line(const char *kind, const char *host, struct rd_transport *tp, int rdma)
{
    char link[160], name[96];
    uint64_t rate = rd_transport_link_rate(tp, link, sizeof link);
    unsigned cores = rd_plan_cores();
    struct rd_plan_in in = { .link_rate = rate, .cores = cores };
    uint32_t lanes = rd_plan_lanes(&in), streams = rd_plan_streams(rate, rdma, cores);
    char speed[64];
    if (rate)
        snprintf(speed, sizeof speed, "at %.0f Gb/s", (double)rate * 8 / 1e9);
    else
        snprintf(speed, sizeof speed, "reports no speed");
    snprintf(name, sizeof name, "%s plan for %s", kind, host);
    line(1, name, NULL, "%s %s, %u core%s: rdsend here asks for %u %s%s and runs %u lane%s (unless --streams%s "
         "or --lanes say otherwise)", link[0] ? link : "the link", speed, cores, cores == 1 ? "" : "s", streams,
         rdma ? "queue pair" : "connection", streams == 1 ? "" : "s", lanes, lanes == 1 ? "" : "s",
         rdma ? ", rails" : "");
}

/* Connect over one transport: the port check, the MTU comparison, the traffic. 1 if the
 * agent could be reached. */
static int over(const struct copts *o, const struct rd_key *key, const struct agent *ag, int rdma,
                 const struct rdb_port *ports, size_t np, const char *route_dev, unsigned route_port)
{
    struct rd_reach reach = { .host = o->net, .port = ag->port, .bind = o->bind, .device = o->device,
                              .timeout_s = CONNECT_S, .verbose = o->verbose,
                              .transport = rdma ? RD_T_RDMA : RD_T_TCP };
    const char *kind = rdma ? "RDMA" : "TCP";
    uint32_t size = rdma ? 1u << 20 : RD_TCP_DEFAULT_CHUNK;
    char name[64], fix[512];
    snprintf(name, sizeof name, "%s port %s on %s", kind, ag->port, o->host);
    struct rdb_conn c;
    int rc = rdb_connect(&reach, key, size, 8, &c);
    if (rc) {
        const char *msg = rd_error_msg();
        if (rdma)
            snprintf(fix, sizeof fix, "let RoCE v2 through between the hosts (UDP port 4791) and check "
                     "with rping -s on %s and rping -c -a %s here", o->host, o->host);
        else if (strstr(msg, "refused"))
            snprintf(fix, sizeof fix, "a firewall on %s rejects TCP port %s, or the address is not %s's: "
                     "open TCP ports %s there (its ip_local_port_range, where rdpipe's hops listen)",
                     o->host, ag->port, o->host, ag->range);
        else
            snprintf(fix, sizeof fix, "open TCP ports %s on %s (its ip_local_port_range, where rdpipe's hops "
                     "listen), e.g. nft add rule inet filter input tcp dport %s accept", ag->range, o->host, ag->range);
        line(0, name, fix, "%s%s", msg, rdma || strstr(msg, "refused") ? "" : " (a firewall drops it?)");
        rd_error_clear();
        return 0;
    }
    line(1, name, NULL, "reachable, key accepted (%s)", c.tp->desc);
    plan_line(kind, o->host, c.tp, rdma);
    struct rdb_info info;
    if (rdma && rdb_get_info(&c, &info) == RD_OK) {
        /* the MTU of this connection at both ends: RoCE drops what is larger than a hop takes */
        int k = find_port(ports, np, route_dev, route_port);
        unsigned here = k >= 0 ? ports[k].active_mtu : 0, there = 0;
        const char *dev = "?";
        for (unsigned i = 0; i < info.ndev; i++)
            if (strstr(info.desc, info.dev[i].name)) {
                there = info.dev[i].mtu;
                dev = info.dev[i].name;
            }
        snprintf(name, sizeof name, "MTU here and on %s", o->host);
        if (!here || !there)
            line(1, name, NULL, "not compared (here %u, %s %u)", here, o->host, there);
        else if (here == there)
            line(1, name, NULL, "%u at both ends (%s here, %s there)", here, route_dev, dev);
        else {
            snprintf(fix, sizeof fix, "give the network devices under %s here and %s on %s the same MTU, "
                     "and every switch between them at least that", route_dev, dev, o->host);
            line(0, name, fix, "%u here (%s), %u on %s (%s): RDMA packets larger than a hop takes are lost",
                 here, route_dev, there, o->host, dev);
        }
    }
    rd_error_clear();
    traffic(&c, kind, o, size);
    rdb_close(&c, 0);
    return 1;
}

static void check_host(const struct copts *o, const struct rdb_port *ports, size_t np)
{
    char dev[64], ifname[64], addr[64], why[256], fix[1024], addrs[512];
    unsigned port = 0;
    int route = rdb_rdma_route(o->net, o->bind, 2000, dev, sizeof dev, &port, ifname, sizeof ifname, addr,
                               sizeof addr, why, sizeof why);
    if (!addr[0]) {
        snprintf(fix, sizeof fix, "check the name (getent hosts %s) or give its address", o->host);
        line(0, "address", fix, "%s", why);
        return;
    }
    char via[300] = "";
    if (strcmp(o->net, o->host))
        snprintf(via, sizeof via, " (ssh's HostName %s)", o->net);
    line(1, "address", NULL, "%s is %s%s%s%s", o->host, addr, via, ifname[0] ? ", reached through " : "", ifname);
    if (o->transport != RD_T_TCP) {
        if (route == 0) {
            line(1, "RDMA route", NULL, "%s is reached through %s port %u%s%s", addr, dev, port,
                 ifname[0] ? " on " : "", ifname);
        } else if (!np) {
            line(0, "RDMA route", "see \"RDMA devices\" above", "no RDMA device here: rdpipe reaches %s over TCP", addr);
        } else {
            rdma_addrs(ports, np, addrs, sizeof addrs);
            snprintf(fix, sizeof fix, "give %s's address on the RDMA network (this host's RDMA addresses: %s), "
                     "or make an RDMA device on %s (rdma link add rxe0 type rxe netdev %s, for Soft-RoCE)",
                     o->host, addrs[0] ? addrs : "none with IPv4", ifname[0] ? ifname : "that interface",
                     ifname[0] ? ifname : "DEV");
            line(0, "RDMA route", fix, "%s is reached through %s, which has no RDMA device", addr,
                 ifname[0] ? ifname : "an interface");
        }
    }
    /* the agent */
    uint8_t raw[32];
    char key[65];
    struct rd_key k;
    if (rd_random(raw, sizeof raw)) {
        line(0, "agent", "check /dev/urandom", "no randomness for a key");
        return;
    }
    for (int i = 0; i < 32; i++)
        snprintf(key + 2 * i, 3, "%02x", raw[i]);
    rd_key_derive(&k, key, 64);
    struct agent ag;
    if (agent_start(o, key, &ag)) {
        const char *e = ag.errtext;
        if (ag.exec_failed)   /* here, not there */
            snprintf(fix, sizeof fix, "give --ssh a program that runs here (apt install openssh-client for ssh)");
        else if (!strncmp(e, "rdrecv: ", 8) || strstr(e, READY_FORM))   /* it ran, and said why it cannot serve */
            snprintf(fix, sizeof fix, "see rdrecv's message; rdcheck needs the rdrecv of the same rdpipe "
                     "version on %s", o->host);
        else if (ag.status == 127 || ag.status == 126)   /* the remote shell: not found, cannot run */
            snprintf(fix, sizeof fix, "install rdpipe on %s, or give its path with --remote-path", o->host);
        else
            snprintf(fix, sizeof fix, "check that `%s %s true` works without a password prompt (keys in "
                     "ssh-agent, ssh-copy-id %s), or pass --ssh", o->ssh, o->host, o->host);
        line(0, "agent", fix, "could not start rdrecv --check on %s: %s", o->host, e);
        rd_key_wipe(&k);
        return;
    }
    line(1, "agent", NULL, "rdrecv --check listens on %s port %s (%s)", o->host, ag.port, ag.kinds);
    int remote_rdma = strstr(ag.kinds, "rdma") != NULL, reached = 0;
    if (o->transport != RD_T_TCP) {
        if (!remote_rdma) {
            char name[300];
            snprintf(name, sizeof name, "RDMA on %s", o->host);
            snprintf(fix, sizeof fix, "run rdcheck on %s itself: its first lines say what it lacks", o->host);
            line(0, name, fix, "%s has no RDMA device: its rdrecv listens on TCP only", o->host);
        }
        else if (route == 0)
            reached |= over(o, &k, &ag, 1, ports, np, dev, port) << 1;
    }
    if (o->transport != RD_T_RDMA)
        reached |= over(o, &k, &ag, 0, ports, np, dev, port);
    /* BYE on a connection of its own, over a transport that worked, so the agent exits now;
     * when none did, closing its channel (agent_stop) ends it */
    if (reached) {
        struct rd_reach reach = { .host = o->net, .port = ag.port, .bind = o->bind, .timeout_s = CONNECT_S,
                                  .transport = reached & 1 ? RD_T_TCP : RD_T_RDMA };
        struct rdb_conn c;
        if (rdb_connect(&reach, &k, RD_MIN_CHUNK, 1, &c) == RD_OK)
            rdb_close(&c, 1);
        rd_error_clear();
    }
    rd_key_wipe(&k);
    agent_stop(&ag);
}

/* ---- command line ---- */

enum { C_SSH = 256, C_REMOTE, C_BIND, C_PORT, C_TRANSPORT, C_SECONDS, C_CHUNK, C_DEPTH };

static const struct option check_opts[] = {
    { "ssh", required_argument, NULL, C_SSH },
    { "remote-path", required_argument, NULL, C_REMOTE },
    { "bind", required_argument, NULL, C_BIND },
    { "device", required_argument, NULL, 'd' },
    { "port", required_argument, NULL, C_PORT },
    { "transport", required_argument, NULL, C_TRANSPORT },
    { "seconds", required_argument, NULL, C_SECONDS },
    { "chunk-size", required_argument, NULL, C_CHUNK },
    { "depth", required_argument, NULL, C_DEPTH },
    { "verbose", no_argument, NULL, 'v' },
    { "help", no_argument, NULL, 'h' },
    { "version", no_argument, NULL, 'V' },
    { NULL, 0, NULL, 0 },
};

/* a host or path that goes to ssh and a remote shell: no option look-alike, no blanks or
 * shell syntax */
static int safe_word(const char *s, const char *extra)
{
    if (!*s || *s == '-')
        return 0;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr(extra, *p)))
            return 0;
    return 1;
}

static int parse_check(int argc, char **argv, struct copts *o)
{
    memset(o, 0, sizeof *o);
    o->ssh = "ssh -o BatchMode=yes";
    o->port = "0";
    o->seconds = 1;
    o->chunk = RD_DEFAULT_CHUNK;
    o->depth = RD_DEFAULT_DEPTH;
    uint64_t v;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":vd:hV", check_opts, NULL)) != -1) {
        switch (c) {
        case C_SSH: o->ssh = optarg; break;
        case C_REMOTE:
            if (!safe_word(optarg, "/._+-") || strlen(optarg) > 200)
                return rd_fail(RD_EUSAGE, "--remote-path: letters, digits and / . _ + - only, not '%s'", optarg);
            o->remote_path = optarg;
            break;
        case C_BIND: o->bind = optarg; break;
        case 'd': o->device = optarg; break;
        case C_PORT: {
            char *end;
            long p = strtol(optarg, &end, 10);
            if (!*optarg || *end || p < 0 || p > 65535)
                return rd_fail(RD_EUSAGE, "invalid port '%s'", optarg);
            o->port = optarg;
            break;
        }
        case C_TRANSPORT:
            if (!strcmp(optarg, "auto")) o->transport = RD_T_AUTO;
            else if (!strcmp(optarg, "tcp")) o->transport = RD_T_TCP;
            else if (!strcmp(optarg, "rdma")) o->transport = RD_T_RDMA;
            else return rd_fail(RD_EUSAGE, "--transport must be auto, tcp or rdma, not '%s'", optarg);
            break;
        case C_SECONDS:
            if (rd_parse_size(optarg, &v) || v < 1 || v > 10)
                return rd_fail(RD_EUSAGE, "--seconds must be from 1 to 10, not '%s'", optarg);
            o->seconds = (unsigned)v;
            break;
        case C_CHUNK:
            if (rd_parse_size(optarg, &v) || v < RD_MIN_CHUNK || v > RD_MAX_CHUNK)
                return rd_fail(RD_EUSAGE, "--chunk-size must be a size from 4K to 256M, not '%s'", optarg);
            o->chunk = (uint32_t)v;
            break;
        case C_DEPTH:
            if (rd_parse_size(optarg, &v) || v < 1 || v > RD_MAX_DEPTH)
                return rd_fail(RD_EUSAGE, "--depth must be from 1 to %u, not '%s'", RD_MAX_DEPTH, optarg);
            o->depth = (uint32_t)v;
            break;
        case 'v': o->verbose++; break;
        case 'h':
            fputs(usage, stdout);
            return RD_CLI_EXIT_OK;
        case 'V':
            rd_print_version(stdout, "rdcheck");
            return RD_CLI_EXIT_OK;
        default: {
            char what[256];
            rd_opt_refused(what, sizeof what, c, argv, optind, optopt);
            return rd_fail(RD_EUSAGE, "%s (try 'rdcheck --help')", what);
        }
        }
    }
    if (argc - optind > 1)
        return rd_fail(RD_EUSAGE, "too many arguments: '%s' (try 'rdcheck --help')", argv[optind + 1]);
    if (argc - optind == 1) {
        o->host = argv[optind];
        if (!safe_word(o->host, ".-_:[]%@") || strlen(o->host) > 255)
            return rd_fail(RD_EUSAGE, "'%s' is not a host name or address", o->host);
    }
    return RD_OK;
}

int rdb_check_main(int argc, char **argv)
{
    struct copts o;
    rd_set_progname("rdcheck");
    signal(SIGPIPE, SIG_IGN);
    int rc = parse_check(argc, argv, &o);
    if (rc == RD_CLI_EXIT_OK)
        return 0;
    if (rc) {
        rd_report();
        return RDB_CHECK_USAGE;
    }
    char alias[256];
    o.net = o.host;
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
    if (o.host && getaddrinfo(o.host, NULL, &hints, &ai) != 0 && ssh_hostname(&o, alias, sizeof alias))
        o.net = alias;
    if (ai)
        freeaddrinfo(ai);
    struct rdb_port ports[RDB_MAX_PORTS];
    size_t np = 0;
    if (o.transport == RD_T_TCP) {   /* "checks that one only": RDMA's needs are no failure */
        line(1, "RDMA", NULL, "not checked (--transport tcp)");
    } else {
        np = check_devices(ports, &o);
        check_ports(ports, np);
        check_memlock(&o);
        check_hugepages();
    }
    if (o.host)
        check_host(&o, ports, np);
    return failures ? RDB_CHECK_FAILED : 0;
}

/* ---- rdrecv --check ---- */

int rdb_is_check_agent(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--check"))
            return 1;
    return 0;
}

/* --key-stdin: the first line of stdin is the key (rdcheck writes it into the ssh channel).
 * Read a byte at a time, so nothing after it is taken from the channel, whose end the agent
 * watches; handed to the usual key rules as RDPIPE_KEY, which is removed once parsed. */
static int key_from_stdin(void)
{
    char key[1024];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(STDIN_FILENO, key + n, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || key[n] == '\n')
            break;
        if (++n == sizeof key - 1)
            return rd_fail(RD_EUSAGE, "--key-stdin: the key is longer than %zu bytes", sizeof key - 2);
    }
    key[n] = '\0';
    if (n && key[n - 1] == '\r')
        key[--n] = '\0';
    if (!n)
        return rd_fail(RD_EUSAGE, "--key-stdin: no key on stdin");
    int rc = setenv("RDPIPE_KEY", key, 1) ? rd_fail(RD_EIO, "out of memory") : RD_OK;
    memset(key, 0, sizeof key);
    return rc;
}

int rdb_check_agent_main(int argc, char **argv)
{
    rd_set_progname("rdrecv");
    signal(SIGPIPE, SIG_IGN);
    char **av = calloc((size_t)argc + 1, sizeof *av);
    int ac = 0, dashdash = 0, key_stdin = 0;
    if (!av) {
        rd_fail(RD_EIO, "out of memory");
        return rd_report();
    }
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            dashdash = 1;
        if (!dashdash && !strcmp(argv[i], "--key-stdin"))
            key_stdin = 1;
        else if (dashdash || strcmp(argv[i], "--check"))
            av[ac++] = argv[i];
    }
    struct rd_opts o;
    int rc = RD_OK;
    if (key_stdin)
        rc = key_from_stdin();
    if (!rc)
        rc = rd_cli_parse(ac, av, 0, &o);
    else
        memset(&o, 0, sizeof o);
    if (key_stdin)
        unsetenv("RDPIPE_KEY");
    free(av);
    if (rc == RD_CLI_EXIT_OK) {
        rd_cli_free(&o);
        return 0;
    }
    if (!rc && o.file)
        rc = rd_fail(RD_EUSAGE, "rdrecv --check takes no FILE: it serves rdcheck, it writes nothing");
    if (!rc && (o.relay_fd >= 0 || o.ready_fd >= 0))
        rc = rd_fail(RD_EUSAGE, "rdrecv --check prints its port itself: no --ready-fd or --relay-fd");
    struct rd_key key;
    if (!rc && rd_key_derive(&key, o.key, o.key_len))
        rc = rd_fail(RD_EIO, "libcrypto cannot derive the key");
    if (!rc) {
        struct rd_reach reach = rd_reach_of(&o);
        if (reach.timeout_s < 0)
            reach.timeout_s = AGENT_TIMEOUT_S;
        /* over ssh, stdin is the channel: when rdcheck goes, it ends, and so does this */
        struct stat st;
        int watch = fstat(STDIN_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) ? STDIN_FILENO : -1;
        struct rdb_server_cfg cfg = { .once = 1, .verbose = o.verbose, .ready_line = "ready %u %s %s\n",
                                      .watch_fd = watch };
        rc = rdb_serve(&reach, &key, &cfg);
        rd_key_wipe(&key);
    }
    rd_cli_free(&o);
    if (rc)
        rd_report();
    return rc;
}
