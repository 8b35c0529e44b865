#!/bin/bash
# manpages.sh - man/TOOL.1 against TOOL --help, so the two cannot drift apart: every long option
# the help lists is an item (.It) of the man page and every option item of the man page is in
# the help; the page is clean under mandoc's linter; it has the sections a user looks for.
# Also --version: version, commit, what this build finds (RDMA devices) and can do (codecs).
. "$(dirname "$0")/../lib.sh"
MAN=$RD_ROOT/man
TOOLS=(rdsend rdrecv rdpipe rdcp)
# rdbench and rdcheck too, once they are in the binaries under test (a snapshot that lacks them
# says so as a skip rather than failing every run before it learned to copy them)
for t in rdbench rdcheck; do
    if [ -x "$RD_BIN/$t" ]; then TOOLS+=("$t"); else t_skip "$t.1" "no $RD_BIN/$t"; fi
done

# help_opts TOOL: the long options on the option lines of TOOL --help, sorted, one a line
help_opts() {
    "$RD_BIN/$1" --help | grep -E '^ +-' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}
# man_opts PAGE: the long options the page documents as items (.It Fl \-name ...), sorted
man_opts() {
    grep -E '^\.It ' "$1" | grep -oE 'Fl \\?-[a-z][a-z0-9-]*' | sed -E 's/^Fl \\?-/--/' | sort -u
}

if ! command -v mandoc > /dev/null; then
    for t in "${TOOLS[@]}"; do t_skip "$t.1" "no mandoc (scripts/install-deps.sh installs it)"; done
    exit 0
fi

for t in "${TOOLS[@]}"; do
    t_begin "$t.1: the options of $t --help, mandoc -T lint clean, sections"
    page=$MAN/$t.1
    if [ ! -f "$page" ] || [ ! -x "$RD_BIN/$t" ]; then
        t_fail "missing $page or $RD_BIN/$t"; t_end; continue
    fi
    help_opts "$t" > "$C/help"; man_opts "$page" > "$C/man"
    [ -s "$C/help" ] || t_fail "no long options found in $t --help"
    only_help=$(comm -23 "$C/help" "$C/man" | tr '\n' ' ')
    only_man=$(comm -13 "$C/help" "$C/man" | tr '\n' ' ')
    [ -z "$only_help" ] || t_fail "in $t --help but not in man/$t.1: $only_help"
    [ -z "$only_man" ] || t_fail "in man/$t.1 but not in $t --help: $only_man"
    # lint: nothing at any level, but cross references to the sibling pages, which mandoc can
    # only find once they are installed
    mandoc -T lint -W style "$page" 2>&1 |
        grep -vE 'referenced manual not found: Xr (rdsend|rdrecv|rdpipe|rdcp|rdbench|rdcheck|bash|ssh) 1|outdated mandoc.db' > "$C/lint"
    [ -s "$C/lint" ] && t_fail "mandoc -T lint: $(tr '\n' '|' < "$C/lint")"
    for s in NAME SYNOPSIS DESCRIPTION ENVIRONMENT 'EXIT STATUS' EXAMPLES 'SECURITY CONSIDERATIONS'; do
        grep -q "^\.Sh $s\$" "$page" || t_fail "man/$t.1 has no $s section"
    done
    grep -q 'RDPIPE_KEY' "$page" || t_fail "man/$t.1 does not mention RDPIPE_KEY"
    # it renders, and under the tool's name
    mandoc -T utf8 "$page" 2> /dev/null | head -1 | grep -q "^${t^^}(1)" || t_fail "man/$t.1 does not render as ${t^^}(1)"
    t_end
done

t_begin "--version: version, commit, RDMA devices found, codecs, ciphers"
for t in "${TOOLS[@]}"; do
    timeout 10 "$RD_BIN/$t" --version > "$C/o" 2> "$C/e"; expect_rc $? 0 "$t --version"
    grep -Eq "^$t \(rdpipe\) [0-9]+\.[0-9]+\.[0-9]+$" "$C/o" || t_fail "$t: no version line: $(head -1 "$C/o")"
    grep -Eq '^commit: [^ ]+$' "$C/o" || t_fail "$t: no commit line"
    grep -Eq '^rdma: ([0-9]+ devices?:( [^ ]+)+|no RDMA devices \(TCP only\))$' "$C/o" || t_fail "$t: no rdma line"
    grep -Eq '^codecs: zstd [0-9.]+ \(--compress\)$' "$C/o" || t_fail "$t: no codecs line: $(grep ^codecs "$C/o")"
    grep -Eq '^ciphers: (aes-256-ocb \(libgcrypt [0-9.]+\), )?aes-256-gcm, chacha20-poly1305 \(OpenSSL [^)]*\); this end prefers (aes-256-ocb|aes-256-gcm|chacha20-poly1305)$' "$C/o" ||
        t_fail "$t: no ciphers line: $(grep ^ciphers "$C/o")"
    # the RDMA line says what ibverbs sees now on this machine
    n=$(ibv_devices 2>/dev/null | awk 'NR > 2' | grep -c .)
    if [ "$n" = 0 ]; then grep -q '^rdma: no RDMA devices' "$C/o" || t_fail "$t: rdma line claims devices: $(grep ^rdma "$C/o")"
    else grep -q "^rdma: $n device" "$C/o" || t_fail "$t: ibv_devices lists $n, --version says $(grep ^rdma "$C/o")"; fi
    expect_empty "$C/e" "$t --version stderr"
done
t_end
