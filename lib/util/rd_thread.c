/* rd_thread.c - see rd_thread.h */
#include "util/rd_thread.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

void rd_thread_name(const char *fmt, ...)
{
    char name[16];   /* TASK_COMM_LEN: longer names are refused, not cut */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    pthread_setname_np(pthread_self(), name);   /* a name is a nicety: its failure is ignored */
}
