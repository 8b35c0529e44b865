/* test_cpace.c - CPace over ristretto255/SHA-512 against draft-irtf-cfrg-cpace-21: the
 * draft's test vectors byte for byte, both sides agreeing (and only when all inputs match),
 * invalid shares refused, and the cost of one side of a handshake (the time informational; that
 * the timed side agrees with its peer, asserted). */
#include "check.h"

#include "wire/rd_cpace.h"

#include <sodium.h>
#include <time.h>

/* Draft-21, appendix "Test vector for CPace using group ristretto255 and hash SHA-512"
 * (also testvectors.json, "G_Coffee25519", in github.com/cfrg/draft-irtf-cfrg-cpace). */
static const char tv_ci[] = "0b415f696e69746961746f720b425f726573706f6e646572";
static const char tv_sid[] = "7e4b4791d6a8ef019b936c79fb7f2c57";
static const char tv_gen_str[] =   /* generator_string(G.DSI,PRS,CI,sid,H.s_in_bytes) */
    "11435061636552697374726574746f3235350850617373776f726464"
    "00000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000000000000000000000000000"
    "00000000000000000000000000000000180b415f696e69746961746f"
    "720b425f726573706f6e646572107e4b4791d6a8ef019b936c79fb7f"
    "2c57";
static const char tv_gen_hash[] =
    "da6d3ddc8802fca9058755ffd3ebde08a9c2c74945901a258482a288"
    "b6663af06bf645c93cd1c51512307199c80e84908916d983b34af772"
    "05f90851a657ee27";
static const char tv_g[] = "222b6b195fe84b1652badb6f6a3ae3d24341e7306967f0b8115b40d5698c7e56";
static const char tv_ya[] = "da3d23700a9e5699258aef94dc060dfda5ebb61f02a5ea77fad53f4ff0976d08";
static const char tv_Ya[] = "d6bac480f2c386c394efc7c47adb9925dcd2630b64f240c50f8d0eec482b9157";
static const char tv_yb[] = "d2316b454718c35362d83d69df6320f38578ed5984651435e2949762d900b80d";
static const char tv_Yb[] = "3ea7e0b19560d7c0b0f5734f63b955286dfa8232b5ebe63324e2d9e7433f7258";
static const char tv_K[] = "80b69a8a76457ab6a4d7f887a4bf6b55a2f80ac19c333f917a05fc9887c8b40f";
static const char tv_isk_ir[] =
    "b69effbf61b51d56401c0f65601abe428de8206feaaf0e32198896dc"
    "ae7b35cd2b38950a39dfd5d4a79164614c2984f7daa460b588c1e80c"
    "3fa2068af7900447";
/* "Test case for scalar_mult with valid inputs" and "Invalid inputs for scalar_mult_vfy" */
static const char tv_s[] = "7cd0e075fa7955ba52c02759a6c90dbbfc10e6d40aea8d283e407d88cf538a05";
static const char tv_X[] = "2c3c6b8c4f3800e7aef6864025b4ed79bd599117e427c41bd47d93d654b4a51c";
static const char tv_sX[] = "7c13645fe790a468f62c39beb7388e541d8405d1ade69d1778c5fe3e7f6b600e";
static const char tv_Y_i1[] = "2b3c6b8c4f3800e7aef6864025b4ed79bd599117e427c41bd47d93d654b4a51c";

/* Encodings that must not decode: the identity (draft's Y_i2) and a selection from RFC 9496
 * appendix A.2 (non-canonical field elements, negative s, non-square x^2, negative xy,
 * s = -1), plus the draft's Y_i1 and a zero with the unused top bit set. */
static const char *const invalid_points[] = {
    "0000000000000000000000000000000000000000000000000000000000000000",   /* identity */
    "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",   /* p: 0, non-canonical */
    "00ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "f3ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "0100000000000000000000000000000000000000000000000000000000000000",   /* negative */
    "01ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "26948d35ca62e643e26a83177332e6b6afeb9d08e4268b650f1f5bbd8d81d371",   /* non-square */
    "4eac077a713c57b4f4397629a4145982c661f48044dd3f96427d40b147d9742f",
    "3eb858e78f5a7254d8c9731174a94f76755fd3941c0ac93735c07ba14579630e",   /* negative xy */
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",   /* s = -1 */
    tv_Y_i1,
};

