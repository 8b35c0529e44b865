/* rd_relay.h - pass one stream from an upstream sender to a downstream receiver unchanged. */
#ifndef RD_RELAY_H
#define RD_RELAY_H

#include "engine/rd_engine.h"

/* up: an authenticated receiving connection (ring set up for `p`); down: an authenticated
 * sending connection whose chunk size is at least p->chunk_size. Returns RD_OK only once the
 * downstream receiver confirmed the whole stream and upstream was told so. cnt counts the
 * bytes forwarded. */
int rd_relay(struct rd_transport *up, struct rd_transport *down, const struct rd_params *p,
             struct rd_counters *cnt);

#endif
