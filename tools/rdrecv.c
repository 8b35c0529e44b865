/* rdrecv - receive one authenticated stream and write it to stdout or FILE. */
#include "run/rd_run.h"

int main(int argc, char **argv)
{
    return rd_tool_main(argc, argv, 0);
}
