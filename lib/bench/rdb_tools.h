/* rdb_tools.h - the mains of rdbench, rdcheck and `rdrecv --check` (the tools/ mains stay thin).
 * Each parses its command line, runs, prints its own errors and returns the exit code. */
#ifndef RDB_TOOLS_H
#define RDB_TOOLS_H

/* rdbench: 0, or the rd_err code (1 usage, 2 connect, 3 key, 4 broken, 5 local IO, 101). */
int rdb_bench_main(int argc, char **argv);

/* rdcheck: 0 every check passed, 1 one failed, 2 usage. */
#define RDB_CHECK_FAILED 1
#define RDB_CHECK_USAGE 2
int rdb_check_main(int argc, char **argv);

/* rdrecv --check: is it in argv (before any "--")? Then rdb_check_agent_main runs it: the
 * short-lived server rdcheck starts over ssh. It takes rdrecv's options (PORT, the key,
 * --bind, --transport, -d, --timeout (default 60), -v) and no FILE, and --key-stdin (the key
 * is the first line of stdin); it prints "ready PORT TRANSPORTS PORT-RANGE" on stdout once
 * listening and exits after rdcheck's BYE, or when its stdin (the ssh channel) ends. */
int rdb_is_check_agent(int argc, char **argv);
int rdb_check_agent_main(int argc, char **argv);

#endif
