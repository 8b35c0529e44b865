/* rdb_msg.h - the messages of rdbench and rdrecv --check, after the authenticated handshake
 * (bytes only, no IO; every decoder bounds what it reads and trusts nothing).
 *
 * Once rd_session_sender/receiver agreed a chunk size and depth, the client (the session's
 * sender) and the server exchange frames that start with this 32-byte header:
 *
 *   off  size  field
 *     0     4  magic "RDB1"
 *     4     1  type (enum rdb_type)
 *     5     1  flags (0)
 *     6     2  reserved (0)
 *     8     4  len: payload bytes after the header (the frame is RDB_HDR + len bytes)
 *    12     4  a   (per type, below)
 *    16     8  seq (per type)
 *    24     8  b   (per type)
 *
 * All integers little endian. The types, client -> server unless marked:
 *   DATA     seq = message number, len = message size (payload not read by anyone)
 *   ACK      server -> client (or client -> server in a REVERSE run): seq of the DATA answered
 *   INFO_REQ ask what the server is;  INFO (server -> client): payload = info text (below)
 *   IO_REQ   b = scratch-file bytes wanted;  IO (server -> client): payload = io results
 *   REVERSE  a = depth, b = message size, seq = milliseconds: the server sends DATA for that
 *            long, keeping `depth` unanswered, then END (seq = DATA frames sent)
 *   BYE      the client is done (rdrecv --check exits after it)
 *   ERR      either way: payload = one line of text, the connection ends
 *
 * The info text is lines "key=value\n" from a fixed set of keys; unknown keys are skipped,
 * values are cut to their field and made printable (rdb_info_decode). */
#ifndef RDB_MSG_H
#define RDB_MSG_H

#include <stddef.h>
#include <stdint.h>

#define RDB_HDR 32u
#define RDB_MAGIC "RDB1"
#define RDB_TEXT_MAX 1024u       /* INFO and ERR payloads */
#define RDB_REVERSE_MAX_MS 10000u  /* the longest REVERSE run a server performs */

enum rdb_type {
    RDB_DATA = 1,
    RDB_ACK,
    RDB_INFO_REQ,
    RDB_INFO,
    RDB_IO_REQ,
    RDB_IO,
    RDB_REVERSE,
    RDB_END,
    RDB_BYE,
    RDB_ERR,
    RDB_TYPE_MAX = RDB_ERR,
};

struct rdb_hdr {
    uint8_t type;
    uint32_t len;
    uint32_t a;
    uint64_t seq;
    uint64_t b;
};

enum rdb_perr {
    RDB_P_OK = 0,
    RDB_P_SHORT = -1,     /* fewer bytes than a header */
    RDB_P_MAGIC = -2,     /* not an rdbench frame (an rdsend talking to rdbench --server?) */
    RDB_P_TYPE = -3,      /* unknown type, or flags/reserved bytes not zero */
    RDB_P_LENGTH = -4,    /* len does not match the frame, or is too long for its type */
};

/* Write the header into out[0..RDB_HDR). */
void rdb_hdr_encode(const struct rdb_hdr *h, uint8_t *out);
/* Parse the header of a frame of n bytes; the payload is out[RDB_HDR..n). */
int rdb_hdr_decode(const uint8_t *p, size_t n, struct rdb_hdr *h);
const char *rdb_perr_str(int e);
const char *rdb_type_name(unsigned type);

/* What a server says about itself (INFO). Every string is NUL-terminated printable ASCII. */
#define RDB_INFO_DEVS 8
struct rdb_info {
    char host[64];         /* its host name */
    char version[32];      /* rdpipe version */
    char desc[64];         /* this connection as it sees it: "tcp", "rdma rxe_a port 1" */
    char range[32];        /* its ephemeral ports, "32768-60999" */
    char io[16];           /* "yes" when it can measure --io, else "no" */
    unsigned ndev;
    struct rdb_info_dev {
        char name[32];     /* rxe_a */
        unsigned port;     /* 1 */
        unsigned mtu;      /* active MTU in bytes (256..4096), 0 unknown */
        unsigned netdev_mtu;  /* MTU of its Ethernet device (RoCE), 0 unknown or none */
        char netdev[32];   /* va */
    } dev[RDB_INFO_DEVS];
};

/* Encode into out (cap bytes); returns the length, or 0 if it does not fit. */
size_t rdb_info_encode(const struct rdb_info *in, char *out, size_t cap);
/* Decode n bytes (at most RDB_TEXT_MAX are looked at). Never fails: what is malformed is
 * skipped; returns the number of lines skipped. */
int rdb_info_decode(const uint8_t *p, size_t n, struct rdb_info *out);

/* --io results: bytes per second of each measurement, 0 = not measured. */
enum rdb_io_kind {
    RDB_IO_WRITE_1, RDB_IO_WRITE_N, RDB_IO_WRITE_DIRECT_1, RDB_IO_WRITE_DIRECT_N,
    RDB_IO_READ_COLD_1, RDB_IO_READ_COLD_N, RDB_IO_READ_CACHED, RDB_IO_READ_DIRECT_1,
    RDB_IO_READ_DIRECT_N, RDB_IO_PIPE, RDB_IO_COUNT
};
struct rdb_io {
    uint64_t bps[RDB_IO_COUNT];
    uint32_t lanes;        /* N of the _N measurements */
    uint64_t bytes;        /* scratch-file size used */
};
#define RDB_IO_LEN (8u * RDB_IO_COUNT + 4u + 8u)
size_t rdb_io_encode(const struct rdb_io *io, uint8_t *out);   /* RDB_IO_LEN bytes */
int rdb_io_decode(const uint8_t *p, size_t n, struct rdb_io *io); /* RDB_P_OK or RDB_P_LENGTH */
const char *rdb_io_name(unsigned kind);   /* "write 1 lane", ... */
const char *rdb_io_key(unsigned kind);    /* "write_1", ... (JSON) */

/* Copy up to n bytes of peer text into out (cap bytes, NUL-terminated): control and non-ASCII
 * bytes become '?', and the copy stops at a NUL or newline. */
void rdb_text_clean(const uint8_t *p, size_t n, char *out, size_t cap);

/* The line `rdrecv --check` prints on stdout once it listens (rdb_serve's ready_line), which
 * rdcheck reads over ssh: "ready PORT TRANSPORTS PORT-RANGE". */
struct rdb_ready {
    char port[6];       /* decimal, 1..65535 */
    char kinds[9];      /* "tcp", "rdma" or "tcp,rdma" */
    char range[12];     /* "LO-HI", two ports, or "?" (unknown) */
};
/* 0, or -1 when the line is anything else (nothing of it kept: a port that is not a number
 * would be looked up as a service name, and the range is printed in a fix). */
int rdb_ready_parse(const char *line, struct rdb_ready *r);

#endif
