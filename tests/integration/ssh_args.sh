#!/bin/bash
# ssh_args.sh - what rdpipe and rdcp hand to ssh (no sshd needed: a fake ssh records its argv).
#
# A host (or user) that begins with '-' would reach ssh as an option: before the fix
# `rdcp -- x '-oProxyCommand=touch F:/y'` ran ssh "-oProxyCommand=touch F" 'exec rdpipe --agent'
# and `rdpipe -- '-EF:echo hi'` ran ssh -EF ... (-E creates the log file F). The fake ssh below
# parses its options like an ssh without hostname checks (Debian 12's refuses the hostname
# 'exec rdpipe --agent', older ones do not), so such an option visibly creates the file.
# Both tools must refuse those hosts as usage errors (exit 1, one line) before any ssh runs,
# and the ssh argv must end in "-- DEST COMMAND".
. "$(dirname "$0")/../lib.sh"

RDPIPE=$RD_BIN/rdpipe
RDCP=$RD_BIN/rdcp
for _b in "$RDPIPE" "$RDCP"; do
    if [ ! -x "$_b" ]; then echo "FAIL $RD_GROUP: $_b not built (run make)" >&2; exit 2; fi
done

# The fake ssh: one line per call in $RD_T/argv (the arguments joined by '|'), then the
# options before the destination are obeyed: -oProxyCommand=CMD runs CMD, -EFILE creates FILE.
mkdir -p "$RD_T/bin"
cat > "$RD_T/bin/ssh" <<EOF
#!/bin/bash
printf '%s|' "\$@" >> '$RD_T/argv'; echo >> '$RD_T/argv'
while [ \$# -gt 0 ]; do
    opt=
    case \$1 in
        --) shift; break ;;
        -o) shift; opt=\$1 ;;
        -o*) opt=\${1#-o} ;;
        -E) shift; : >> "\$1" ;;
        -E*) : >> "\${1#-E}" ;;
        -[bcDeFIiJLlmOpQRSWw]) shift ;;   # options that take the next argument
        -*) ;;
        *) break ;;
    esac
    case \$opt in ProxyCommand=*) sh -c "\${opt#ProxyCommand=}" ;; esac
    shift
done
echo "ssh: cannot reach \$1 (fake ssh)" >&2
exit 255
EOF
chmod +x "$RD_T/bin/ssh"
FAKE=$RD_T/bin/ssh

# run TOOL ARGS...: in $C (the injected options write relative names there), with the fake
# ssh first on PATH (so the default "ssh -o BatchMode=yes" is the fake one too)
run() {
    local tool=$1; shift
    rm -f "$RD_T/argv"
    (cd "$C" && PATH="$RD_T/bin:$PATH" timeout -k 2 "$(lim 20)" "$RD_BIN/$tool" "$@" \
        > "$C/o" 2> "$C/e" < /dev/null)
}
# no_ssh WHAT: ssh was never started and nothing created the marker file
no_ssh() {
    [ -e "$C/pwned" ] && t_fail "$1: an injected ssh option ran (created pwned)"
    [ -e "$RD_T/argv" ] && t_fail "$1: ssh was started: $(tr '\n' ' ' < "$RD_T/argv")"
    rm -f "$C/pwned"
    return 0
}
# refused TOOL PATTERN ARGS...: exit 1 with one "TOOL: ..." line matching PATTERN, no ssh
refused() {
    local tool=$1 pat=$2; shift 2
    run "$tool" "$@"; expect_rc $? 1 "$tool $*" "$(head -c 300 "$C/e")"
    expect_err "$C/e" "$tool" "$pat"
    no_ssh "$tool $*"
}

t_begin "rdpipe: a host or user beginning with '-' is a usage error, ssh never runs"
refused rdpipe "bad host '-oProxyCommand=touch pwned'" -- '-oProxyCommand=touch pwned:echo hi'
refused rdpipe "bad host '-Epwned'" -- '-Epwned:echo hi'
refused rdpipe "bad host '-Epwned'" --ssh "$FAKE" -- '-Epwned:echo hi'
refused rdpipe "bad host '-Epwned'" -- h1:'cat' '-Epwned:cat'
refused rdpipe "bad host '-Epwned'" 'bob@-Epwned:echo hi'
refused rdpipe "bad user '-Epwned'" -- '-Epwned@h1:echo hi'
refused rdpipe "bad segment '-v'" -- -v
t_end

