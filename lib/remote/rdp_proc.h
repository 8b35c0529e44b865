/* rdp_proc.h - process helpers shared by rdpipe's initiator and agent. */
#ifndef RDP_PROC_H
#define RDP_PROC_H

#include <sys/types.h>

/* fork + exec argv[0] (searched in PATH unless it contains '/') with envp (NULL = environ).
 * The child gets in/out/err as fds 0/1/2 (-1 = /dev/null) and fd3 as fd 3 (-1 = none),
 * joins process group pgid (0 = its own, -1 = stays in ours), and starts with default signal
 * dispositions and an empty signal mask. Returns the pid or -1. */
pid_t rdp_spawn(char *const argv[], char *const envp[], int in, int out, int err, int fd3, pid_t pgid);
/* Exit status as a shell shows it: the code, or 128 + signal. */
int rdp_status_code(int wstatus);
/* environ without RDPIPE_KEY, plus "RDPIPE_KEY=key" when key is not NULL (malloc'd). */
char **rdp_env_with_key(const char *key);
void rdp_env_free(char **env);
/* Directory of the running executable + "/" + name if that file is executable there, else
 * name itself (looked up in PATH); malloc'd. */
char *rdp_sibling_tool(const char *name);
/* Self-pipe for signals: rdp_sig_install(signals...) makes them write their number to the
 * returned fd's other end; read it from rdp_sig_fd. */
int rdp_sig_setup(const int *sigs, int n);
int rdp_sig_fd(void);
/* Read all pending signal numbers; returns a bitmask (1 << signo) for signo < 32. */
unsigned rdp_sig_drain(void);
void rdp_set_cloexec(int fd);
void rdp_set_nonblock(int fd);

#endif
