/* test_number.c - rd_parse_decimal: digits only, bounded, never wrapped; what strtoul would
 * have taken instead ("-1" as a huge value, " 5", "+5", "5x", 2^64 clamped) is refused. */
#include "check.h"

#include "util/rd_number.h"

#include <limits.h>

static int parse(const char *w, unsigned long long max, unsigned long long *v)
{
    *v = 12345;   /* untouched on a refusal */
    return rd_parse_decimal(w, max, v);
}

static void t_whole_words_within_max(void)
{
    unsigned long long v;
    CHECK_EQ_I(parse("0", 10, &v), 0);
    CHECK(v == 0);
    CHECK_EQ_I(parse("10", 10, &v), 0);
    CHECK(v == 10);
    CHECK_EQ_I(parse("007", 10, &v), 0);
    CHECK(v == 7);
    CHECK_EQ_I(parse("65535", 65535, &v), 0);
    CHECK(v == 65535);
    CHECK_EQ_I(parse("18446744073709551615", ULLONG_MAX, &v), 0);
    CHECK(v == ULLONG_MAX);
}

static void t_anything_else_refused_untouched(void)
{
    const char *bad[] = { "", " 5", "5 ", "+5", "-1", "5x", "0x10", "1e3", "1.0", "١" };
    unsigned long long v;
    for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_EQ_I(parse(bad[i], ULLONG_MAX, &v), -1);
        CHECK(v == 12345);
    }
    CHECK_EQ_I(parse("11", 10, &v), -1);
    CHECK_EQ_I(parse("2", 1, &v), -1);    /* a digit over max: (max - d) must not wrap */
    CHECK_EQ_I(parse("9", 0, &v), -1);
    CHECK_EQ_I(parse("65536", 65535, &v), -1);
    CHECK_EQ_I(parse("99999999999999999999", 65535, &v), -1);
    /* one past ULLONG_MAX: strtoull says ERANGE and clamps; a 21-digit word would wrap */
    CHECK_EQ_I(parse("18446744073709551616", ULLONG_MAX, &v), -1);
    CHECK_EQ_I(parse("184467440737095516150", ULLONG_MAX, &v), -1);
    CHECK(v == 12345);
}

int main(void)
{
    RUN(t_whole_words_within_max);
    RUN(t_anything_else_refused_untouched);
    return check_summary();
}
