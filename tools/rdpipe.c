/* rdpipe - run a pipeline of commands across hosts; data flows host to host. */
#include "pipe/rdp_main.h"
#include "util/rd_stdfd.h"

int main(int argc, char **argv)
{
    rd_stdfd_reserve();   /* before anything takes a closed 0, 1 or 2 */
    return rdp_main(argc, argv);
}
