/* rd_cli.h - the command line shared by rdsend and rdrecv (parsing only, no IO but the key file). */
#ifndef RD_CLI_H
#define RD_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "transport/rd_select.h"

#define RD_VERSION "0.1.0"
#define RD_DEFAULT_CHUNK (4u << 20)      /* RDMA: big messages are what the NIC likes */
#define RD_TCP_DEFAULT_CHUNK (1u << 20)  /* TCP: a chunk that stays in L2 while it is hashed */
#define RD_DEFAULT_DEPTH 8u
#define RD_RECV_MAX_CHUNK (64u << 20)   /* what a receiver grants unless told otherwise */
#define RD_RECV_MAX_DEPTH 64u
/* what a receiver holds in flight (chunk x depth) unless --chunk-size or --depth say: a
 * sender's ask never sizes its memory (64M x 64 was 4 GiB); far above what lanes need */
#define RD_RECV_MAX_INFLIGHT (256ull << 20)


struct rd_opts {
    int is_sender;
    const char *host;       /* sender: receiver's host */
    const char *port;
    const char *file;       /* NULL = stdin / stdout */
    const char *bind;       /* --bind */
    const char *device;     /* -d */
    char *key;              /* owned; never printed */
    size_t key_len;
    enum rd_transport_choice transport;
    int timeout_s;          /* -1 = none / default */
    uint32_t chunk_size, depth;
    int chunk_set, depth_set;
    uint32_t streams;       /* --streams: rdsend asks for this many TCP connections, rdrecv grants at most */
    int streams_set;
    int verbose;
    int progress;           /* 1 on, 0 off, -1 = on when stderr is a terminal */
    int json;
    int direct;             /* --direct: O_DIRECT on FILE */
    int encrypt;            /* --encrypt: rdsend encrypts every chunk; rdrecv requires it */
    int compress_mode;      /* --compress: 0 off, 1 auto, 2 the fixed compress_level */
    int compress_level;
    int sync;               /* rdrecv: make a regular-file output durable before confirming (default 1; --no-sync 0) */
    int ready_fd;           /* rdrecv --ready-fd N: write the listening port to fd N, close it */
    int relay_fd;           /* rdrecv --relay-fd N: forward the stream to "HOST PORT KEY" read from fd N */
    uint32_t lanes;         /* --lanes: threads for the per-chunk work (tags); 0 = by the cores */
    uint8_t stream_key[32]; /* RDPIPE_STREAM_KEY: rdpipe's end-to-end key of a relayed stream */
    int has_stream_key;
};

#define RD_KEY_WARN_LEN 16   /* a shorter key gets a warning: it is a guess away from an attacker */

#define RD_CLI_EXIT_OK (-1)   /* --help or --version was printed: exit 0 */

/* --compress's value (NULL: auto) into o; RD_OK, or RD_EUSAGE with the error recorded. */
int rd_parse_compress(const char *arg, struct rd_opts *o);

/* Parse argv. Returns RD_OK, RD_CLI_EXIT_OK, or RD_EUSAGE / RD_EIO (message recorded). */
int rd_cli_parse(int argc, char **argv, int is_sender, struct rd_opts *o);
void rd_cli_free(struct rd_opts *o);

/* The part of the options that reaching the peer (or listening) needs. */
struct rd_reach rd_reach_of(const struct rd_opts *o);
/* "4M", "64k", "1G", "4096" -> bytes (binary multiples). 0 on success, -1 if malformed. */
int rd_parse_size(const char *s, uint64_t *out);

#endif
