/* rdc_fold.h - the spelling under which two names meet on a filesystem that folds case. */
#ifndef RDC_FOLD_H
#define RDC_FOLD_H

/* path case-folded and in Unicode's canonical decomposition (NFD), by libunistring's
 * u8_casefold, as ext4's casefold directories compare names: 'Ä' and 'ä' meet as 'A' and 'a'
 * do, 'Σ' and 'σ', 'ß' and 'ss', and 'é' as one code point and as 'e' with a combining accent
 * (before 2026-12-08 they stayed apart, and the second replaced the first with exit 0 there).
 * A path that is not UTF-8: each character lowered as C.UTF-8 lowers it (towlower), a byte
 * that starts no character as it is (ASCII alone where the C library has no C.UTF-8).
 * malloc'd. */
char *rdc_fold_key(const char *path);

#endif
