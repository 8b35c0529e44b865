/* rd_auth.h - the handshake's cryptography: CPace (rd_cpace.h) and key confirmation.
 *
 *   sender                                       receiver
 *   HELLO     versions, wanted parameters, Ns  ->
 *                                              <-  CHALLENGE  agreed parameters, Nr, Yr
 *   AUTH      Ys, MACs                         ->
 *                                              <-  ACCEPT     MACr
 *
 * The CPace generator binds the key (as PRS), the channel identifier (both HELLO and the
 * agreed parameters: versions, chunk, depth, streams, capabilities) and the session id
 * (Ns || Nr). The receiver's share Yr proves nothing and says nothing about the key; the
 * sender proves the key first (MACs), and the receiver answers with its own proof (MACr)
 * only to a sender that did. So a peer that does not know the key, on either side, can test
 * one guess per connection and no more: nothing it sees lets it check a guess offline.
 * The resulting keys are independent per session (fresh nonces and scalars on both sides).
 */
#ifndef RD_AUTH_H
#define RD_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "wire/rd_cpace.h"
#include "wire/rd_proto.h"

struct rd_key {
    uint8_t prs[32];   /* CPace's password-related string: HKDF-SHA256 of the user's secret */
};

/* Derive the PRS from the user's secret. Returns 0, or -1 if libcrypto fails. */
int rd_key_derive(struct rd_key *k, const void *secret, size_t len);
void rd_key_wipe(struct rd_key *k);

int rd_random(void *out, size_t n);   /* 0 on success */
/* HKDF-SHA256 (salt "rdpipe v2") of ikm with the label info into out; 0 on success. */
int rd_hkdf(const void *ikm, size_t ikm_len, const char *info, uint8_t *out, size_t out_len);

/* What a finished handshake gives both ends. */
struct rd_session_keys {
    uint8_t hop[RD_KEY_LEN];      /* tags of this connection's own frames (ABORT) */
    uint8_t stream[RD_KEY_LEN];   /* tags of DATA, END and CONFIRM (through relays, rdpipe
                                   * gives both ends of the stream a key of its own instead) */
    uint8_t join[32];             /* admits the extra connections of --streams */
    uint8_t confirm_s[32], confirm_r[32];
};
void rd_session_keys_wipe(struct rd_session_keys *k);

/* The receiver's half-done exchange, between CHALLENGE and AUTH. */
struct rd_pake {
    struct rd_cpace cpace;
};

/* Receiver, once c holds the agreed parameters and its nonce: its share into c->share. */
int rd_auth_receiver_start(struct rd_pake *st, const struct rd_key *k, const struct rd_hello *h,
                           struct rd_challenge *c);
/* Sender, on CHALLENGE: its share and MAC into *proof, the session's keys into *out.
 * -1: the receiver's share is not a valid element (or libsodium failed). */
int rd_auth_sender_prove(const struct rd_key *k, const struct rd_hello *h, const struct rd_challenge *c,
                         struct rd_proof *proof, struct rd_session_keys *out);
/* Receiver, on AUTH: 1 if the sender proved the key; then *out holds the keys and mac the
 * receiver's own proof for ACCEPT. 0: wrong key or an invalid share (nothing is output). */
int rd_auth_receiver_check(struct rd_pake *st, const struct rd_hello *h, const struct rd_challenge *c,
                           const struct rd_proof *proof, struct rd_session_keys *out,
                           uint8_t mac[RD_MAC_LEN]);
/* Sender, on ACCEPT: 1 if the receiver proved the key too. */
int rd_auth_sender_check(const struct rd_session_keys *keys, const struct rd_hello *h,
                         const struct rd_challenge *c, const struct rd_proof *proof,
                         const uint8_t mac[RD_MAC_LEN]);
void rd_pake_wipe(struct rd_pake *st);

/* MAC of a JOIN for stripe `index`, and its constant-time check (1 = right). */
void rd_auth_join_mac(const uint8_t join_key[32], uint32_t index, uint8_t out[RD_MAC_LEN]);
int rd_auth_join_check(const uint8_t join_key[32], uint32_t index, const uint8_t mac[RD_MAC_LEN]);

#endif
