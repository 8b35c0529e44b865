#!/bin/bash
# rdbench.sh - rdbench over loopback: a --quick sweep against a real server, its table, its
# JSON (well-formed and complete, checked field by field with python3), its SVG (XML, the axes,
# one series per depth, the model dashed), the model's fit against the measured points,
# --io at one and at both ends, the exit code and one-line message of every failure, and the
# bash completion. Nothing here asserts a speed: only that the numbers are there, agree with
# each other, and that the model describes them.
. "$(dirname "$0")/../lib.sh"
RDBENCH=$RD_BIN/rdbench
KEY=rdbench-test-key-0123456789abcdef
COMP=$RD_ROOT/completion/rdbench

if [ ! -x "$RDBENCH" ]; then
    t_begin "rdbench is built"; t_fail "no $RDBENCH (make)"; t_end; exit 0
fi

# server [OPTIONS...]: an rdbench --server on a free port in the background; sets SPORT, SPID
server() {
    SPORT=$(free_port)
    start SPID /dev/null "$C/sout" "$C/serr" "$RDBENCH" --server "$@" "$SPORT" "$KEY"
    wait_listen "$SPORT" "" 10 || t_fail "rdbench --server did not listen on $SPORT: $(cat "$C/serr")"
}
stop_server() { kill_reap "$SPID"; }

