#!/bin/sh
# cli_test.sh TARGET: --help works; bad arguments print one line and exit 2.
set -u
target=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
    echo "cli_test: $*" >&2
    failures=$((failures + 1))
}

"$target" --help >"$work/out" 2>"$work/err"
[ $? -eq 0 ] || fail "--help did not exit 0"
grep -q '^Usage: nvmeof-target' "$work/out" || fail "--help lacks the usage line"
for option in --listen --port --subsystem --namespace --size --allow-host --mdts --mqes --maxcmd \
    --crqsize --ioccsz --max-io-queues --kas --fault --stats reject-connect connect-status \
    fail-io fail-lba drop-after delay-ms stop-answering-after ignore-io drop-after-run reorder-io \
    outage-after \
    port-down-after \
    corrupt-guard corrupt-apptag corrupt-reftag pi1 guard64 --maxh2cdata --c2h-pdu-bytes \
    --no-c2h-success reset-after reset-mid-transfer short-pdu corrupt-pdu r2t-delay-ms \
    zoned= max_open max_active conv= \
    --zasl zone-offline zone-read-only zone-full; do
    grep -q -- "$option" "$work/out" || fail "--help does not document $option"
done

# Each case: the arguments, then a word the one-line error must contain.
bad_run() {
    expected=$1
    shift
    "$target" "$@" >"$work/out" 2>"$work/err"
    status=$?
    [ "$status" -eq 2 ] || fail "'$*' exited $status, not 2"
    [ "$(wc -l <"$work/err")" -eq 1 ] || fail "'$*' printed $(wc -l <"$work/err") lines"
    grep -q "^nvmeof-target: .*$expected" "$work/err" || fail "'$*' said: $(cat "$work/err")"
    [ ! -s "$work/out" ] || fail "'$*' wrote to stdout"
}
bad_run "--subsystem"
bad_run "--bogus" --bogus
bad_run "--port" --port 99999 --subsystem nqn.a
bad_run "LBA" --subsystem nqn.a --namespace ram:1M:1000
bad_run "metadata size must be 8, 16, 32 or 64" --subsystem nqn.a --namespace ram:1M:512+7
bad_run "needs metadata" --subsystem nqn.a --namespace ram:1M:512:pi1
bad_run "guard64 needs 16 bytes of PI" --subsystem nqn.a --namespace ram:1M:512+8:pi1:guard64
bad_run "unknown option" --subsystem nqn.a --namespace "file:$work/pi.img:512+8:pi5"
bad_run "corrupt-guard" --subsystem nqn.a --fault corrupt-guard=x
bad_run "reject-connect" --subsystem nqn.a --fault reject-connect=x
bad_run "MAXH2CDATA must be a multiple of 4" --transport tcp --maxh2cdata 4097 --subsystem nqn.a
bad_run "NVMe/TCP only" --maxh2cdata 8192 --subsystem nqn.a
bad_run "NVMe/TCP only" --subsystem nqn.a --fault short-pdu=2
bad_run "WHAT one of stall, close" --transport tcp --subsystem nqn.a --fault short-pdu=2:slow
bad_run "unknown fault" --transport tcp --subsystem nqn.a --fault reset-before=2
bad_run "does not exist" --subsystem nqn.a --namespace "file:$work/missing.img"
bad_run "memory available" --subsystem nqn.a --namespace ram:1048576G
bad_run "not a whole number of zones" --subsystem nqn.a --namespace ram:1M:zoned=384K
bad_run "unknown zone option" --subsystem nqn.a --namespace ram:1M:zoned=64K,open=2
bad_run "is above max_active" --subsystem nqn.a --namespace ram:1M:zoned=64K,max_open=4,max_active=2
bad_run "takes no metadata" --subsystem nqn.a --namespace ram:1M:512+8:zoned=64K
bad_run "RAM only" --subsystem nqn.a --namespace "file:$work/z.img:zoned=64K"
bad_run "zone-offline" --subsystem nqn.a --fault zone-offline=x
bad_run "--zasl" --subsystem nqn.a --mdts 2 --zasl 3

[ "$failures" -eq 0 ] || exit 1
echo "cli_test: OK"
