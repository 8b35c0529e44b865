/* rdr_shell.h - the little shell syntax the initiators need: splitting the --ssh command into
 * words and quoting a word for the remote shell (rdpipe and rdcp both start agents over ssh). */
#ifndef RDR_SHELL_H
#define RDR_SHELL_H

/* Shell words: whitespace separated, '...' and "..." quoting, backslash escapes (no
 * expansions). Fills out[0..n-1] with malloc'd words and out[n] = NULL, n < max; returns n. */
int rdr_shell_split(const char *s, char **out, int max);
/* s in single quotes for a POSIX shell ('\'' for a quote inside); malloc'd. */
char *rdr_shell_quote(const char *s);

#endif
