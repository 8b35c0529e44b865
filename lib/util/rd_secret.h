/* rd_secret.h - keys kept from other processes and from disk. A tool that holds a key (the
 * user's, a hop's, a session's) makes itself non-dumpable, as ssh-agent does: no core file
 * holds the key, no process of the same user can ptrace it, and /proc/PID/environ and
 * /proc/PID/mem become root's alone. A key that came in the environment is wiped there once
 * read, so /proc/PID/environ does not show it for the rest of the run. */
#ifndef RD_SECRET_H
#define RD_SECRET_H

/* first thing in main */
void rd_secret_process(void);
/* overwrite the value of environment variable NAME with zeros and remove it (after the
 * caller copied it) */
void rd_secret_env_drop(const char *name);
/* free a string that holds a key, zeroed first (NULL: nothing) */
void rd_secret_free(char *s);

#endif
