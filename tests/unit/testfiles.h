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

/* ---- the files of a case that makes a transfer fail ---- */

#include "check.h"

#include <string.h>

#define CASE_PRECIOUS "previous content that must survive a failed transfer\n"

struct case_files {
    char in[256], out[256];
    uint8_t *data;   /* the n bytes in `in` */
    size_t n;
};

/* in: n random bytes; out: CASE_PRECIOUS */
__attribute__((unused)) static void case_files_make(struct case_files *f, size_t n, uint64_t seed)
{
    temp_path(f->in, sizeof f->in, "in");
    temp_path(f->out, sizeof f->out, "out");
    f->n = n;
    f->data = random_bytes(n, seed);
    if (write_file(f->in, f->data, n) || write_file(f->out, CASE_PRECIOUS, sizeof CASE_PRECIOUS - 1))
        check_fail_at(__FILE__, __LINE__, "cannot write the test files");
}

__attribute__((unused)) static void case_files_remove(struct case_files *f)
{
    free(f->data);
    unlink(f->in);
    unlink(f->out);
}

/* The output after a failed stream: a prefix of the input; with `strict`, not all of it
 * (when a chunk was lost or corrupt, the stream cannot have arrived whole). */
__attribute__((unused)) static void case_files_check_prefix(const struct case_files *f, const char *file,
                                                            int line, int strict)
{
    size_t got_n = 0;
    uint8_t *got = read_file(f->out, &got_n);
    if (!got) {
        check_fail_at(file, line, "cannot read the output");
        return;
    }
    if (got_n > f->n || (strict && got_n == f->n))
        check_fail_at(file, line, "failed transfer wrote %zu of %zu bytes", got_n, f->n);
    else if (memcmp(got, f->data, got_n) != 0)
        check_fail_at(file, line, "failed transfer wrote %zu bytes that are not the input's start", got_n);
    free(got);
}

/* The output after a stream that must have arrived whole: exactly the input. */
__attribute__((unused)) static void case_files_check_whole(const struct case_files *f, const char *file,
                                                           int line)
{
    size_t got_n = 0;
    uint8_t *got = read_file(f->out, &got_n);
    if (!got || got_n != f->n || memcmp(got, f->data, got_n) != 0)
        check_fail_at(file, line, "the output is not the input (%zu of %zu bytes)", got ? got_n : 0, f->n);
    free(got);
}

#endif
