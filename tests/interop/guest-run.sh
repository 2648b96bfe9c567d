#!/bin/bash
# Runs inside the guest as the child of /sbin/interop-init (see build-image.sh), output on
# the virtio console. Sets up Soft-RoCE on a dummy interface, optionally the kernel target,
# runs the command from /interop-out/cmd and writes its exit status to /interop-out/rc.
set -uo pipefail
export INTEROP_OUT=/interop-out
INTEROP_REPO=$(cat "$INTEROP_OUT/repo" 2>/dev/null || echo /work/main)
export INTEROP_REPO
export INTEROP_ADDR=10.99.0.1 INTEROP_NVMET_PORT=4420
export INTEROP_NVMET_NQN=nqn.2026-12.io.nvmeof:kernel-target
source "$INTEROP_OUT/config"
source "$INTEROP_REPO/tests/interop/nvmet.sh"
fail() { echo "guest: setup failed: $*"; echo 125 > "$INTEROP_OUT/rc"; sync; exit 1; }

# Modules, one modprobe per group (each load costs ~0.3 s under TCG).
modprobe -a dummy ib_uverbs rdma_ucm rdma_rxe nvme-rdma || fail "modprobe rdma"
ip link set lo up
ip link add nvm0 type dummy || fail "dummy interface"
ip link set nvm0 mtu 4200          # rxe active_mtu 4096 (1500 would give 1024)
ip addr add "$INTEROP_ADDR/24" dev nvm0
ip link set nvm0 up
rdma link add rxe0 type rxe netdev nvm0 || fail "rdma link add"
for _ in $(seq 50); do
    rdma link show rxe0/1 2>/dev/null | grep -q 'state ACTIVE' && break; sleep 0.1
done
rdma link show rxe0/1 | grep -q 'state ACTIVE' || fail "rxe0 port not ACTIVE"

if [ "$INTEROP_NVMET" = 1 ]; then
    # 128 MiB RAM disks: ram0 backs the default subsystem, ram1 is free for the command.
    modprobe brd rd_nr=2 rd_size=131072 || fail "modprobe brd"
    modprobe -a nvmet nvmet-rdma || fail "modprobe nvmet"
    # shellcheck disable=SC2086
    nvmet_subsys "$INTEROP_NVMET_NQN" /dev/ram0 $INTEROP_ALLOW_HOSTS || fail "nvmet subsystem"
    nvmet_port 1 "$INTEROP_ADDR" "$INTEROP_NVMET_PORT" || fail "nvmet port"
    nvmet_link 1 "$INTEROP_NVMET_NQN" || fail "nvmet link"
fi
echo "guest: ready ($(uname -r), rxe0 on $INTEROP_ADDR, nvmet=$INTEROP_NVMET) after $(cut -d' ' -f1 /proc/uptime)s"

mkdir -p /tmp/work && cd /tmp/work
bash "$INTEROP_OUT/cmd"
rc=$?
dmesg > "$INTEROP_OUT/dmesg.txt" 2>/dev/null
echo "$rc" > "$INTEROP_OUT/rc"
sync
exit 0
