# tests/rdpipe/lib.sh - network namespaces running real sshds, for rdpipe's tests and bench
# (sourced). Needs ROOT (the repo) and BIN (rdpipe/rdsend/rdrecv) set by the caller; sets T
# (scratch dir), CFG/SSH (ssh config and command), P (namespace prefix), HOSTS and ADDR, and
# installs a cleanup trap. Hosts: h0 (runs the initiator) h1 h2 h3 on 10.99.0.10-13, joined by
# a bridge in a "switch" namespace; nothing is configured in the root namespace.
# short test keys are on purpose: no weak-key warning in the stderr the tests compare
export RDPIPE_WEAK_KEY_OK=1

skip() { echo "skip: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces and sshd)"
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
[ -x "$SSHD" ] || skip "no sshd (install openssh-server)"
for t in ip ssh ssh-keygen timeout sha256sum cmp setsid; do
    command -v $t >/dev/null || skip "missing $t"
done
for t in rdpipe rdsend rdrecv; do
    [ -x "$BIN/$t" ] || skip "no $BIN/$t (run make)"
done

T=$(mktemp -d /tmp/rdpipe-test.XXXXXX)
P=rdpt$$
# how long the pipelines that must be killed sleep: a number no other run uses (the stray check
# looks at the whole machine, and two runs may share it), and the pgrep pattern that finds them
NAP=1234.$$
NAP_RE="sleep 1234[.]$$"'( |$)'
HOSTS="h0 h1 h2 h3"
declare -A ADDR=([h0]=10.99.0.10 [h1]=10.99.0.11 [h2]=10.99.0.12 [h3]=10.99.0.13)

CFG=$T/ssh_config
SSH="ssh -F $CFG"

RDP_MAIN_PID=$BASHPID   # a subshell signalled before it set its own traps runs ours (bash)
cleanup() {
    [ "$BASHPID" = "$RDP_MAIN_PID" ] || return 0
    for h in $HOSTS; do
        [ -s "$T/sshd-$h.pid" ] && kill "$(cat "$T/sshd-$h.pid")" 2>/dev/null
    done
    for h in $HOSTS; do
        for p in $(ip netns pids "$P$h" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    done
    for ns in sw $HOSTS; do ip netns del "$P$ns" 2>/dev/null; done
    if [ "${RDPIPE_KEEP:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rdp_setup() {
    ip netns add "${P}sw" || return 1
    ip -n "${P}sw" link set lo up
    ip -n "${P}sw" link add br0 type bridge || return 1
    ip -n "${P}sw" link set br0 up
    for h in $HOSTS; do
        ip netns add "$P$h" || return 1
        ip -n "$P$h" link set lo up
        ip -n "${P}sw" link add "v$h" type veth peer name eth0 netns "$P$h" || return 1
        ip -n "${P}sw" link set "v$h" master br0 up
        ip -n "$P$h" addr add "${ADDR[$h]}/24" dev eth0
        ip -n "$P$h" link set eth0 up
    done
    mkdir -p /run/sshd   # sshd's privilege separation directory (the Debian package makes it at boot)
    ssh-keygen -q -t ed25519 -N '' -f "$T/hostkey" || return 1
    ssh-keygen -q -t ed25519 -N '' -f "$T/id" || return 1
    cp "$T/id.pub" "$T/authorized_keys"
    echo "10.99.0.* $(cut -d' ' -f1,2 "$T/hostkey.pub")" > "$T/known_hosts"
    {
        echo "Host h0 h1 h2 h3"
        echo "  User root"
        echo "  IdentityFile $T/id"
        echo "  IdentitiesOnly yes"
        echo "  UserKnownHostsFile $T/known_hosts"
        echo "  GlobalKnownHostsFile /dev/null"
        echo "  StrictHostKeyChecking yes"
        echo "  BatchMode yes"
        echo "  LogLevel ERROR"
        echo "  ConnectTimeout 10"
        for h in $HOSTS; do printf 'Host %s\n  HostName %s\n' "$h" "${ADDR[$h]}"; done
    } > "$CFG"
    # SHLVL=1: bash started by sshd then counts itself as level 2 and skips ~/.bashrc, which
    # on some machines runs slow or lock-taking setup (pyenv rehash) in every session
    for h in $HOSTS; do
        cat > "$T/sshd-$h.conf" <<EOF
ListenAddress ${ADDR[$h]}
Port 22
HostKey $T/hostkey
PidFile $T/sshd-$h.pid
AuthorizedKeysFile $T/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 100:30:200
MaxSessions 100
LogLevel ERROR
SetEnv PATH=$BIN:/usr/local/bin:/usr/bin:/bin SHLVL=1
EOF
        ip netns exec "$P$h" "$SSHD" -f "$T/sshd-$h.conf" -E "$T/sshd-$h.log" || return 1
    done
    # wait until every sshd answers
    for h in $HOSTS; do
        local ok=0
        for _ in $(seq 50); do
            if ip netns exec "${P}h0" timeout 5 $SSH "$h" true 2>/dev/null; then ok=1; break; fi
            sleep 0.1
        done
        [ $ok = 1 ] || { echo "sshd on $h does not answer:"; cat "$T/sshd-$h.log"; return 1; }
    done
}

# run a command on the initiator host h0, in $T, with the repo's tools on PATH
on_h0() { (cd "$T" && ip netns exec "${P}h0" env PATH="$BIN:$PATH" "$@"); }
rdpipe_h0() { on_h0 timeout 60 rdpipe --ssh "$SSH" "$@"; }

# processes left in the hosts' namespaces, sshd listeners excepted
strays() {
    local keep=" "
    for h in $HOSTS; do [ -s "$T/sshd-$h.pid" ] && keep="$keep$(cat "$T/sshd-$h.pid") "; done
    for h in $HOSTS; do
        for p in $(ip netns pids "$P$h" 2>/dev/null); do
            case $keep in *" $p "*) continue ;; esac
            [ "$p" = "$$" ] || [ "$p" = "$BASHPID" ] && continue
            local cmd
            cmd=$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null) || continue
            [ -n "$cmd" ] && echo "$h pid $p: $cmd"
        done
    done
    pgrep -af "$NAP_RE" 2>/dev/null | sed 's/^/anywhere: /'
}
# no pipeline process may be left anywhere a few seconds after rdpipe returned
no_strays() {
    local left
    for _ in $(seq 50); do
        left=$(strays)
        [ -z "$left" ] && return 0
        sleep 0.1
    done
    echo "$left"
    return 1
}

# run rdp_setup quietly. What it needs was checked above (a missing one: exit 77, a skip); a
# setup that fails all the same is a failure: "FAIL setup: ...", exit 1
rdp_setup_or_skip() {
    rdp_setup > "$T/setup.log" 2>&1 ||
        { cat "$T/setup.log"; echo "FAIL setup: cannot set up the namespaces and sshds (log above)"; exit 1; }
}
