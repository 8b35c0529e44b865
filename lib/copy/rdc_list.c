/* rdc_list.c - see rdc_list.h. */
#include "copy/rdc_list.h"

#include "copy/rdc_tree.h"
#include "remote/rdr_line.h"
#include "util/rd_error.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void put_name(FILE *f, const char *name)
{
    char *h = rdr_hex_str(name);
    if (!h)
        rd_oom();
    fprintf(f, "r%s\n", h);
    free(h);
}

int rdc_list_roots(int out, char *const *srcs, int nsrc, int recursive, int follow)
{
    int fd = dup(out);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return RD_EIO;
    }
    for (int i = 0; i < nsrc; i++) {
        const char *src = srcs[i];
        struct stat st;
        /* the walk's start_root: a symlink named on the command line is followed unless -r */
        if (((follow || !recursive) ? stat(src, &st) : lstat(src, &st)) || (S_ISDIR(st.st_mode) && !recursive))
            continue;
        char *base = rdc_basename(src);
        if (!rdc_contents_source(src, base, S_ISDIR(st.st_mode))) {
            put_name(f, base);
            free(base);
            continue;
        }
        free(base);
        DIR *d = opendir(src);
        struct dirent *de;
        while (d && (de = readdir(d)))
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                put_name(f, de->d_name);
        if (d)
            closedir(d);
    }
    int bad = ferror(f);
    return fclose(f) || bad ? RD_EIO : 0;
}
