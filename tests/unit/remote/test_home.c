/* test_home.c - remote/rdr_home: "~", "~/x" and "~user/x" of a path an agent takes become that home
 * directory ($HOME for "~", the password database for "~root"); an unknown user's path and a
 * "~" anywhere but first stay as written; a local path that starts with "~" is made literal. */
#include "check.h"

#include "remote/rdr_home.h"

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
    expect(rdr_home_expand("~"), "/home/someone");
    expect(rdr_home_expand("~/"), "/home/someone/");
    expect(rdr_home_expand("~/a/b"), "/home/someone/a/b");
    expect(rdr_home_expand("~root"), "/root");   /* every Linux system has root, at /root here */
    expect(rdr_home_expand("~root/x"), "/root/x");
    expect(rdr_home_expand("~no-such-user-rdcp/x"), "~no-such-user-rdcp/x");
    expect(rdr_home_expand("a/~/b"), "a/~/b");
    expect(rdr_home_expand("./~"), "./~");
    expect(rdr_home_expand(""), "");
    /* no $HOME: the password database's for this user */
    CHECK(unsetenv("HOME") == 0);
    char *h = rdr_home_expand("~");
    CHECK(h[0] == '/');
    free(h);
}

static void t_literal(void)
{
    expect(rdr_home_literal("~"), "./~");
    expect(rdr_home_literal("~x/y"), "./~x/y");
    expect(rdr_home_literal("x~"), "x~");
    expect(rdr_home_literal("/~"), "/~");
}

int main(void)
{
    RUN(t_expand);
    RUN(t_literal);
    return check_summary();
}
