/* rdc_fold.h - the spelling under which two names meet on a filesystem that folds case. */
#ifndef RDC_FOLD_H
#define RDC_FOLD_H

/* path with every character lowered as C.UTF-8 lowers it (towlower): 'Ä' and 'ä' meet as 'A'
 * and 'a' do, 'Σ' and 'σ', 'ẞ' and 'ß'. A byte that starts no UTF-8 character stays as it is.
 * Not normalised: 'é' as one code point and as 'e' with a combining accent stay apart (ext4's
 * casefold takes them for one name). Where the C library has no C.UTF-8, ASCII alone is
 * lowered. malloc'd. */
char *rdc_fold_key(const char *path);

#endif
