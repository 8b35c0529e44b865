/* rd_secret.c - see rd_secret.h. */
#include "util/rd_secret.h"

#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

void rd_secret_process(void)
{
    (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

void rd_secret_free(char *s)
{
    if (s)
        explicit_bzero(s, strlen(s));
    free(s);
}

void rd_secret_env_drop(const char *name)
{
    char *v = getenv(name);
    if (v)
        explicit_bzero(v, strlen(v));
    unsetenv(name);
}
