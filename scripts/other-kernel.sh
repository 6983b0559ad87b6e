#!/bin/bash
# Runs narwhal-record, -g bpf above all, on another Linux kernel than this
# machine's: one of Debian's kernel packages, booted under QEMU (KVM where
# it can, else TCG) from an initramfs that holds a static busybox,
# the recorder and the reporter with their libraries (at the same paths as
# here), the test programs deepframes and forks, and libc's detached debug
# files.  The guest prints its kernel version, then runs:
#   1. narwhal-record -v -g bpf (deepframes 20), then narwhal-report
#      --stack-health; if the recording fails, once more with NARWHAL_BPF_LOG=1
#      (libbpf's messages and the verifier's log);
#   2. the same with NARWHAL_UNWIND=check (both unwinders compared);
#   3. NARWHAL_BPF_FIND_VMA=0 NARWHAL_UNWIND=check, -g bpf (forks 60): the
#      recorder tells the program the mappings, as before Linux 5.17;
#   4. the default call graph (no -g), to show which one it picks;
# and powers off.  The guest's console is printed as it comes (and kept in
# the work directory's console.log with NW_KEEP=1).  It takes 15-20 s under
# TCG.
#
#   scripts/other-kernel.sh                             # bookworm's current 6.1
#   scripts/other-kernel.sh linux-image-6.1.0-50-amd64  # a given image package
#   scripts/other-kernel.sh linux-image-amd64 bullseye  # bullseye's 5.10
#
# KERNEL_PACKAGE (default linux-image-amd64) is a kernel image package; a
# meta-package is followed to the image it depends on.  SUITE, when given,
# is the Debian suite to fetch it from instead of the machine's sources,
# through a temporary apt configuration: the machine's sources stay as they
# are.  Run as root (apt-get).  Environment: NW_BUILDDIR (default build, the
# build directory, already built), NW_TIMEOUT (default 600, seconds for the
# guest's whole run), NW_ACCEL (kvm or tcg, instead of the choice below),
# NW_KEEP=1 keeps the work directory under /tmp.
set -euo pipefail
cd "$(dirname "$0")/.."

package=${1:-linux-image-amd64}
suite=${2:-}
build=$(realpath "${NW_BUILDDIR:-build}")
timeout_s=${NW_TIMEOUT:-600}
record=$build/tools/narwhal-record
report=$build/tools/narwhal-report
programs=$build/tests/programs