static size_t unhex(uint8_t *out, size_t cap, const char *hex)
{
    size_t bin_len = 0;
    if (sodium_hex2bin(out, cap, hex, strlen(hex), NULL, &bin_len, NULL) != 0)
        return 0;
    return bin_len;
}

#define UNHEX(buf, hex) CHECK_EQ_U(unhex(buf, sizeof buf, hex), sizeof buf)

static uint8_t ci[24], sid[16];
static const char prs[] = "Password", ada[] = "ADa", adb[] = "ADb";

static void load_inputs(void)
{
    UNHEX(ci, tv_ci);
    UNHEX(sid, tv_sid);
}

static void t_generator_known_answer(void)
{
    uint8_t gen_str[170], want_hash[64], hash[64], hash_of_str[64], want_g[32], g[32];
    load_inputs();
    UNHEX(gen_str, tv_gen_str);
    UNHEX(want_hash, tv_gen_hash);
    UNHEX(want_g, tv_g);
    /* the draft's own string and hash agree: our reading of the vector is right */
    crypto_hash_sha512(hash_of_str, gen_str, sizeof gen_str);
    CHECK_MEM_EQ(hash_of_str, want_hash, 64);
    /* ... and the string we hash is that one (SHA-512 pins it byte for byte) */
    CHECK_EQ_I(rd_cpace_generator_hash(hash, prs, 8, ci, sizeof ci, sid, sizeof sid), 0);
    CHECK_MEM_EQ(hash, want_hash, 64);
    CHECK_EQ_I(rd_cpace_generator(g, prs, 8, ci, sizeof ci, sid, sizeof sid), 0);
    CHECK_MEM_EQ(g, want_g, 32);
}

/* Zero padding at its edges and multi-byte LEB128 lengths, which the draft's vector (all
 * fields under 128 bytes) does not reach. Expected hashes come from the draft's Python
 * generator_string (prepend_len/lv_cat as printed in its appendix) with hashlib.sha512,
 * which reproduces the vector above; CI and sid are empty, PRS = bytes(range(n)) % 256. */
static void t_generator_long_prs(void)
{
    static const struct {
        size_t prs_len;
        const char *hash;
    } cases[] = {
        { 108, "678bb4dae4f0d2f1055269a88d7f458ea33c07d9bbd1dc17ea68a1e3ecc4f075"
               "41afc9a2f09d5de4a7f9d2868b218a604cc8fc9117dd8c9cd0da5683a8fa0e39" },   /* zpad 0 */
        { 109, "f18a71f8f2257ef09d73520fe6614a38fd840e37de072a6a108e9f33af4f967b"
               "2c0c0df56cc6b404be740140bcea7c51e5254c18642faeafbe90b99ae7611df3" },   /* would be -1 */
        { 128, "53ac81d07a617cbe48afcb3a7f81ab073448ab1e3c7c42ff9b757a9319037c0f"
               "b9364b46bb7bf5749acb0b00d78fd26cf3c2d273bbde55da299e1830cc3fc80d" },   /* 80 01 */
    };
    uint8_t p[300], want[64], h[64];
    for (size_t i = 0; i < sizeof p; i++)
        p[i] = (uint8_t)i;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        UNHEX(want, cases[i].hash);
        CHECK_EQ_I(rd_cpace_generator_hash(h, p, cases[i].prs_len, NULL, 0, NULL, 0), 0);
        CHECK_MEM_EQ(h, want, 64);
    }
    /* 300 zero bytes: length ac 02 */
    memset(p, 0, sizeof p);
    UNHEX(want, "121b1366a00f311aaee45feb4f8a1fc4ce2e252ce9880452ba3bbaf9253f934e"
                "bbdc48af4b8efa78130471c86a7d8865befdd1b495b51e96ce47377eb33f3f5b");
    CHECK_EQ_I(rd_cpace_generator_hash(h, p, 300, NULL, 0, NULL, 0), 0);
    CHECK_MEM_EQ(h, want, 64);
}

