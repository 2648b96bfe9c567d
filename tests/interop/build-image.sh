#!/usr/bin/env bash
# Builds (or reuses) the interop guest image from Debian packages only.
#
#   tests/interop/build-image.sh        -> prints the image directory on stdout
#
# INTEROP_KERNEL=backports takes the kernel from bookworm-backports instead of bookworm's 6.1,
# which is built without in-band authentication (no CONFIG_NVME_AUTH): the DH-HMAC-CHAP
# checks (auth-*) need it.
#
# Output, cached under $NVMEOF_MACHINE_CACHE/interop/<key>/ (default
# /var/cache/nvmeof: shared by every clone on the machine, so a fresh CI clone
# boots the image an earlier run built; .cache/interop in the repository when
# that is not writable) where <key> hashes this script and packages.list (a
# change to either rebuilds; older keys are removed):
#   rootfs.img  ext4 root filesystem (booted with snapshot=on, never modified)
#   vmlinux     the stock Debian kernel, uncompressed (PVH entry, fast under TCG)
#   initrd.img  tiny busybox initrd: virtio + ext4 modules, then switch_root
#   kver        the guest kernel version
# <cache>/current is a symlink to the newest complete build.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
machine_cache="${NVMEOF_MACHINE_CACHE:-/var/cache/nvmeof}"
if mkdir -p "$machine_cache/interop" 2>/dev/null && [ -w "$machine_cache/interop" ]; then
    cache="$machine_cache/interop"
else
    cache="$repo/.cache/interop"
fi
mirror="${INTEROP_MIRROR:-http://deb.debian.org/debian}"
security_mirror="${INTEROP_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
log() { echo "[build-image] $*" >&2; }

kernel="${INTEROP_KERNEL:-stock}"
case "$kernel" in stock|backports) ;; *) log "INTEROP_KERNEL must be stock or backports"; exit 2 ;; esac
key="$( (cat "$here/build-image.sh" "$here/packages.list"; echo "$kernel") | sha256sum | cut -c1-16)"
out="$cache/$key"
if [ -f "$out/complete" ]; then
    log "cached image $out"
    echo "$out"
    exit 0
fi

[ "$(id -u)" = 0 ] || { log "must run as root (debootstrap, chroot)"; exit 1; }

# One build at a time per cache (a second caller waits, then finds the image built).
mkdir -p "$cache"
exec 9> "$cache/.lock"
flock -w 1800 9 || { log "another image build holds $cache/.lock"; exit 1; }
if [ -f "$out/complete" ]; then
    log "cached image $out (built meanwhile)"
    echo "$out"
    exit 0
fi

