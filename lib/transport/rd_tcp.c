/* rd_tcp.c - the TCP transport: length-prefixed frames over one stream socket.
 *
 * Each frame travels as a 4-byte little-endian length followed by the frame, sent with one
 * writev and read straight into a pool buffer. Socket buffers are left to Linux autotuning
 * (setting SO_SNDBUF/SO_RCVBUF would cap them at rmem_max/wmem_max, far below what
 * autotuning reaches). Keepalive and TCP_USER_TIMEOUT make a dead or unreachable peer an
 * error within seconds even when no data is moving; a live peer that only reads slowly (its
 * window closed) is waited for, however long (rd_tcp_watch.h).
 */
#include "util/rd_error.h"
#include "util/rd_fdlimit.h"
#include "wire/rd_proto.h"
#include "transport/rd_link.h"
#include "transport/rd_pool.h"
#include "transport/rd_tcp.h"
#include "transport/rd_tcp_watch.h"
#include "transport/rd_transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define TCP_CTRL_FRAMES 4
#define TCP_CONNECT_DEFAULT_MS (RD_CONNECT_RETRY_S * 1000)   /* retry "connection refused" */
#define TCP_NEXT_ADDR_MS 250   /* a new attempt at the next address while one is in flight (RFC 8305) */
#define TCP_MAX_ADDRS 16       /* addresses of one name tried (getaddrinfo may give many) */
#define TCP_USER_TIMEOUT_MS 20000

struct tcp_conn {
    int fd;
    struct rd_pool send_pool, recv_pool;
    int have_send_pool, have_recv_pool;
    atomic_int down;   /* shutdown() was called */
    atomic_int recv_shut;   /* shut_recv() was called: no more frames are read */
    struct rd_tcp_watched watch;   /* a closed window is waited for, a silent peer ended */
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rd_sockaddr_str(const struct sockaddr *sa, char *out, size_t n)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const void *)sa;
        inet_ntop(AF_INET, &s4->sin_addr, host, sizeof host);
        port = ntohs(s4->sin_port);
        snprintf(out, n, "%s:%u", host, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const void *)sa;
        inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof host);
        port = ntohs(s6->sin6_port);
        if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
            snprintf(out, n, "%s:%u", host + 7, port);
        else
            snprintf(out, n, "[%s]:%u", host, port);
    } else {
        snprintf(out, n, "?");
    }
}

/* TCP_USER_TIMEOUT_MS, or RDPIPE_TCP_USER_TIMEOUT_MS where a test shortens it */
static int user_timeout_ms(void)
{
    const char *e = getenv("RDPIPE_TCP_USER_TIMEOUT_MS");
    int ms = e && *e ? atoi(e) : 0;
    return ms > 0 ? ms : TCP_USER_TIMEOUT_MS;
}

/* returns the TCP_USER_TIMEOUT it set */
static int tune_socket(int fd)
{
    int one = 1, idle = 5, intvl = 2, cnt = 3, uto = user_timeout_ms();
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &uto, sizeof uto);
    return uto;
}

static int conn_init(struct rd_transport *tp, int fd)
{
    struct tcp_conn *c = calloc(1, sizeof *c);
    if (!c)
        return rd_fail(RD_EIO, "out of memory");
    c->fd = fd;
    if (rd_pool_init(&c->send_pool, TCP_CTRL_FRAMES, RD_CTRL_FRAME, tp) ||
        rd_pool_init(&c->recv_pool, TCP_CTRL_FRAMES, RD_CTRL_FRAME, tp)) {
        free(c);
        return rd_fail(RD_EIO, "out of memory");
    }
    c->have_send_pool = c->have_recv_pool = 1;
    tp->priv = c;
    rd_tcp_watch_add(&c->watch, fd, tune_socket(fd));
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
        rd_sockaddr_str((struct sockaddr *)&ss, tp->peer, sizeof tp->peer);
    snprintf(tp->desc, sizeof tp->desc, "tcp");
    return RD_OK;
}

/* ---- listening ---- */