t_begin "rdcp: a host or user beginning with '-' never reaches ssh"
printf 'data\n' > "$C/x"
for dst in '-oProxyCommand=touch pwned:/tmp/y' '-Epwned:/tmp/y' 'bob@-Epwned:/tmp/y' \
           '-Epwned@h1:/tmp/y'; do
    run rdcp -- x "$dst"; rc=$?
    expect_nonzero $rc "rdcp -- x '$dst'"
    no_ssh "rdcp -- x '$dst'"
done
run rdcp -- '-oProxyCommand=touch pwned:/tmp/x' y; expect_nonzero $? "rdcp (hostile source)"
no_ssh "rdcp (hostile source)"
t_end

t_begin "rdcp: hostile hosts are usage errors (exit 1, one line naming the host)"
printf 'data\n' > "$C/x"
refused rdcp "bad host '-oProxyCommand=touch pwned'" -- x '-oProxyCommand=touch pwned:/tmp/y'
refused rdcp "bad host '-Epwned'" --ssh "$FAKE" -- x '-Epwned:/tmp/y'
refused rdcp "bad host '-Epwned'" x 'bob@-Epwned:/tmp/y'
refused rdcp "bad user '-Epwned'" -- x '-Epwned@h1:/tmp/y'
refused rdcp "bad host '-oProxyCommand=touch pwned'" -- '-oProxyCommand=touch pwned:/tmp/x' y
refused rdcp "bad host 'a b'.*whitespace" x 'a b:/tmp/y'
refused rdcp "bad host 'h.x01x'.*control" x $'h\001x:/tmp/y'
grep -q $'\001' "$C/e" && t_fail "the control character was printed raw"
t_end

t_begin "rdcp: whitespace or control characters in a host are refused"
printf 'data\n' > "$C/x"
for dst in 'a b:/tmp/y' $'a\tb:/tmp/y' $'h\001x:/tmp/y' $'u@h\177:/tmp/y'; do
    run rdcp x "$dst"; expect_nonzero $? "rdcp x $(printf %q "$dst")"
    no_ssh "rdcp x $(printf %q "$dst")"
done
t_end

# argv_is WHAT EXPECTED: the fake ssh was called exactly once, with EXPECTED ('|'-joined)
argv_is() {
    local got
    got=$(cat "$RD_T/argv" 2>/dev/null)
    [ "$got" = "$2" ] || t_fail "$1: ssh argv '$got', expected '$2'"
}
t_begin "the ssh argv ends in '-- DEST COMMAND' (default ssh and --ssh CMD)"
printf 'data\n' > "$C/x"
run rdpipe 'h1:echo hi'; expect_nonzero $? "rdpipe h1 (no sshd)"
argv_is "rdpipe h1" "-o|BatchMode=yes|--|h1|exec rdpipe --agent|"
run rdpipe 'bob@h1:echo hi'
argv_is "rdpipe bob@h1" "-o|BatchMode=yes|--|bob@h1|exec rdpipe --agent|"
run rdpipe 'bob@[::1]:echo hi'
argv_is "rdpipe bob@[::1]" "-o|BatchMode=yes|--|bob@::1|exec rdpipe --agent|"
run rdpipe --ssh "$FAKE -p 2222 -o 'ProxyJump none'" --remote-path /opt/rd/rdpipe 'h1:echo hi'
argv_is "rdpipe --ssh CMD" "-p|2222|-o|ProxyJump none|--|h1|exec '/opt/rd/rdpipe' --agent|"
run rdcp x h1:/tmp/y; expect_nonzero $? "rdcp h1 (no sshd)"
argv_is "rdcp x h1:" "-o|BatchMode=yes|--|h1|exec rdpipe --agent|"
run rdcp --ssh "$FAKE -l bob" x 'alice@[::1]:/tmp/y'
argv_is "rdcp --ssh CMD" "-l|bob|--|alice@::1|exec rdpipe --agent|"
run rdpipe -n 'bob@h1:echo hi'; expect_rc $? 0 "rdpipe -n"
grep -q -- "agent via: ssh -o BatchMode=yes -- bob@h1 'exec rdpipe --agent'" "$C/o" ||
    t_fail "rdpipe -n does not show the '--': $(grep 'agent via' "$C/o")"
