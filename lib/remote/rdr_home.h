/* rdr_home.h - a leading "~", "~/..." or "~user/..." in a path an agent takes from the
 * initiator: rdcp's HOST:PATH, as scp and rsync take it, and rdpipe's file segments. Such a
 * path never meets a shell that would expand it (it travels to the agent hex-encoded), so the
 * agent expands it itself. A local path was the user's shell's to expand: rdcp's initiator
 * hands one that still starts with "~" on as "./~..." (rdr_home_literal). */
#ifndef RDR_HOME_H
#define RDR_HOME_H

/* path with its leading "~" or "~user" replaced by that home directory ($HOME, else the
 * password database, for "~"); an unknown user's path is left as written, so that the error
 * about it names what the user wrote. malloc'd. */
char *rdr_home_expand(const char *path);

/* a local path the agent must take literally: "./" before one that starts with "~";
 * malloc'd */
char *rdr_home_literal(const char *path);

#endif
