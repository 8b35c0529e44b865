/* rd_transport.h - the one interface every transport implements (TCP, RDMA verbs).
 *
 * A transport moves whole messages ("frames") of bytes between two peers, in order, and owns
 * every buffer that touches the wire: on RDMA they are registered once and reused. The engine
 * never allocates wire buffers; it borrows them with get_send_buf / recv and gives them back
 * with send / release. A transport never looks inside a frame (the protocol does that).
 *
 * Life cycle of a connection:
 *   connect / accept        a small control pool exists (>= 4 frames of RD_CTRL_FRAME bytes
 *                           each direction) for the handshake.
 *   setup_ring(dir, size, depth)   after authentication only: the data ring, `depth` frames of
 *                           `size` bytes, in direction `dir` (SEND on the sender, RECV on the
 *                           receiver). The other direction keeps its control pool.
 *   get_send_buf / send     borrow a free frame of the sending pool, fill b->len bytes, post it.
 *                           send() may return before the bytes are on the wire; the frame comes
 *                           back through a later get_send_buf. Flow control (RDMA credits) is the
 *                           transport's business: send blocks while the peer has no free buffer.
 *   recv / release          the next frame in arrival order, in the buffer it landed in; release
 *                           hands the buffer back (RDMA: reposts it and returns a credit).
 *   drain                   wait until every posted send has left (before close).
 *   shutdown                from any thread: make blocked calls on both ends fail promptly.
 *   close                   free everything (also the listener).
 *
 * Threading: get_send_buf and send may be called from two different threads (a reader thread
 * borrows, the network thread posts); recv and release likewise (the network thread receives,
 * the writer thread releases), and release also from any other thread, in any order (a frame
 * a sink keeps for its workers, engine/rd_hold; a relay's by-reference send), so every
 * transport guards its free list. shutdown may be called from any thread at any time.
 *
 * Every call returns RD_OK or an rd_err code after recording a one-line message with rd_fail().
 */
#ifndef RD_TRANSPORT_H
#define RD_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define RD_CTRL_FRAME 4096u       /* size of a control-pool frame (handshake, END, CONFIRM) */
#define RD_BUF_ALIGN 4096u        /* every frame buffer is page aligned (O_DIRECT needs it) */
#define RD_CONNECT_RETRY_S 10     /* without --timeout, a sender retries a refused or dropped
                                   * connection this long */

struct rd_buf {
    uint8_t *data;   /* frame start; the payload (data + RD_FRAME_HDR) is page aligned, so
                      * files can be read and written with O_DIRECT straight from it */
    size_t cap;      /* capacity in bytes */
    size_t len;      /* bytes in the frame: set by the engine before send, by recv on arrival */
    unsigned slot;   /* index inside the transport's pool (transport private meaning) */
    void *owner;     /* transport private */
    /* send_ref only: the payload lives here (a relay's received frame), not in data: in
     * the buffer ref_buf that transport ref_from received it into */
    const uint8_t *ref;
    size_t ref_len;
    struct rd_transport *ref_from;
    struct rd_buf *ref_buf;
};

enum rd_dir { RD_DIR_SEND = 1, RD_DIR_RECV = 2 };

/* Where to connect or listen; strings owned by the caller. */
struct rd_addr {
    const char *host;     /* peer host name or literal (connect); NULL or bind address (listen) */
    const char *port;     /* decimal port */
    const char *bind;     /* local source address for connect, or listen address; may be NULL */
    const char *device;   /* RDMA device name to pin (-d), or NULL */
    int timeout_ms;       /* connect: total time allowed, retrying refused connections; -1 = default */
    int verbose;          /* >0: the transport may print what it chose on stderr */
};

struct rd_transport;

/* A relay's checks, for a transport that forwards frames itself (ops->forward): the transport
 * moves the bytes, the relay decides about every frame. */
struct rd_forward {
    void *ctx;
    /* The header of the next frame (frame_len: header and payload), which must be frame
     * number seq if it is DATA or END. RD_OK to pass it on, else the relay's error. *is_data:
     * its payload may go straight through without being read; *raw_len: then the bytes it
     * carries once decompressed (the END's total counts those). Called from several threads
     * at once where the transport forwards its connections in parallel (stripes). */
    int (*check)(void *ctx, const uint8_t *head, size_t frame_len, uint64_t seq, int *is_data,
                 uint32_t *raw_len);
    /* a DATA frame went on, with check's frame_len and *raw_len (several threads too) */
    void (*passed)(void *ctx, size_t frame_len, uint32_t raw_len);
    /* A control frame, whole in memory: the last frame, judged once every DATA frame before
     * it went on. The relay's verdict on it; RD_OK passes it on (END), an error keeps it back
     * (an ABORT: the relay says its own). */
    int (*ctrl)(void *ctx, const uint8_t *frame, size_t frame_len);
    int down_failed;   /* set by forward: the error came from the downstream connection */
    int declined;      /* set by forward: it cannot forward this pair and read nothing; the
                        * relay passes the frames itself */
};