# check_json FILE SIZES DEPTHS [io]: the JSON is one complete object; every point of the grid is
# there, measured or skipped with a reason, and every number agrees with the others. Prints
# "median=<model median error>" on success, the problem otherwise (exit 1).
check_json() {
    python3 - "$@" <<'EOF'
import json, math, sys
path, sizes, depths = sys.argv[1], [int(x) for x in sys.argv[2].split(',')], [int(x) for x in sys.argv[3].split(',')]
want_io = len(sys.argv) > 4
try:
    d = json.load(open(path))
except Exception as e:
    print("not JSON: %s" % e); sys.exit(1)
def fail(msg):
    print(msg); sys.exit(1)
for k in ("tool", "version", "started", "seconds", "quick", "passes", "client", "host", "port", "runs", "io", "limits"):
    if k not in d: fail("no %r" % k)
if d["tool"] != "rdbench": fail("tool is %r" % d["tool"])
if len(d["runs"]) != 1: fail("%d runs" % len(d["runs"]))
r = d["runs"][0]
for k in ("transport", "local", "peer", "server", "seconds", "points", "model"):
    if k not in r: fail("run has no %r" % k)
if r["transport"] != "tcp": fail("transport %r" % r["transport"])
for k in ("host", "version", "connection", "devices"):
    if k not in r["server"]: fail("server has no %r" % k)
grid = [(p["size"], p["depth"]) for p in r["points"]]
if grid != [(s, dd) for s in sizes for dd in depths]: fail("points %s, expected every size x depth" % grid)
measured = 0
for p in r["points"]:
    if not p["measured"]:
        if not p.get("skipped"): fail("point %s x %s neither measured nor skipped with a reason" % (p["size"], p["depth"]))
        continue
    measured += 1
    if not 1 <= p.get("pass", 0) <= d["passes"]: fail("point %s x %s: pass %r" % (p["size"], p["depth"], p.get("pass")))
    for k in ("ops", "seconds", "ops_per_s", "gb_per_s", "latency_p50_us", "latency_p99_us", "model_gb_per_s", "model_latency_us", "model_error"):
        if k not in p or p[k] is None or not math.isfinite(p[k]): fail("point %s x %s: %s is %r" % (p["size"], p["depth"], k, p.get(k)))
    if p["ops"] < 3 or p["seconds"] <= 0 or p["gb_per_s"] <= 0: fail("point %s: nothing measured" % p)
    if abs(p["ops_per_s"] * p["size"] / 1e9 / p["gb_per_s"] - 1) > 1e-3: fail("point %s: GB/s != ops/s x size" % p)
    if abs(p["ops"] / p["seconds"] / p["ops_per_s"] - 1) > 1e-3: fail("point %s: ops/s != ops / seconds" % p)
    if not 0 < p["latency_p50_us"] <= p["latency_p99_us"]: fail("point %s: p50 > p99" % p)
    if abs(p["model_gb_per_s"] / p["gb_per_s"] - 1 - p["model_error"]) > 1e-3: fail("point %s: model_error" % p)
m = r["model"]
if not m["fitted"]: fail("no model")
for k in ("latency_us", "bandwidth_gb_per_s", "op_rate_per_s", "n_half_bytes", "median_error", "max_error", "depth_for_90pct", "points"):
    if k not in m: fail("model has no %r" % k)
if m["points"] != measured: fail("model fitted to %d points, %d measured" % (m["points"], measured))
if abs(m["n_half_bytes"] / (m["latency_us"] * 1e-6 * m["bandwidth_gb_per_s"] * 1e9) - 1) > 1e-3: fail("n_half != latency x bandwidth")
if [x["size"] for x in m["depth_for_90pct"]] != sizes: fail("depth_for_90pct sizes")
errs = sorted(abs(p["model_error"]) for p in r["points"] if p["measured"])
med = errs[(len(errs) + 1) // 2 - 1]
if abs(med - m["median_error"]) > 1e-3: fail("median_error %s, the points say %s" % (m["median_error"], med))
if want_io:
    io = d["io"]
    if not io or not io["local"] or not io["remote"]: fail("io: %r" % io)
    for side in ("local", "remote"):
        for k in ("write_1_gb_per_s", "write_n_gb_per_s", "read_cached_gb_per_s", "pipe_gb_per_s"):
            if not io[side][k] or io[side][k] <= 0: fail("io %s %s: %r" % (side, k, io[side][k]))
    lim = d["limits"]
    if not lim or lim["limit"] not in ("read here", "link", "write there") or lim["factor"] < 1: fail("limits: %r" % lim)
    if sorted(k for k in lim if k.endswith("_gb_per_s")) != ["link_gb_per_s", "read_here_gb_per_s", "write_there_gb_per_s"]:
        fail("limits keys: %r" % sorted(lim))
# rates are GB/s and say so (_gb_per_s); rdsend's link_gbps is Gb/s, and no rdbench key reads like it
def keys(o):
    if isinstance(o, dict):
        for k, v in o.items():
            yield k
            yield from keys(v)
    elif isinstance(o, list):
        for v in o:
            yield from keys(v)
if any(k.endswith("gbps") for k in keys(d)): fail("keys in _gbps: %r" % sorted(set(k for k in keys(d) if k.endswith("gbps"))))
print("median=%.3f within25=%d/%d" % (med, sum(e <= 0.25 for e in errs), len(errs)))
EOF
}

# check_svg FILE DEPTHS...: XML; two panels with axes in units; per depth a measured line with
# dots and a dashed model line; a legend entry per depth; a title naming hosts and transport
check_svg() {
    python3 - "$@" <<'EOF'
import sys, xml.etree.ElementTree as ET
path, depths = sys.argv[1], sys.argv[2:]
ns = {"s": "http://www.w3.org/2000/svg"}
try:
    root = ET.parse(path).getroot()
except Exception as e:
    print("not XML: %s" % e); sys.exit(1)
def fail(m):
    print(m); sys.exit(1)
if root.tag != "{http://www.w3.org/2000/svg}svg": fail("root is %s" % root.tag)
texts = ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]
title = [t for t in texts if t.startswith("rdbench: ")]
if not title or " over tcp" not in title[0] or "→" not in title[0]: fail("title: %r" % title)
panels = root.findall(".//s:g[@class='panel']", ns)
if len(panels) != 2: fail("%d panels" % len(panels))
for p, unit, label in ((panels[0], "B/s", "bandwidth"), (panels[1], "s", "latency")):
    xt = ["".join(t.itertext()) for t in p.find("s:g[@class='x-axis']", ns).iter("{http://www.w3.org/2000/svg}text")]
    yt = ["".join(t.itertext()) for t in p.find("s:g[@class='y-axis']", ns).iter("{http://www.w3.org/2000/svg}text")]
    if "message size" not in xt or "4 KiB" not in xt: fail("x axis: %r" % xt)
    if label not in yt or not any(t.endswith(unit) and t[0].isdigit() for t in yt): fail("y axis of %s: %r" % (label, yt))
    groups = {"".join(g.find("s:title", ns).itertext()): g for g in p.iter("{http://www.w3.org/2000/svg}g") if g.find("s:title", ns) is not None}
    for d in depths:
        kind = "bandwidth" if label == "bandwidth" else "latency p50"
        meas = groups.get("tcp %s, depth %s, measured" % (kind, d))
        model = groups.get("tcp %s, depth %s, model" % (label, d))
        if meas is None or not meas.findall("s:polyline", ns) or not meas.findall("s:circle", ns): fail("no measured %s line for depth %s" % (label, d))
        if model is None or not all(pl.get("stroke-dasharray") for pl in model.findall("s:polyline", ns)) or not model.findall("s:polyline", ns):
            fail("no dashed model %s line for depth %s" % (label, d))
legend = ["".join(t.itertext()) for t in root.find("s:g[@class='legend']", ns).iter("{http://www.w3.org/2000/svg}text")]
for d in depths:
    if "depth %s" % d not in legend: fail("legend: %r" % legend)
if "model (fitted)" not in legend or "measured" not in legend: fail("legend: %r" % legend)
print("ok")
EOF
}

