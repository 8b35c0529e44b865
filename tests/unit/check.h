/* check.h - the smallest unit-test harness that does the job.
 *
 *   static void t_something(void) { CHECK(x == 1); CHECK_EQ_U(n, 4096); ... }
 *   int main(void) { RUN(t_something); ...; return check_summary(); }
 *
 * A case passes when none of its CHECKs failed. Each case prints exactly one line,
 * "ok NAME", "FAIL NAME: file:line: why" (the first failure; later ones follow on
 * indented "also" lines) or "skip NAME: why", and check_summary() prints "N passed, N failed"
 * (", N skipped" when some were) and returns the exit status: 1 if anything failed or no case
 * ran, 77 if every case skipped, else 0. A failed CHECK does not abort the case: the case
 * keeps going so cleanup still runs; use CHECK_OR(cond, action) to bail out early.
 *
 * A case that cannot run here calls CHECK_SKIP("why", ...) and returns: it is counted as
 * skipped, never as passed (a case that failed before it still fails). A case must assert
 * something: one that only measures (a speed) checks that what it timed succeeded.
 */
#ifndef RD_TEST_CHECK_H
#define RD_TEST_CHECK_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

static int check_passed, check_failed, check_skipped;
static int check_case_failures;             /* failures inside the current case */
static char check_skip_why[480];            /* set by CHECK_SKIP: the current case skipped */
static const char *check_case_name = "?";   /* also read by watchdogs (signal handlers) */
static char check_first_why[600];
static char check_more[4096];               /* later failures of the case, printed after it */

__attribute__((format(printf, 3, 4), unused))
static void check_fail_at(const char *file, int line, const char *fmt, ...)
{
    char why[480];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (check_case_failures++ == 0)
        snprintf(check_first_why, sizeof check_first_why, "%s:%d: %s", file, line, why);
    else {
        size_t used = strlen(check_more);
        if (used < sizeof check_more - 1)
            snprintf(check_more + used, sizeof check_more - used, "    also %s:%d: %s\n", file,
                     line, why);
    }
}

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond))                                                                     \
            check_fail_at(__FILE__, __LINE__, "CHECK(%s) failed", #cond);                \
    } while (0)

/* Check, and run `action` (e.g. `return` or `goto out`) if it failed. */
#define CHECK_OR(cond, action)                                                           \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            check_fail_at(__FILE__, __LINE__, "CHECK(%s) failed", #cond);                \
            action;                                                                      \
        }                                                                                \
    } while (0)

