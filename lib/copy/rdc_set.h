/* rdc_set.h - a set of strings (the paths a tree stream made: its directories and files). */
#ifndef RDC_SET_H
#define RDC_SET_H

#include <stddef.h>

#include <stdint.h>

struct rdc_set {
    char **slot;
    size_t cap, n;
    uint64_t seed;   /* the hash's, drawn at the first key */
};

void rdc_set_add(struct rdc_set *s, const char *key);
int rdc_set_has(const struct rdc_set *s, const char *key);
void rdc_set_free(struct rdc_set *s);
/* fn on every key, in no order */
void rdc_set_each(const struct rdc_set *s, void (*fn)(const char *key, void *ctx), void *ctx);

#endif
