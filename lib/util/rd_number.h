/* rd_number.h - a whole decimal number in a word that a user or a peer wrote. strtoul alone
 * takes leading blanks, a sign (and negates "-1" into a huge value), trailing junk, and wraps
 * or clamps what does not fit; the command line, the agents' lines and rdcp's notes all want
 * digits only, of a bounded value. */
#ifndef RD_NUMBER_H
#define RD_NUMBER_H

/* word: one or more digits and nothing else, at most max. 0 and *v set, else -1 and *v
 * untouched. */
int rd_parse_decimal(const char *word, unsigned long long max, unsigned long long *v);

#endif