#define CHECK_EQ_I(a, b)                                                                 \
    do {                                                                                 \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                  \
        if (check_a_ != check_b_)                                                        \
            check_fail_at(__FILE__, __LINE__, "%s == %lld, expected %s == %lld", #a,     \
                          check_a_, #b, check_b_);                                       \
    } while (0)

#define CHECK_EQ_U(a, b)                                                                 \
    do {                                                                                 \
        unsigned long long check_a_ = (unsigned long long)(a),                           \
                           check_b_ = (unsigned long long)(b);                           \
        if (check_a_ != check_b_)                                                        \
            check_fail_at(__FILE__, __LINE__, "%s == %llu (0x%llx), expected %s == %llu", \
                          #a, check_a_, check_a_, #b, check_b_);                         \
    } while (0)

#define CHECK_NE_U(a, b)                                                                 \
    do {                                                                                 \
        unsigned long long check_a_ = (unsigned long long)(a),                           \
                           check_b_ = (unsigned long long)(b);                           \
        if (check_a_ == check_b_)                                                        \
            check_fail_at(__FILE__, __LINE__, "%s == %s == %llu, expected them to differ", \
                          #a, #b, check_a_);                                             \
    } while (0)

#define CHECK_STR_EQ(a, b)                                                               \
    do {                                                                                 \
        const char *check_a_ = (a), *check_b_ = (b);                                     \
        if (!check_a_ || !check_b_ || strcmp(check_a_, check_b_) != 0)                   \
            check_fail_at(__FILE__, __LINE__, "%s == \"%s\", expected \"%s\"", #a,       \
                          check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)"); \
    } while (0)

/* haystack contains needle */
#define CHECK_HAS(hay, needle)                                                           \
    do {                                                                                 \
        const char *check_h_ = (hay), *check_n_ = (needle);                              \
        if (!check_h_ || !strstr(check_h_, check_n_))                                    \
            check_fail_at(__FILE__, __LINE__, "%s == \"%s\" does not contain \"%s\"",    \
                          #hay, check_h_ ? check_h_ : "(null)", check_n_);               \
    } while (0)

#define CHECK_MEM_EQ(a, b, n)                                                            \
    do {                                                                                 \
        if (memcmp((a), (b), (n)) != 0)                                                  \
            check_fail_at(__FILE__, __LINE__, "%s and %s differ in their first %zu bytes", \
                          #a, #b, (size_t)(n));                                          \
    } while (0)

#define CHECK_MEM_NE(a, b, n)                                                            \
    do {                                                                                 \
        if (memcmp((a), (b), (n)) == 0)                                                  \
            check_fail_at(__FILE__, __LINE__, "%s and %s are equal, expected a difference", \
                          #a, #b);                                                       \
    } while (0)

/* The current case cannot run here: counted and reported as a skip, with why. */
__attribute__((format(printf, 1, 2), unused))
static void check_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(check_skip_why, sizeof check_skip_why, fmt, ap);
    va_end(ap);
    if (!check_skip_why[0])
        snprintf(check_skip_why, sizeof check_skip_why, "(no reason given)");
}
#define CHECK_SKIP(...) check_skip(__VA_ARGS__)

/* Optional per-case hooks (e.g. rd_error_clear before each case). */
static void (*check_before_each)(void);

/* The watchdog: a case that runs longer than check_timeout_s (0 = no limit) prints a FAIL
 * line and ends the program, so a hang is a failure, not a stuck test run. */
static unsigned check_timeout_s;

static void check_on_alarm(int sig)
{
    (void)sig;
    static const char a[] = "FAIL ", b[] = ": hung for more than the case timeout\n";
    ssize_t w = write(STDOUT_FILENO, a, sizeof a - 1);
    w = write(STDOUT_FILENO, check_case_name, strlen(check_case_name));
    w = write(STDOUT_FILENO, b, sizeof b - 1);
    (void)w;
    _exit(3);
}

__attribute__((unused))
static void check_watchdog(unsigned seconds)
{
    check_timeout_s = seconds;
    signal(SIGALRM, check_on_alarm);
}

__attribute__((unused))
static void check_run(const char *name, void (*fn)(void))
{
    check_case_name = name;
    check_case_failures = 0;
    check_first_why[0] = '\0';
    check_more[0] = '\0';
    check_skip_why[0] = '\0';
    if (check_before_each)
        check_before_each();
    alarm(check_timeout_s);
    fn();
    alarm(0);
    if (check_case_failures == 0 && check_skip_why[0]) {
        check_skipped++;
        fprintf(stdout, "skip %s: %s\n", name, check_skip_why);
    } else if (check_case_failures == 0) {
        check_passed++;
        fprintf(stdout, "ok %s\n", name);
    } else {
        check_failed++;
        fprintf(stdout, "FAIL %s: %s\n%s", name, check_first_why, check_more);
    }
    fflush(stdout);
}

#define RUN(fn) check_run(#fn, fn)

__attribute__((unused))
static int check_summary(void)
{
    if (check_skipped)
        fprintf(stdout, "%d passed, %d failed, %d skipped\n", check_passed, check_failed, check_skipped);
    else
        fprintf(stdout, "%d passed, %d failed\n", check_passed, check_failed);
    if (check_passed + check_failed + check_skipped == 0)
        fprintf(stdout, "no case ran\n");
    fflush(stdout);
    if (check_failed || check_passed + check_failed + check_skipped == 0)
        return 1;
    return check_passed == 0 ? 77 : 0;   /* all skipped: tests/run reports a skip */
}

#endif