static int tcp_listen(struct rd_transport *lis, const struct rd_addr *a)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                              .ai_flags = AI_PASSIVE }, *res = NULL;
    int fd = -1, err = 0;
    int rc = getaddrinfo(a->bind, a->port, &hints, &res);
    if (rc)
        return rd_fail(RD_ECONNECT, "cannot listen on %s port %s: %s", a->bind ? a->bind : "*",
                       a->port, gai_strerror(rc));
    /* without a bind address prefer one dual-stack IPv6 socket: it serves IPv4 too */
    struct addrinfo *order[16];
    int n = 0;
    for (struct addrinfo *ai = res; ai && n < 16; ai = ai->ai_next)
        if (ai->ai_family == AF_INET6) order[n++] = ai;
    for (struct addrinfo *ai = res; ai && n < 16; ai = ai->ai_next)
        if (ai->ai_family != AF_INET6) order[n++] = ai;
    for (int i = 0; i < n && fd < 0; i++) {
        struct addrinfo *ai = order[i];
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int one = 1, zero = 0;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (ai->ai_family == AF_INET6)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, SOMAXCONN)) {
            err = errno;
            close(fd);
            fd = -1;
            if (err == EADDRINUSE)   /* someone has the port on one family: not IPv4 alone, */
                break;               /* where IPv6 senders would reach that someone */
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        if (err == EADDRINUSE)
            return rd_fail(RD_ECONNECT, "port %s is already in use", a->port);
        return rd_fail(RD_ECONNECT, "cannot listen on %s port %s: %s", a->bind ? a->bind : "*",
                       a->port, strerror(err));
    }
    struct tcp_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return rd_fail(RD_EIO, "out of memory");
    }
    c->fd = fd;
    lis->priv = c;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        lis->local_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                         : ((struct sockaddr_in *)&ss)->sin_port);
    return RD_OK;
}

static int tcp_listen_fd(struct rd_transport *lis)
{
    return ((struct tcp_conn *)lis->priv)->fd;
}

static int tcp_accept(struct rd_transport *lis, struct rd_transport **out, int timeout_ms)
{
    struct tcp_conn *l = lis->priv;
    struct pollfd pfd = { .fd = l->fd, .events = POLLIN };
    int rc = poll(&pfd, 1, timeout_ms);
    if (rc == 0)
        return rd_fail(RD_ECONNECT, "timed out waiting for a sender");
    if (rc < 0)
        return rd_fail(RD_ECONNECT, "poll: %s", strerror(errno));
    int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == EMFILE)   /* this process's own trouble (exit 5), not the network's */
            return rd_fail(RD_EIO, "cannot take a connection: out of open files (ulimit -n is %llu)", rd_fd_limit());
        return rd_fail(RD_ECONNECT, "accept: %s", strerror(e));
    }
    struct rd_transport *tp = rd_transport_new(&rd_tcp_ops);
    if (!tp) {
        close(fd);
        return rd_fail(RD_EIO, "out of memory");
    }
    int e = conn_init(tp, fd);
    if (e) {
        close(fd);
        free(tp);
        return e;
    }
    *out = tp;
    return RD_OK;
}

/* ---- connecting ---- */

/* One non-blocking connect attempt bounded by deadline; returns 0 or an errno value. */
/* One connection attempt, non-blocking: its socket (connect in flight or done), or -1 and
 * *err. */
static int start_attempt(const struct addrinfo *ai, const struct sockaddr *src, socklen_t srclen, int *err)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        *err = errno;
        return -1;
    }
    if ((src && bind(fd, src, srclen)) || (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS)) {
        *err = errno;
        close(fd);
        return -1;
    }
    return fd;
}

/* Each address of the host in turn, a new attempt every TCP_NEXT_ADDR_MS while the earlier
 * ones are still in flight (RFC 8305's connection attempt delay), the first to connect wins:
 * an address that drops SYNs (a dead AAAA record, a black-holed interface) costs the others
 * a quarter second, not the whole --timeout. 0 and *fd_out, or an errno (ETIMEDOUT when one
 * was still in flight at the deadline); *won: the address that answered. */
