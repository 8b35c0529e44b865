/* test_fold.c - rdc_fold_key: the spellings a case-folding filesystem (exFAT, FAT, ext4
 * casefold, SMB) takes for one name meet, in ASCII and beyond it (until 2026-12-07 only
 * ASCII letters were folded, so 'ä' after 'Ä' replaced it on exFAT with exit 0), and the
 * canonical forms of one name meet as ext4's casefold takes them for one (until 2026-12-08
 * 'é' as one code point and as 'e' with a combining accent stayed apart); names that differ
 * otherwise stay apart, and bytes that are no UTF-8 pass unchanged. */
#include "check.h"

#include "copy/rdc_fold.h"

static int meet(const char *a, const char *b)
{
    char *x = rdc_fold_key(a), *y = rdc_fold_key(b);
    int same = strcmp(x, y) == 0;
    free(x);
    free(y);
    return same;
}

static void t_ascii_spellings_meet(void)
{
    CHECK(meet("Dir/A", "dir/a"));
    CHECK(meet("README.TXT", "readme.txt"));
    char *k = rdc_fold_key("MiXeD/Path.C");
    CHECK(strcmp(k, "mixed/path.c") == 0);
    free(k);
}

static void t_unicode_spellings_meet(void)
{
    CHECK(meet("\xc3\x84rger", "\xc3\xa4rger"));                 /* Ärger, ärger */
    CHECK(meet("\xce\xa3\xce\xbf\xcf\x86\xce\xaf\xce\xb1", "\xcf\x83\xce\xbf\xcf\x86\xce\xaf\xce\xb1"));   /* Σοφία, σοφία */
    CHECK(meet("\xd0\x9c\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0", "\xd0\xbc\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0"));   /* Москва, москва */
    CHECK(meet("\xc8\xba", "\xe2\xb1\xa5"));                       /* Ⱥ (2 bytes), ⱥ (3 bytes) */
}

static void t_other_names_stay_apart(void)
{
    CHECK(!meet("a", "b"));
    CHECK(!meet("\xc3\xa4", "a"));                                 /* ä is not a */
    CHECK(!meet("\xe6\x97\xa5\xe6\x9c\xac.txt", "\xe4\xb8\xad\xe5\x9b\xbd.txt"));   /* 日本, 中国 */
}

static void t_canonical_forms_meet(void)
{
    CHECK(meet("caf\xc3\xa9", "cafe\xcc\x81"));                  /* café: é (NFC), e + U+0301 (NFD) */
    CHECK(meet("CAF\xc3\x89", "cafe\xcc\x81"));                  /* CAFÉ (NFC), café (NFD) */
    CHECK(meet("\xea\xb0\x80", "\xe1\x84\x80\xe1\x85\xa1"));          /* 가 as one syllable, as its two jamo */
    CHECK(meet("Stra\xc3\x9f" "e", "STRASSE"));                    /* ß folds to ss */
    CHECK(!meet("caf\xc3\xa9", "cafe"));                          /* é is not e */
    CHECK(!meet("\xc3\xa9", "\xc3\xa8"));                          /* é is not è */
}

static void t_bytes_that_are_no_utf8_pass(void)
{
    char *k = rdc_fold_key("A\xff\xc3Z");   /* a stray byte, a character cut short */
    CHECK(strcmp(k, "a\xff\xc3z") == 0);
    free(k);
    CHECK(meet("X\x80Y", "x\x80y"));
    CHECK(!meet("\x80", "\x81"));
    k = rdc_fold_key("");
    CHECK(strcmp(k, "") == 0);
    free(k);
}

int main(void)
{
    RUN(t_ascii_spellings_meet);
    RUN(t_unicode_spellings_meet);
    RUN(t_other_names_stay_apart);
    RUN(t_canonical_forms_meet);
    RUN(t_bytes_that_are_no_utf8_pass);
    return check_summary();
}
