/* rdr_home.c - "~" in a path an agent takes (see rdr_home.h) */
#include "remote/rdr_home.h"
#include "util/rd_error.h"

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* the home directory of user ("" = the caller), copied into out; 0 if there is none */
static int home_of(const char *user, char *out, size_t cap)
{
    const char *env = getenv("HOME");
    if (!*user && env && *env)
        return (size_t)snprintf(out, cap, "%s", env) < cap;
    long n = sysconf(_SC_GETPW_R_SIZE_MAX);
    size_t len = n > 0 ? (size_t)n : 16384;
    char *buf = malloc(len);
    struct passwd pw, *got = NULL;
    if (!buf)
        rd_oom();
    int e = *user ? getpwnam_r(user, &pw, buf, len, &got)
                  : getpwuid_r(getuid(), &pw, buf, len, &got);
    int ok = e == 0 && got && pw.pw_dir && *pw.pw_dir &&
             (size_t)snprintf(out, cap, "%s", pw.pw_dir) < cap;
    free(buf);
    return ok;
}

/* a then b, malloc'd */
static char *concat(const char *a, const char *b)
{
    char *out;
    if (asprintf(&out, "%s%s", a, b) < 0)
        rd_oom();
    return out;
}

char *rdr_home_expand(const char *path)
{
    if (path[0] != '~')
        return concat(path, "");
    const char *rest = strchr(path, '/');
    size_t ul = rest ? (size_t)(rest - path - 1) : strlen(path + 1);
    char *user = strndup(path + 1, ul), home[4096];
    if (!user)
        rd_oom();
    int found = home_of(user, home, sizeof home);
    free(user);
    return found ? concat(home, rest ? rest : "") : concat(path, "");
}

char *rdr_home_literal(const char *path)
{
    return concat(path[0] == '~' ? "./" : "", path);
}
