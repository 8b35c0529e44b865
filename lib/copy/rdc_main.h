/* rdc_main.h - rdcp: copy files and trees between hosts over rdpipe agents. */
#ifndef RDC_MAIN_H
#define RDC_MAIN_H

int rdc_main(int argc, char **argv);

#endif
