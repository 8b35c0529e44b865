/* rdc_set.c - see rdc_set.h: open addressing, grows at half full. The keys come from a source
 * host (the paths a stream made, a source's names): the hash is XXH3 from a random seed per
 * set, where an unseeded one (FNV-1a until 2026-12-08) would let the host choose a million
 * names that all probe one run of slots. */
#include "copy/rdc_set.h"
#include "util/rd_error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static size_t hash(const struct rdc_set *s, const char *k)
{
    return (size_t)XXH3_64bits_withSeed(k, strlen(k), s->seed);
}

static void put(const struct rdc_set *s, char **slot, size_t cap, char *k)
{
    size_t i = hash(s, k) & (cap - 1);
    while (slot[i])
        i = (i + 1) & (cap - 1);
    slot[i] = k;
}

void rdc_set_add(struct rdc_set *s, const char *key)
{
    if (rdc_set_has(s, key))
        return;
    if (2 * (s->n + 1) > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        if (!s->cap)
            s->seed = (uint64_t)arc4random() << 32 | arc4random();
        char **slot = calloc(cap, sizeof *slot);
        if (!slot)
            rd_oom();
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i])
                put(s, slot, cap, s->slot[i]);
        free(s->slot);
        s->slot = slot;
        s->cap = cap;
    }
    char *k = strdup(key);
    if (!k)
        rd_oom();
    put(s, s->slot, s->cap, k);
    s->n++;
}

int rdc_set_has(const struct rdc_set *s, const char *key)
{
    if (!s->cap)
        return 0;
    for (size_t i = hash(s, key) & (s->cap - 1); s->slot[i]; i = (i + 1) & (s->cap - 1))
        if (strcmp(s->slot[i], key) == 0)
            return 1;
    return 0;
}

void rdc_set_each(const struct rdc_set *s, void (*fn)(const char *key, void *ctx), void *ctx)
{
    for (size_t i = 0; i < s->cap; i++)
        if (s->slot[i])
            fn(s->slot[i], ctx);
}

void rdc_set_free(struct rdc_set *s)
{
    for (size_t i = 0; i < s->cap; i++)
        free(s->slot[i]);
    free(s->slot);
    memset(s, 0, sizeof *s);
}
