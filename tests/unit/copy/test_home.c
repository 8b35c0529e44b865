/* test_home.c - copy/rdc_home: "~", "~/x" and "~user/x" of a HOST:PATH become that home
 * directory ($HOME for "~", the password database for "~root"); an unknown user's path and a
 * "~" anywhere but first stay as written; a local path that starts with "~" is made literal. */
#include "check.h"

#include "copy/rdc_home.h"

#include <stdlib.h>
#include <string.h>

static void expect(char *got, const char *want)
{
    CHECK_STR_EQ(got, want);
    free(got);
}

static void t_expand(void)
{
    CHECK(setenv("HOME", "/home/someone", 1) == 0);
    expect(rdc_home_expand("~"), "/home/someone");
    expect(rdc_home_expand("~/"), "/home/someone/");
    expect(rdc_home_expand("~/a/b"), "/home/someone/a/b");
    expect(rdc_home_expand("~root"), "/root");   /* every Linux system has root, at /root here */
    expect(rdc_home_expand("~root/x"), "/root/x");
    expect(rdc_home_expand("~no-such-user-rdcp/x"), "~no-such-user-rdcp/x");
    expect(rdc_home_expand("a/~/b"), "a/~/b");
    expect(rdc_home_expand("./~"), "./~");
    expect(rdc_home_expand(""), "");
    /* no $HOME: the password database's for this user */
    CHECK(unsetenv("HOME") == 0);
    char *h = rdc_home_expand("~");
    CHECK(h[0] == '/');
    free(h);
}

static void t_literal(void)
{
    expect(rdc_home_literal("~"), "./~");
    expect(rdc_home_literal("~x/y"), "./~x/y");
    expect(rdc_home_literal("x~"), "x~");
    expect(rdc_home_literal("/~"), "/~");
}

int main(void)
{
    RUN(t_expand);
    RUN(t_literal);
    return check_summary();
}
