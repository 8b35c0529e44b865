/* rd_version.c - see rd_version.h. The commit comes from the Makefile (git describe at build
 * time) as RD_COMMIT; a build outside a git tree says "unknown". */
#include "run/rd_version.h"

#include "run/rd_cli.h"
#include "wire/rd_ocb.h"
#include "wire/rd_seal.h"

#include <infiniband/verbs.h>
#include <openssl/crypto.h>
#include <zstd.h>

#ifndef RD_COMMIT
#define RD_COMMIT "unknown"
#endif

/* RDMA devices are looked up now: the same binary runs on hosts with and without them. */
static void print_rdma(FILE *f)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list || n <= 0) {
        fputs("rdma: no RDMA devices (TCP only)\n", f);
        if (list)
            ibv_free_device_list(list);
        return;
    }
    fprintf(f, "rdma: %d device%s:", n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++)
        fprintf(f, " %s", ibv_get_device_name(list[i]));
    fputc('\n', f);
    ibv_free_device_list(list);
}

void rd_print_version(FILE *f, const char *tool)
{
    fprintf(f, "%s (rdpipe) %s\n", tool, RD_VERSION);
    fprintf(f, "commit: %s\n", RD_COMMIT[0] ? RD_COMMIT : "unknown");
    fputs("transports: tcp, rdma (librdmacm, libibverbs)\n", f);
    print_rdma(f);
    fprintf(f, "codecs: zstd %s (--compress)\n", ZSTD_versionString());
    const char *gcrypt = rd_ocb_library_version();
    if (gcrypt)
        fprintf(f, "ciphers: aes-256-ocb (libgcrypt %s), ", gcrypt);
    else
        fputs("ciphers: ", f);
    fprintf(f, "aes-256-gcm, chacha20-poly1305 (%s); this end prefers %s\n", OpenSSL_version(OPENSSL_VERSION),
            rd_cipher_name(rd_cipher_agreed(rd_cipher_offer())));
}