struct rd_transport_ops {
    const char *name;    /* "tcp", "rdma" */
    /* Passive side: bind and listen on addr->bind (NULL = any, IPv4 and IPv6) : addr->port. */
    int (*listen)(struct rd_transport *lis, const struct rd_addr *addr);
    /* Wait up to timeout_ms (-1 = forever) for the next connection; *conn is a new transport. */
    int (*accept)(struct rd_transport *lis, struct rd_transport **conn, int timeout_ms);
    /* A file descriptor that polls readable when accept() has something to do, so one
     * receiver can listen on TCP and RDMA at once (--transport auto). */
    int (*listen_fd)(struct rd_transport *lis);
    /* Active side. */
    int (*connect)(struct rd_transport *tp, const struct rd_addr *addr);
    int (*setup_ring)(struct rd_transport *tp, enum rd_dir dir, size_t frame_size, unsigned depth);
    int (*get_send_buf)(struct rd_transport *tp, struct rd_buf **out);
    int (*send)(struct rd_transport *tp, struct rd_buf *b);
    /* Optional (NULL if the transport cannot): send the header in b->data[0..RD_FRAME_HDR)
     * followed by the b->ref_len bytes at b->ref: a relay passes a received payload on
     * without copying it into b. The transport gives b->ref_buf back to b->ref_from
     * (rd_ref_done) once those bytes are sent, or will never be, which may be after the call
     * returns (a striped connection's thread sends them later; RDMA when the send
     * completes, on whichever thread reaps it), at the latest when tp closes, so b->ref_from
     * must outlive tp; the caller lets go of it. */
    int (*send_ref)(struct rd_transport *tp, struct rd_buf *b);
    /* Optional: forward frames from tp to `to`, a connection of the same ops, under fw's
     * checks, until a control frame went on or an error; payloads need not pass through user
     * space (TCP splices socket to socket). NULL: the relay copies buffer to buffer. */
    int (*forward)(struct rd_transport *tp, struct rd_transport *to, struct rd_forward *fw);
    /* Optional, for watching a connection while nothing reads it (the receiver gathering the
     * stripes of --streams): watch_fd polls readable when the peer may have sent something or
     * left; peek copies up to n bytes of the next frame (from its header on), leaving it for
     * recv: the count, 0 when nothing came, -1 when the peer is gone. */
    int (*watch_fd)(struct rd_transport *tp);
    int (*peek)(struct rd_transport *tp, uint8_t *head, size_t n);
    /* Optional: the NUMA node of the device this connection moves its bytes through, -1 when
     * unknown or not NUMA (NULL: unknown). The engine runs its lanes there. */
    int (*numa_node)(struct rd_transport *tp);
    /* Optional: the line rate of the link(s) this connection's bytes go through, in bytes
     * per second (the NIC's speed, the RDMA port's speed times width; several connections
     * over one link count it once), 0 when unknown; the link's name in link ("eth0",
     * "mlx5_0:1"). The ends plan their lanes by it. */
    uint64_t (*link_rate)(struct rd_transport *tp, char *link, size_t n);
    /* timeout_ms: -1 = wait forever (peer death is still detected); returns RD_ECONNECT on
     * timeout, RD_ESTREAM when the peer went away. */
    int (*recv)(struct rd_transport *tp, struct rd_buf **out, int timeout_ms);
    void (*release)(struct rd_transport *tp, struct rd_buf *b);
    int (*drain)(struct rd_transport *tp);
    void (*shutdown)(struct rd_transport *tp);
    /* Optional: a recv that waits now, or the next one that would, returns RD_ECONNECT at
     * once, as at a timeout; the connection stays up (a relay waking a thread whose frames
     * ended on another connection). */
    void (*interrupt)(struct rd_transport *tp);
    /* Optional: from any thread, every recv from now on, the one waiting now included (and a
     * forward's reads, at the next frame), fails at once, while sends still work: a relay
     * interrupted by a signal stops taking frames but still tells both neighbours why. */
    void (*shut_recv)(struct rd_transport *tp);
    void (*close)(struct rd_transport *tp);
};

