/* rdr_shell.c - see rdr_shell.h. */
#include "remote/rdr_shell.h"

#include <stdlib.h>
#include <string.h>

int rdr_shell_split(const char *s, char **out, int max)
{
    int n = 0;
    while (*s && n < max - 1) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        char *w = malloc(strlen(s) + 1), *o = w;
        while (*s && *s != ' ' && *s != '\t') {
            if (*s == '\'' || *s == '"') {
                char q = *s++;
                while (*s && *s != q)
                    *o++ = *s++;
                if (*s)
                    s++;
            } else if (*s == '\\' && s[1]) {
                *o++ = s[1];
                s += 2;
            } else {
                *o++ = *s++;
            }
        }
        *o = '\0';
        out[n++] = w;
    }
    out[n] = NULL;
    return n;
}

char *rdr_shell_quote(const char *s)
{
    size_t n = 3;
    for (const char *p = s; *p; p++)
        n += *p == '\'' ? 4 : 1;
    char *q = malloc(n), *o = q;
    *o++ = '\'';
    for (const char *p = s; *p; p++) {
        if (*p == '\'') {
            memcpy(o, "'\\''", 4);
            o += 4;
        } else {
            *o++ = *p;
        }
    }
    *o++ = '\'';
    *o = '\0';
    return q;
}
