#!/bin/bash
# encrypt.sh - rdsend/rdrecv --encrypt: every DATA payload encrypted in place on the lanes
# (wire/rd_seal.h). The three ciphers round trip byte-identical at sizes around the chunk,
# from a file and from a pipe, into a file and into a pipe; the ends agree on the cipher both
# can run; what crosses the wire is ciphertext (a recording proxy looks for the plaintext); a
# flipped ciphertext bit, a wrong key and a plaintext sender to an --encrypt receiver all fail
# with the documented exit codes; a relay will not pass OCB to a receiver that cannot open it.
. "$(dirname "$0")/../lib.sh"

PY=/usr/bin/python3
KEY=encrypt-test-key-0123456789
CHUNK=65536

# roundtrip NAME SIZE CIPHER FROM(file|pipe) TO(file|pipe) [LANES]
roundtrip() {
    local size=$2 cipher=$3 from=$4 to=$5 lanes=${6:-2} port rc out=$C/out
    head -c "$size" "$RD_T/src" > "$C/in"
    port=$(free_port)
    if [ "$to" = file ]; then
        start RP /dev/null /dev/null "$C/rerr" "$RDRECV" --encrypt --lanes "$lanes" "$port" "$KEY" "$out"
    else
        # stdout a pipe (into cat); rdrecv's own status in $C/rrc (sh's would be cat's)
        rm -f "$C/rrc"
        start RP /dev/null "$out" "$C/rerr" sh -c '{ "$0" --encrypt --lanes "$1" "$2" "$3"; echo $? > "$4"; } | cat' \
            "$RDRECV" "$lanes" "$port" "$KEY" "$C/rrc"
    fi
    wait_listen "$port" || { t_fail "rdrecv did not listen: $(cat "$C/rerr")"; return; }
    if [ "$from" = file ]; then
        RDPIPE_CIPHER=$cipher timeout -k 2 "$(lim 30)" "$RDSEND" --encrypt -v --lanes "$lanes" \
            --chunk-size $CHUNK 127.0.0.1 "$port" "$KEY" "$C/in" 2> "$C/serr"
    else
        cat "$C/in" | RDPIPE_CIPHER=$cipher timeout -k 2 "$(lim 30)" "$RDSEND" --encrypt -v \
            --lanes "$lanes" --chunk-size $CHUNK 127.0.0.1 "$port" "$KEY" 2> "$C/serr"
    fi
    expect_rc $? 0 "rdsend --encrypt ($cipher, $size bytes, $from)" "$(cat "$C/serr")"
    wait_pid "$RP" "$(lim 20)"; rc=$?
    [ "$to" = pipe ] && [ $rc = 0 ] && rc=$(cat "$C/rrc" 2>/dev/null || echo "none (no status written)")
    expect_rc "$rc" 0 "rdrecv --encrypt ($to)" "$(cat "$C/rerr")"
    cmp -s "$C/in" "$out" || t_fail "$cipher, $size bytes, $from -> $to: output differs ($(stat -c %s "$out") bytes)"
    grep -q "encrypted with $cipher" "$C/serr" || t_fail "rdsend -v does not name the cipher $cipher: $(cat "$C/serr")"
}

gen "$RD_T/src" $((CHUNK * 9 + 777))
seed=${RDPIPE_SEED:-$RANDOM}
t_note "seed $seed"
RANDOM=$seed

for cipher in aes-256-ocb aes-256-gcm chacha20-poly1305; do
    t_begin "--encrypt $cipher: sizes around the chunk from a file and a pipe, into a file and a pipe, byte-identical"
    for size in 0 1 $((CHUNK - 1)) $CHUNK $((CHUNK + 1)) $((CHUNK * 3)) $((RANDOM * 17 % (CHUNK * 9))); do
        roundtrip x "$size" "$cipher" file file
        roundtrip x "$size" "$cipher" pipe pipe 1
    done
    roundtrip x $((CHUNK * 9 + 777)) "$cipher" file pipe 3
    roundtrip x $((CHUNK * 9 + 777)) "$cipher" pipe file 4
    t_end
done

