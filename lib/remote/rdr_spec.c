#include "remote/rdr_spec.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int host_char(char c)
{
    return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_';
}

/* "[user@]host" or "[user@][v6addr]" followed by ':'; returns the length of the prefix
 * before ':' or 0 when the argument is a bare command. */
static size_t host_prefix(const char *a)
{
    const char *p = a;
    const char *at = NULL;
    for (const char *q = a; *q && *q != ':' && *q != '['; q++)
        if (*q == '@') {
            at = q;
            break;
        }
    if (at) {
        for (const char *q = a; q < at; q++)
            if (!host_char(*q))
                return 0;
        if (at == a)
            return 0;
        p = at + 1;
    }
    if (*p == '[') {
        const char *end = strchr(p, ']');
        if (!end || end[1] != ':' || end == p + 1)
            return 0;
        for (const char *q = p + 1; q < end; q++)
            if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.' && *q != '%' && !isalnum((unsigned char)*q))
                return 0;
        return (size_t)(end + 1 - a);
    }
    const char *q = p;
    while (host_char(*q))
        q++;
    if (q == p || *q != ':')
        return 0;
    return (size_t)(q - a);
}

/* A single file name after '<', '>' or '>>': one word, bare or in '...' or "...", without
 * shell syntax. NULL if the rest is more than that (then bash runs the segment). */
static char *file_word(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    const char *b, *e;
    if (*s == '\'' || *s == '"') {
        b = s + 1;
        e = strchr(b, *s);
        if (!e || (*s == '"' && strpbrk(b, "$`\\") && strpbrk(b, "$`\\") < e))
            return NULL;   /* "...$X...": bash's to expand */
        s = e + 1;
    } else {
        b = s;
        while (*s && *s != ' ' && *s != '\t' && *s != '\n') {
            if (strchr("$`\\\"'*?[]{}()|&;<>!#", *s))
                return NULL;
            s++;
        }
        e = s;
    }
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    if (*s || e == b)
        return NULL;
    return strndup(b, (size_t)(e - b));
}

/* The end of the bracketed part that starts at s ("$(...)", "${...}", "`...`"), nesting
 * counted, quotes and escapes inside skipped; NULL if it does not end. */
static const char *past_group(const char *s)
{
    char open = s[1] == '(' ? '(' : s[1] == '{' ? '{' : '`', close = open == '(' ? ')' : open == '{' ? '}' : '`';
    int depth = 1;
    for (s += open == '`' ? 1 : 2; *s; s++) {
        if (*s == '\\' && s[1])
            s++;
        else if (*s == '\'' && open != '`' && !(s = strchr(s + 1, '\'')))
            return NULL;
        else if (*s == close && --depth == 0)
            return s + 1;
        else if (*s == open && open != '`')
            depth++;
    }
    return NULL;
}

/* Whether s is one shell word (quotes, escapes, $(...), ${...}, `...`, <(...) and >(...)
 * joined, no operator), then only blanks: "< $HOME/f" is a redirection alone, "<in sort"
 * runs sort. */
static int one_word(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s)
        return 0;
    while (*s && *s != ' ' && *s != '\t' && *s != '\n') {
        if (*s == '\\') {
            s += s[1] ? 2 : 1;
        } else if (*s == '\'') {
            if (!(s = strchr(s + 1, '\'')))
                return 0;
            s++;
        } else if (*s == '"') {
            for (s++; *s && *s != '"'; s++) {
                if (*s == '\\' && s[1])
                    s++;
                else if ((*s == '$' && (s[1] == '(' || s[1] == '{')) || *s == '`')
                    if (!(s = past_group(s)) || !*--s)
                        return 0;
            }
            if (!*s)
                return 0;
            s++;
        } else if ((*s == '$' && (s[1] == '(' || s[1] == '{')) || *s == '`' ||
                   ((*s == '<' || *s == '>') && s[1] == '(')) {   /* <(cmd) >(cmd): a file too */
            if (!(s = past_group(s)))
                return 0;
        } else if (strchr("|&;()<>", *s)) {
            return 0;
        } else {
            s++;
        }
    }
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    return *s == '\0';
}