t_end

# A hostile host's agent: what it says (log lines, exit messages) reaches the user's terminal
# through rdpipe and rdcp. Control bytes must arrive escaped (\ooo), never raw: no clearing
# the screen, moving the cursor, setting the title or ending a line early to forge one
# (scp's CVE-2019-6109). Printable UTF-8 stays. (What a host writes to ssh's own stderr
# reaches the terminal as with ssh itself; see the threat model.)
cat > "$RD_T/bin/evilssh" <<'EOS'
#!/bin/bash
read -r banner
hexof() { printf '%s' "$1" | od -An -tx1 | tr -d ' \n'; }
echo "hello 10.0.0.9 10.0.0.1 42"
echo "log $(hexof $'\e[2J\e[1;31mFAKE: transfer complete\e[0m\nrdpipe: all good caf\xc3\xa9')"
echo "stat recv 10 1.0 tcp"$'\e]0;owned\a'   # a word, not hex: shown in -v's summary
echo "exit file 5 0 $(hexof $'\e]0;owned\a\e[1A\e[2Kforged line')"
echo "exit send 5 0 $(hexof $'\e]0;owned\a\e[1A\e[2Kforged line')"
sleep 1
EOS
chmod +x "$RD_T/bin/evilssh"
for tool in rdpipe rdcp; do
    t_begin "$tool: a hostile agent's messages reach the terminal with their control bytes escaped"
    if [ $tool = rdpipe ]; then
        run rdpipe -v --ssh "$RD_T/bin/evilssh" evilhost:cat
    else
        run rdcp -v --ssh "$RD_T/bin/evilssh" "$C/x" evilhost:/tmp/y
    fi
    expect_nonzero $? "$tool with a hostile agent"
    LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$C/e" && t_fail "raw control bytes on stderr: $(cat -v "$C/e" | head -3)"
    grep -qF '\033]0;owned\007\033[1A\033[2Kforged line' "$C/e" ||
        t_fail "the exit message is not shown escaped: $(cat -v "$C/e" | head -5)"
    grep -qF '\033[2J\033[1;31mFAKE: transfer complete\033[0m\012rdpipe: all good café' "$C/e" ||
        t_fail "the log line is not shown escaped: $(cat -v "$C/e" | head -5)"
    [ $tool = rdpipe ] && ! grep -qF 'over tcp?]0;owned?' "$C/e" &&
        t_fail "the transport a stat line names is not shown with its control bytes replaced: $(cat -v "$C/e" | head -5)"
    t_end
done

# An --ssh program that cannot run exited 127 in the child, as ssh does when the remote has no
# rdpipe, and was reported as that ("is rdpipe on the PATH there?"): now the exec's own failure
for tool in rdpipe rdcp; do
    t_begin "$tool --ssh /nonexistent/ssh: exit 5, one line naming the ssh program, not the remote PATH"
    if [ $tool = rdpipe ]; then
        run rdpipe --ssh /nonexistent/ssh h1:cat
    else
        run rdcp --ssh /nonexistent/ssh h1:x "$C/y"
    fi
    expect_rc $? 5 "$tool --ssh /nonexistent/ssh"
    expect_err "$C/e" $tool "^$tool: cannot start the agent for h1.*: cannot run the ssh program \(--ssh\): No such file or directory$"
    t_end
done

# -H goes into control lines and rdsend's argv as one word: an empty one (-H "$UNSET") hung
# rdcp, one with a space hung both, and '-x' reached rdsend as an option (before 2026-11-29)
for tool in rdpipe rdcp; do
    t_begin "$tool -H that is not one word (empty, a space, a tab, '-x'): a usage error, exit 1, one line"
    for h in '' 'a b' $'a\tb' '-x'; do
        if [ $tool = rdpipe ]; then
            run rdpipe -H "$h" 'echo hi' cat
        else
            run rdcp -H "$h" "$C/x" "$C/y"
        fi
        expect_rc $? 1 "$tool -H '$h'"
        expect_err "$C/e" $tool "^$tool: -H/--hostname must be this machine's host name or address \(one word, not beginning with '-'\), not '.*'$"
    done
    t_end
done
