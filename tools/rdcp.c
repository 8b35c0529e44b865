/* rdcp - copy files and trees between hosts; data flows source host -> destination host. */
#include "copy/rdc_main.h"
#include "util/rd_aslimit.h"
#include "util/rd_fdlimit.h"
#include "util/rd_secret.h"
#include "util/rd_stdfd.h"

int main(int argc, char **argv)
{
    rd_stdfd_reserve();   /* before anything takes a closed 0, 1 or 2 */
    rd_fd_limit_raise();  /* before anything opens a file (libgcrypt aborts when it cannot) */
    rd_as_limit_adapt();  /* under ulimit -v, one malloc arena: each more reserves 64 MiB */
    rd_secret_process();  /* no core file or ptrace of a process that holds a key */
    return rdc_main(argc, argv);
}