/* s[0..n) for a one-line message: control bytes as \xNN, at most ~100 bytes shown. */
static void printable(const char *s, size_t n, char *out, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 8 < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (o > 100) {
            o += (size_t)snprintf(out + o, len - o, "...");
            break;
        }
        if (c < ' ' || c == 0x7f)
            o += (size_t)snprintf(out + o, len - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    out[o < len ? o : len - 1] = '\0';
}

int rdr_dest_check(const char *dest, char *err, int errlen)
{
    char show[128], part[128];
    printable(dest, strlen(dest), show, sizeof show);
    const char *at = strrchr(dest, '@');   /* where ssh splits user@host */
    const char *host = at ? at + 1 : dest;
    if (!*host) {
        snprintf(err, (size_t)errlen, "bad host '%s': no host name", show);
        return -1;
    }
    if (*host == '-') {
        printable(host, strlen(host), part, sizeof part);
        snprintf(err, (size_t)errlen, "bad host '%s': a host name must not begin with '-'", part);
        return -1;
    }
    if (at == dest || (at && *dest == '-')) {
        printable(dest, (size_t)(at - dest), part, sizeof part);
        snprintf(err, (size_t)errlen, "bad user '%s' in '%s': %s", part, show,
                 at == dest ? "empty" : "a user name must not begin with '-'");
        return -1;
    }
    for (const char *p = dest; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f) {
            snprintf(err, (size_t)errlen, "bad host '%s': contains whitespace or a control "
                     "character", show);
            return -1;
        }
    return 0;
}

int rdr_parse_segment(const char *arg, struct rdr_seg *s, char *err, int errlen)
{
    memset(s, 0, sizeof *s);
    if (arg[0] == '-') {
        /* an option after "--", or a host that ssh would take for an option: never a command
         * (bash -c would read it as options too) */
        const char *colon = strchr(arg, ':');
        if (!colon) {
            char show[128];
            printable(arg, strlen(arg), show, sizeof show);
            snprintf(err, (size_t)errlen, "bad segment '%s': it must not begin with '-'", show);
            return -1;
        }
        char *h = strndup(arg, (size_t)(colon - arg));
        int bad = h ? rdr_dest_check(h, err, errlen) : -1;
        free(h);
        if (bad)
            return -1;
    }
    size_t hp = host_prefix(arg);
    const char *cmd = arg;
    if (hp) {
        char *dest = strndup(arg, hp);
        cmd = arg + hp + 1;
        const char *h = strchr(dest, '@') ? strchr(dest, '@') + 1 : dest;
        if (strcmp(dest, "localhost") == 0) {
            free(dest);
        } else {
            if (*h == '[') {   /* ssh wants "user@::1", not "user@[::1]" */
                size_t ulen = (size_t)(h - dest);
                s->host = strndup(h + 1, strlen(h) - 2);
                s->dest = malloc(ulen + strlen(s->host) + 1);
                memcpy(s->dest, dest, ulen);
                strcpy(s->dest + ulen, s->host);
                free(dest);
            } else {
                s->dest = dest;
                s->host = strdup(h);
            }
        }
    }
    if (s->dest && rdr_dest_check(s->dest, err, errlen))
        return -1;
    if (!s->host)
        s->host = strdup("localhost");
    s->text = strdup(cmd);
    const char *t = cmd;
    while (*t == ' ' || *t == '\t' || *t == '\n')
        t++;
    if (!*t) {
        snprintf(err, (size_t)errlen, "empty command in '%s'", arg);
        return -1;
    }
    char *path = NULL;
    if (t[0] == '>' && t[1] == '>' && (path = file_word(t + 2)))
        s->kind = RDR_APPEND;
    else if (t[0] == '>' && t[1] != '>' && t[1] != '(' && t[1] != '&' && (path = file_word(t + 1)))
        s->kind = RDR_WRITE;
    else if (t[0] == '<' && t[1] != '<' && t[1] != '(' && (path = file_word(t + 1)))
        s->kind = RDR_READ;
    else if (strncmp(t, "cat", 3) == 0 && t[3 + strspn(t + 3, " \t\n")] == '\0')
        s->kind = RDR_PASS;   /* a plain relay: rdrecv feeds rdsend directly, no copy through cat */
    else {
        s->kind = RDR_CMD;
        /* a file whose name bash expands: bash opens it, for a cat (alone, bash would only
         * open it: '< $HOME/f' gave nothing and exit 0) */
        int op = t[0] == '<' && t[1] != '<' && t[1] != '(' && t[1] != '>' && t[1] != '&' ? 1
                 : t[0] == '>' && t[1] != '(' && t[1] != '&' && t[1] != '|' ? 2 : 0;
        if (op && one_word(t + (t[1] == '>' ? 2 : 1))) {
            s->redirect = op;
            if (asprintf(&s->cmd, "exec cat %s", t) < 0)
                s->cmd = NULL;
        } else {
            s->cmd = strdup(cmd);
        }
    }
    s->path = path;
    return 0;
}

int rdr_plan(const struct rdr_seg *segs, int n, int has_input, struct rdr_seg **out, int *nout,
             char *err, int errlen)
{
    if (n < 1) {
        snprintf(err, (size_t)errlen, "no segments");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if ((segs[i].kind == RDR_READ || segs[i].redirect == 1) && i > 0) {
            snprintf(err, (size_t)errlen, "'%s' reads a file: it can only be the first segment", segs[i].text);
            return -1;
        }
        if ((segs[i].kind == RDR_WRITE || segs[i].kind == RDR_APPEND || segs[i].redirect == 2) && i < n - 1) {
            snprintf(err, (size_t)errlen, "'%s' writes a file: it can only be the last segment", segs[i].text);
            return -1;
        }
    }
    if (segs[0].kind == RDR_READ || segs[0].redirect == 1)
        has_input = 0;   /* the file is the input; the local stdin is not read */
    struct rdr_seg *p = calloc((size_t)n + 2, sizeof *p);
    if (!p) {
        snprintf(err, (size_t)errlen, "out of memory");
        return -1;
    }
    int k = 0;
    if (has_input && segs[0].dest) {
        p[k++] = (struct rdr_seg){ .host = "localhost", .text = "<stdin>", .kind = RDR_PASS,
                                   .in = RDR_IN_STDIN, .out = RDR_OUT_SEND, .pseudo = 1 };
    }
    int first = k;
    for (int i = 0; i < n; i++)
        p[k++] = segs[i];
    int last = k - 1;
    int writes_file = p[last].kind == RDR_WRITE || p[last].kind == RDR_APPEND || p[last].redirect == 2;
    if (!writes_file && p[last].dest)
        p[k++] = (struct rdr_seg){ .host = "localhost", .text = "<stdout>", .kind = RDR_PASS,
                                   .in = RDR_IN_RECV, .out = RDR_OUT_STDOUT, .pseudo = 2 };
    for (int i = 0; i < k; i++) {
        if (p[i].pseudo)
            continue;
        if (i > 0)
            p[i].in = RDR_IN_RECV;
        else if (i == first && has_input)
            p[i].in = RDR_IN_STDIN;   /* a local first segment reads stdin itself */
        else
            p[i].in = RDR_IN_NONE;
        if (i < k - 1)
            p[i].out = RDR_OUT_SEND;
        else if (i == last && !writes_file)
            p[i].out = RDR_OUT_STDOUT;   /* a local last segment writes stdout itself */
        else
            p[i].out = RDR_OUT_NONE;
    }
    (void)last;
    *out = p;
    *nout = k;
    return 0;
}

const char *rdr_kind_name(enum rdr_kind k)
{
    switch (k) {
    case RDR_CMD: return "cmd";
    case RDR_READ: return "read";
    case RDR_WRITE: return "write";
    case RDR_APPEND: return "append";
    case RDR_ROLE: return "role";
    default: return "pass";
    }
}

void rdr_seg_free(struct rdr_seg *s)
{
    free(s->dest);
    free(s->host);
    free(s->text);
    free(s->cmd);
    free(s->path);
    memset(s, 0, sizeof *s);
}