for f in "$record" "$report" "$programs/deepframes" "$programs/forks"; do
	[[ -x $f ]] || { echo "other-kernel.sh: $f missing (ninja -C $build)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/other-kernel.XXXXXX)
if [[ ${NW_KEEP:-0} == 1 ]]; then
	echo "other-kernel.sh: work directory $work (kept)"
else
	trap 'rm -rf "$work"' EXIT
fi

# --- What it needs on this machine.
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
[[ -x /bin/busybox ]] || need+=(busybox-static)
command -v cpio >/dev/null || need+=(cpio)
if ((${#need[@]})); then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if [[ $(readelf -l /bin/busybox) == *INTERP* ]]; then
	echo "other-kernel.sh: /bin/busybox is not static (apt-get install busybox-static)" >&2
	exit 1
fi

# --- The kernel: apt's options (for SUITE, lists and cache of its own; the
# download as root, into the work directory that only root can write), the
# image package (a meta-package's dependency), and its vmlinuz.
apt_opts=(-o APT::Sandbox::User=root)
if [[ -n $suite ]]; then
	mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial"
	keyring=/usr/share/keyrings/debian-archive-keyring.gpg
	cat >"$work/apt/sources.list" <<-EOF
		deb [signed-by=$keyring] http://deb.debian.org/debian $suite main
		deb [signed-by=$keyring] http://deb.debian.org/debian-security $suite-security main
	EOF
	apt_opts+=(-o "Dir::Etc::SourceList=$work/apt/sources.list"
		   -o Dir::Etc::SourceParts=/dev/null
		   -o "Dir::State::Lists=$work/apt/lists"
		   -o "Dir::Cache=$work/apt/cache")
	apt-get "${apt_opts[@]}" update -qq
fi
depends=$(apt-cache "${apt_opts[@]}" show --no-all-versions "$package" | sed -n 's/^Depends: //p')
image=$(tr ',' '\n' <<<"$depends" | grep -o '^ *linux-image-[0-9][^ ]*' | head -n1 | tr -d ' ' || true)
image=${image:-$package}
echo "other-kernel.sh: kernel package $image${suite:+ ($suite)}"
(cd "$work" && apt-get "${apt_opts[@]}" download -qq "$image")
dpkg-deb -x "$work"/"$image"_*.deb "$work/kernel"
vmlinuz=$(ls "$work"/kernel/boot/vmlinuz-*)

# --- The initramfs: this machine's layout (merged /usr), busybox, and each
# ELF file with its libraries, its interpreter and its detached debug file.
fs=$work/fs
mkdir -p "$fs"/{proc,sys,dev,tmp,usr/bin,usr/sbin,usr/lib,usr/lib64}
for d in bin sbin lib lib64; do
	[[ -L /$d ]] && ln -s "$(readlink "/$d")" "$fs/$d"
done
cp /bin/busybox "$fs/bin/busybox"

# add FILE: FILE at its path, and what it needs.
add() {
	local f id
	for f in "$1" $(ldd "$1" | grep -o '/[^ ]*'); do
		[[ -e $fs$f ]] && continue
		cp -L --parents "$f" "$fs"
		id=$(readelf -n "$f" 2>/dev/null | sed -n 's/.*Build ID: //p')
		if [[ -n $id && -f /usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug ]]; then
			cp --parents "/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" "$fs"
		fi
	done
}
for f in "$record" "$report" "$programs/deepframes" "$programs/forks"; do
	add "$f"
done

cat >"$fs/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp XDG_CACHE_HOME=/tmp/cache
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing
cd /tmp

# run COMMAND...: shows it, its output (stderr too) and its exit status.
run() {
	echo
	echo "### \$*"
	"\$@" 2>&1
	status=\$?
	echo "### exit \$status"
	return \$status
}

echo "### guest kernel: \$(uname -r) (\$(uname -v))"
start=\$(date +%s)
run $record -v -g bpf -o /tmp/a -- $programs/deepframes 20 ||
	run env NARWHAL_BPF_LOG=1 $record -v -g bpf -o /tmp/a1 -- $programs/deepframes 20
[ -d /tmp/a ] && run sh -c "$report /tmp/a --stack-health | head -30"
run env NARWHAL_UNWIND=check $record -v -g bpf -o /tmp/a2 -- $programs/deepframes 20
run env NARWHAL_BPF_FIND_VMA=0 NARWHAL_UNWIND=check \\
	$record -v -g bpf -o /tmp/b -- $programs/forks 60
run $record -v -o /tmp/c -- $programs/deepframes 20
echo
echo "### guest done in \$((\$(date +%s) - start)) s"
poweroff -f
EOF
chmod +x "$fs/init"
(cd "$fs" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"
echo "other-kernel.sh: initramfs $(du -h "$work/initrd.gz" | cut -f1), booting $(basename "$vmlinuz")"

# --- The boot: KVM where /dev/kvm is hardware virtualization, else TCG (a
# PVM host's /dev/kvm, kvm_pvm, runs only PVM-aware guest kernels: a stock
# one crawls there, minutes to decompress itself); the console on stdout.
accel=${NW_ACCEL:-}
if [[ -z $accel ]]; then
	accel=tcg
	[[ -w /dev/kvm && ! -d /sys/module/kvm_pvm ]] && accel=kvm
fi
echo "other-kernel.sh: accelerator $accel"
started=$SECONDS
timeout "$timeout_s" qemu-system-x86_64 -accel "$accel" -cpu max -m 2G -smp 2 \
	-kernel "$vmlinuz" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 quiet panic=-1" \
	-display none -monitor none -serial stdio -no-reboot </dev/null |
	tr -d '\r' | tee "$work/console.log"
echo "other-kernel.sh: boot and run took $((SECONDS - started)) s"
grep -q '^### guest done' "$work/console.log" || {
	echo "other-kernel.sh: the guest did not finish (timeout ${timeout_s}s, or a panic)" >&2
	exit 1
}
