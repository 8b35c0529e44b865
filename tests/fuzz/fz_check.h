/* fz_check.h - the fuzz targets' assertion: a failed property aborts, which libFuzzer reports
 * as a crash with the input that caused it; the library's last error is printed beside it. */
#ifndef FZ_CHECK_H
#define FZ_CHECK_H

#include "util/rd_error.h"

#include <stdio.h>
#include <stdlib.h>

#define CHECK(c)                                                                                  \
    do {                                                                                          \
        if (!(c)) {                                                                               \
            fprintf(stderr, "%s:%d: check failed: %s (last error: %s)\n", __FILE__, __LINE__, #c, \
                    rd_error_msg());                                                              \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

#endif
