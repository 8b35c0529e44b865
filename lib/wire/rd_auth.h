/* rd_auth.h - mutual HMAC-SHA256 challenge-response over the handshake transcript.
 *
 * The shared key never crosses the wire. Both MACs cover both nonces and every negotiated
 * parameter, and each direction has its own label, so a MAC can be neither replayed into
 * another session (fresh nonces) nor reflected back at its author (labels differ).
 */
#ifndef RD_AUTH_H
#define RD_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "wire/rd_proto.h"

struct rd_key {
    uint8_t mac_key[32];   /* HKDF-SHA256(shared secret) for the handshake MACs */
};

/* Derive the handshake key from the user's secret. Returns 0, or -1 if libcrypto fails. */
int rd_key_derive(struct rd_key *k, const void *secret, size_t len);
void rd_key_wipe(struct rd_key *k);

int rd_random(void *out, size_t n);   /* 0 on success */

enum rd_auth_role { RD_ROLE_RECEIVER = 1, RD_ROLE_SENDER = 2 };

/* MAC of the transcript (hello, challenge parameters and nonce; c->mac is not included). */
void rd_auth_mac(const struct rd_key *k, enum rd_auth_role who, const struct rd_hello *h,
                 const struct rd_challenge *c, uint8_t out[RD_MAC_LEN]);
/* Constant-time check of a MAC the peer sent. Returns 1 if it is right. */
int rd_auth_check(const struct rd_key *k, enum rd_auth_role who, const struct rd_hello *h,
                  const struct rd_challenge *c, const uint8_t mac[RD_MAC_LEN]);

/* The key that admits extra connections (--streams) into the session this transcript
 * authenticated: both ends derive it, nobody else can. */
void rd_auth_join_key(const struct rd_key *k, const struct rd_hello *h, const struct rd_challenge *c,
                      uint8_t out[32]);
/* MAC of a JOIN for stripe `index`, and its constant-time check (1 = right). */
void rd_auth_join_mac(const uint8_t join_key[32], uint32_t index, uint8_t out[RD_MAC_LEN]);
int rd_auth_join_check(const uint8_t join_key[32], uint32_t index, const uint8_t mac[RD_MAC_LEN]);

#endif
