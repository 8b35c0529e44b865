/* rdr_warn.h - the initiators' diagnostics: "tool: message" on stderr, for rdpipe and rdcp
 * alike. Not rd_warn: that one cuts at 600 bytes, and the initiators pass on whole messages
 * from remote agents (up to 4 KiB here). */
#ifndef RDR_WARN_H
#define RDR_WARN_H

void rdr_warnx(const char *tool, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