# agree SENDER_CIPHER RECEIVER_CIPHER: AGREED = the cipher rdsend -v names ("" = that end's
# default). Called directly, never in $(...): its t_fail calls must reach the case.
agree() {
    local port
    AGREED=""
    port=$(free_port)
    RDPIPE_CIPHER=$2 start RP /dev/null /dev/null "$C/rerr" "$RDRECV" --encrypt "$port" "$KEY" "$C/out"
    wait_listen "$port" || { t_fail "rdrecv did not listen: $(cat "$C/rerr")"; return; }
    RDPIPE_CIPHER=$1 timeout -k 2 "$(lim 20)" "$RDSEND" --encrypt -v 127.0.0.1 "$port" "$KEY" "$C/in" 2> "$C/serr"
    expect_rc $? 0 "rdsend --encrypt (RDPIPE_CIPHER '$1' to '$2')" "$(cat "$C/serr")"
    wait_pid "$RP" "$(lim 20)"; expect_rc $? 0 "rdrecv --encrypt (RDPIPE_CIPHER '$2')" "$(cat "$C/rerr")"
    cmp -s "$C/in" "$C/out" || t_fail "RDPIPE_CIPHER '$1' to '$2': output differs"
    AGREED=$(sed -n 's/.*encrypted with \([a-z0-9-]*\).*/\1/p' "$C/serr" | head -1)
}

t_begin "the ends agree on a cipher both run: OCB where both have AES and OCB, else GCM, else ChaCha20-Poly1305"
head -c 300000 "$RD_T/src" > "$C/in"
if grep -qw aes /proc/cpuinfo && grep -qw pclmulqdq /proc/cpuinfo; then best=aes-256-ocb; else best=chacha20-poly1305; fi
while read -r snd rcv want; do
    [ "$snd" = - ] && snd=
    [ "$rcv" = - ] && rcv=
    [ "$want" = best ] && want=$best
    agree "$snd" "$rcv"; got=$AGREED
    [ "$got" = "$want" ] || t_fail "sender '${snd:-default}', receiver '${rcv:-default}': agreed on '$got', not $want"
done <<'EOF'
- - best
- aes-256-gcm aes-256-gcm
aes-256-gcm - aes-256-gcm
aes-256-ocb aes-256-ocb aes-256-ocb
aes-256-ocb aes-256-gcm aes-256-gcm
- chacha20-poly1305 chacha20-poly1305
chacha20-poly1305 aes-256-ocb chacha20-poly1305
EOF
t_end

# through the recording proxy of mitm.sh: the DATA payloads it saw, against the input
t_begin "on the wire: DATA payloads are ciphertext with --encrypt, and plaintext without"
if ! $PY -c 'import xxhash' 2>/dev/null; then
    t_skip "ciphertext on the wire" "needs /usr/bin/python3 with xxhash (apt-get install python3-xxhash)"
else
    for mode in --encrypt plain; do
        opt=(); [ "$mode" = --encrypt ] && opt=(--encrypt)
        head -c $((CHUNK * 4)) "$RD_T/src" > "$C/in"
        rport=$(free_port)
        start RP /dev/null "$C/out" "$C/rerr" "$RDRECV" --transport tcp "$rport" "$KEY"
        wait_listen "$rport" || t_fail "rdrecv did not listen: $(cat "$C/rerr")"
        pport=$(free_port)
        start MP /dev/null /dev/null "$C/merr" $PY "$RD_ROOT/tests/integration/mitm.py" record "$pport" "$rport" "$C/rec"
        wait_listen "$pport" || t_fail "the proxy did not listen: $(cat "$C/merr")"
        timeout -k 2 "$(lim 30)" "$RDSEND" "${opt[@]}" --transport tcp --chunk-size $CHUNK 127.0.0.1 "$pport" \
            "$KEY" "$C/in" 2> "$C/serr"
        expect_rc $? 0 "rdsend $mode through the proxy" "$(cat "$C/serr")"
        wait_pid "$RP" "$(lim 20)"; expect_rc $? 0 "rdrecv behind the proxy" "$(cat "$C/rerr")"
        wait_pid "$MP" 5 || kill_reap "$MP"
        cmp -s "$C/in" "$C/out" || t_fail "$mode through the proxy: output differs"
        seen=$($PY - "$C/rec" "$C/in" <<'EOF'
import pickle, sys
frames = pickle.load(open(sys.argv[1], "rb"))
data = open(sys.argv[2], "rb").read()
plain = sum(1 for f in frames if f[48:] and f[48:] in data)
flags = {int.from_bytes(f[6:8], "little") for f in frames}
print(len(frames), plain, sorted(flags))
EOF
)
        read -r nframes nplain flags <<< "$seen"
        [ "${nframes:-0}" -ge 4 ] || t_fail "$mode: the proxy recorded ${nframes:-no} DATA frames"
        if [ "$mode" = --encrypt ]; then
            [ "$nplain" = 0 ] || t_fail "--encrypt: $nplain of $nframes DATA payloads on the wire are plaintext"
            case $flags in "[2]"|"[6]"|"[10]") ;; *) t_fail "--encrypt: DATA flags on the wire are $flags, not ENCRYPTED" ;; esac
        else
            [ "$nplain" = "$nframes" ] || t_fail "control: only $nplain of $nframes plaintext payloads found (the check cannot see plaintext)"
        fi
    done
