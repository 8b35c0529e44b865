#!/bin/bash
# completion.sh - completion/rdpipe, the bash completion of the four tools: sourced in a clean
# bash, its function is called the way bash calls it (COMP_WORDS, COMP_CWORD) and COMPREPLY
# must hold exactly the expected candidates: options (read from each tool's --help), option
# values, hosts from ~/.ssh/config and ~/.ssh/known_hosts, `host:` for rdpipe and rdcp, files.
. "$(dirname "$0")/../lib.sh"
COMP=$RD_ROOT/completion/rdpipe

# a home of our own with known ssh config and known_hosts, and a cwd with known files
H=$RD_T/home; W=$RD_T/work
mkdir -p "$H/.ssh" "$W/sub"
cat > "$H/.ssh/config" <<'EOF'
Host alpha beta *.corp
    HostName 10.0.0.1
Host gamma
Host !nope ?x
Match host foo
    User bar
EOF
cat > "$H/.ssh/known_hosts" <<'EOF'
delta,10.1.2.3 ssh-ed25519 AAAAC3Nza
[eps]:2222 ssh-rsa AAAAB3Nza
|1|F1E1KeoE/eEWhi10WpGv4OdiO6Y=|3988QV0VE8wmZL7suNrYQLITLCg= ssh-rsa AAAAB3Nza
@cert-authority *.corp ssh-rsa AAAAB3Nza
@revoked zeta ssh-rsa AAAAB3Nza
# a comment
alpha ssh-ed25519 AAAAC3Nza
EOF
touch "$W/file1" "$W/file2" "$W/delta.img"

# comp WORDS...: the sorted candidates, space-separated, for completing the last word
comp() {
    (cd "$W" && HOME=$H bash --norc --noprofile -c '
        . "$0" || exit 99
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
        _rdpipe_complete
        printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"' "$COMP" "$@")
}
# comp_bc LINE WORDS...: the same with bash-completion loaded and the words split as bash
# splits them (at the ':' of COMP_WORDBREAKS); LINE is the command line as typed
comp_bc() {
    (cd "$W" && HOME=$H bash --norc --noprofile -c '
        . /usr/share/bash-completion/bash_completion > /dev/null 2>&1 || exit 98
        . "$0" || exit 99
        COMP_LINE=$1; COMP_POINT=${#COMP_LINE}; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        _rdpipe_complete
        printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"' "$COMP" "$@")
}
# want "EXPECTED" WORDS...
want() {
    local exp=$1 got; shift
    got=$(comp "$@")
    [ "$got" = "$exp" ] || t_fail "[$*]: got '$got', expected '$exp'"
}
S=$RD_BIN/rdsend R=$RD_BIN/rdrecv P=$RD_BIN/rdpipe CP=$RD_BIN/rdcp
[ -x "$CP" ] || CP=rdcp

t_begin "options: prefixes, every option of --help, option values"
want "--transport" "$S" --tr
want "--no-progress --no-sync" "$CP" --no-
want "--dry-run" "$P" --d
want "--streams --sync" "$R" --s
want "auto rdma tcp" "$S" -v --transport ""
want "rdma" "$R" --transport r
want "" "$S" --chunk-size ""
want "" "$CP" --lanes ""
want "" "$P" --streams ""
# every long option --help lists, and nothing else
for b in "$S" "$R" "$P" "$CP"; do
    exp=$("$b" --help | grep -E '^ +-' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u | tr '\n' ' ' | sed 's/ $//')
    want "$exp" "$b" --
done
t_end

t_begin "hosts from ~/.ssh/config and known_hosts; host: for rdpipe and rdcp"
want "10.1.2.3 alpha beta delta eps gamma" "$S" ""
want "alpha" "$S" -v --timeout 5 a
want "10.1.2.3: alpha: beta: delta: eps: gamma:" "$P" ""
want "alpha:" "$P" a
want "root@delta:" "$P" root@d
want "gamma:" "$P" "alpha:tr a-z A-Z" g
want "" "$P" alpha:
want "10.1.2.3 alpha beta delta eps gamma" "$P" -H ""
t_end

t_begin "files: rdsend/rdrecv FILE, rdcp local paths next to host:"
want "delta.img file1 file2 sub" "$S" alpha 1234 key ""
want "" "$S" alpha 1234 ""
want "file1 file2" "$S" --key-file k alpha 1234 f
want "delta.img file1 file2 sub" "$S" --lanes 2 alpha 1234 key ""   # --lanes takes its value
want "file1 file2" "$R" 1234 key f
want "file1 file2" "$R" --key-file k 1234 f
want "delta.img delta:" "$CP" -r d
want "" "$CP" delta:/x
t_end

t_begin "with bash-completion loaded: words split at ':' as bash splits them"
if [ ! -r /usr/share/bash-completion/bash_completion ]; then
    t_fail "no /usr/share/bash-completion/bash_completion (apt-get install bash-completion)"
else
    # want_bc "EXPECTED" LINE WORDS...
    want_bc() {
        local exp=$1 got; shift
        got=$(comp_bc "$@")
        [ "$got" = "$exp" ] || t_fail "[$1]: got '$got', expected '$exp'"
    }
    want_bc "root@delta:" "$P root@d" "$P" root@d
    want_bc "" "$CP delta:/x" "$CP" delta : /x
    want_bc "" "$CP delta:f" "$CP" delta : f          # a remote path: nothing local
    want_bc "gamma:" "$P alpha:rev g" "$P" alpha : rev g
    want_bc "delta.img delta:" "$CP -r alpha:/src d" "$CP" -r alpha : /src d
    want_bc "--transport" "$S --tr" "$S" --tr
fi
t_end