static void t_shares_known_answer(void)
{
    uint8_t g[32], ya[32], yb[32], want_a[32], want_b[32];
    struct rd_cpace a, b;
    UNHEX(g, tv_g);
    UNHEX(ya, tv_ya);
    UNHEX(yb, tv_yb);
    UNHEX(want_a, tv_Ya);
    UNHEX(want_b, tv_Yb);
    CHECK_EQ_I(rd_cpace_start_with(&a, g, ya), 0);
    CHECK_MEM_EQ(a.share, want_a, 32);
    CHECK_EQ_I(rd_cpace_start_with(&b, g, yb), 0);
    CHECK_MEM_EQ(b.share, want_b, 32);

    /* A scalar is an integer mod the order, bit 255 included: ya + 2^255 acts as
     * (ya + 2^255) mod l (reduced here with Python, not with the code under test). */
    uint8_t hi[32], hi_mod_l[32];
    struct rd_cpace c;
    UNHEX(hi, "da3d23700a9e5699258aef94dc060dfda5ebb61f02a5ea77fad53f4ff0976d88");
    UNHEX(hi_mod_l, "729e74883785c3d872a3327de7371556a5ebb61f02a5ea77fad53f4ff0976d08");
    CHECK_EQ_I(rd_cpace_start_with(&a, g, hi), 0);
    CHECK_EQ_I(rd_cpace_start_with(&c, g, hi_mod_l), 0);
    CHECK_MEM_EQ(a.share, c.share, 32);
    CHECK_MEM_NE(a.share, want_a, 32);
    rd_cpace_wipe(&c);
    rd_cpace_wipe(&a);
    rd_cpace_wipe(&b);
}

/* K is never exposed, but it is the same scalar_mult_vfy as a share, with the peer's share
 * as the point: scalar_mult_vfy(ya,Yb) = scalar_mult_vfy(yb,Ya) = K. */
static void t_k_known_answer(void)
{
    uint8_t ya[32], yb[32], Ya[32], Yb[32], K[32], s[32], X[32], sX[32];
    struct rd_cpace c;
    UNHEX(ya, tv_ya);
    UNHEX(yb, tv_yb);
    UNHEX(Ya, tv_Ya);
    UNHEX(Yb, tv_Yb);
    UNHEX(K, tv_K);
    CHECK_EQ_I(rd_cpace_start_with(&c, Yb, ya), 0);
    CHECK_MEM_EQ(c.share, K, 32);
    CHECK_EQ_I(rd_cpace_start_with(&c, Ya, yb), 0);
    CHECK_MEM_EQ(c.share, K, 32);
    UNHEX(s, tv_s);
    UNHEX(X, tv_X);
    UNHEX(sX, tv_sX);
    CHECK_EQ_I(rd_cpace_start_with(&c, X, s), 0);
    CHECK_MEM_EQ(c.share, sX, 32);
    rd_cpace_wipe(&c);
}

static void t_isk_known_answer(void)
{
    uint8_t g[32], ya[32], yb[32], want[64], isk_a[64], isk_b[64];
    struct rd_cpace a, b;
    load_inputs();
    UNHEX(g, tv_g);
    UNHEX(ya, tv_ya);
    UNHEX(yb, tv_yb);
    UNHEX(want, tv_isk_ir);
    CHECK_OR(rd_cpace_start_with(&a, g, ya) == 0 && rd_cpace_start_with(&b, g, yb) == 0, return);
    CHECK_EQ_I(rd_cpace_isk(&a, b.share, 1, ada, 3, adb, 3, sid, sizeof sid, isk_a), 0);
    CHECK_MEM_EQ(isk_a, want, 64);
    CHECK_EQ_I(rd_cpace_isk(&b, a.share, 0, adb, 3, ada, 3, sid, sizeof sid, isk_b), 0);
    CHECK_MEM_EQ(isk_b, want, 64);

    /* ADa of 200 bytes (length c8 01); expected value from the draft's Python as above */
    uint8_t long_ad[200];
    for (size_t i = 0; i < sizeof long_ad; i++)
        long_ad[i] = (uint8_t)i;
    UNHEX(want, "cb2f989e6381fc81196bc0e2b83258c5db21f68e5069ae2fdbe32ca9d7023290"
                "47ac77feab859eed55658bbd4a3e2742b6f8c3d81ea4abf4de08ad8892f80524");
    CHECK_EQ_I(rd_cpace_isk(&a, b.share, 1, long_ad, sizeof long_ad, adb, 3, sid, sizeof sid, isk_a), 0);
    CHECK_MEM_EQ(isk_a, want, 64);
    CHECK_EQ_I(rd_cpace_isk(&b, a.share, 0, adb, 3, long_ad, sizeof long_ad, sid, sizeof sid, isk_b), 0);
    CHECK_MEM_EQ(isk_b, want, 64);
    rd_cpace_wipe(&a);
    rd_cpace_wipe(&b);
}