# Host tools. Installed on demand so a fresh Debian machine works.
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v mke2fs >/dev/null || need+=(e2fsprogs)
command -v cpio >/dev/null || need+=(cpio)
[ "$kernel" = stock ] || command -v zstd >/dev/null || need+=(zstd)
[ -e /usr/share/keyrings/debian-archive-keyring.gpg ] || need+=(debian-archive-keyring)
if [ ${#need[@]} -gt 0 ]; then
    log "installing host packages: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    timeout 600 apt-get update -qq >&2
    timeout 900 apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

# unmount_under DIR: unmount everything mounted below DIR (a chroot's proc/sys/dev), deepest first.
unmount_under() {
    local m
    for m in $(awk -v r="$1/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
}
# Leftovers of an interrupted build (we hold the lock, so nobody is using them). Never let
# rm cross into a still-mounted /dev: unmount first, and --one-file-system.
for stale in "$cache"/build.*; do
    [ -d "$stale" ] || continue
    unmount_under "$stale"; rm -rf --one-file-system "$stale"
done
work="$(mktemp -d "$cache/build.XXXXXX")"
root="$work/root"
cleanup() { unmount_under "$root"; rm -rf --one-file-system "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

pkgs="$(grep -v '^\s*#' "$here/packages.list" | xargs)"

log "debootstrap bookworm (minbase) -> $root"
timeout 1200 debootstrap --variant=minbase bookworm "$root" "$mirror" >&2

# Updates and security so the guest's libraries match the (updated) host exactly.
cat > "$root/etc/apt/sources.list" <<SRC
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security_mirror bookworm-security main
SRC
[ "$kernel" = stock ] || echo "deb $mirror bookworm-backports main" >> "$root/etc/apt/sources.list"
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"; chmod +x "$root/usr/sbin/policy-rc.d"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"

log "apt-get install: $pkgs"
# INITRD=No: skip Debian's initramfs generation (we ship our own initrd).
chroot "$root" env DEBIAN_FRONTEND=noninteractive INITRD=No \
    timeout 600 apt-get update -qq >&2
chroot "$root" env DEBIAN_FRONTEND=noninteractive INITRD=No \
    timeout 1200 apt-get -y -qq dist-upgrade >&2
chroot "$root" env DEBIAN_FRONTEND=noninteractive INITRD=No \
    timeout 1200 apt-get -y -qq install --no-install-recommends $pkgs >&2
if [ "$kernel" = backports ]; then
    chroot "$root" env DEBIAN_FRONTEND=noninteractive INITRD=No \
        timeout 1200 apt-get -y -qq install --no-install-recommends -t bookworm-backports linux-image-amd64 >&2
fi

kver="$(ls "$root/lib/modules" | sort -V | tail -1)"
log "guest kernel $kver"
if [ "$kernel" = backports ]; then   # the stock kernel's modules would not fit the image
    for d in "$root"/lib/modules/*; do [ "$(basename "$d")" = "$kver" ] || rm -rf "$d"; done
fi
chroot "$root" depmod "$kver"

# --- initrd: busybox + the modules needed to mount the virtio root disk -------------
initrd="$work/initrd"
mkdir -p "$initrd"/{bin,dev,proc,sys,newroot,mods}
cp "$root/bin/busybox" "$initrd/bin/busybox"
# Resolve dependencies with the guest's own modprobe; keep load order.
chroot "$root" modprobe -S "$kver" -a --show-depends virtio_pci virtio_blk crc32c_generic ext4 \
    | awk '$1=="insmod" {print $2}' | awk '!seen[$0]++' > "$work/modlist"
: > "$initrd/mods/order"
while read -r m; do
    # busybox insmod takes plain .ko only; newer Debian kernels ship .ko.xz / .ko.zst.
    b="$(basename "$m")"
    case "$b" in
        *.ko.xz) b="${b%.xz}"; xz -dc "$root$m" > "$initrd/mods/$b" ;;
        *.ko.zst) b="${b%.zst}"; zstd -dcq "$root$m" > "$initrd/mods/$b" ;;
        *) cp "$root$m" "$initrd/mods/" ;;
    esac
    echo "$b" >> "$initrd/mods/order"
done < "$work/modlist"
cat > "$initrd/init" <<'INIT'
#!/bin/busybox sh
# Minimal initrd: load virtio/ext4, mount the root disk, hand over to /sbin/interop-init.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
while read -r m; do insmod "/mods/$m" 2>/dev/null; done < /mods/order
for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vda ] && break; sleep 0.2; done
mount -t ext4 -o rw /dev/vda /newroot || { echo "initrd: cannot mount /dev/vda"; echo b > /proc/sysrq-trigger; }
umount /proc /sys /dev
exec switch_root /newroot /sbin/interop-init
INIT
chmod +x "$initrd/init"
(cd "$initrd" && find . | cpio -o -H newc --quiet) | gzip -1 > "$work/initrd.img"

# --- uncompressed kernel: find the payload in the bzImage and decompress it ---------
/usr/bin/python3 - "$root/boot/vmlinuz-$kver" "$work/vmlinux" <<'PY'
import sys, lzma, gzip, subprocess, zlib
data = open(sys.argv[1], 'rb').read()
# xz and gzip (bookworm's 6.1), zstd (the backports kernel; zstd's CLI, which writes the
# frame and then complains about the size trailer after it).
for magic, kind in ((b'\xfd7zXZ\x00', 'xz'), (b'\x1f\x8b\x08', 'gz'), (b'\x28\xb5\x2f\xfd', 'zstd')):
    pos = data.find(magic)
    while pos >= 0:
        try:
            if kind == 'xz':
                out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[pos:])
            elif kind == 'zstd':
                out = subprocess.run(['zstd', '-dcq'], input=data[pos:], capture_output=True).stdout
            else:
                out = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[pos:])
            if out[:4] == b'\x7fELF':
                open(sys.argv[2], 'wb').write(out)
                sys.exit(0)
        except Exception:
            pass
        pos = data.find(magic, pos + 1)
sys.exit("cannot find a compressed ELF kernel in " + sys.argv[1])
PY

# --- guest PID 1 after switch_root ---------------------------------------------------
cat > "$root/sbin/interop-init" <<'GINIT'
#!/bin/bash
# PID 1 of the interop guest. Mounts the shares and runs the project's guest script
# (tests/interop/guest-run.sh, read from the share so it can change without a rebuild).
# Whatever happens, the guest ends with an immediate reboot, which QEMU (-no-reboot) turns
# into an exit.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
finish() { sync; echo b > /proc/sysrq-trigger; sleep 10; }
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm; mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp; mount -t tmpfs tmpfs /run
echo 1 > /proc/sys/kernel/sysrq
modprobe -a virtio_console 9pnet_virtio 9p configfs
mount -t configfs none /sys/kernel/config
# The repository is mounted at the host's own path (written to the out share as
# "repo"), so the build's absolute rpaths resolve wherever the clone lives.
mkdir -p /interop-out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=none out /interop-out || finish
repo=$(cat /interop-out/repo 2>/dev/null || echo /work/main)
mkdir -p "$repo"
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=none work "$repo" || finish
for i in $(seq 50); do [ -c /dev/hvc0 ] && break; sleep 0.1; done
bash "$repo/tests/interop/guest-run.sh" </dev/null >/dev/hvc0 2>&1
finish
GINIT
chmod +x "$root/sbin/interop-init"
echo interop > "$root/etc/hostname"

# Trim what the guest never needs, then pack the root filesystem (no loop device needed).
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
       "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/locale "$root"/boot/*
unmount_under "$root"
mke2fs -q -t ext4 -L interop -d "$root" "$work/rootfs.img" 1200M >&2

mkdir -p "$out"
mv "$work/rootfs.img" "$work/vmlinux" "$work/initrd.img" "$out/"
echo "$kver" > "$out/kver"
echo "$kernel" > "$out/kernel"
touch "$out/complete"
ln -sfn "$key" "$cache/current"
# Drop builds of the same kernel kind made for older versions of the script or
# package list (the stock and backports images are both kept: CI boots both).
for d in "$cache"/*/; do
    d="${d%/}"; [ -L "$d" ] && continue; [ "$(basename "$d")" = "$key" ] && continue
    [ "$(cat "$d/kernel" 2>/dev/null || echo stock)" = "$kernel" ] || continue
    case "$(basename "$d")" in build.*|last-run|src) ;; *) [ -f "$d/complete" ] && rm -rf --one-file-system "$d" ;; esac
done
log "built $out"
echo "$out"
