/* rdbench - measure the link to an rdbench --server (message size x depth, the model fitted to
 * it), and with --io the disks and pipes at both ends. The work is in lib/bench/. */
#include "bench/rdb_tools.h"

int main(int argc, char **argv)
{
    return rdb_bench_main(argc, argv);
}
