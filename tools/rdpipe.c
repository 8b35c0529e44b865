/* rdpipe - run a pipeline of commands across hosts; data flows host to host. */
#include "pipe/rdp_main.h"

int main(int argc, char **argv)
{
    return rdp_main(argc, argv);
}