struct rd_transport {
    const struct rd_transport_ops *ops;
    char peer[128];      /* printable peer address, e.g. "10.0.0.2:40112" or "[::1]:5000" */
    char desc[128];      /* what -v prints, e.g. "tcp" or "rdma rxe_a port 1" */
    unsigned local_port; /* listeners: the port actually bound (port "0" picks one) */
    struct sockaddr_storage local;   /* RDMA connections: this end's address (rails); else AF_UNSPEC */
    void *priv;
    /* Set by the handshake (rd_session.c): the key that tags this connection's own frames
     * (ABORT), and which way we send on it (RD_TAG_HOP_DOWN: we are the sending end). 0
     * until the peer proved the key: until then nothing it says is trusted. */
    uint8_t hop_key[32];
    int hop_dir;
    int lost;            /* the peer closed or reset the connection (TCP: EOF, ECONNRESET) */
    int proved;          /* receiver, set by the handshake: the peer proved the key, so a
                          * handshake that fails after that (turned away: another sender is
                          * served) was no key guess, and rd_waiting does not count it */
    int answer_ms;       /* sender: how long the handshake waits for each answer of the
                          * receiver (0: RD_SENDER_WAIT_MS; rdsend --timeout bounds it) */
};

extern const struct rd_transport_ops rd_tcp_ops;
extern const struct rd_transport_ops rd_verbs_ops;

/* Allocate an unconnected transport of the given kind; NULL on out of memory. */
struct rd_transport *rd_transport_new(const struct rd_transport_ops *ops);

/* tp's ops->numa_node, or -1 when the transport does not say. */
int rd_transport_node(struct rd_transport *tp);
/* For send_ref: o, a send buffer, carries the frame in b (received from `from`) by reference:
 * b's header copied into o, its payload_len bytes of payload named. */
void rd_ref_frame(struct rd_buf *o, struct rd_transport *from, struct rd_buf *b, size_t payload_len);
/* send_ref's end: b->ref_buf back to the transport it came from, and b holds no ref now. */
void rd_ref_done(struct rd_buf *b);
/* tp's ops->link_rate (link: its name, or ""), or 0 when the transport does not say. */
uint64_t rd_transport_link_rate(struct rd_transport *tp, char *link, size_t n);

/* Does this machine have any RDMA device at all? (cheap, no connection) */
int rd_verbs_available(void);
/* Bytes one RDMA connection registers with chunk and depth: its ring and the control frames
 * (each pool's frames start one page apart) plus 2 MiB for the queues. */
uint64_t rd_verbs_pin_bytes(uint32_t chunk, uint32_t depth);
/* The same for one stream striped over conns connections (--streams, rails): each registers
 * its share of the ring, as the stripe splits it. */
uint64_t rd_verbs_pin_stream(uint32_t chunk, uint32_t depth, unsigned conns);
/* What a relay pins for one stream of conns connections: the upstream stream, the downstream
 * stream (the same chunk, depth and connections: it asks for what came in), and the upstream
 * rings once more, registered in the downstream's protection domains to send from them. */
uint64_t rd_verbs_pin_relay(uint32_t chunk, uint32_t depth, unsigned conns);
/* The largest depth up to `depth` whose stream this process may pin (relay: as a relay,
 * rd_verbs_pin_relay): all of it with CAP_IPC_LOCK or no RLIMIT_MEMLOCK, else what ulimit -l
 * leaves room for; 0 when not even the smallest ring fits (registering it then fails, naming
 * the ulimit -l it needs). */
uint32_t rd_verbs_pinnable_depth(uint32_t chunk, uint32_t depth, unsigned conns, int relay);

/* Helpers shared by transports. */
struct sockaddr;
void rd_sockaddr_str(const struct sockaddr *sa, char *out, size_t n);   /* "1.2.3.4:5" / "[::1]:5" */
void *rd_alloc_aligned(size_t size);   /* page aligned, zeroed; free() it */
/* A zeroed frame buffer of `size` bytes whose payload (returned pointer + RD_FRAME_HDR) is
 * page aligned; release it with rd_frame_free. rd_frame_region gives the whole allocation
 * (for ibv_reg_mr). */
uint8_t *rd_frame_alloc(size_t size);
void rd_frame_free(uint8_t *frame);
void rd_frame_region(uint8_t *frame, size_t size, void **start, size_t *len);

#endif
