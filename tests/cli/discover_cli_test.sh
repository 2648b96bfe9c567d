#!/bin/sh
# discover_cli_test.sh SOFTVERBS_RUN TARGET DISCOVER [rdma|tcp]
# Runs nvmeof-discover over softverbs (rdma, the default) or NVMe/TCP (tcp: the
# target's discovery service over TCP, no softverbs) against nvmeof-target
# serving two subsystems and compares its output with what `nvme discover`
# prints for that transport; then the JSON output and a port nothing listens
# on; over rdma also TCP's default port and bad usage.
set -eu
run=$1 target=$2 discover=$3 transport=${4:-rdma}
# "$@" from here on: what every program runs under (softverbs-run over RDMA,
# nothing over TCP).
if [ "$transport" = rdma ]; then set -- "$run"; else set --; fi
work=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

fail() {
    echo "discover_cli_test: $*" >&2
    for f in out err target.err; do
        [ -s "$work/$f" ] && { echo "--- $f:" >&2; cat "$work/$f" >&2; }
    done
    exit 1
}

"$@" "$target" --transport "$transport" --port 0 --subsystem nqn.2026-12.io.nvmeof:first --namespace ram:1M \
    --subsystem nqn.2026-12.io.nvmeof:second --namespace ram:1M >"$work/target.out" 2>"$work/target.err" &
pid=$!
. "$(dirname "$0")/../../tools/target-ready.sh"
port=$(target_port "$work/target.out" "$pid" 200) ||
    fail "the target exited or said nothing for 20 s: $(tail -n 1 "$work/target.err")"

# 1. The normal output, line for line as nvme-cli prints it (nvme-print-stdout.c:
# the transport's TSAS lines last, rdma_* for rdma, sectype for tcp).
"$@" "$discover" -t "$transport" -a 127.0.0.1 -s "$port" --timeout-ms 10000 >"$work/out" 2>"$work/err" ||
    fail "nvmeof-discover exit $?"
{
    printf '\nDiscovery Log Number of Records 2, Generation counter 1\n'
    for i in 0 1; do
        [ "$i" -eq 0 ] && nqn=nqn.2026-12.io.nvmeof:first || nqn=nqn.2026-12.io.nvmeof:second
        cat <<EOT
=====Discovery Log Entry $i======
trtype:  $transport
adrfam:  ipv4
subtype: nvme subsystem
treq:    not required
portid:  1
trsvcid: $port
subnqn:  $nqn
traddr:  127.0.0.1
eflags:  none
EOT
        if [ "$transport" = tcp ]; then
            echo "sectype: none"
        else
            printf 'rdma_prtype: not specified\nrdma_qptype: connected\nrdma_cms:    rdma-cm\nrdma_pkey: 0x0000\n'
        fi
    done
} >"$work/expected"
diff -u "$work/expected" "$work/out" >&2 || fail "output differs from nvme discover's layout"
[ ! -s "$work/err" ] || fail "stderr is not empty"

# 2. JSON, as nvme-cli's --output-format=json.
"$@" "$discover" -t "$transport" -a 127.0.0.1 -s "$port" --output-format=json >"$work/out" 2>"$work/err" ||
    fail "nvmeof-discover -o json exit $?"
python3 - "$work/out" "$port" "$transport" <<'EOT' || fail "JSON output is wrong"
import json, sys
log = json.load(open(sys.argv[1]))
assert log["genctr"] == 1, log
records = log["records"]
assert [r["subnqn"] for r in records] == ["nqn.2026-12.io.nvmeof:first",
                                         "nqn.2026-12.io.nvmeof:second"], records
for r in records:
    assert r["trtype"] == sys.argv[3] and r["adrfam"] == "ipv4" and r["subtype"] == "nvme subsystem", r
    assert r["trsvcid"] == sys.argv[2] and r["traddr"] == "127.0.0.1" and r["portid"] == 1, r
    if sys.argv[3] == "tcp":
        assert r["sectype"] == "none" and not any(k.startswith("rdma_") for k in r), r
    else:
        assert r["rdma_qptype"] == "connected" and r["rdma_cms"] == "rdma-cm" and r["rdma_pkey"] == 0, r
        assert "sectype" not in r, r
EOT

kill "$pid"
wait "$pid" || true
pid=

# 3. Nothing listens there now: one line naming address:port, exit 1, in time.
start=$(date +%s)
rc=0
"$@" "$discover" -t "$transport" -a 127.0.0.1 -s "$port" --timeout-ms 2000 >"$work/out" 2>"$work/err" || rc=$?
elapsed=$(($(date +%s) - start))
[ "$rc" -eq 1 ] || fail "nothing listening: exit $rc, expected 1"
[ ! -s "$work/out" ] || fail "nothing listening: stdout is not empty"
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "nothing listening: not one line on stderr"
grep -q "^nvmeof-discover: 127.0.0.1:$port: " "$work/err" || fail "nothing listening: address:port not named"
[ "$elapsed" -le 4 ] || fail "nothing listening: took ${elapsed}s with --timeout-ms 2000"
if [ "$transport" = tcp ]; then
    echo "discover_cli_test: ok (tcp)"
    exit 0
fi

# 4. -t tcp without -s goes to NVMe/TCP's discovery port, 8009 (as nvme-cli):
# nothing of this test listens there, so one line naming it, exit 1.
rc=0
"$discover" -t tcp -a 127.0.0.1 --timeout-ms 2000 >"$work/out" 2>"$work/err" || rc=$?
[ "$rc" -eq 1 ] || fail "-t tcp: exit $rc, expected 1"
[ "$(wc -l <"$work/err")" -eq 1 ] || fail "-t tcp: not one line on stderr"
grep -q "^nvmeof-discover: 127.0.0.1:8009: " "$work/err" || fail "-t tcp: 127.0.0.1:8009 not named"

# 5. Bad usage: exit 2 and one line naming the problem.
usage() {
    expect=$1
    shift
    rc=0
    "$discover" "$@" >"$work/out" 2>"$work/err" || rc=$?
    [ "$rc" -eq 2 ] || fail "'$*': exit $rc, expected 2"
    [ "$(wc -l <"$work/err")" -eq 1 ] || fail "'$*': not one line on stderr"
    grep -q -- "$expect" "$work/err" || fail "'$*': stderr does not say '$expect'"
}
usage "traddr is required" -s 4420
usage "rdma or tcp" -t fc -a 127.0.0.1
usage "not a port number" -a 127.0.0.1 -s 70000
usage "not normal or json" -a 127.0.0.1 -o xml
usage "timeout-ms" -a 127.0.0.1 --timeout-ms 0
"$discover" --help | grep -q -- "--traddr" || fail "--help does not document --traddr"
echo "discover_cli_test: ok"