t_begin "usage errors: exit 1, one line naming the problem"
u() {   # u PATTERN ARGS...
    local pat=$1; shift
    timeout 10 "$RDBENCH" "$@" > "$C/o" 2> "$C/e"; expect_rc $? 1 "rdbench $*"
    expect_err "$C/e" rdbench "$pat"
    expect_empty "$C/o" "stdout of rdbench $*"
}
u "^rdbench: missing HOST \(try 'rdbench --help'\)$"
u "^rdbench: missing KEY \(try 'rdbench --help'\)$" 127.0.0.1 5000
u "^rdbench: invalid port 'x'$" 127.0.0.1 x "$KEY"
u "^rdbench: too many arguments: 'extra'" 127.0.0.1 5000 "$KEY" extra
u "^rdbench: --sizes takes MIN-MAX, powers of two from 4K to 64M, not '3K-1M'$" --sizes 3K-1M h 1 "$KEY"
u "^rdbench: --sizes takes MIN-MAX, powers of two from 4K to 64M, not '4K-128M'$" --sizes 4K-128M h 1 "$KEY"
u "^rdbench: --depths takes MIN-MAX, powers of two from 1 to 64, not '3'$" --depths 3 h 1 "$KEY"
u "^rdbench: --depths takes MIN-MAX, powers of two from 1 to 64, not '1-'$" --depths 1- h 1 "$KEY"
u "^rdbench: --transport must be auto, tcp, rdma or all, not 'udp'$" --transport udp h 1 "$KEY"
u "^rdbench: --point-time takes seconds from 0.001 to 60, not '0'$" --point-time 0 h 1 "$KEY"
u "^rdbench: --passes must be from 1 to 10, not '0'$" --passes 0 h 1 "$KEY"
u "^rdbench: --io-size must be a size from 16M to 1T, not '1M'$" --io-size 1M h 1 "$KEY"
u "^rdbench: unknown option '--frobnicate' \(try 'rdbench --help'\)$" --frobnicate
u "^rdbench: option '--json' needs a value" h 1 "$KEY" --json
u "^rdbench: --server measures nothing itself" --server --json x 5000 "$KEY"
u "^rdbench: missing PORT" --server
u "^rdbench: --svg draws the link sweep: give HOST and PORT too$" --io "$C" --svg "$C/x.svg"
u "^rdbench: --json - and --svg - would both write standard output: give one a file$" --json - --svg - h 1 "$KEY"
[ -e "$C/x.svg" ] && t_fail "a usage error left $C/x.svg behind"
t_end

t_begin "--quick over loopback: table, complete JSON, SVG with every depth, exit 0"
server
t0=$(now)
timeout "$(lim 60)" "$RDBENCH" --quick --no-progress --json "$C/q.json" --svg "$C/q.svg" 127.0.0.1 "$SPORT" "$KEY" \
    > "$C/out" 2> "$C/err"
rc=$?; dt=$(elapsed "$t0")
expect_rc $rc 0 "rdbench --quick" "$(head -c 300 "$C/err")"
expect_empty "$C/err" "rdbench --quick stderr"
grep -q "^rdbench [0-9.]*: .* -> .* (127.0.0.1 port $SPORT), --quick$" "$C/out" || t_fail "no title line: $(head -3 "$C/out")"
grep -Eq '^tcp \(tcp, to 127\.0\.0\.1:[0-9]+\): 14 points in [0-9.]+ s, each the best of 2 passes$' "$C/out" || t_fail "no run line (14 points): $(grep '^tcp' "$C/out")"
grep -q '^      size  depth     p50 lat     p99 lat       ops/s      GB/s  model GB/s   error$' "$C/out" ||
    t_fail "no table header"
[ "$(grep -cE '^ +[0-9]+ (KiB|MiB) +[0-9]+ ' "$C/out")" = 14 ] || t_fail "not 14 rows: $(grep -cE '^ +[0-9]+ (KiB|MiB) ' "$C/out")"
grep -q '^(2 points skipped: depth x size above --max-inflight 67108864)$' "$C/out" || t_fail "the skipped points are not named"
grep -Eq '^model: latency [0-9.]+ (µs|ms), bandwidth [0-9.]+ GB/s, (at most [0-9]+ messages/s|no limit on messages/s seen); n½ ' "$C/out" || t_fail "no model line"
grep -Eq '^depth for 90% of the link: 4 KiB: ([0-9]+|none), 64 KiB: ([0-9]+|none), 1 MiB: ([0-9]+|none), 16 MiB: ([0-9]+|none)$' "$C/out" ||
    t_fail "no depth-for-90% line: $(grep '^depth for' "$C/out")"
res=$(check_json "$C/q.json" 4096,65536,1048576,16777216 1,4,16,64) || t_fail "JSON: $res"
res=$(check_svg "$C/q.svg" 1 4 16 64) || t_fail "SVG: $res"
t_note "took ${dt}s"
stop_server
t_end

