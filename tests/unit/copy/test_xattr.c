/* test_xattr.c - copy/rdc_xattr: which names travel (user.* with -X, the ACLs with -p, a
 * default ACL only on a directory, never security.* or trusted.*), the 'x' record's parser
 * at every cut and against bad lengths, the receiver's filter, and a record read from a real
 * file set on another. */
#include "check.h"

#include "copy/rdc_xattr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#define ACLS RDC_XATTR_ACLS
#define USER RDC_XATTR_USER
#define W(s) rdc_xattr_wanted(s, strlen(s), ACLS | USER, 0)

static void t_wanted(void)
{
    CHECK(W("user.x"));
    CHECK(W("system.posix_acl_access"));
    CHECK(!W("system.posix_acl_default"));   /* a file has no default ACL */
    CHECK(rdc_xattr_wanted("system.posix_acl_default", 24, ACLS, 1));
    CHECK(!rdc_xattr_wanted("user.x", 6, ACLS, 0));
    CHECK(!rdc_xattr_wanted("system.posix_acl_access", 23, USER, 0));
    CHECK(!W("security.capability"));
    CHECK(!W("security.selinux"));
    CHECK(!W("trusted.overlay.opaque"));
    CHECK(!W("user."));
    CHECK(!W("user"));
    CHECK(!W("system.posix_acl_accessX"));
    CHECK(!W(""));
    CHECK(!rdc_xattr_wanted("user.a\0b", 8, USER, 0));   /* a NUL inside */
    char lng[300];
    memset(lng, 'a', sizeof lng);
    memcpy(lng, "user.", 5);
    CHECK(rdc_xattr_wanted(lng, 255, USER, 0));
    CHECK(!rdc_xattr_wanted(lng, 256, USER, 0));
}

/* an 'x' body of n pairs (name i, value i) */
static void body(struct rdc_buf *b, int n, const char *const *names, const char *const *values)
{
    rdc_put_u32(b, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        rdc_put_str(b, names[i], strlen(names[i]));
        rdc_put_str(b, values[i], strlen(values[i]));
    }
}

static int nrefused;
static char refused_names[256];
static void refused(void *ctx, const char *name, size_t n)
{
    (void)ctx;
    nrefused++;
    strncat(refused_names, name, n);
    strcat(refused_names, ";");
}

static void t_parse_and_filter(void)
{
    static const char *const names[] = { "user.a", "security.capability", "user.b", "trusted.x" };
    static const char *const values[] = { "1", "cap", "", "t" };
    struct rdc_buf b = { 0 };
    body(&b, 4, names, values);
    size_t len = 0;
    CHECK_EQ_I(rdc_xattr_parse(b.p, b.len, &len), 1);
    CHECK_EQ_U(len, b.len);
    for (size_t cut = 0; cut < b.len; cut++)   /* every prefix is incomplete, never malformed */
        CHECK_EQ_I(rdc_xattr_parse(b.p, cut, &len), 0);
    nrefused = 0;
    refused_names[0] = '\0';
    size_t kl = 0;
    unsigned char *kept = rdc_xattr_filter(b.p, b.len, USER, 0, &kl, refused, NULL);
    CHECK(kept != NULL);
    CHECK_EQ_I(nrefused, 2);
    CHECK(strcmp(refused_names, "security.capability;trusted.x;") == 0);
    struct rdc_buf w = { 0 };
    body(&w, 2, (const char *const[]){ "user.a", "user.b" }, (const char *const[]){ "1", "" });
    CHECK_EQ_U(kl, w.len);
    CHECK(kept && memcmp(kept, w.p, w.len) == 0);
    free(kept);
    nrefused = 0;
    CHECK(rdc_xattr_filter(b.p, b.len, ACLS, 0, &kl, refused, NULL) == NULL);   /* none taken */
    CHECK_EQ_I(nrefused, 4);
    rdc_buf_free(&w);
    rdc_buf_free(&b);
}

static void t_parse_refuses_bad_lengths(void)
{
    size_t len;
    struct rdc_buf b = { 0 };
    rdc_put_u32(&b, 0xffffffffu);   /* a count no record can hold */
    CHECK_EQ_I(rdc_xattr_parse(b.p, b.len, &len), -1);
    b.len = 0;
    rdc_put_u32(&b, 1);
    rdc_put_str(&b, "", 0);         /* an empty name */
    rdc_put_str(&b, "v", 1);
    CHECK_EQ_I(rdc_xattr_parse(b.p, b.len, &len), -1);
    b.len = 0;
    char name[256];
    memset(name, 'n', sizeof name);
    rdc_put_u32(&b, 1);
    rdc_put_str(&b, name, 256);     /* a name over 255 bytes */
    rdc_put_str(&b, "v", 1);
    CHECK_EQ_I(rdc_xattr_parse(b.p, b.len, &len), -1);
    b.len = 0;
    rdc_put_u32(&b, 1);
    rdc_put_str(&b, "user.v", 6);
    rdc_put_u32(&b, RDC_XATTR_MAX_VALUE + 1);   /* judged before its bytes arrive */
    CHECK_EQ_I(rdc_xattr_parse(b.p, b.len, &len), -1);
    b.len = 0;
    rdc_put_u32(&b, 1);
    rdc_put_str(&b, "user.v", 6);
    rdc_put_u32(&b, RDC_XATTR_MAX_VALUE);       /* the biggest value: waits for its bytes */
    CHECK_EQ_I(rdc_xattr_parse(b.p, b.len, &len), 0);
    rdc_buf_free(&b);
}

