# Helpers for the kernel NVMe target (nvmet) through configfs. Sourced inside the guest.
NVMET=/sys/kernel/config/nvmet

# nvmet_subsys NQN DEVICE [HOSTNQN...]: subsystem with namespace 1 on DEVICE; with host NQNs,
# only those hosts are allowed (attr_allow_any_host=0), else any host.
nvmet_subsys() {
    local nqn=$1 dev=$2; shift 2
    local s=$NVMET/subsystems/$nqn
    mkdir -p "$s"
    if [ $# -gt 0 ]; then
        echo 0 > "$s/attr_allow_any_host"
        local h
        for h in "$@"; do
            mkdir -p "$NVMET/hosts/$h"
            ln -s "$NVMET/hosts/$h" "$s/allowed_hosts/$h"
        done
    else
        echo 1 > "$s/attr_allow_any_host"
    fi
    mkdir -p "$s/namespaces/1"
    echo -n "$dev" > "$s/namespaces/1/device_path"
    echo 1 > "$s/namespaces/1/enable"
}

# nvmet_port ID ADDR SVCID: an RDMA/IPv4 port.
nvmet_port() {
    local p=$NVMET/ports/$1
    mkdir -p "$p"
    echo rdma > "$p/addr_trtype"
    echo ipv4 > "$p/addr_adrfam"
    echo "$2" > "$p/addr_traddr"
    echo "$3" > "$p/addr_trsvcid"
}

# nvmet_port_tcp ID ADDR SVCID: an NVMe/TCP IPv4 port.
nvmet_port_tcp() {
    local p=$NVMET/ports/$1
    mkdir -p "$p"
    echo tcp > "$p/addr_trtype"
    echo ipv4 > "$p/addr_adrfam"
    echo "$2" > "$p/addr_traddr"
    echo "$3" > "$p/addr_trsvcid"
}

# nvmet_link PORTID NQN: expose the subsystem on the port (starts listening).
nvmet_link() {
    ln -s "$NVMET/subsystems/$2" "$NVMET/ports/$1/subsystems/$2"
}

# nvmet_unlink PORTID NQN: stop exposing it.
nvmet_unlink() {
    rm -f "$NVMET/ports/$1/subsystems/$2"
}
