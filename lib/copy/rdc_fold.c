/* rdc_fold.c - see rdc_fold.h. */
#include "copy/rdc_fold.h"
#include "util/rd_error.h"

#include <locale.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unicase.h>
#include <uninorm.h>
#include <unistr.h>
#include <wchar.h>
#include <wctype.h>

static locale_t utf8;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void open_utf8(void)
{
    utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
}

static char *fold_ascii(const char *path)
{
    char *k = strdup(path);
    if (!k)
        rd_oom();
    for (char *c = k; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    return k;
}

static int is_ascii(const char *p)
{
    for (; *p; p++)
        if ((unsigned char)*p >= 0x80)
            return 0;
    return 1;
}

/* NFD + full case folding (libunistring), NUL-terminated; NULL when path is no UTF-8 */
static char *fold_unicode(const char *path)
{
    size_t len = strlen(path);
    if (u8_check((const uint8_t *)path, len))   /* it would take each stray byte for U+FFFD */
        return NULL;
    len = 0;
    uint8_t *f = u8_casefold((const uint8_t *)path, strlen(path), NULL, UNINORM_NFD, NULL, &len);
    if (!f)
        return NULL;
    char *k = realloc(f, len + 1);
    if (!k)
        rd_oom();
    k[len] = '\0';
    return k;
}

char *rdc_fold_key(const char *path)
{
    /* most paths: a cheap byte loop, not a character decoder (this runs for each new file) */
    if (is_ascii(path))
        return fold_ascii(path);
    char *u = fold_unicode(path);
    if (u)
        return u;
    pthread_once(&utf8_once, open_utf8);
    if (utf8 == (locale_t)0)
        return fold_ascii(path);
    size_t n = strlen(path);
    /* a character's lower case may take more bytes than it does ('Ⱥ' 2, 'ⱥ' 3): 4 a byte */
    char *k = malloc(4 * n + 1), *o = k;
    if (!k)
        rd_oom();
    locale_t was = uselocale(utf8);
    mbstate_t st;
    memset(&st, 0, sizeof st);
    for (size_t i = 0; i < n;) {
        wchar_t wc;
        size_t len = mbrtowc(&wc, path + i, n - i, &st);
        if (len == (size_t)-1 || len == (size_t)-2 || len == 0) {   /* no UTF-8 here: the byte */
            memset(&st, 0, sizeof st);
            *o++ = path[i++];
            continue;
        }
        mbstate_t out;
        memset(&out, 0, sizeof out);
        size_t w = wcrtomb(o, (wchar_t)towlower((wint_t)wc), &out);
        if (w == (size_t)-1) {   /* cannot happen for a lowered character; keep the input */
            memcpy(o, path + i, len);
            w = len;
        }
        o += w;
        i += len;
    }
    *o = '\0';
    uselocale(was);
    return k;
}
