/* fuzz_tree_recv.c - rdcp's tree receiver (lib/rdc_recv.c, the code `rdcp --tree-recv` runs)
 * fed arbitrary record streams against a real directory.
 *
 * Made once: a scratch directory W holding dst/ (the destination) and canary/ (a file and a
 * directory beside it). Input byte 0 picks the options: bit 0 -p -X, bit 1 two sources, bit 2
 * DST is the missing W/dst/new instead of W/dst, bit 3 --resume (the manifest is made, so the
 * stream may skip and continue files), bits 4-7 the size of the pieces the rest is fed in
 * (1 + 73 * n bytes: records split anywhere). The rest is the stream. After each input
 * nothing may have appeared, vanished or changed outside W/dst (else abort()), and W/dst is
 * emptied again. Files over 1 MiB are refused (they would be preallocated).
 */
#include "util/rd_error.h"
#include "copy/rdc_recv.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char W[64], DST[96], NEW[112], CANARY[96];

#define CANARY_TEXT "canary, do not touch\n"

static void die(const char *what)
{
    fprintf(stderr, "fuzz_tree_recv: %s\n", what);
    abort();
}

static int rm_any(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)f;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

static int chmod_cb(const char *path, const struct stat *st, int flag, struct FTW *f);

static void remove_all(void)   /* at exit: leave no scratch directory behind */
{
    nftw(W, chmod_cb, 16, FTW_PHYS);
    nftw(W, rm_any, 16, FTW_PHYS | FTW_DEPTH);
}

static void setup(void)
{
    /* tmpfs where there is one: every input creates and removes real files, and on a disk
     * the journal makes that the target's whole cost */
    strcpy(W, "/dev/shm/fuzz_tree_recv.XXXXXX");
    if (!mkdtemp(W)) {
        strcpy(W, "/tmp/fuzz_tree_recv.XXXXXX");
        if (!mkdtemp(W))
            die("mkdtemp");
    }
    snprintf(DST, sizeof DST, "%s/dst", W);
    snprintf(NEW, sizeof NEW, "%s/dst/new", W);
    snprintf(CANARY, sizeof CANARY, "%s/canary", W);
    char p[160];
    if (mkdir(DST, 0700) || mkdir(CANARY, 0700))
        die("mkdir");
    snprintf(p, sizeof p, "%s/dir", CANARY);
    if (mkdir(p, 0700))
        die("mkdir");
    snprintf(p, sizeof p, "%s/file", CANARY);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || write(fd, CANARY_TEXT, strlen(CANARY_TEXT)) != (ssize_t)strlen(CANARY_TEXT) || close(fd))
        die("canary file");
    rd_set_progname("rdcp");
    atexit(remove_all);
}

/* a fingerprint of everything in W but dst/: names, types, modes, sizes, link counts */
static unsigned long long fp;
static size_t nseen;
static int fp_cb(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)flag;
    (void)f;
    if (strncmp(path, DST, strlen(DST)) == 0 && (path[strlen(DST)] == '/' || !path[strlen(DST)]))
        return 0;
    for (const char *c = path; *c; c++)
        fp = (fp ^ (unsigned char)*c) * 1099511628211ull;
    unsigned long long v[4] = { st->st_mode, (unsigned long long)st->st_size, st->st_nlink, st->st_ino };
    for (int i = 0; i < 4; i++)
        fp = (fp ^ v[i]) * 1099511628211ull;
    nseen++;
    return 0;
}

static unsigned long long fingerprint(void)
{
    fp = 1469598103934665603ull;
    nseen = 0;
    if (nftw(W, fp_cb, 16, FTW_PHYS))
        die("nftw");
    char p[160], buf[64] = { 0 };
    snprintf(p, sizeof p, "%s/file", CANARY);
    int fd = open(p, O_RDONLY | O_NOFOLLOW);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n != (ssize_t)strlen(CANARY_TEXT) || strcmp(buf, CANARY_TEXT))
        die("the canary file changed");
    return fp;
}

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    if (f->level == 0)
        return 0;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

static int chmod_cb(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)f;
    if (flag == FTW_D || flag == FTW_DNR)
        chmod(path, (st->st_mode & 07777) | 0700);
    return 0;
}

static void empty_dst(void)
{
    nftw(DST, chmod_cb, 16, FTW_PHYS);   /* -p may have made directories unwritable */
    nftw(DST, rm_cb, 16, FTW_PHYS | FTW_DEPTH);
    struct stat st;
    if (lstat(DST, &st) || !S_ISDIR(st.st_mode))
        die("dst is gone");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static unsigned long long want;
    static size_t want_n;
    if (!W[0]) {
        setup();
        want = fingerprint();
        want_n = nseen;
    }
    if (size < 1)
        return 0;
    uint8_t opt = data[0];
    data++;
    size--;
    size_t piece = 1 + 73 * (size_t)(opt >> 4);
    struct rdc_rcv *r = rdc_rcv_new(opt & 4 ? NEW : DST, opt & 2 ? 2 : 1, opt & 1, opt & 1, 1);
    if (!r)
        die("rdc_rcv_new");
    static int devnull = -1;
    if (devnull < 0 && (devnull = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0)
        die("/dev/null");
    if (opt & 8)
        rdc_rcv_manifest(r, devnull, NULL);
    rdc_rcv_max_file(r, 1 << 20);   /* no fuzzed size may preallocate the disk full */
    int rc = RD_OK;
    for (size_t off = 0; off < size && rc == RD_OK; off += piece)
        rc = rdc_rcv_consume(r, data + off, size - off < piece ? size - off : piece);
    if (rc == RD_OK)
        rdc_rcv_finish(r);
    rdc_rcv_free(r);
    rd_error_clear();
    if (fingerprint() != want || nseen != want_n)
        die("something outside the destination changed");
    empty_dst();
    return 0;
}