/* One side's view of a run: everything it is given. */
struct view {
    const char *prs, *ci, *sid_gen, *sid_isk, *ada, *adb;
    int a_initiator, b_initiator;
};

static const struct view honest = { "correct horse", "A->B:12345", "session 1", "session 1",
                                    "ADa", "ADb", 1, 0 };

/* Run a handshake with random scalars where A and B see va and vb; 1 if the ISKs match. */
static int run(const struct view *va, const struct view *vb)
{
    uint8_t ga[32], gb[32], isk_a[64], isk_b[64];
    struct rd_cpace a, b;
    int ok = rd_cpace_generator(ga, va->prs, strlen(va->prs), va->ci, strlen(va->ci), va->sid_gen,
                                strlen(va->sid_gen)) == 0 &&
             rd_cpace_generator(gb, vb->prs, strlen(vb->prs), vb->ci, strlen(vb->ci), vb->sid_gen,
                                strlen(vb->sid_gen)) == 0 &&
             rd_cpace_start(&a, ga) == 0 && rd_cpace_start(&b, gb) == 0 &&
             rd_cpace_isk(&a, b.share, va->a_initiator, va->ada, strlen(va->ada), va->adb,
                          strlen(va->adb), va->sid_isk, strlen(va->sid_isk), isk_a) == 0 &&
             rd_cpace_isk(&b, a.share, vb->b_initiator, vb->adb, strlen(vb->adb), vb->ada,
                          strlen(vb->ada), vb->sid_isk, strlen(vb->sid_isk), isk_b) == 0;
    CHECK(ok);
    rd_cpace_wipe(&a);
    rd_cpace_wipe(&b);
    return ok && memcmp(isk_a, isk_b, 64) == 0;
}

static void t_sides_agree(void)
{
    for (int i = 0; i < 20; i++)
        CHECK(run(&honest, &honest));
    /* empty CI, sid and ADs are allowed (the draft's defaults) */
    struct view empty = { "pw", "", "", "", "", "", 1, 0 };
    CHECK(run(&empty, &empty));
    /* fresh scalars every time: shares differ between runs */
    uint8_t g[32];
    struct rd_cpace c1, c2;
    CHECK_EQ_I(rd_cpace_generator(g, "pw", 2, NULL, 0, NULL, 0), 0);
    CHECK_EQ_I(rd_cpace_start(&c1, g), 0);
    CHECK_EQ_I(rd_cpace_start(&c2, g), 0);
    CHECK_MEM_NE(c1.share, c2.share, 32);
    rd_cpace_wipe(&c1);
    rd_cpace_wipe(&c2);
}

static void t_sides_disagree(void)
{
    struct view v;
    v = honest, v.prs = "correct horsf";   /* PRS differs in its last byte */
    CHECK(!run(&honest, &v));
    v = honest, v.prs = "Correct horse";   /* ... its first byte */
    CHECK(!run(&honest, &v));
    v = honest, v.ci = "A->B:12346";
    CHECK(!run(&honest, &v));
    v = honest, v.sid_gen = "session 2", v.sid_isk = "session 2";
    CHECK(!run(&honest, &v));
    v = honest, v.sid_isk = "session 2";   /* sid counts in the ISK hash too, not only in g */
    CHECK(!run(&honest, &v));
    v = honest, v.ada = "ADA";             /* B saw another ADa than A sent */
    CHECK(!run(&honest, &v));
    v = honest, v.adb = "ADB";
    CHECK(!run(&honest, &v));
    v = honest, v.ada = "ADb", v.adb = "ADa";   /* ADs swapped */
    CHECK(!run(&honest, &v));
    v = honest, v.b_initiator = 1;         /* both claim the first message */
    CHECK(!run(&honest, &v));
    v = honest, v.a_initiator = 0;         /* both claim the second */
    CHECK(!run(&v, &honest));
}

