#!/usr/bin/env bash
# tests/integration/21-image-kernel.sh - vmtools-image on the real input:
# Debian 12's cloud kernel staged with dpkg -x (tests/lib/fetch-kernel.sh).
# e2fsck -fn, verify, a byte-identical rebuild, the loop-mounted tree equal
# to the staged one, modprobe resolving dependencies from the image, and the
# bundled perf (--version, record) through its launcher: from the mount,
# through a symlink elsewhere, and in a chroot of the image alone.
# Also: the image within 1.15x of the tree's size, modprobe -d resolving
# xfs's dependencies, the chroot with only proc and sysfs mounted, and
# SIGTERM during a build leaving no image, temporary file or depmod staging.
. "$(dirname "$0")/../lib/tap.sh"
. "$SRC/tests/lib/image.sh"

IMG=$VMTOOLS_IMAGE
EPOCH=1700000000
if ! eval "$(bash "$SRC/tests/lib/fetch-kernel.sh" 2>"$T/fetch.err")"; then
	skip "vmtools-image on Debian's kernel" "cannot fetch the kernel packages: $(tail -n 1 "$T/fetch.err")"
	exit 0
fi
R=$KERNEL_ROOT
REL=$KERNEL_RELEASE

image_built_clean "from the staged Debian kernel (perf bundled by default)" \
	"$T/k.img" --root "$R" --source-date-epoch $EPOCH
"$IMG" inspect "$T/k.img" >"$T/inspect" 2>&1
if grep -q "kernel release: $REL" "$T/inspect" && grep -q '^  perf  *\/bin\/perf' "$T/inspect" &&
	grep -q "/usr/src/linux-headers-$REL -> " "$T/inspect" &&
	grep -q "/usr/lib/linux-kbuild-6.1 -> " "$T/inspect"; then
	ok "inspect: kernel release, perf tool, links for headers and kbuild"
else
	not_ok "inspect output"
	diag "$T/inspect"
fi
# Interrupted: no image, no temporary file, no depmod staging left.
mkdir -p "$T/int"
before=$(ls -d "${TMPDIR:-/tmp}"/vmtools-depmod.* 2>/dev/null | wc -l)
"$IMG" build --root "$R" --output "$T/int/k.img" >/dev/null 2>&1 &
pid=$!
# Signalled once its temporary image exists, i.e. surely mid-build (a
# fixed delay lost the race to a build from a warm page cache).
for _ in $(seq 1000); do
	compgen -G "$T/int/.vmtools-image.*" >/dev/null && break
	kill -0 $pid 2>/dev/null || break
	sleep 0.005
done
kill -TERM $pid
wait $pid
st=$?
after=$(ls -d "${TMPDIR:-/tmp}"/vmtools-depmod.* 2>/dev/null | wc -l)
if [ $st -eq 143 ] && [ -z "$(ls -A "$T/int")" ] && [ "$after" -le "$before" ]; then
	ok "SIGTERM during a build leaves no image, temporary file or staging"
else
	not_ok "SIGTERM during a build: status $st, left: $(ls -A "$T/int") (staging dirs $before -> $after)"
fi
content=$(du -s --apparent-size -B1 "$R" | cut -f1)
size=$(stat -c %s "$T/k.img")
perf_bytes=$(debugfs -R 'ls -l /lib/vmtools/perf/lib' "$T/k.img" 2>/dev/null | awk '{ s += $6 } END { print s + 0 }')
echo "# image $size bytes for $content bytes staged + $perf_bytes bytes of perf libraries"

if [ -n "$(need_loop)" ]; then
	skip "loop-mounted image equals the staged tree" "$(need_loop)"
	exit 0
fi
M=$T/mnt
mkdir -p "$M"
mount -o loop,ro "$T/k.img" "$M" || { not_ok "loop mount"; exit 0; }
at_exit "umount '$M'"
(cd "$R" && find . -path "./lib/modules/$REL/modules.*" -prune -o -printf '%p %y %m 0:0 %l\n' | LC_ALL=C sort) >"$T/src.lst"
(cd "$M" && find . \( -path ./lost+found -o -path ./.vmtools -o -path ./bin -o -path ./lib/vmtools \
	-o -path "./lib/modules/$REL/modules.*" \) -prune -o -printf '%p %y %m %U:%G %l\n' | LC_ALL=C sort) >"$T/img.lst"
check "mounted image: same names, types, modes and link targets as the staged tree" diff "$T/src.lst" "$T/img.lst"
check "mounted image: same contents (diff -r)" \
	diff -r --no-dereference -x lost+found -x .vmtools -x 'modules.*' -x vmtools -x bin "$R" "$M"
blocks=$(find "$M" -type f -printf '%s\n' | awk '{ b += int(($1 + 4095) / 4096) } END { print b }')
limit=$((blocks * 4096 * 115 / 100 + 16 * 1024 * 1024))
if [ "$size" -le "$limit" ]; then
	ok "auto size $size bytes is within 1.15x of the files in 4 KiB blocks + 16 MiB ($limit)"
else
	not_ok "auto size $size bytes exceeds $limit"
fi
check "modprobe resolves xfs's dependencies from the image's modules.dep" \
	bash -c "modprobe -d '$M' -S '$REL' --show-depends xfs | grep -q 'libcrc32c.ko'"
check "perf --version through the launcher on the mount" \
	bash -c "'$M/bin/perf' --version | grep -q '^perf version'"
check "perf record of a short command through the launcher" \
	bash -c "'$M/bin/perf' record -q -o '$T/perf.data' -- '$M/bin/perf' --version >/dev/null && [ -s '$T/perf.data' ]"
mkdir -p "$T/bin"
ln -s "$M/bin/perf" "$T/bin/perf"
check "perf runs through a symlink on PATH, as the agent links it" \
	env PATH="$T/bin:/usr/bin:/bin" perf --version

# A chroot holding the image alone: a writable copy with room for perf.data
# and mount points for proc and sysfs (perf needs them), nothing copied in.
umount "$M" && TAP_CLEANUP=("${TAP_CLEANUP[@]:0:${#TAP_CLEANUP[@]}-1}")
rm -f "$T/k.img"
if ! "$IMG" build --root "$R" --source-date-epoch $EPOCH --size 320M --output "$T/rw.img" >"$T/out" 2>&1; then
	not_ok "build with an explicit --size"
	diag "$T/out"
	exit 0
fi
C=$T/chroot
mkdir -p "$C"
mount -o loop "$T/rw.img" "$C" && at_exit "umount '$C'"
mkdir -p "$C/proc" "$C/sys"
mount -t proc proc "$C/proc" && at_exit "umount '$C/proc'"
mount -t sysfs sysfs "$C/sys" && at_exit "umount '$C/sys'"
check "chroot holds no shell and no libc outside /lib/vmtools" \
	bash -c "[ ! -e '$C/bin/sh' ] && [ -z \"\$(find '$C' -path '$C/proc' -prune -o -path '$C/sys' -prune -o -path '$C/lib/vmtools' -prune -o -name 'libc.so*' -print)\" ]"
check "perf --version inside a chroot of the image" chroot "$C" /bin/perf --version
check "perf record inside a chroot of the image" \
	bash -c "chroot '$C' /bin/perf record -q -o /perf.data -- /bin/perf --version >/dev/null && [ -s '$C/perf.data' ]"
