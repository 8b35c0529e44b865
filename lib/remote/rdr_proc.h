/* rdr_proc.h - process helpers shared by rdpipe's initiator and agent. */
#ifndef RDR_PROC_H
#define RDR_PROC_H

#include <sys/types.h>

/* fork + exec argv[0] (searched in PATH unless it contains '/') with envp (NULL = environ).
 * The child gets in/out/err as fds 0/1/2 (-1 = /dev/null) and fd3 as fd 3 (-1 = none),
 * joins process group pgid (0 = its own, -1 = stays in ours), and starts with default signal
 * dispositions and an empty signal mask. Returns the pid, or -1 with errno: also when argv[0]
 * could not be run (its exec failed: errno is the exec's). */
pid_t rdr_spawn(char *const argv[], char *const envp[], int in, int out, int err, int fd3, pid_t pgid);
/* Exit status as a shell shows it: the code, or 128 + signal. */
int rdr_status_code(int wstatus);
/* environ without RDPIPE_KEY and RDPIPE_STREAM_KEY, plus each of them that is not NULL
 * (malloc'd): the hop key, and the end-to-end key of a relayed stream. */
char **rdr_env_with_keys(const char *key, const char *stream_key);
void rdr_env_free(char **env);
/* Directory of the running executable + "/" + name if that file is executable there, else
 * name itself (looked up in PATH); malloc'd. */
char *rdr_sibling_tool(const char *name);
/* Self-pipe for signals: rdr_sig_setup(signals...) makes them write their number to the
 * returned fd's other end; read it from rdr_sig_fd. */
int rdr_sig_setup(const int *sigs, int n);
int rdr_sig_fd(void);
/* Read all pending signal numbers; returns a bitmask (1 << signo) for signo < 32. */
unsigned rdr_sig_drain(void);
void rdr_set_cloexec(int fd);
void rdr_set_nonblock(int fd);

#endif
