/* treegen.c - write an rdcp tree stream (lib/rdc_tree.h's records) from a text script, for
 * tests/rdcp/hostile.sh: the bytes a hostile source could send, made without rdcp's sender.
 *
 *   treegen < script > stream      one record per line, words separated by blanks;
 *                                  in a word \xHH is the byte HH ("\x00" a NUL, "\x20" a blank)
 *   R IDX KIND CONTENTS NAME       root (KIND d, f or l)
 *   d PATH [MODE [MTIME]]          directory
 *   f PATH DATA [MODE [MTIME]]     file with DATA ("-" empty, "@N" N bytes of a pattern),
 *                                  its data records and a correct end record
 *   s PATH SIZE [MODE [MTIME]]     file "complete at the destination" (--resume skip flag)
 *   x PATH DATA [MODE [MTIME]]     file as f, hashed (never RDC_F_NOHASH), with a wrong hash
 *   c PATH DATA START TMP          file DATA continued from the partial file TMP in its
 *                                  directory, which holds its first START bytes (--resume)
 *   H PATH SIZE                    a hashed sparse file of SIZE bytes, all of it a hole but
 *                                  its last byte (one data record), its end record with a
 *                                  zero hash
 *   p PATH SIZE PIECE              file of SIZE bytes of a pattern, sent whole as rdcp sends it
 *                                  (RDC_F_NOHASH, zero hash) in data records of PIECE bytes
 *   T PATH SIZE SENT               file of SIZE bytes as p sends it, in one data record of
 *                                  SIZE bytes, of which only the first SENT are written: the
 *                                  stream ends inside the file
 *   l PATH TARGET [MTIME]          symlink
 *   h PATH ROOT TARGET             hard link to TARGET of root ROOT
 *   n PATH TYPE [MODE]             special file of TYPE (one byte: p FIFO, s socket; anything
 *                                  else is what a hostile source might try, c or b a device)
 *   a NAME VALUE                   an 'x' record (extended attributes) of one attribute, here
 *                                  (honest after a 'd'); VALUE "@N": N bytes 'v'
 *   A NAME VALUE                   an attribute for the next f, s or x line: its 'x' record
 *                                  goes right after that file's header, as rdcp sends it
 *   Z                              end of tree
 * A PATH of "-" is the empty path (the root itself).
 * TREEGEN_NOHASH=1 in the environment: 'f' files are sent as rdcp's sender sends a whole file,
 * flagged RDC_F_NOHASH (4) with a zero hash (the receiver writes them on its worker pool);
 * otherwise they carry their XXH3-128 and no flag.
 * build: cc -O2 -o treegen treegen.c -lxxhash
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static void out(const void *p, size_t n)
{
    if (fwrite(p, 1, n, stdout) != n)
        exit(1);
}
static void u8(unsigned v) { unsigned char c = (unsigned char)v; out(&c, 1); }
static void u32(uint32_t v) { for (int i = 0; i < 4; i++) u8((v >> (8 * i)) & 0xff); }
static void u64(uint64_t v) { for (int i = 0; i < 8; i++) u8((unsigned)(v >> (8 * i)) & 0xff); }
static void str(const char *s, size_t n) { u32((uint32_t)n); out(s, n); }
static void meta(uint32_t mode, int64_t mtime)
{
    u32(mode);
    u32(0);
    u32(0);
    u64((uint64_t)mtime);
    u32(0);
}

/* unescape in place; returns the length */
/* the attributes the next file carries (A lines) */
static struct { char name[512], *value; size_t nl, vl; } xq[8];
static int nxq;

static void xattr_value(const char *w, size_t l, char **v, size_t *vl)
{
    if (w[0] == '@') {
        *vl = (size_t)atoll(w + 1);
        *v = malloc(*vl + 1);
        memset(*v, 'v', *vl);
    } else {
        *vl = l;
        *v = malloc(l + 1);
        memcpy(*v, w, l);
    }
}

/* an 'x' record of the queued attributes */
static void put_xq(void)
{
    if (!nxq)
        return;
    u8('x');
    u32((uint32_t)nxq);
    for (int i = 0; i < nxq; i++) {
        str(xq[i].name, xq[i].nl);
        str(xq[i].value, xq[i].vl);
        free(xq[i].value);
    }
    nxq = 0;
}

static size_t unesc(char *w)
{
    size_t o = 0;
    for (size_t i = 0; w[i]; i++) {
        if (w[i] == '\\' && w[i + 1] == 'x' && w[i + 2] && w[i + 3]) {
            char h[3] = { w[i + 2], w[i + 3], 0 };
            w[o++] = (char)strtoul(h, NULL, 16);
            i += 3;
        } else {
            w[o++] = w[i];
        }
    }
    return o;
}