# The model is a description of the points, so it must come close to them. On a loaded shared
# machine single points stray (a 64-deep ring that leaves the cache, a core taken away), so the
# claim is about the median of the points, and a run disturbed throughout gets two more tries.
t_begin "the model fit comes within 25% of the measured points (median) on loopback"
server
best=""
for try in 1 2 3; do
    timeout "$(lim 60)" "$RDBENCH" --quick --no-progress --json "$C/f.json" 127.0.0.1 "$SPORT" "$KEY" > /dev/null 2> "$C/err" ||
        { t_fail "run $try: $(cat "$C/err")"; break; }
    res=$(check_json "$C/f.json" 4096,65536,1048576,16777216 1,4,16,64) || { t_fail "JSON: $res"; break; }
    med=${res#median=}; med=${med%% *}
    best="$best try $try: $res;"
    fle "$med" 0.25 && break
done
fle "${med:-1}" 0.25 || t_fail "median error above 25% in 3 runs:$best"
t_note "$best"
stop_server
t_end

# grid_of JSON: the points rdbench --json measured, "SIZExDEPTH ..."
grid_of() {
    python3 -c '
import json, sys
pts = json.load(open(sys.argv[1]))["runs"][0]["points"]
print(" ".join("%dx%d" % (p["size"], p["depth"]) for p in pts))' "$1"
}
t_begin "--sizes and --depths end at their MAX, on the grid or not: the grid in the JSON"
server
timeout "$(lim 30)" "$RDBENCH" --sizes 8K-64K --depths 1-2 --passes 1 --point-time 0.01 --no-progress --json - \
    127.0.0.1 "$SPORT" "$KEY" > "$C/j" 2> "$C/e"
expect_rc $? 0 "rdbench --sizes 8K-64K" "$(head -c 300 "$C/e")"
grid=$(grid_of "$C/j")
[ "$grid" = "8192x1 8192x2 32768x1 32768x2 65536x1 65536x2" ] || t_fail "grid: $grid"
timeout "$(lim 30)" "$RDBENCH" --quick --sizes 4K-64K --depths 1-8 --point-time 0.01 --no-progress --json - \
    127.0.0.1 "$SPORT" "$KEY" > "$C/j" 2> "$C/e"
expect_rc $? 0 "rdbench --quick --sizes 4K-64K --depths 1-8" "$(head -c 300 "$C/e")"
grid=$(grid_of "$C/j")
[ "$grid" = "4096x1 4096x4 4096x8 65536x1 65536x4 65536x8" ] || t_fail "--quick grid: $grid"
stop_server
t_end

t_begin "a wrong key: exit 3, one line; the server turns it away and serves the next client"
server
timeout 20 "$RDBENCH" --sizes 4K-4K --depths 1-1 127.0.0.1 "$SPORT" wrong-key-0123456789 > "$C/o" 2> "$C/e"
expect_rc $? 3 "rdbench with a wrong key"
expect_err "$C/e" rdbench "authentication failed"
timeout 20 "$RDBENCH" --sizes 4K-16K --depths 1-2 --point-time 0.02 --json - 127.0.0.1 "$SPORT" "$KEY" > "$C/j" 2> "$C/e"
expect_rc $? 0 "rdbench after the wrong key"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["runs"][0]["points"]) == 4' "$C/j" ||
    t_fail "--json - did not put one JSON object (and only it) on stdout: $(head -c 200 "$C/j")"
grep -q "authentication failed" "$C/serr" || t_fail "the server did not say why it turned the client away: $(cat "$C/serr")"
# --svg - as --json -: the picture alone on stdout, no table before it
timeout 20 "$RDBENCH" --sizes 4K-16K --depths 1-2 --point-time 0.02 --svg - 127.0.0.1 "$SPORT" "$KEY" > "$C/s" 2> "$C/e"
expect_rc $? 0 "rdbench --svg -"
python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' "$C/s" 2> /dev/null ||
    t_fail "--svg - did not put an SVG (and only it) on stdout: $(head -c 200 "$C/s")"
kill -0 "$SPID" 2> /dev/null || t_fail "the server died"
stop_server
t_end

# Strangers who stall in the handshake must cost the client nothing: the server runs every
# connection's handshake at once and serves the first to complete. A server that took them one
# at a time (before 2026-11-28) dropped each stalled one first (3 s a silent one, more one that
# announced a HELLO), so the client could only be served once they were gone.
t_begin "connections that stall in the handshake do not hold up the client: served while they stay open"
server
stalled=()
for i in 1 2 3 4 5 6; do
    exec {fd}<>"/dev/tcp/127.0.0.1/$SPORT" || t_fail "cannot open stalled connection $i"
    stalled+=("$fd")
    [ "$i" -gt 3 ] && printf 'P\0\0\0' >&"$fd"   # a HELLO's length prefix, then nothing
done
t0=$(now)
timeout "$(lim 10)" "$RDBENCH" --sizes 4K-4K --depths 1-1 --passes 1 --point-time 0.01 --no-progress \
    127.0.0.1 "$SPORT" "$KEY" > "$C/o" 2> "$C/e"