static int connect_round(const struct addrinfo *res, const struct sockaddr *src, socklen_t srclen,
                         long long deadline, int *fd_out, const struct addrinfo **won)
{
    const struct addrinfo *addr[TCP_MAX_ADDRS];
    struct pollfd pfd[TCP_MAX_ADDRS];
    int owner[TCP_MAX_ADDRS], n = 0, next = 0, live = 0, err = ETIMEDOUT, got_err = 0;
    for (const struct addrinfo *ai = res; ai && n < TCP_MAX_ADDRS; ai = ai->ai_next)
        addr[n++] = ai;
    long long next_start = 0;
    for (;;) {
        long long now = now_ms();
        if (next < n && (live == 0 || now >= next_start)) {
            int e = 0, fd = start_attempt(addr[next], src, srclen, &e);
            if (fd >= 0) {
                pfd[live] = (struct pollfd){ .fd = fd, .events = POLLOUT };
                owner[live++] = next;
                next_start = now + TCP_NEXT_ADDR_MS;
            } else {
                err = e;
                got_err = 1;
            }
            next++;
            continue;
        }
        if (!live)
            break;
        long long wait = deadline > now ? deadline - now : 0;   /* --timeout 0: one look */
        if (next < n && next_start - now < wait)
            wait = next_start - now > 0 ? next_start - now : 0;
        if (poll(pfd, (nfds_t)live, (int)wait) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < live; i++) {
            if (!pfd[i].revents)
                continue;
            int soerr = 0;
            socklen_t sl = sizeof soerr;
            getsockopt(pfd[i].fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
            if (!soerr) {
                for (int k = 0; k < live; k++)
                    if (k != i)
                        close(pfd[k].fd);
                fcntl(pfd[i].fd, F_SETFL, fcntl(pfd[i].fd, F_GETFL) & ~O_NONBLOCK);
                *fd_out = pfd[i].fd;
                *won = addr[owner[i]];
                return 0;
            }
            close(pfd[i].fd);
            err = soerr;
            got_err = 1;
            pfd[i] = pfd[live - 1];
            owner[i] = owner[live - 1];
            live--;
            i--;
        }
        if (now_ms() >= deadline)
            break;
    }
    for (int i = 0; i < live; i++)
        close(pfd[i].fd);
    return live || !got_err ? ETIMEDOUT : err;
}

static int tcp_connect(struct rd_transport *tp, const struct rd_addr *a)
{
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL,
                    *src = NULL;
    int rc;
    if (a->bind) {   /* first: the host's addresses are then those of the bind address's family */
        struct addrinfo sh = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
        rc = getaddrinfo(a->bind, NULL, &sh, &src);
        if (rc)
            return rd_fail(RD_ECONNECT, "cannot use bind address '%s': %s", a->bind, gai_strerror(rc));
        hints.ai_family = src->ai_family;
    }
    rc = getaddrinfo(a->host, a->port, &hints, &res);
    if (rc) {
        if (src)
            freeaddrinfo(src);
        if (a->bind && (rc == EAI_ADDRFAMILY || rc == EAI_NONAME || rc == EAI_NODATA || rc == EAI_FAMILY))
            return rd_fail(RD_ECONNECT, "cannot reach host '%s' from bind address '%s': it has no %s address",
                           a->host, a->bind, hints.ai_family == AF_INET6 ? "IPv6" : "IPv4");
        return rd_fail(RD_ECONNECT, "cannot resolve host '%s': %s", a->host, gai_strerror(rc));
    }
    long long deadline = now_ms() + (a->timeout_ms >= 0 ? a->timeout_ms : TCP_CONNECT_DEFAULT_MS);
    int fd = -1, err = 0;
    const struct addrinfo *won = NULL;
    for (;;) {
        err = connect_round(res, src ? src->ai_addr : NULL, src ? src->ai_addrlen : 0, deadline, &fd, &won);
        /* refused: the receiver may simply not be listening yet; keep trying until the deadline */
        if (fd >= 0 || err != ECONNREFUSED || now_ms() + 100 >= deadline)
            break;
        struct timespec pause = { 0, 100 * 1000000L };
        nanosleep(&pause, NULL);
    }
    char peer[sizeof tp->peer] = "";
    if (fd >= 0)   /* named now: a connection reset before conn_init has no peer name to ask */
        rd_sockaddr_str(won->ai_addr, peer, sizeof peer);
    freeaddrinfo(res);
    if (src)
        freeaddrinfo(src);
    if (fd < 0) {
        if (err == ETIMEDOUT)
            return rd_fail(RD_ECONNECT, "cannot connect to %s port %s: timed out", a->host, a->port);
        if (a->bind && (err == EADDRNOTAVAIL || err == EINVAL))
            return rd_fail(RD_ECONNECT, "cannot connect to %s port %s from bind address '%s': %s", a->host, a->port,
                           a->bind, strerror(err));
        return rd_fail(RD_ECONNECT, "cannot connect to %s port %s: %s", a->host, a->port, strerror(err));
    }
    int e = conn_init(tp, fd);
    if (e)
        close(fd);
    else if (!tp->peer[0])
        snprintf(tp->peer, sizeof tp->peer, "%s", peer);
    return e;
}

/* ---- data path ---- */

static int tcp_setup_ring(struct rd_transport *tp, enum rd_dir dir, size_t frame_size, unsigned depth)
{
    struct tcp_conn *c = tp->priv;
    struct rd_pool *p = dir == RD_DIR_SEND ? &c->send_pool : &c->recv_pool;
    /* the control frames are all back in the pool by now: the handshake is strictly
     * request/response, so the pool can simply be replaced */
    rd_pool_destroy(p);
    if (rd_pool_init(p, depth, frame_size, tp))
        return rd_fail(RD_EIO, "cannot allocate %u buffers of %zu bytes", depth, frame_size);
    return RD_OK;
}

static int tcp_get_send_buf(struct rd_transport *tp, struct rd_buf **out)
{
    struct tcp_conn *c = tp->priv;
    *out = rd_pool_get(&c->send_pool);
    return *out ? RD_OK : rd_fail_after(RD_ESTREAM, "transfer aborted");
}

static int io_error(struct rd_transport *tp, int err, const char *what)
{
    struct tcp_conn *c = tp->priv;
    if (atomic_load(&c->watch.silent))
        return rd_fail(RD_ESTREAM, "connection to %s timed out: the peer stopped answering while its receive window was closed",
                       tp->peer);
    if (atomic_load(&c->down))
        return rd_fail_after(RD_ESTREAM, "transfer aborted");
    tp->lost = err == 0 || err == ECONNRESET || err == EPIPE;
    if (err == 0)
        return rd_fail(RD_ESTREAM, "connection to %s closed by peer %s", tp->peer, what);
    if (err == ETIMEDOUT)
        return rd_fail(RD_ESTREAM, "connection to %s timed out %s", tp->peer, what);
    return rd_fail(RD_ESTREAM, "connection to %s lost %s: %s", tp->peer, what, strerror(err));
}

/* All of iov, however many writev calls it takes. */
static int writev_all(struct rd_transport *tp, struct iovec *iov, int iovcnt)
{
    struct tcp_conn *c = tp->priv;
    int idx = 0;
    while (idx < iovcnt) {
        ssize_t n = writev(c->fd, iov + idx, iovcnt - idx);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EFAULT ? rd_fail(RD_EIO, "the input file shrank while it was being sent")
                                   : io_error(tp, errno, "while sending");
        while (idx < iovcnt && (size_t)n >= iov[idx].iov_len) {
            n -= (ssize_t)iov[idx].iov_len;
            idx++;
        }
        if (idx < iovcnt) {
            iov[idx].iov_base = (uint8_t *)iov[idx].iov_base + n;
            iov[idx].iov_len -= (size_t)n;
        }
    }
    return RD_OK;
}

/* Send iov, then give b back to the pool it came from. */
static int send_iov(struct rd_transport *tp, struct rd_buf *b, struct iovec *iov, int iovcnt)
{
    struct tcp_conn *c = tp->priv;
    int rc = writev_all(tp, iov, iovcnt);
    rd_pool_put(&c->send_pool, b);
    return rc;
}

static void put_prefix(uint8_t prefix[4], size_t len)
{
    for (int i = 0; i < 4; i++)
        prefix[i] = (uint8_t)(len >> (8 * i));
}

static int tcp_send(struct rd_transport *tp, struct rd_buf *b)
{
    uint8_t prefix[4];
    put_prefix(prefix, b->len);
    struct iovec iov[2] = { { prefix, 4 }, { b->data, b->len } };
    return send_iov(tp, b, iov, 2);
}

/* The length prefix and header of a frame with `payload` bytes to follow: MSG_MORE keeps
 * them in one segment with the start of the payload. */
static int send_head(struct rd_transport *tp, const uint8_t hdr[RD_FRAME_HDR], size_t payload)
{
    struct tcp_conn *c = tp->priv;
    uint8_t head[4 + RD_FRAME_HDR];
    put_prefix(head, RD_FRAME_HDR + payload);
    memcpy(head + 4, hdr, RD_FRAME_HDR);
    size_t done = 0;
    while (done < sizeof head) {
        ssize_t n = send(c->fd, head + done, sizeof head - done, MSG_MORE | MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return io_error(tp, errno, "while sending");
        done += (size_t)n;
    }
    return RD_OK;
}

/* The payload at b->ref is memory (a relay's received frame). A file's chunk goes out of the
 * frame a lane read it into, not with sendfile of the file's pages: once it is read, a copy
 * measured cheaper than sendfile. 2026-11-26,
 * 1 GiB page-cached file, bench/bench.sh, median of 5: loopback 2.50 GB/s and 0.67 CPU s/GB
 * for both ends, against 1.77 and 0.85 with sendfile (veth: 1.79 and 1.76, 0.83 both); a
 * sendfile'd skb of 4 KiB page fragments costs the local receiver more than the copy saves
 * the sender. And what is sent is then what was tagged: a file rewritten meanwhile goes out
 * as it was read, never as a tag failure. */
static int tcp_send_ref(struct rd_transport *tp, struct rd_buf *b)
{
    int rc = rd_tcp_send_parts(tp, b->data, b->ref, b->ref_len);
    rd_ref_done(b);
    struct tcp_conn *c = tp->priv;
    rd_pool_put(&c->send_pool, b);
    return rc;
}

/* Read exactly n bytes; with deadline >= 0 the whole read must finish by then. */
static int read_full(struct rd_transport *tp, uint8_t *p, size_t n, long long deadline, const char *what,
                     int in_frame)
{
    struct tcp_conn *c = tp->priv;
    size_t want = n;
    while (n) {
        /* Linux still reads what is queued, and what comes, after SHUT_RD: this flag stops it */
        if (atomic_load(&c->recv_shut))
            return rd_fail(RD_ESTREAM, "stopped receiving from %s", tp->peer);
        if (deadline >= 0) {
            struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
            long long left = deadline - now_ms();
            int rc = left > 0 ? poll(&pfd, 1, (int)left) : 0;
            if (rc == 0)
                return rd_fail(RD_ECONNECT, "timed out waiting for %s", tp->peer);
            if (rc < 0 && errno != EINTR)
                return io_error(tp, errno, what);
            if (rc < 0)
                continue;
        }
        ssize_t r = read(c->fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int rc = io_error(tp, r == 0 ? 0 : errno, what);
            if (in_frame || n < want)
                tp->lost = 0;   /* it broke inside a frame: the peer spoke, this is no clean close */
            return rc;
        }
        p += r;
        n -= (size_t)r;
    }
    return RD_OK;
}

/* The len bytes of a frame whose length prefix was read, into b. */
static int read_frame(struct rd_transport *tp, struct rd_buf *b, size_t len, long long deadline)
{
    if (len > b->cap) {
        /* a length prefix of printable bytes is another protocol talking (SSH-, HTTP, ...) */
        char text[5] = { 0 };
        int printable = 1;
        for (int i = 0; i < 4; i++) {
            text[i] = (char)(len >> (8 * i));
            printable &= text[i] >= 0x20 && text[i] < 0x7f;
        }
        if (printable)
            return rd_fail(RD_ESTREAM, "peer %s does not speak rdpipe's protocol (it sent '%s...')",
                           tp->peer, text);
        return rd_fail(RD_ESTREAM, "peer %s sent a %zu-byte frame, larger than the %zu agreed",
                       tp->peer, len, b->cap);
    }
    int rc = read_full(tp, b->data, len, deadline, "in the middle of a frame", 1);
    if (rc)
        return rc;
    b->len = len;
    return RD_OK;
}

/* The 4-byte little-endian length that starts every frame. */
static int read_prefix(struct rd_transport *tp, long long deadline, size_t *len)
{
    uint8_t p[4];
    int rc = read_full(tp, p, 4, deadline, "while receiving", 0);
    if (!rc)
        *len = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
    return rc;
}

static int tcp_recv(struct rd_transport *tp, struct rd_buf **out, int timeout_ms)
{
    struct tcp_conn *c = tp->priv;
    long long deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : -1;
    size_t len;
    int rc = read_prefix(tp, deadline, &len);
    if (rc)
        return rc;
    struct rd_buf *b;
    int timed_out;
    /* every buffer may be waiting for a slow writer: meanwhile watch for the peer hanging
     * up, which must end the transfer even though we are not reading */
    while (!(b = rd_pool_get_timed(&c->recv_pool, 250, &timed_out))) {
        if (!timed_out)
            return rd_fail_after(RD_ESTREAM, "transfer aborted");
        struct pollfd pfd = { .fd = c->fd, .events = POLLRDHUP };
        if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)))
            return io_error(tp, 0, "while receiving");
    }
    rc = read_frame(tp, b, len, deadline);
    if (rc) {
        rd_pool_put(&c->recv_pool, b);
        return rc;
    }
    *out = b;
    return RD_OK;
}