int main(void)
{
    const char *nh = getenv("TREEGEN_NOHASH");
    int nohash = nh && *nh && strcmp(nh, "0") != 0;
    char line[65536];
    while (fgets(line, sizeof line, stdin)) {
        char *w[8];
        size_t l[8];
        int n = 0;
        for (char *t = strtok(line, " \t\n"); t && n < 8; t = strtok(NULL, " \t\n")) {
            w[n] = t;
            l[n] = unesc(t);
            n++;
        }
        if (!n || w[0][0] == '#')
            continue;
        char c = w[0][0];
        if (n > 1 && strcmp(w[1], "-") == 0)
            l[1] = 0;
        uint32_t mode = 0;
        int64_t mtime = 1000000000;
        if (c == 'R' && n == 5) {
            u8('R');
            u32((uint32_t)atoi(w[1]));
            u8((unsigned char)w[2][0]);
            u8((unsigned)atoi(w[3]));
            str(w[4], l[4]);
        } else if (c == 'd' && n >= 2) {
            mode = n > 2 ? (uint32_t)strtoul(w[2], NULL, 8) : 0755;
            if (n > 3)
                mtime = atoll(w[3]);
            u8('d');
            str(w[1], l[1]);
            meta(mode, mtime);
        } else if ((c == 'f' || c == 's' || c == 'x' || (c == 'c' && n == 5)) && n >= 3) {
            size_t start = c == 'c' ? (size_t)atoll(w[3]) : 0;
            mode = n > 3 && c != 'c' ? (uint32_t)strtoul(w[3], NULL, 8) : 0644;
            if (n > 4 && c != 'c')
                mtime = atoll(w[4]);
            size_t size;
            char *data;
            if (c == 's') {
                size = (size_t)atoll(w[2]);
                data = NULL;
            } else if (w[2][0] == '@') {
                size = (size_t)atoll(w[2] + 1);
                data = malloc(size + 1);
                for (size_t i = 0; i < size; i++)
                    data[i] = (char)('a' + i % 26);
            } else {
                size = strcmp(w[2], "-") == 0 ? 0 : l[2];
                data = malloc(size + 1);
                memcpy(data, w[2], size);
            }
            u8('f');
            str(w[1], l[1]);
            meta(mode, mtime);
            u64(size);
            u64(start);
            u8(c == 's' ? 1 : c == 'f' && nohash ? 4 : 0);
            if (c == 'c')
                str(w[4], l[4]);
            else
                str("", 0);
            put_xq();
            if (c == 's')
                continue;
            for (size_t off = start; off < size; off += 65536) {
                size_t k = size - off < 65536 ? size - off : 65536;
                u8('D');
                u64(off);
                u64(k);
                out(data + off, k);
            }
            XXH128_canonical_t h;
            XXH128_canonicalFromHash(&h, XXH3_128bits(data, size));
            if (c == 'f' && nohash)
                memset(h.digest, 0, 16);
            if (c == 'x')
                h.digest[0] ^= 1;
            u8('e');
            u8(0);
            out(h.digest, 16);
            free(data);
        } else if (c == 'H' && n == 3) {
            u8('f');
            str(w[1], l[1]);
            meta(0644, mtime);
            u64(strtoull(w[2], NULL, 10));
            u64(0);
            u8(2);   /* RDC_F_SPARSE, hashed */
            str("", 0);
            u8('D');
            u64(strtoull(w[2], NULL, 10) - 1);
            u64(1);
            u8('z');
            u8('e');
            u8(0);
            for (int i = 0; i < 16; i++)
                u8(0);
        } else if (c == 'p' && n == 4) {
            uint64_t size = strtoull(w[2], NULL, 10), piece = strtoull(w[3], NULL, 10);
            if (!piece)
                piece = 1;
            u8('f');
            str(w[1], l[1]);
            meta(0644, mtime);
            u64(size);
            u64(0);
            u8(4);   /* RDC_F_NOHASH: the frames' tags cover it */
            str("", 0);
            for (uint64_t off = 0; off < size; off += piece) {
                uint64_t k = size - off < piece ? size - off : piece;
                u8('D');
                u64(off);
                u64(k);
                for (uint64_t i = 0; i < k; i++)
                    u8((unsigned)('a' + (off + i) % 26));
            }
            u8('e');
            u8(0);
            for (int i = 0; i < 16; i++)
                u8(0);
        } else if (c == 'T' && n == 4) {
            uint64_t size = strtoull(w[2], NULL, 10), sent = strtoull(w[3], NULL, 10);
            u8('f');
            str(w[1], l[1]);
            meta(0644, mtime);
            u64(size);
            u64(0);
            u8(4);   /* RDC_F_NOHASH */
            str("", 0);
            u8('D');
            u64(0);
            u64(size);
            for (uint64_t i = 0; i < sent && i < size; i++)
                u8((unsigned)('a' + i % 26));
        } else if (c == 'l' && n >= 3) {
            if (n > 3)
                mtime = atoll(w[3]);
            u8('l');
            str(w[1], l[1]);
            meta(0777, mtime);
            str(w[2], l[2]);
        } else if (c == 'h' && n == 4) {
            u8('h');
            str(w[1], l[1]);
            u32((uint32_t)atoi(w[2]));
            str(w[3], l[3]);
        } else if (c == 'n' && n >= 3) {
            u8('n');
            str(w[1], l[1]);
            meta(n > 3 ? (uint32_t)strtoul(w[3], NULL, 8) : 0644, mtime);
            u8((unsigned char)w[2][0]);
        } else if ((c == 'a' || c == 'A') && n == 3 && nxq < 8 && l[1] < sizeof xq[0].name) {
            memcpy(xq[nxq].name, w[1], l[1]);
            xq[nxq].nl = l[1];
            xattr_value(w[2], l[2], &xq[nxq].value, &xq[nxq].vl);
            nxq++;
            if (c == 'a')
                put_xq();
        } else if (c == 'Z') {
            u8('Z');
        } else {
            fprintf(stderr, "treegen: bad line: %s\n", w[0]);
            return 2;
        }
    }
    return fflush(stdout) ? 1 : 0;
}
