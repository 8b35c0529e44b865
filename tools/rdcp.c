/* rdcp - copy files and trees between hosts; data flows source host -> destination host. */
#include "copy/rdc_main.h"

int main(int argc, char **argv)
{
    return rdc_main(argc, argv);
}