static void tcp_release(struct rd_transport *tp, struct rd_buf *b)
{
    struct tcp_conn *c = tp->priv;
    rd_pool_put(&c->recv_pool, b);
}

static int tcp_drain(struct rd_transport *tp)
{
    return RD_OK;   /* send() returns only once the kernel has the bytes */
}

static void tcp_shutdown(struct rd_transport *tp)
{
    struct tcp_conn *c = tp->priv;
    if (!c)
        return;
    atomic_store(&c->down, 1);
    shutdown(c->fd, SHUT_RDWR);
    if (c->have_send_pool)
        rd_pool_close(&c->send_pool);
    if (c->have_recv_pool)
        rd_pool_close(&c->recv_pool);
}

/* SHUT_RD wakes a read blocked now (it returns 0); the peer is not told, and sends go on */
static void tcp_shut_recv(struct rd_transport *tp)
{
    struct tcp_conn *c = tp->priv;
    if (!c || atomic_exchange(&c->recv_shut, 1))
        return;
    shutdown(c->fd, SHUT_RD);
}

static void tcp_close(struct rd_transport *tp)
{
    struct tcp_conn *c = tp->priv;
    if (c) {
        if (c->fd >= 0) {
            rd_tcp_watch_remove(&c->watch);
            close(c->fd);
        }
        if (c->have_send_pool)
            rd_pool_destroy(&c->send_pool);
        if (c->have_recv_pool)
            rd_pool_destroy(&c->recv_pool);
        free(c);
    }
    free(tp);
}