rc=$?; dt=$(elapsed "$t0")
open=$(ss -Htn state established "( dport = :$SPORT )" | wc -l)
expect_rc $rc 0 "rdbench behind 6 stalled connections" "$(head -c 300 "$C/e")"
[ "$open" = 6 ] || t_fail "$open of the 6 stalled connections were still open when the client was done: it waited for the others to be dropped"
for fd in "${stalled[@]}"; do exec {fd}>&-; done
t_note "client took ${dt}s"
stop_server
t_end

# A client that proved the key and then stalls (stopped mid-point: it sends nothing more, and
# reads nothing) must cost the next client nothing. Before 2026-12-07 the next one waited in the
# listen queue, unanswered, until its handshake timed out (30 s, exit 2 "timed out waiting"),
# and the stalled one held the server 60 s. Now, as iperf3, a second client is told at once
# that the server is busy (exit 2, one line), and the stalled one is dropped after 10 s.
t_begin "a stalled client: the next is told at once the server is busy (exit 2), the stalled one dropped in 10 s"
server -v
start cp /dev/null "$C/o1" "$C/e1" "$RDBENCH" --sizes 4K-4K --depths 1-1 --passes 1 --point-time 60 \
    --no-progress 127.0.0.1 "$SPORT" "$KEY"
wait_for_text "$C/serr" "client 127\.0\.0\.1:[0-9]+ over tcp" "$(lim 10)" || t_fail "the first client was not served: $(cat "$C/serr" "$C/e1")"
sleep 0.2
kill -STOP "$cp"
t_stall=$(now)
timeout "$(lim 20)" "$RDBENCH" --sizes 4K-4K --depths 1-1 --passes 1 --point-time 0.01 --no-progress \
    127.0.0.1 "$SPORT" "$KEY" > "$C/o" 2> "$C/e"
rc=$?; dt=$(elapsed "$t_stall")
expect_rc $rc 2 "rdbench while another client is served and stalled" "$(head -c 300 "$C/e")"
expect_err "$C/e" rdbench "^rdbench: server 127\.0\.0\.1:$SPORT is busy with another client's test \(rdbench --server runs one at a time\): try again when it is done$"
expect_within "$dt" "$(lim 5)" "being told the server is busy"
grep -q "turned away: busy with another client's test" "$C/serr" || t_fail "the server did not say it turned the client away: $(cat "$C/serr")"
# a client turned away proved the key: no guess, so its address is not slowed down for it
for i in 1 2 3; do
    timeout "$(lim 20)" "$RDBENCH" --sizes 4K-4K --depths 1-1 --passes 1 --point-time 0.01 --no-progress \
        127.0.0.1 "$SPORT" "$KEY" > /dev/null 2>&1
    expect_rc $? 2 "rdbench turned away again ($i)"
done
grep -q "failed [0-9]* handshakes lately" "$C/serr" && t_fail "clients turned away for being busy were counted as failed handshakes: $(tr '\n' '|' < "$C/serr")"
wait_for_text "$C/serr" "^rdbench: client 127\.0\.0\.1:[0-9]+ sent nothing for 10 s: dropped$" "$(lim 20)" ||
    t_fail "the stalled client was not dropped within $(lim 20) s: $(tr '\n' '|' < "$C/serr")"
timeout "$(lim 20)" "$RDBENCH" --sizes 4K-4K --depths 1-1 --passes 1 --point-time 0.01 --no-progress \
    127.0.0.1 "$SPORT" "$KEY" > "$C/o" 2> "$C/e"
rc=$?; ds=$(elapsed "$t_stall")
expect_rc $rc 0 "rdbench once the stalled client was dropped" "$(head -c 300 "$C/e")"
expect_within "$ds" "$(lim 15)" "serving the next client after a stall"
kill_reap "$cp"
kill -0 "$SPID" 2> /dev/null || t_fail "the server died"
t_note "told busy after ${dt}s, served again ${ds}s after the stall"
stop_server
t_end

t_begin "a key that starts with '-' (after --) works at both ends"
port=$(free_port)
start sp /dev/null "$C/sout" "$C/serr" "$RDBENCH" --server --timeout "$(lim 20)" "$port" -- "-$KEY"
wait_listen "$port" "" 10 || t_fail "rdbench --server PORT -- -KEY did not listen: $(cat "$C/serr")"
timeout "$(lim 20)" "$RDBENCH" --sizes 4K-4K --depths 1-1 --passes 1 --point-time 0.01 --no-progress \
    127.0.0.1 "$port" -- "-$KEY" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdbench HOST PORT -- -KEY" "$(cat "$C/e" "$C/serr" | head -c 300)"
