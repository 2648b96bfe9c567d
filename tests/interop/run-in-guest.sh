#!/usr/bin/env bash
# Boots the interop guest, runs one command in it, powers it off, returns the command's
# exit status.
#
#   tests/interop/run-in-guest.sh [OPTIONS] [--] CMD [ARGS...]
#
# Options:
#   --nvmet            configure the kernel NVMe/RDMA target (nvmet-rdma) before CMD:
#                      subsystem $INTEROP_NVMET_NQN, namespace 1 = /dev/ram0 (brd),
#                      port 4420 on the guest's rxe address, any host allowed
#   --allow-host NQN   (repeatable) allow only these host NQNs (attr_allow_any_host=0)
#   --timeout SEC      overall limit for the whole boot (default 900); QEMU is killed after it
#   --mem MB           guest memory (default 2048)
#   --image DIR        use this image directory instead of building/reusing the cached one
#   --out DIR          keep the guest's writable share here (default: a temporary dir, removed)
#   --icount SHIFT     software emulation with QEMU's instruction counting (-icount
#                      shift=SHIFT,sleep=off, never KVM) and one vCPU: the guest's clock
#                      advances 2^SHIFT ns per guest instruction executed and jumps over idle
#                      time, so CPU times read inside the guest count instructions (kernel and
#                      user) whatever the host's load; for measurements
#
# The guest sees the repository read-only at the same path as here (via virtio-9p, so the
# build's absolute rpaths work) and a writable folder at $INTEROP_OUT (/interop-out).
# CMD runs with bash in a writable scratch directory (/tmp/work) with these variables:
#   INTEROP_ADDR (guest rxe IPv4 address), INTEROP_NVMET_NQN, INTEROP_NVMET_PORT, INTEROP_OUT,
#   INTEROP_REPO. tests/interop/nvmet.sh has configfs helpers for more subsystems/ports.
# Output: CMD's stdout/stderr stream live on this script's stdout (virtio console); the guest
# kernel log goes to OUT/console.log. No NIC is given to the guest: rxe runs on a dummy
# interface, so no packet can leave the guest.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
timeout_s=900 mem=2048 image="" keep_out="" nvmet=0 hosts=() icount=""
while [ $# -gt 0 ]; do
    case "$1" in
        --nvmet) nvmet=1; shift ;;
        --allow-host) hosts+=("$2"); shift 2 ;;
        --timeout) timeout_s="$2"; shift 2 ;;
        --mem) mem="$2"; shift 2 ;;
        --image) image="$2"; shift 2 ;;
        --out) keep_out="$2"; shift 2 ;;
        --icount) icount="$2"; shift 2 ;;
        --) shift; break ;;
        -*) echo "run-in-guest: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: run-in-guest.sh [OPTIONS] CMD [ARGS...]" >&2; exit 2; }

if [ -z "$image" ]; then
    image="$("$here/build-image.sh")"
fi
for f in vmlinux initrd.img rootfs.img; do
    [ -f "$image/$f" ] || { echo "run-in-guest: $image/$f missing" >&2; exit 2; }
done

# Private run directory (FIFO) and the guest's writable share.
run="$(mktemp -d /tmp/interop-run.XXXXXX)"
if [ -n "$keep_out" ]; then mkdir -p "$keep_out"; share="$(cd "$keep_out" && pwd)"; else share="$run/share"; mkdir -p "$share"; fi
qpid=""
cleanup() {
    if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
        kill -TERM "$qpid" 2>/dev/null || true
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$qpid" 2>/dev/null || break; sleep 0.5; done
        kill -KILL "$qpid" 2>/dev/null || true
        wait "$qpid" 2>/dev/null || true
    fi
    exec 3>&- 2>/dev/null || true
    rm -rf "$run"
}
trap cleanup EXIT
trap 'echo "run-in-guest: interrupted" >&2; exit 130' INT TERM HUP

# The command, quoted, and the configuration the guest script reads.
{
    printf '%q ' "$@"; echo
} > "$share/cmd"
{
    echo "INTEROP_NVMET=$nvmet"
    printf 'INTEROP_ALLOW_HOSTS=%q\n' "${hosts[*]:-}"
} > "$share/config"
echo "$repo" > "$share/repo"   # where the guest mounts the repository (same path as here)
rm -f "$share/rc"

# Accelerator: KVM only where the CPU really has VT-x/SVM and KVM starts; TCG otherwise.
# --icount: TCG always (KVM counts nothing), on one vCPU: with two, both would be charged the
# time either one's instructions advance.
accel=(-accel tcg,thread=multi -cpu max) cpus=2
if [ -n "$icount" ]; then
    [[ "$icount" =~ ^([0-9]|10)$ ]] || { echo "run-in-guest: --icount takes a shift (0-10), not '$icount'" >&2; exit 2; }
    accel=(-accel tcg -cpu max -icount "shift=$icount,sleep=off") cpus=1
elif [ "${INTEROP_ACCEL:-auto}" != tcg ] && grep -qwE 'vmx|svm' /proc/cpuinfo && [ -w /dev/kvm ] \
   && timeout 20 qemu-system-x86_64 -accel kvm -cpu host -display none -nodefaults -S \
        -monitor none -serial none -daemonize -pidfile "$run/kvmprobe.pid" >/dev/null 2>&1; then
    kill "$(cat "$run/kvmprobe.pid")" 2>/dev/null || true
    accel=(-accel kvm -cpu host)
fi

# QEMU's stdio chardev treats stdin EOF as "disconnected" and then guest writes block forever:
# give it a stdin that never ends (a FIFO we hold open read-write).
mkfifo "$run/stdin"
exec 3<>"$run/stdin"

qemu-system-x86_64 "${accel[@]}" -smp "$cpus" -m "$mem" \
    -nodefaults -no-user-config -display none -no-reboot \
    -kernel "$image/vmlinux" -initrd "$image/initrd.img" \
    -append "console=ttyS0 panic=-1 loglevel=4 quiet" \
    -serial "file:$share/console.log" \
    -drive "file=$image/rootfs.img,if=virtio,format=raw,snapshot=on,cache=unsafe" \
    -virtfs "local,path=$repo,mount_tag=work,security_model=none,readonly=on" \
    -virtfs "local,path=$share,mount_tag=out,security_model=none" \
    -chardev stdio,id=hvc,signal=off -device virtio-serial-pci -device virtconsole,chardev=hvc \
    <&3 &
qpid=$!

# Bounded wait for QEMU to exit.
start=$SECONDS
while kill -0 "$qpid" 2>/dev/null; do
    if [ $((SECONDS - start)) -ge "$timeout_s" ]; then
        echo "run-in-guest: guest did not finish within ${timeout_s}s, killing QEMU" >&2
        exit 124
    fi
    sleep 1
done
qrc=0; wait "$qpid" || qrc=$?
qpid=""
if [ ! -f "$share/rc" ]; then
    echo "run-in-guest: guest ended without an exit status (QEMU rc $qrc); kernel log tail:" >&2
    tail -20 "$share/console.log" >&2 || true
    exit 125
fi
exit "$(cat "$share/rc")"