/* ---- relaying (rd_tcp.h) ---- */

int rd_tcp_recv_head(struct rd_transport *tp, uint8_t head[RD_FRAME_HDR], size_t *frame_len)
{
    size_t len;
    int rc = read_prefix(tp, -1, &len);
    if (rc)
        return rc;
    if (len < RD_FRAME_HDR)
        return rd_fail(RD_ESTREAM, "protocol error from %s: a %zu-byte frame", tp->peer, len);
    *frame_len = len;
    return read_full(tp, head, RD_FRAME_HDR, -1, "in the middle of a frame", 1);
}

int rd_tcp_recv_payload(struct rd_transport *tp, uint8_t *buf, size_t n)
{
    return read_full(tp, buf, n, -1, "in the middle of a frame", 1);
}

int rd_tcp_send_parts(struct rd_transport *tp, const uint8_t hdr[RD_FRAME_HDR], const uint8_t *payload,
                      size_t len)
{
    uint8_t prefix[4];
    put_prefix(prefix, RD_FRAME_HDR + len);
    struct iovec iov[3] = { { prefix, 4 }, { (void *)hdr, RD_FRAME_HDR }, { (void *)payload, len } };
    return writev_all(tp, iov, 3);
}

int rd_tcp_send_frame(struct rd_transport *tp, const uint8_t *frame, size_t len)
{
    uint8_t prefix[4];
    put_prefix(prefix, len);
    struct iovec iov[2] = { { prefix, 4 }, { (void *)frame, len } };
    return writev_all(tp, iov, 2);
}