grep -q rdrecv "$C/e" "$C/serr" && t_fail "a message names rdrecv: $(cat "$C/e" "$C/serr")"
kill_reap "$sp"
t_end

t_begin "rdsend at rdbench --server, rdbench at rdrecv: each is told what the other is (exit 4); the server served nobody (exit 2)"
st=$(lim 3)
server --timeout "$st"
head -c 5000 /dev/urandom > "$C/in"
timeout 20 "$RDSEND" 127.0.0.1 "$SPORT" "$KEY" "$C/in" 2> "$C/e"
expect_rc $? 4 "rdsend at an rdbench server"
expect_err "$C/e" rdsend "this is an rdbench server \(rdbench --server or rdrecv --check\), not rdrecv"
wait_pid "$SPID" "$(lim 10)"; expect_rc $? 2 "rdbench --server --timeout $st that only refused an rdsend"
grep -q "^rdbench: timed out after $st s without an rdbench client$" "$C/serr" || t_fail "server: $(tr '\n' '|' < "$C/serr")"
port=$(free_port)
start rp /dev/null /dev/null "$C/rerr" "$RDRECV" "$port" "$KEY" "$C/out"
wait_listen "$port" "" 10 || t_fail "rdrecv did not listen"
timeout 20 "$RDBENCH" --sizes 4K-4K --depths 1-1 127.0.0.1 "$port" "$KEY" > "$C/o" 2> "$C/e"
expect_rc $? 4 "rdbench at an rdrecv"
expect_err "$C/e" rdbench "^rdbench: server 127\.0\.0\.1:$port is an rdrecv or rdsend, not an rdbench --server: it refused rdbench's messages$"
wait_pid "$rp" 10 > /dev/null
t_end

t_begin "failures: refused port (2), --transport rdma without a device (101), unwritable --json (5, nothing measured)"
port=$(free_port)
timeout 30 "$RDBENCH" --timeout 1 127.0.0.1 "$port" "$KEY" > "$C/o" 2> "$C/e"
expect_rc $? 2 "rdbench to a closed port"
expect_err "$C/e" rdbench "refused|cannot connect"
if [ -z "$(ibv_devices 2> /dev/null | awk 'NR > 2')" ]; then
    timeout 30 "$RDBENCH" --transport rdma 127.0.0.1 "$port" "$KEY" > "$C/o" 2> "$C/e"
    expect_rc $? 101 "rdbench --transport rdma without a device"
    expect_err "$C/e" rdbench "no RDMA device"
fi
server -v
out=$C/no-such-dir/x.json
timeout 30 "$RDBENCH" --json "$out" 127.0.0.1 "$SPORT" "$KEY" > "$C/o" 2> "$C/e"
expect_rc $? 5 "rdbench --json to an unwritable file"
expect_err "$C/e" rdbench "^rdbench: cannot write '$out': "
expect_empty "$C/o" "stdout of a run that could not write its --json"
grep -q ' over tcp (messages' "$C/serr" && t_fail "it measured before finding out it cannot write: $(cat "$C/serr")"
# a run that fails leaves no output file behind
stop_server
timeout 30 "$RDBENCH" --timeout 1 --json "$C/gone.json" --svg "$C/gone.svg" 127.0.0.1 "$port" "$KEY" > /dev/null 2>&1
[ -e "$C/gone.json" ] || [ -e "$C/gone.svg" ] && t_fail "a failed run left its output files"
t_end

# Whatever a client asks (and a key holder may ask for 64 MiB x 64, 4 GiB), the server holds
# at most 256 MiB in flight: the depths above it are skipped and named, the rest measured.
t_begin "the server holds at most 256 MiB in flight: a client's deeper points are skipped, named"
server
timeout "$(lim 60)" "$RDBENCH" --max-inflight 1G --sizes 64M-64M --depths 4-8 --passes 1 --point-time 0.01 \
    --no-progress --json "$C/m.json" 127.0.0.1 "$SPORT" "$KEY" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdbench --max-inflight 1G --sizes 64M-64M --depths 4-8" "$(head -c 300 "$C/e")"
