/* rdcheck - check what rdpipe needs on this host and, with HOST, between here and HOST: one
 * line per check with the fix. The work is in lib/bench/rdb_check.c. */
#include "bench/rdb_tools.h"

int main(int argc, char **argv)
{
    return rdb_check_main(argc, argv);
}