static void t_invalid_shares_refused(void)
{
    uint8_t g[32], p[32], s[32], isk[64];
    struct rd_cpace c, bad;
    load_inputs();
    UNHEX(g, tv_g);
    UNHEX(s, tv_s);
    CHECK_OR(rd_cpace_start(&c, g) == 0, return);
    for (size_t i = 0; i < sizeof invalid_points / sizeof invalid_points[0]; i++) {
        UNHEX(p, invalid_points[i]);
        memset(isk, 0xaa, sizeof isk);
        if (rd_cpace_isk(&c, p, 1, ada, 3, adb, 3, sid, sizeof sid, isk) != -1)
            check_fail_at(__FILE__, __LINE__, "peer share %s accepted", invalid_points[i]);
        /* as a generator too: scalar_mult_vfy(s, Y) refuses it (draft: Y_i1, Y_i2) */
        if (rd_cpace_start_with(&bad, p, s) != -1 || !sodium_is_zero((uint8_t *)&bad, sizeof bad))
            check_fail_at(__FILE__, __LINE__, "generator %s accepted", invalid_points[i]);
    }
    /* the scalar 0, and the group order (0 mod l), would make every share the identity */
    uint8_t zero[32] = { 0 }, order[32];
    UNHEX(order, "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010");
    CHECK_EQ_I(rd_cpace_start_with(&bad, g, zero), -1);
    CHECK_EQ_I(rd_cpace_start_with(&bad, g, order), -1);
    /* a wiped state computes nothing */
    struct rd_cpace w = c;
    rd_cpace_wipe(&w);
    CHECK(sodium_is_zero((uint8_t *)&w, sizeof w));
    CHECK_EQ_I(rd_cpace_isk(&w, c.share, 1, NULL, 0, NULL, 0, NULL, 0, isk), -1);
    /* NULL with a length */
    CHECK_EQ_I(rd_cpace_generator(p, NULL, 1, NULL, 0, NULL, 0), -1);
    CHECK_EQ_I(rd_cpace_generator(p, "x", 1, NULL, 2, NULL, 0), -1);
    CHECK_EQ_I(rd_cpace_generator(p, "x", 1, NULL, 0, NULL, 3), -1);
    CHECK_EQ_I(rd_cpace_isk(&c, c.share, 1, NULL, 1, NULL, 0, NULL, 0, isk), -1);
    CHECK_EQ_I(rd_cpace_isk(&c, c.share, 1, NULL, 0, NULL, 1, NULL, 0, isk), -1);
    CHECK_EQ_I(rd_cpace_isk(&c, c.share, 1, NULL, 0, NULL, 0, NULL, 1, isk), -1);
    rd_cpace_wipe(&c);
}

/* Informational: one side of a handshake = generator + start + isk. Never asserted. */
static void t_cost_per_side(void)
{
    enum { RUNS = 1000 };
    uint8_t g[32], isk[64];
    struct rd_cpace peer, c;
    struct timespec t0, t1;
    int fails = 0;
    load_inputs();
    CHECK_OR(rd_cpace_generator(g, prs, 8, ci, sizeof ci, sid, sizeof sid) == 0 &&
             rd_cpace_start(&peer, g) == 0, return);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < RUNS; i++) {
        fails += rd_cpace_generator(g, prs, 8, ci, sizeof ci, sid, sizeof sid) != 0;
        fails += rd_cpace_start(&c, g) != 0;
        fails += rd_cpace_isk(&c, peer.share, 1, ada, 3, adb, 3, sid, sizeof sid, isk) != 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK_EQ_I(fails, 0);
    /* what was timed is a real handshake side: the peer, given the last share, gets its ISK */
    uint8_t isk_peer[64];
    CHECK_EQ_I(rd_cpace_isk(&peer, c.share, 0, adb, 3, ada, 3, sid, sizeof sid, isk_peer), 0);
    CHECK_MEM_EQ(isk, isk_peer, sizeof isk);
    double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / 1e3 / RUNS;
    printf("info: CPace one side (generator + start + isk): %.1f us, mean of %d\n", us, RUNS);
    rd_cpace_wipe(&c);
    rd_cpace_wipe(&peer);
}

int main(void)
{
    check_watchdog(60);
    RUN(t_generator_known_answer);
    RUN(t_generator_long_prs);
    RUN(t_shares_known_answer);
    RUN(t_k_known_answer);
    RUN(t_isk_known_answer);
    RUN(t_sides_agree);
    RUN(t_sides_disagree);
    RUN(t_invalid_shares_refused);
    RUN(t_cost_per_side);
    return check_summary();
}