/* read from one real file, set on another: what arrives is what was there (user.*), and a
 * file without attributes gives no record at all */
static void t_real_file_round_trip(void)
{
    char a[] = "/tmp/rdpipe-xattr-a.XXXXXX", c[] = "/tmp/rdpipe-xattr-c.XXXXXX";
    int fa = mkstemp(a), fc = mkstemp(c);
    CHECK_OR(fa >= 0 && fc >= 0, return);
    struct rdc_buf b = { 0 };
    CHECK_EQ_I(rdc_xattr_record(&b, fa, NULL, 0, ACLS | USER, 0), 0);
    CHECK_EQ_U(b.len, 0);
    if (fsetxattr(fa, "user.k", "v\0w", 3, 0) && errno == ENOTSUP) {
        CHECK_SKIP("no user xattrs on /tmp: round trip not run");
        goto out;
    }
    CHECK(fsetxattr(fa, "user.k2", "", 0, 0) == 0);
    CHECK_EQ_I(rdc_xattr_record(&b, -1, a, 0, USER, 0), 0);   /* by path, as directories */
    CHECK(b.len > 5 && b.p[0] == 'x');
    size_t len = 0;
    CHECK_EQ_I(rdc_xattr_parse(b.p + 1, b.len - 1, &len), 1);
    CHECK_EQ_U(len, b.len - 1);
    size_t kl = 0;
    unsigned char *kept = rdc_xattr_filter(b.p + 1, len, USER, 0, &kl, refused, NULL);
    char *bad = NULL;
    unsigned more = 9;
    CHECK(kept && rdc_xattr_apply(fc, kept, kl, &bad, &more) == 0);
    CHECK_EQ_U(more, 0);
    char v[8];
    CHECK_EQ_I((int)fgetxattr(fc, "user.k", v, sizeof v), 3);
    CHECK(memcmp(v, "v\0w", 3) == 0);
    CHECK_EQ_I((int)fgetxattr(fc, "user.k2", v, sizeof v), 0);
    free(kept);
    free(bad);
out:
    rdc_buf_free(&b);
    close(fa);
    close(fc);
    unlink(a);
    unlink(c);
}

/* one attribute the filesystem refuses (a value over XATTR_SIZE_MAX) costs the others
 * nothing: each is tried, the first failure is named, the others counted (before
 * 2026-11-29 the first failure ended the body: the attributes after it were never set) */
static void t_apply_goes_on_after_a_failure(void)
{
    char c[] = "/tmp/rdpipe-xattr-f.XXXXXX";
    int fc = mkstemp(c);
    CHECK_OR(fc >= 0, return);
    if (fsetxattr(fc, "user.probe", "1", 1, 0) && errno == ENOTSUP) {
        CHECK_SKIP("no user xattrs on /tmp");
        goto out;
    }
    static char huge[70000];
    struct rdc_buf b = { 0 };
    rdc_put_u32(&b, 3);
    rdc_put_str(&b, "user.big", 8);
    rdc_put_str(&b, huge, sizeof huge);
    rdc_put_str(&b, "user.a", 6);
    rdc_put_str(&b, "1", 1);
    rdc_put_str(&b, "user.big2", 9);
    rdc_put_str(&b, huge, sizeof huge);
    char *bad = NULL;
    unsigned more = 0;
    int e = rdc_xattr_apply(fc, b.p, b.len, &bad, &more);
    CHECK(e != 0);
    CHECK(bad && strcmp(bad, "user.big") == 0);
    CHECK_EQ_U(more, 1);
    char v[4];
    CHECK_EQ_I((int)fgetxattr(fc, "user.a", v, sizeof v), 1);
    free(bad);
    rdc_buf_free(&b);
out:
    close(fc);
    unlink(c);
}

int main(void)
{
    RUN(t_wanted);
    RUN(t_parse_and_filter);
    RUN(t_parse_refuses_bad_lengths);
    RUN(t_real_file_round_trip);
    RUN(t_apply_goes_on_after_a_failure);
    return check_summary();
}
