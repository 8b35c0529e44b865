/* testfiles.h - random data and scratch files for the unit tests that move whole streams. */
#ifndef RD_TEST_FILES_H
#define RD_TEST_FILES_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* n bytes from a xorshift generator: the same seed gives the same bytes */
__attribute__((unused)) static uint8_t *random_bytes(size_t n, uint64_t seed)
{
    uint8_t *p = malloc(n ? n : 1);
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (uint8_t)(x >> 24);
    }
    return p;
}

/* a new empty file under $TMPDIR (or /tmp), named after what */
__attribute__((unused)) static void temp_path(char *out, size_t n, const char *what)
{
    const char *dir = getenv("TMPDIR");
    snprintf(out, n, "%s/rdpipe-test-%s-XXXXXX", dir && *dir ? dir : "/tmp", what);
    int fd = mkstemp(out);
    if (fd < 0) {
        perror("mkstemp");
        exit(2);
    }
    close(fd);
}

__attribute__((unused)) static int write_file(const char *path, const void *data, size_t n)
{
    int fd = open(path, O_WRONLY | O_TRUNC | O_CREAT, 0600);
    if (fd < 0)
        return -1;
    const uint8_t *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return close(fd);
}

/* Whole file into a malloc'ed buffer; *n = its size. NULL on error. */
__attribute__((unused)) static uint8_t *read_file(const char *path, size_t *n)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st)) {
        close(fd);
        return NULL;
    }
    uint8_t *p = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, p + got, (size_t)st.st_size + 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        if (got == (size_t)st.st_size + 1)
            break;
    }
    close(fd);
    *n = got;
    return p;
}

#endif
