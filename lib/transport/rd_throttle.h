/* rd_throttle.h - source addresses that failed handshakes lately, and how long their next
 * handshake waits before it starts (online key guessing costs one connection per guess; this
 * makes each guess from one address slower and slower).
 *
 * Rule: failures count when each comes within RD_THROTTLE_WINDOW_S of the previous one from
 * the same address. After RD_THROTTLE_FREE of them, every handshake from that address waits
 * RD_THROTTLE_BASE_S, doubling with each further failure, at most RD_THROTTLE_CAP_S (which
 * stays well under the sender's RD_SENDER_WAIT_MS, so a right sender behind a penalised
 * address is slowed, never failed). Only that address waits: others never do.
 *
 * Bounded memory: RD_THROTTLE_SLOTS entries, no allocation. When the table is full a new
 * address takes the slot of one whose failures have expired, else of the one with the fewest
 * failures (the oldest of those), so a run of fresh addresses does not easily flush out a
 * penalised one. What it cannot do: an attacker with more addresses than slots gets
 * RD_THROTTLE_FREE free failures per address (IPv6 hands out many); the table holds one
 * receiver's memory and is gone when rdrecv exits.
 *
 * One thread only (the receiver's accept loop); no locking. */
#ifndef RD_THROTTLE_H
#define RD_THROTTLE_H

#define RD_THROTTLE_SLOTS 128
#define RD_THROTTLE_FREE 3
#define RD_THROTTLE_WINDOW_S 60.0
#define RD_THROTTLE_BASE_S 0.25
#define RD_THROTTLE_CAP_S 16.0
#define RD_THROTTLE_ADDR 48   /* an IPv6 literal without brackets, with its NUL */

struct rd_throttle {
    struct {
        char addr[RD_THROTTLE_ADDR];   /* "" = free slot */
        unsigned fails;
        double last;                   /* rd_now() of the last failure */
    } e[RD_THROTTLE_SLOTS];
};

void rd_throttle_init(struct rd_throttle *t);
/* A handshake from addr failed at now. */
void rd_throttle_failed(struct rd_throttle *t, const char *addr, double now);
/* Seconds a handshake from addr starting now waits first (0 for an address in good
 * standing); *fails: its failures in the current window. */
double rd_throttle_delay(const struct rd_throttle *t, const char *addr, double now, unsigned *fails);
/* The address part of a transport's peer string ("1.2.3.4:5" -> "1.2.3.4", "[::1]:5" ->
 * "::1", "[::ffff:1.2.3.4]:5" -> "1.2.3.4"), so that every port of a host is one source. */
void rd_throttle_source(const char *peer, char out[RD_THROTTLE_ADDR]);

#endif