/* A read of ours ended at our own shut_recv (a relay interrupted) with a frame half passed on:
 * the bytes after SHUT_RD still queue and can be read, so wait for the rest of the frame, at
 * most 1 s, rather than leave the next hop a torn frame, where the ABORT that follows would be
 * read as payload and the reason lost. 1: more bytes are queued; 0: the peer closed, or no
 * more came. Polling, because poll(2) reports a shut socket readable at once. */
static int rest_of_frame_queued(struct tcp_conn *c)
{
    for (int ms = 0; ms < 1000; ms++) {
        int queued = 0;
        struct tcp_info ti;
        socklen_t len = sizeof ti;
        if (ioctl(c->fd, FIONREAD, &queued) == 0 && queued > 0)
            return 1;
        if (getsockopt(c->fd, IPPROTO_TCP, TCP_INFO, &ti, &len) || ti.tcpi_state != TCP_ESTABLISHED)
            return 0;
        usleep(1000);
    }
    return 0;
}

int rd_tcp_splice_frame(struct rd_transport *in, struct rd_transport *out,
                        const uint8_t head[RD_FRAME_HDR], size_t n, const int pipefd[2],
                        int *out_failed)
{
    struct tcp_conn *ci = in->priv, *co = out->priv;
    int rc = send_head(out, head, n);
    *out_failed = rc != RD_OK;
    size_t left = n;
    while (!rc && left) {
        ssize_t got = splice(ci->fd, NULL, pipefd[1], NULL, left, SPLICE_F_MOVE | SPLICE_F_MORE);
        if (got < 0 && errno == EINTR)
            continue;
        if (got == 0 && atomic_load(&ci->recv_shut) && !atomic_load(&ci->down) && rest_of_frame_queued(ci))
            continue;
        if (got <= 0) {
            rc = io_error(in, got == 0 ? 0 : errno, "in the middle of a frame");
            break;
        }
        left -= (size_t)got;
        while (got > 0) {
            ssize_t put = splice(pipefd[0], NULL, co->fd, NULL, (size_t)got,
                                 SPLICE_F_MOVE | (left ? SPLICE_F_MORE : 0));
            if (put < 0 && errno == EINTR)
                continue;
            if (put <= 0) {
                rc = io_error(out, put == 0 ? 0 : errno, "while sending");
                *out_failed = 1;
                break;
            }
            got -= put;
        }
    }
    return rc;
}