res=$(python3 -c '
import json, sys
pts = json.load(open(sys.argv[1]))["runs"][0]["points"]
print(" ".join("%dx%d:%s" % (p["size"] >> 20, p["depth"], "measured" if p["measured"] else p["skipped"]) for p in pts))' "$C/m.json")
[ "$res" = "64x4:measured 64x8:depth x size above the server's limit (256 MiB in flight)" ] || t_fail "points: $res"
grep -q "^(1 points skipped: depth x size above the server's limit (256 MiB in flight))$" "$C/o" ||
    t_fail "the table does not name the skipped point: $(grep skipped "$C/o")"
stop_server
t_end

t_begin "server --timeout: exits 2 when no client came, 0 after serving one"
port=$(free_port)
t0=$(now)
timeout 20 "$RDBENCH" --server --timeout 1 "$port" "$KEY" > "$C/o" 2> "$C/e"
expect_rc $? 2 "rdbench --server --timeout 1 without a client"
expect_err "$C/e" rdbench "timed out after 1 s waiting for a client"
server --timeout 3
timeout 20 "$RDBENCH" --sizes 4K-4K --depths 1-1 --point-time 0.01 127.0.0.1 "$SPORT" "$KEY" > /dev/null 2>&1 ||
    t_fail "the client failed"
wait_pid "$SPID" 10; expect_rc $? 0 "rdbench --server --timeout 3 after a client"
t_end

# --timeout bounds serving too: a client that holds the key cannot keep the server past it
# (each message it sends resets only the per-message limit, 10 s)
t_begin "server --timeout cuts off a client still being served: one line, the server exits 0"
server --timeout 2
t0=$(now)
timeout "$(lim 30)" "$RDBENCH" --sizes 4K-4K --depths 1-1 --passes 1 --point-time 6 --no-progress \
    127.0.0.1 "$SPORT" "$KEY" > "$C/o" 2> "$C/e"
rc=$?; dt=$(elapsed "$t0")
[ "$rc" = 0 ] && t_fail "the client's 6 s point was measured whole: the server served past its --timeout 2"
expect_rc "$rc" 4 "rdbench cut off by the server's --timeout" "$(head -c 300 "$C/e")"
wait_pid "$SPID" "$(lim 10)"; expect_rc $? 0 "rdbench --server --timeout 2 that served a client"
grep -q "^rdbench: client 127\.0\.0\.1:[0-9]*: still being served when --timeout ran out: cut off$" "$C/serr" ||
    t_fail "the server did not say why it cut the client off: $(cat "$C/serr")"
t_note "client cut off after ${dt}s"
t_end

t_begin "--io DIR alone: every measurement, the scratch file removed"
mkdir -p "$C/io"
timeout "$(lim 120)" "$RDBENCH" --io "$C/io" --io-size 16M --io-lanes 2 --json "$C/io.json" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdbench --io"
expect_empty "$C/e" "rdbench --io stderr"
grep -q '^this host (scratch file of 16 MiB, N = 2 lanes):$' "$C/o" || t_fail "no io title: $(head -1 "$C/o")"
for m in "write, buffered + fdatasync, 1 lane" "write, buffered + fdatasync, 2 lanes" "read, page-cached" "pipe, 1 MiB writes"; do
    grep -Eq "^  ${m//+/\\+} +[0-9]+\.[0-9]{3} GB/s$" "$C/o" || t_fail "no figure for '$m': $(grep -F "$m" "$C/o")"
done
[ -z "$(ls -A "$C/io")" ] || t_fail "the scratch file is still there: $(ls -A "$C/io")"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
io = d["io"]["local"]
assert d["runs"] == [] and d["host"] is None and d["io"]["remote"] is None, d
assert io["bytes"] == 16 << 20 and io["lanes"] == 2, io
assert io["write_1_gb_per_s"] > 0 and io["pipe_gb_per_s"] > 0 and io["read_cached_gb_per_s"] > 0, io' "$C/io.json" ||
    t_fail "--io JSON: $(head -c 300 "$C/io.json")"
t_end

# A read or write that fails is the run's error (exit 5, one line); only a measurement the
# filesystem does not offer (O_DIRECT: EINVAL) is "-". io_fault.so makes O_DIRECT calls fail.
t_begin "--io: EIO and ENOSPC are errors (exit 5), O_DIRECT not offered is '-'; a missing DIR is 5"
mkdir -p "$C/io"
for args in "" "127.0.0.1 5000 $KEY" "--server 5000 $KEY"; do   # alone, client, server
    timeout 10 "$RDBENCH" --io "$C/none" $args > "$C/o" 2> "$C/e"
    expect_rc $? 5 "rdbench --io to a missing directory ${args:+($args)}"
    expect_err "$C/e" rdbench "^rdbench: --io $C/none: No such file or directory$"
done
if cc -shared -fPIC -o "$C/io_fault.so" "$RD_ROOT/tests/integration/io_fault.c" -ldl 2> "$C/cc.err"; then
    # an ASan build wants its runtime first; the shim only forwards to it
    fault() { RDB_IO_FAULT=$1 LD_PRELOAD=$C/io_fault.so ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 \
              timeout "$(lim 60)" "$RDBENCH" --io "$C/io" --io-size 16M --io-lanes 2 > "$C/o" 2> "$C/e"; }
    fault pread:EIO
    expect_rc $? 5 "rdbench --io with O_DIRECT reads failing (EIO)"
    expect_err "$C/e" rdbench "^rdbench: --io $C/io: reading \(O_DIRECT\) a scratch file there: Input/output error$"
    expect_empty "$C/o" "stdout of rdbench --io that failed"
    fault pwrite:ENOSPC
    expect_rc $? 5 "rdbench --io with O_DIRECT writes failing (ENOSPC)"
    expect_err "$C/e" rdbench "^rdbench: --io $C/io: writing \(O_DIRECT\) a scratch file there: No space left on device$"
    fault pwrite:EINVAL
    expect_rc $? 0 "rdbench --io where O_DIRECT writes are not offered (EINVAL)"
    expect_empty "$C/e" "stderr of rdbench --io without O_DIRECT writes"
    grep -Eq '^  write, O_DIRECT, 1 lane +- +\(the filesystem cannot do this: tmpfs\?\)$' "$C/o" || t_fail "no '-' row: $(cat "$C/o")"
    grep -Eq '^  read, not cached, 1 lane +[0-9]+\.[0-9]{3} GB/s$' "$C/o" || t_fail "the reads after it were not measured: $(cat "$C/o")"
    [ -z "$(ls -A "$C/io")" ] || t_fail "scratch file left: $(ls -A "$C/io")"
else
    t_note "no cc for the shim: $(head -1 "$C/cc.err")"
fi
t_end

t_begin "--io at both ends: the server measures its directory, the part that limits is named"
mkdir -p "$C/sio" "$C/cio"
server --io "$C/sio" --io-size 16M
timeout "$(lim 120)" "$RDBENCH" --no-progress --sizes 256K-1M --depths 8-8 --point-time 0.05 --io "$C/cio" --io-size 16M \
    --json "$C/b.json" 127.0.0.1 "$SPORT" "$KEY" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdbench --io against a server with --io"
grep -q '^the server, ' "$C/o" || t_fail "no server io section"
grep -q '^limits of a transfer from here to .* over tcp:$' "$C/o" || t_fail "no limits section: $(tail -8 "$C/o")"
[ "$(grep -c '<- the limit$' "$C/o")" = 1 ] || t_fail "not exactly one part named as the limit"
grep -Eq '^the (read here|link|write there) limits it, [0-9.]+x below the next part$' "$C/o" || t_fail "no verdict line"
res=$(check_json "$C/b.json" 262144,1048576 8 io) || t_fail "JSON: $res"
# the link's GB/s in the table and in the JSON are one number: the table rounds it to 3
# decimals, the JSON to 6 digits, so rounding that again may move the last decimal (2.766 and 2.7655)
link=$(awk '$1 == "link" && $3 == "GB/s" {print $2}' "$C/o")
json_link=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["limits"]["link_gb_per_s"])' "$C/b.json")
python3 -c 'import sys; sys.exit(abs(float(sys.argv[1]) - float(sys.argv[2])) > 0.0005 + 1e-9)' "${link:-x}" "$json_link" 2> /dev/null ||
    t_fail "link: table '$link' GB/s, JSON link_gb_per_s $json_link"
