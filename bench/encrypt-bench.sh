#!/usr/bin/env bash
# bench/encrypt-bench.sh - what --encrypt costs, against plain rdsend/rdrecv and against the
# pipeline the original tool's README suggests (openssl enc around the tools), in one run over
# loopback, rounds interleaved. Not a test: nothing asserts.
#
#   bench/encrypt-bench.sh [MIB] [RUNS]        (default 1024 MiB from tmpfs, median of 3)
#   RDPIPE_BIN=dir (default bin/)   LANES=n (rdsend/rdrecv --lanes, default: theirs)
#   ROWS="plain ocb aes chacha openssl" (the default: all of them)
#
# Rows: plain | --encrypt aes-256-ocb | --encrypt aes-256-gcm | --encrypt chacha20-poly1305 |
#       openssl enc -aes-256-ctr | rdsend  ->  rdrecv | openssl enc -d -aes-256-ctr
# Prints GB/s (wall clock, sender start to receiver exit), the ratio to plain, and CPU seconds
# per GB of each end (user+sys of everything on that end: rdsend and openssl, or rdrecv and
# openssl).
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${RDPIPE_BIN:-$ROOT/bin}
MIB=${1:-1024}
RUNS=${2:-3}
LANES_OPT=()
[ -n "${LANES:-}" ] && LANES_OPT=(--lanes "$LANES")
export RDPIPE_WEAK_KEY_OK=1
DIR=$(mktemp -d /dev/shm/rdpipe-enc.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
head -c $((MIB << 20)) /dev/urandom > "$DIR/in"
KEY=bench-key-0123456789abcdef
PASS=bench-pass
PORT=${PORT:-18555}

# one ROW: prints "seconds sender_cpu receiver_cpu"
run_row() {
    local row=$1 t0 t1
    case $row in
        plain|ocb|aes|chacha)
            local opt=() env=()
            [ "$row" != plain ] && opt=(--encrypt)
            [ "$row" = ocb ] && env=(RDPIPE_CIPHER=aes-256-ocb)
            [ "$row" = aes ] && env=(RDPIPE_CIPHER=aes-256-gcm)
            [ "$row" = chacha ] && env=(RDPIPE_CIPHER=chacha20-poly1305)
            /usr/bin/time -f "%U %S" -o "$DIR/rt" "$BIN/rdrecv" "${opt[@]}" "${LANES_OPT[@]}" "$PORT" "$KEY" /dev/null &
            local rp=$!
            sleep 0.3
            t0=$EPOCHREALTIME
            env "${env[@]}" /usr/bin/time -f "%U %S" -o "$DIR/st" "$BIN/rdsend" "${opt[@]}" "${LANES_OPT[@]}" \
                127.0.0.1 "$PORT" "$KEY" "$DIR/in"
            wait $rp
            t1=$EPOCHREALTIME ;;
        openssl)
            /usr/bin/time -f "%U %S" -o "$DIR/rt" sh -c "'$BIN/rdrecv' $PORT $KEY | openssl enc -d -aes-256-ctr -pbkdf2 -pass pass:$PASS > /dev/null" &
            local rp=$!
            sleep 0.3
            t0=$EPOCHREALTIME
            /usr/bin/time -f "%U %S" -o "$DIR/st" sh -c "openssl enc -aes-256-ctr -pbkdf2 -pass pass:$PASS < '$DIR/in' | '$BIN/rdsend' 127.0.0.1 $PORT $KEY"
            wait $rp
            t1=$EPOCHREALTIME ;;
    esac
    awk -v a="$t0" -v b="$t1" -v s="$(cat "$DIR/st")" -v r="$(cat "$DIR/rt")" \
        'BEGIN{split(s,x," "); split(r,y," "); printf "%.4f %.3f %.3f\n", b-a, x[1]+x[2], y[1]+y[2]}'
}

rows=${ROWS:-plain ocb aes chacha openssl}
for r in $rows; do : > "$DIR/res.$r"; done
for ((i = 0; i < RUNS; i++)); do
    for r in $rows; do
        run_row "$r" >> "$DIR/res.$r" 2> "$DIR/err.$r" || cat "$DIR/err.$r" >&2
    done
done
gb=$(awk -v m="$MIB" 'BEGIN{printf "%.6f", m*1048576/1e9}')
median() { sort -n | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}'; }
plain_s=$(cut -d' ' -f1 "$DIR/res.plain" | median)
printf "%s MiB from tmpfs -> /dev/null over loopback, median of %s, %s (load %s)\n" "$MIB" "$RUNS" "$(date -u +%F)" "$(cut -d' ' -f1 /proc/loadavg)"
printf "| %-55s | %6s | %8s | %18s | %20s |\n" "pipeline" "GB/s" "÷ plain" "sender CPU s/GB" "receiver CPU s/GB"
printf "|%s|%s|%s|%s|%s|\n" "---" "---:" "---:" "---:" "---:"
for r in $rows; do
    s=$(cut -d' ' -f1 "$DIR/res.$r" | median)
    sc=$(cut -d' ' -f2 "$DIR/res.$r" | median)
    rc=$(cut -d' ' -f3 "$DIR/res.$r" | median)
    case $r in
        plain) name="rdsend FILE -> rdrecv (plain)" ;;
        ocb) name="rdsend --encrypt (aes-256-ocb)" ;;
        aes) name="rdsend --encrypt (aes-256-gcm)" ;;
        chacha) name="rdsend --encrypt (chacha20-poly1305)" ;;
        openssl) name="openssl enc -aes-256-ctr | rdsend -> rdrecv | openssl enc -d" ;;
    esac
    awk -v n="$name" -v s="$s" -v p="$plain_s" -v g="$gb" -v sc="$sc" -v rc="$rc" \
        'BEGIN{printf "| %-55s | %6.2f | %8.2f | %18.3f | %20.3f |\n", n, g/s, p/s, sc/g, rc/g}'
done
