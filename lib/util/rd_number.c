/* rd_number.c - see rd_number.h */
#include "util/rd_number.h"

int rd_parse_decimal(const char *word, unsigned long long max, unsigned long long *v)
{
    unsigned long long x = 0;
    if (!word[0])
        return -1;
    for (const char *p = word; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned d = (unsigned)(*p - '0');
        if (d > max || x > (max - d) / 10)   /* x * 10 + d > max, without overflowing */
            return -1;
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}