fi
t_end

t_begin "a flipped ciphertext bit: exit 4 on both sides, the chunk named, nothing confirmed"
if ! $PY -c 'import xxhash' 2>/dev/null; then
    t_skip "flipped ciphertext" "needs python3-xxhash"
else
    head -c $((CHUNK * 6)) "$RD_T/src" > "$C/in"
    rport=$(free_port)
    start RP /dev/null /dev/null "$C/rerr" "$RDRECV" --encrypt --transport tcp "$rport" "$KEY" "$C/out"
    wait_listen "$rport" || t_fail "rdrecv did not listen: $(cat "$C/rerr")"
    pport=$(free_port)
    start MP /dev/null /dev/null "$C/merr" $PY "$RD_ROOT/tests/integration/mitm.py" flip "$pport" "$rport"
    wait_listen "$pport" || t_fail "the proxy did not listen: $(cat "$C/merr")"
    timeout -k 2 "$(lim 30)" "$RDSEND" --encrypt --transport tcp --chunk-size $CHUNK 127.0.0.1 "$pport" \
        "$KEY" "$C/in" 2> "$C/serr"
    expect_rc $? 4 "rdsend --encrypt, ciphertext flipped" "$(cat "$C/serr")"
    wait_pid "$RP" "$(lim 20)"; expect_rc $? 4 "rdrecv --encrypt, ciphertext flipped" "$(cat "$C/rerr")"
    wait_pid "$MP" 5 || kill_reap "$MP"
    grep -q "mitm: flip done" "$C/merr" || t_fail "the attacker never acted: $(cat "$C/merr")"
    grep -q "chunk 1 (bytes 65536..131072) fails its authentication tag" "$C/rerr" ||
        t_fail "rdrecv does not name the chunk: $(cat "$C/rerr")"
    grep -q "fails its authentication tag" "$C/serr" || t_fail "rdsend does not say why: $(cat "$C/serr")"
fi
t_end

t_begin "a wrong key with --encrypt: exit 3 on both sides"
port=$(free_port)
start RP /dev/null /dev/null "$C/rerr" "$RDRECV" --encrypt --timeout 3 "$port" "$KEY" "$C/out"
wait_listen "$port" || t_fail "rdrecv did not listen: $(cat "$C/rerr")"
timeout -k 2 "$(lim 20)" "$RDSEND" --encrypt 127.0.0.1 "$port" wrong-key-0123456789abc "$RD_T/src" 2> "$C/serr"
expect_rc $? 3 "rdsend --encrypt with the wrong key" "$(cat "$C/serr")"
grep -q "authentication failed" "$C/serr" || t_fail "rdsend: $(cat "$C/serr")"
wait_pid "$RP" "$(lim 10)"; expect_rc $? 2 "rdrecv after only a wrong key (timed out)" "$(cat "$C/rerr")"
grep -q "authentication failed" "$C/rerr" || t_fail "rdrecv does not name the failed sender: $(cat "$C/rerr")"
t_end

t_begin "plaintext to an --encrypt receiver: the sender exits 3 before any data, the receiver waits on for one that encrypts"
head -c 300000 "$RD_T/src" > "$C/in"
port=$(free_port)
start RP /dev/null /dev/null "$C/rerr" "$RDRECV" --encrypt "$port" "$KEY" "$C/out"
wait_listen "$port" || t_fail "rdrecv did not listen: $(cat "$C/rerr")"
# a stranger (no key) is told the key is wrong, not the receiver's policy (it was, before
# 2026-11-29: the check came before the key exchange)
timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" "not-the-key-0123456789" "$C/in" 2> "$C/serr"
expect_rc $? 3 "rdsend with a wrong key and no --encrypt to rdrecv --encrypt" "$(cat "$C/serr")"
grep -q "wrong key" "$C/serr" && ! grep -q "encrypt" "$C/serr" || t_fail "a stranger was told: $(cat "$C/serr")"
timeout -k 2 "$(lim 20)" "$RDSEND" 127.0.0.1 "$port" "$KEY" "$C/in" 2> "$C/serr"
expect_rc $? 3 "rdsend without --encrypt to rdrecv --encrypt" "$(cat "$C/serr")"
grep -q "receiver requires --encrypt, and this sender does not encrypt" "$C/serr" || t_fail "rdsend: $(cat "$C/serr")"
[ -s "$C/out" ] && t_fail "rdrecv wrote $(stat -c %s "$C/out") bytes of a plaintext stream"
timeout -k 2 "$(lim 20)" "$RDSEND" --encrypt 127.0.0.1 "$port" "$KEY" "$C/in" 2> "$C/serr2"
expect_rc $? 0 "rdsend --encrypt after the refused one" "$(cat "$C/serr2")"
wait_pid "$RP" "$(lim 10)"; expect_rc $? 0 "rdrecv --encrypt, served by the second sender" "$(cat "$C/rerr")"
grep -q "does not encrypt, and this receiver requires --encrypt" "$C/rerr" || t_fail "rdrecv: $(cat "$C/rerr")"
cmp -s "$C/in" "$C/out" || t_fail "the encrypted sender's data differs"
t_end

