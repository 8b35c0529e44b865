/* fz_input.h - reading a fuzz input as a script of messages (header only).
 *
 * A script is a few parameter bytes followed by messages, each
 *     ctl:u8  type:u8  len:u16 (little endian)  bytes[len]
 * ctl says how the target turns the bytes into a frame:
 *     FZ_SEAL     the bytes are a payload: the target writes a valid header of `type` around
 *                 it (without it the bytes are the whole frame, header included, as sent)
 *     FZ_FIXMAC   the target writes what only a holder of the key could into the frame: the
 *                 CPace proof or confirmation MAC it computes from what it saw, a JOIN MAC,
 *                 the tag of a frame (a hostile peer that knows the key but lies about
 *                 everything else). The fuzzer itself never gets to see those bytes.
 *     FZ_BADTAG   the sealed header's tag is off by one bit
 *     FZ_SEQ      the sealed frame gets the sequence number it should have (relay: DATA and
 *                 END; handshake's authenticated mode: tag in our own direction, reflected)
 *     FZ_WRONGKEY with FZ_FIXMAC: computed under another key (an impostor's honest try)
 * A truncated message ends the script. tests/fuzz/make-seeds.c writes scripts in this form.
 */
#ifndef FZ_INPUT_H
#define FZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

enum { FZ_SEAL = 1, FZ_FIXMAC = 2, FZ_BADTAG = 4, FZ_SEQ = 8, FZ_WRONGKEY = 16 };

#define FZ_MSG_MAX 65535u

struct fz_in {
    const uint8_t *p;
    size_t n;
};

struct fz_msg {
    uint8_t ctl, type;
    const uint8_t *bytes;
    size_t len;
};

static inline uint8_t fz_byte(struct fz_in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static inline uint32_t fz_u32(struct fz_in *in)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)fz_byte(in) << (8 * i);
    return v;
}

/* The next message, or 0 at the end of the script. */
static inline int fz_next_msg(struct fz_in *in, struct fz_msg *m)
{
    if (in->n < 4)
        return 0;
    m->ctl = in->p[0];
    m->type = in->p[1];
    m->len = (size_t)in->p[2] | (size_t)in->p[3] << 8;
    if (in->n - 4 < m->len)
        return 0;
    m->bytes = in->p + 4;
    in->p += 4 + m->len;
    in->n -= 4 + m->len;
    return 1;
}

#endif