[ -z "$(ls -A "$C/sio" "$C/cio" | grep -v '^/\|^$')" ] || t_fail "scratch files left: $(ls -A "$C/sio" "$C/cio")"
stop_server
# a server without --io says so, and the client says what is missing
server
timeout 60 "$RDBENCH" --no-progress --sizes 4K-4K --depths 1-1 --point-time 0.02 --io "$C/cio" --io-size 16M \
    127.0.0.1 "$SPORT" "$KEY" > "$C/o" 2> "$C/e"
expect_rc $? 0 "rdbench --io against a server without"
grep -q '^the server was started without --io DIR: its end is not measured$' "$C/o" || t_fail "the missing end is not named"
stop_server
t_end

t_begin "bash completion: options from --help, option values, hosts"
H=$RD_T/home; mkdir -p "$H/.ssh" "$C/w/dir1"; touch "$C/w/file1"
printf 'Host alpha beta\n' > "$H/.ssh/config"; printf 'gamma ssh-ed25519 AAAA\n' > "$H/.ssh/known_hosts"
comp() {
    (cd "$C/w" && HOME=$H bash --norc --noprofile -c '
        . "$0" || exit 99
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        _rdbench_complete
        printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " " | sed "s/ $//"' "$COMP" "$@")
}
want() { local exp=$1 got; shift; got=$(comp "$@"); [ "$got" = "$exp" ] || t_fail "[$*]: got '$got', expected '$exp'"; }
exp=$("$RDBENCH" --help | grep -E '^ +-' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u | tr '\n' ' ' | sed 's/ $//')
want "$exp" "$RDBENCH" --
want "--server --sizes --svg" "$RDBENCH" --s
want "all auto rdma tcp" "$RDBENCH" --transport ""
want "dir1" "$RDBENCH" --io d
want "file1" "$RDBENCH" --json f
want "alpha beta gamma" "$RDBENCH" ""
want "alpha" "$RDBENCH" --quick --json x a
want "" "$RDBENCH" alpha ""
want "" "$RDBENCH" --server ""
want "" "$RDBENCH" --sizes ""
t_end
