/* rdsend - send stdin or FILE to an rdrecv on another host. */
#include "run/rd_run.h"

int main(int argc, char **argv)
{
    return rd_tool_main(argc, argv, 1);
}