# relays SINK_CIPHER: rdsend --encrypt (OCB offered) -> relay 1 -> relay 2 -> rdrecv --encrypt
# whose RDPIPE_CIPHER is SINK_CIPHER; sets rc_s rc_r1 rc_r2 rc_sink
relays() {
    head -c $((CHUNK * 5 + 3)) "$RD_T/src" > "$C/in"
    : > "$C/out"
    local SK sport r1port r2port
    SK=$(printf '%064x' 7)   # rdpipe's end-to-end stream key, which the relays never see
    sport=$(free_port)
    RDPIPE_CIPHER=$1 RDPIPE_STREAM_KEY=$SK start SP /dev/null /dev/null "$C/sinkerr" "$RDRECV" --encrypt "$sport" \
        hop-key-2-0123456789 "$C/out"
    wait_listen "$sport" || t_fail "sink did not listen: $(cat "$C/sinkerr")"
    r2port=$(free_port)
    echo "127.0.0.1 $sport hop-key-2-0123456789" > "$C/next2"
    RDPIPE_CIPHER=aes-256-ocb start R2 "$C/next2" /dev/null "$C/r2err" "$RDRECV" --relay-fd 0 "$r2port" hop-key-1-0123456789
    wait_listen "$r2port" || t_fail "relay 2 did not listen: $(cat "$C/r2err")"
    r1port=$(free_port)
    echo "127.0.0.1 $r2port hop-key-1-0123456789" > "$C/next1"
    RDPIPE_CIPHER=aes-256-ocb start R1 "$C/next1" /dev/null "$C/r1err" "$RDRECV" --relay-fd 0 "$r1port" hop-key-0-0123456789
    wait_listen "$r1port" || t_fail "relay 1 did not listen: $(cat "$C/r1err")"
    RDPIPE_CIPHER=aes-256-ocb RDPIPE_STREAM_KEY=$SK timeout -k 2 "$(lim 30)" "$RDSEND" --encrypt -v --chunk-size $CHUNK \
        127.0.0.1 "$r1port" hop-key-0-0123456789 "$C/in" 2> "$C/serr"
    rc_s=$?
    wait_pid "$R1" "$(lim 20)"; rc_r1=$?
    wait_pid "$R2" "$(lim 20)"; rc_r2=$?
    wait_pid "$SP" "$(lim 20)"; rc_sink=$?
}

t_begin "--encrypt through two relays (rdrecv --relay-fd): the ciphertext passed on unchanged, byte-identical"
relays ""
expect_rc $rc_s 0 "rdsend --encrypt to relay 1" "$(cat "$C/serr")"
expect_rc $rc_r1 0 "relay 1" "$(cat "$C/r1err")"
expect_rc $rc_r2 0 "relay 2" "$(cat "$C/r2err")"
expect_rc $rc_sink 0 "rdrecv --encrypt behind two relays" "$(cat "$C/sinkerr")"
cmp -s "$C/in" "$C/out" || t_fail "through two relays: output differs"
grep -q "encrypted with aes-256-ocb" "$C/serr" || t_fail "rdsend did not send OCB: $(cat "$C/serr")"
t_end

t_begin "a relay will not pass OCB on to a receiver that cannot open it: every hop fails, nothing written"
relays aes-256-gcm   # a receiver that grants no OCB, as one of a version before it
grep -q "downstream 127.0.0.1:[0-9]* cannot open the sender's aes-256-ocb chunks" "$C/r2err" ||
    t_fail "relay 2 does not say why: $(cat "$C/r2err")"
expect_rc $rc_s 4 "rdsend, relay 2 refused" "$(cat "$C/serr")"
expect_rc $rc_r1 4 "relay 1" "$(cat "$C/r1err")"
expect_rc $rc_r2 4 "relay 2" "$(cat "$C/r2err")"
expect_rc $rc_sink 4 "the sink" "$(cat "$C/sinkerr")"
[ -s "$C/out" ] && t_fail "the sink wrote $(stat -c %s "$C/out") bytes"
t_end