int rd_tcp_recv_into(struct rd_transport *tp, struct rd_buf *b)
{
    size_t len;
    int rc = read_prefix(tp, -1, &len);
    if (rc)
        return rc;
    return read_frame(tp, b, len, -1);
}

int rd_tcp_fd(const struct rd_transport *tp)
{
    return ((const struct tcp_conn *)tp->priv)->fd;
}

static uint64_t tcp_link_rate(struct rd_transport *tp, char *link, size_t n)
{
    return rd_netdev_rate(((struct tcp_conn *)tp->priv)->fd, link, n);
}

int rd_tcp_is(const struct rd_transport *tp)
{
    return tp->ops == &rd_tcp_ops;
}

const struct rd_transport_ops rd_tcp_ops = {
    .name = "tcp",
    .listen = tcp_listen,
    .accept = tcp_accept,
    .listen_fd = tcp_listen_fd,
    .connect = tcp_connect,
    .setup_ring = tcp_setup_ring,
    .get_send_buf = tcp_get_send_buf,
    .send = tcp_send,
    .send_ref = tcp_send_ref,
    .forward = rd_tcp_forward,
    .recv = tcp_recv,
    .release = tcp_release,
    .drain = tcp_drain,
    .shutdown = tcp_shutdown,
    .shut_recv = tcp_shut_recv,
    .close = tcp_close,
    .link_rate = tcp_link_rate,
};
