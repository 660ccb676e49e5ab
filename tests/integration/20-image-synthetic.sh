#!/usr/bin/env bash
# tests/integration/20-image-synthetic.sh - vmtools-image on a small staged
# tree holding every file type and edge case: e2fsck -fn, verify, inspect,
# a loop mount compared with the source, byte-identical rebuilds whatever the
# atime, locale or mke2fs.conf, a bundled binary run through its launcher
# (also in a chroot of the image alone), and bad input refused with a clear
# error and no file at --output: labels setup would refuse, --size 0, a
# size or a full disk the output cannot take (the output named), a
# 3,000-level directory chain, 65,001 hard links to one file.  Also: a
# 1,900-level chain and 65,000 hard links build clean (e2fsck -fn), and a
# file name that is not UTF-8 keeps the manifest valid JSON.
# Rebuilds are compared with cmp under other atimes, ctimes, locale, TZ and
# MKE2FS_CONFIG; the loop-mounted tree keeps hard links, holes and the
# htree; the bundled env runs through its launcher on the mount and via a
# symlink; --keep-owner; --size 16T and a full tmpfs named by the output are
# refused; a corrupted byte is found by verify.
. "$(dirname "$0")/../lib/tap.sh"

IMG=$VMTOOLS_IMAGE
EPOCH=1700000000
R=$T/root
REL=6.1.0-99-test

mkdir -p "$R/lib/modules/$REL/kernel" "$R/usr/src/linux-headers-$REL/include" \
	"$R/usr/lib/linux-kbuild-x/scripts" "$R/big" "$R/empty-dir" "$R/a/b/c"
echo hello >"$R/hello.txt"
chmod 4755 "$R/hello.txt"
ln "$R/hello.txt" "$R/a/hardlink"
printf '' >"$R/empty-file"
chmod 600 "$R/empty-file"
head -c 300000 /dev/urandom >"$R/a/b/c/random.bin"
truncate -s 64M "$R/sparse"
printf 'middle' | dd of="$R/sparse" bs=1 seek=$((20 << 20)) conv=notrunc status=none
printf 'tail' | dd of="$R/sparse" bs=1 seek=$(((64 << 20) - 4)) conv=notrunc status=none
for i in $(seq 1 2500); do echo "$i" >"$R/big/header-file-with-a-long-name-$i.h"; done
ln -s hello.txt "$R/fast-link"
ln -s "$(printf 'd%.0s/' $(seq 1 150))end" "$R/slow-link"
ln -s "/usr/src/linux-headers-$REL" "$R/lib/modules/$REL/build"
ln -s ../../lib/linux-kbuild-x/scripts "$R/usr/src/linux-headers-$REL/scripts"
ln -s /nonexistent/in/guest "$R/dangling"
mkfifo "$R/fifo"
mknod "$R/null-dev" c 1 3 2>/dev/null || true
name255=$(printf 'n%.0s' $(seq 1 255))
echo long >"$R/$name255"
echo x >"$R/lib/modules/$REL/modules.order"
printf '' >"$R/lib/modules/$REL/modules.builtin"

build() { "$IMG" build --root "$R" --no-perf --source-date-epoch $EPOCH "$@"; }

check "build succeeds on the synthetic tree" build --output "$T/a.img"
check "e2fsck -fn finds nothing to fix" e2fsck -fn "$T/a.img"
check "verify re-hashes every file" "$IMG" verify "$T/a.img"
check "the 2,500-entry directory is htree-indexed, a one-block one is not" \
	bash -c "debugfs -R 'htree /big' '$T/a.img' 2>/dev/null | grep -q 'Number of entries (count)' && debugfs -R 'stat /big' '$T/a.img' 2>/dev/null | grep -q 'Flags: 0x81000' && debugfs -R 'htree /lib' '$T/a.img' 2>&1 | grep -q 'Not a hash-indexed directory'"
"$IMG" inspect "$T/a.img" >"$T/inspect" 2>&1
if grep -q "kernel release: $REL" "$T/inspect" && grep -q "label:          vm-tools" "$T/inspect" &&
	grep -q "/lib/modules/$REL -> /lib/modules/$REL" "$T/inspect" &&
	grep -q "/usr/src/linux-headers-$REL -> " "$T/inspect" &&
	grep -q "/usr/lib/linux-kbuild-x -> " "$T/inspect"; then
	ok "inspect shows kernel, label and the guest links (headers, kbuild)"
else
	not_ok "inspect output"
	diag "$T/inspect"
fi
if grep -q '/dangling\|/hello.txt ->' "$T/inspect"; then
	not_ok "links must not list dangling or in-tree targets"
else
	ok "links leave out dangling and relative in-tree symlinks"
fi

# Reproducible: other atimes, locale, a hostile MKE2FS_CONFIG, other ctime.
find "$R" -xdev -exec touch -a -h -d '2001-01-01' {} + 2>/dev/null
chmod 4755 "$R/hello.txt" # same mode, new ctime
printf '[defaults]\n\tblocksize = 1024\n\tinode_size = 128\n' >"$T/mke2fs.conf"
check "second build with other atime/ctime, locale and mke2fs.conf" \
	env LC_ALL=C.UTF-8 LANG=de_DE.UTF-8 MKE2FS_CONFIG="$T/mke2fs.conf" TZ=Asia/Tokyo \
	"$IMG" build --root "$R" --no-perf --source-date-epoch $EPOCH --output "$T/b.img"
check "two builds of the same input are byte-identical (cmp)" cmp "$T/a.img" "$T/b.img"
check "SOURCE_DATE_EPOCH gives the same bytes as --source-date-epoch" \
	bash -c "SOURCE_DATE_EPOCH=$EPOCH '$IMG' build --root '$R' --no-perf --output '$T/c.img' && cmp '$T/a.img' '$T/c.img'"
"$IMG" build --root "$R" --no-perf --source-date-epoch $((EPOCH + 1)) --output "$T/d.img" >/dev/null 2>&1
check_fails "another epoch gives other bytes" cmp -s "$T/a.img" "$T/d.img"

# Size: at most 1.15x the content in 4 KiB blocks plus fixed overhead.
content=$(find "$R" -type f -printf '%s\n' | awk '{ b += int(($1 + 4095) / 4096) } END { print b * 4096 }')
sparse_apparent=$((64 << 20))
img_size=$(stat -c %s "$T/a.img")
limit=$(((content - sparse_apparent) * 115 / 100 + 16 * 1024 * 1024))
if [ "$img_size" -le "$limit" ]; then
	ok "auto size $img_size bytes is within 1.15x of the content + 16 MiB ($limit)"
else
	not_ok "auto size $img_size bytes exceeds $limit"
fi

# Loop mount: exactly the staged tree (plus what the builder adds).
if [ -n "$(need_loop)" ]; then
	skip "loop-mounted image equals the staged tree" "$(need_loop)"
else
	M=$T/mnt
	mkdir -p "$M"
	if mount -o loop,ro "$T/a.img" "$M"; then
		at_exit "umount '$M'"
		list() { (cd "$1" && find . \( -path ./lost+found -o -path ./.vmtools -o -path './lib/modules/*/modules.*' \) -prune -o -printf '%p %y %m %U:%G %l\n' | LC_ALL=C sort); }
		(cd "$R" && find . -path './lib/modules/*/modules.*' -prune -o -printf '%p %y %m 0:0 %l\n' | LC_ALL=C sort) >"$T/src.lst"
		list "$M" >"$T/img.lst"
		check "mounted image has the same names, types, modes, owners and link targets" diff "$T/src.lst" "$T/img.lst"
		check "mounted image has the same contents (diff -r --no-dereference)" \
			diff -r --no-dereference -x lost+found -x .vmtools -x 'modules.*' -x null-dev -x fifo "$R" "$M"
		check "staged modules.order kept, modules.dep added by depmod" \
			bash -c "cmp '$R/lib/modules/$REL/modules.order' '$M/lib/modules/$REL/modules.order' && test -f '$M/lib/modules/$REL/modules.dep' && test -f '$M/lib/modules/$REL/modules.alias.bin'"
		check "hardlinks share one inode with link count 2" \
			bash -c "[ \"\$(stat -c %i '$M/hello.txt')\" = \"\$(stat -c %i '$M/a/hardlink')\" ] && [ \"\$(stat -c %h '$M/hello.txt')\" = 2 ]"
		check "sparse file keeps its holes (at most 3 blocks allocated)" \
			bash -c "[ \"\$(stat -c %b '$M/sparse')\" -le 24 ] && cmp '$R/sparse' '$M/sparse'"
		check "every timestamp is clamped to the epoch" \
			bash -c "[ -z \"\$(find '$M' -newermt @$EPOCH -print -quit)\" ]"
		check "the manifest parses and lists the 255-byte name" \
			grep -q "\"/$name255\"" "$M/.vmtools/manifest.json"
		umount "$M" && TAP_CLEANUP=("${TAP_CLEANUP[@]:0:${#TAP_CLEANUP[@]}-1}")
	else
		not_ok "loop mount of the image"
	fi
fi

# --keep-owner keeps the staged uid/gid; the default is 0:0.
mkdir -p "$T/own/lib/modules/$REL"
echo x >"$T/own/file"
chown 1234:5678 "$T/own/file"
check "--keep-owner keeps uid/gid, the default makes them 0:0" \
	bash -c "'$IMG' build --root '$T/own' --no-perf --keep-owner --output '$T/own1.img' >/dev/null 2>&1 && debugfs -R 'stat /file' '$T/own1.img' 2>/dev/null | grep -q 'User:  1234   Group:  5678' && '$IMG' build --root '$T/own' --no-perf --output '$T/own0.img' >/dev/null 2>&1 && debugfs -R 'stat /file' '$T/own0.img' 2>/dev/null | grep -q 'User:     0   Group:     0'"

# A bundled binary and its launcher.
B=$T/bundle-root
mkdir -p "$B/lib/modules/$REL"
if "$IMG" build --root "$B" --binary /usr/bin/env --size 64M --source-date-epoch $EPOCH --output "$T/env.img" >"$T/out" 2>&1; then
	ok "build with --binary /usr/bin/env"
	check "manifest lists env with libc and the loader" \
		bash -c "debugfs -R 'cat /.vmtools/manifest.json' '$T/env.img' 2>/dev/null | grep -q '/lib/vmtools/env/lib/libc.so.6' && debugfs -R 'cat /.vmtools/manifest.json' '$T/env.img' 2>/dev/null | grep -q 'ld-linux'"
	if [ -z "$(need_loop)" ]; then
		M=$T/mnt2
		mkdir -p "$M"
		mount -o loop "$T/env.img" "$M" && at_exit "umount '$M'"
		check "launcher runs the bundled env from the mount" \
			bash -c "'$M/bin/env' -i FOO=bar '$M/bin/env' | grep -qx FOO=bar"
		ln -s "$M/bin/env" "$T/env-link"
		check "launcher works through a symlink from elsewhere" \
			bash -c "'$T/env-link' -i A=1 '$T/env-link' | grep -qx A=1"
		check "launcher runs in a chroot of the image alone (no shell, no libc)" \
			bash -c "[ ! -e '$M/bin/sh' ] && [ ! -e '$M/lib/x86_64-linux-gnu' ] && chroot '$M' /bin/env -i X=y /bin/env | grep -qx X=y"
	else
		skip "launcher runs from the mount" "$(need_loop)"
	fi
else
	not_ok "build with --binary /usr/bin/env"
	diag "$T/out"
fi

# A merged-/usr root (bin -> usr/bin, lib -> usr/lib): the launcher and
# the bundle go through the root's own symlinks and still find each other.
U=$T/usrmerge
mkdir -p "$U/usr/bin" "$U/usr/lib/modules/$REL/kernel"
ln -s usr/bin "$U/bin"
ln -s usr/lib "$U/lib"
if "$IMG" build --root "$U" --binary /usr/bin/env --size 64M --output "$T/um.img" >"$T/out" 2>&1 &&
	e2fsck -fn "$T/um.img" >>"$T/out" 2>&1; then
	ok "merged-/usr root: build and e2fsck"
	if [ -z "$(need_loop)" ]; then
		M=$T/mnt3
		mkdir -p "$M"
		mount -o loop,ro "$T/um.img" "$M" && at_exit "umount '$M'"
		check "merged-/usr root: launcher in usr/bin runs, also in a chroot, modules.dep made" \
			bash -c "[ -L '$M/bin' ] && [ -f '$M/usr/bin/env' ] && [ -f '$M/usr/lib/modules/$REL/modules.dep' ] && '$M/bin/env' -i U=1 '$M/bin/env' | grep -qx U=1 && chroot '$M' /bin/env -i V=2 /usr/bin/env | grep -qx V=2"
	fi
else
	not_ok "merged-/usr root: build and e2fsck"
	diag "$T/out"
fi

# Bad input: a clear error naming the thing, non-zero exit, nothing at --output.
refuse() {
	local desc=$1 words=$2 out=$T/refused.img
	shift 2
	rm -f "$out"
	if "$@" --output "$out" >"$T/err" 2>&1; then
		not_ok "$desc (accepted)"
	elif ! grep -q -- "$words" "$T/err"; then
		not_ok "$desc: error does not mention '$words'"
		diag "$T/err"
	elif [ -e "$out" ] || ls -A "$T" | grep -q '^\.vmtools-image\.'; then
		not_ok "$desc: left a file behind"
	else
		ok "$desc"
	fi
}
refuse "missing root" "$T/nope" "$IMG" build --root "$T/nope" --no-perf
refuse "root that is a file" "not a directory" "$IMG" build --root "$R/hello.txt" --no-perf
mkdir -p "$T/none/lib/modules" "$T/two/lib/modules/1.0" "$T/two/lib/modules/2.0"
refuse "no kernel release" "no kernel release" "$IMG" build --root "$T/none" --no-perf
refuse "several kernel releases" "several kernel releases" "$IMG" build --root "$T/two" --no-perf
check "several releases are fine with --kernel-release" \
	"$IMG" build --root "$T/two" --no-perf --kernel-release 2.0 --output "$T/two.img"
mkdir -p "$T/loop/lib/modules/1.0"
ln -s b "$T/loop/a" && ln -s a "$T/loop/b"
refuse "symlink loop" "symlink loop at /" "$IMG" build --root "$T/loop" --no-perf
refuse "explicit --size too small says what is needed" "needs at least" build --size 1M
rm -f "$T/missing/x.img"
if build --output "$T/missing/x.img" >"$T/err" 2>&1; then
	not_ok "output in a missing directory (accepted)"
elif grep -q "$T/missing" "$T/err" && [ ! -e "$T/missing" ]; then
	ok "output in a missing directory is refused, naming it"
else
	not_ok "output in a missing directory"
	diag "$T/err"
fi
refuse "label over 16 bytes" "1 to 16 bytes" build --label 12345678901234567
refuse "an empty label (setup could not find the disk)" "--label '' cannot be an ext4 label" build --label ''
refuse "a label that is not UTF-8" "not UTF-8" build --label "$(printf 'vm\xfftools')"
refuse "--size 0 (not taken as auto)" "pass --size auto" build --size 0
# A size the output's filesystem cannot hold: the message names --output,
# not the temporary file beside it.
if build --size 16T --output "$T/huge.img" >"$T/err" 2>&1; then
	skip "--size 16T fails naming the output" "this filesystem holds 16 TiB files"
	rm -f "$T/huge.img"
elif grep -q "$T/huge.img" "$T/err" && ! grep -q 'vmtools-image\.' "$T/err" &&
	! ls -A "$T" | grep -q '^\.vmtools-image\.' && [ ! -e "$T/huge.img" ]; then
	ok "--size 16T fails naming the output, nothing left behind"
else
	not_ok "--size 16T failure"
	diag "$T/err"
fi
# A full disk: the message names the image.
if [ -z "$(need_root)" ]; then
	mkdir -p "$T/small"
	mount -t tmpfs -o size=2m vmt-small "$T/small" && at_exit "umount '$T/small'"
	if build --output "$T/small/x.img" >"$T/err" 2>&1; then
		not_ok "a full disk (accepted)"
	elif grep -q "$T/small/x.img" "$T/err" && grep -q 'No space left' "$T/err" &&
		[ -z "$(ls -A "$T/small")" ]; then
		ok "a full disk: the error names the image, nothing left behind ($(cat "$T/err"))"
	else
		not_ok "a full disk"
		diag "$T/err"
	fi
else
	skip "a full disk names the image" "$(need_root)"
fi
refuse "--binary that is not executable" "not an executable" build --binary "$T/mke2fs.conf"
chmod +x "$T/mke2fs.conf"
refuse "--binary that is not ELF" "not an ELF" build --binary "$T/mke2fs.conf"

# Deep trees: 3,000 nested directories are refused with a sentence (the
# guest could not open their paths), with no temporary image and no
# depmod staging left; cut at 1,900 levels the same tree builds (no
# recursion bounded by depth) and e2fsck takes it.
D=$T/deep
mkdir -p "$D/lib/modules/$REL" "$T/tmp"
python3 - "$D" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for _ in range(3000):
    os.mkdir("d", dir_fd=fd)
    sub = os.open("d", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = sub
PY
rm -f "$T/deep.img"
TMPDIR=$T/tmp "$IMG" build --root "$D" --no-perf --output "$T/deep.img" >"$T/err" 2>&1
st=$?
if [ "$st" = 1 ] && grep -q 'flatten the staged tree' "$T/err" && [ ! -e "$T/deep.img" ] &&
	! ls -A "$T" | grep -q '^\.vmtools-image\.' && [ -z "$(ls -A "$T/tmp")" ]; then
	ok "a 3,000-level directory chain is refused with a sentence, nothing left behind"
else
	not_ok "a 3,000-level directory chain (exit $st)"
	diag "$T/err"
	ls -A "$T" "$T/tmp" | sed 's/^/# /'
fi
python3 - "$D" <<'PY'
import os, sys
top = os.open(sys.argv[1], os.O_RDONLY)
fd = os.dup(top)
for _ in range(1900):
    sub = os.open("d", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = sub
os.rename("d", "rest", src_dir_fd=fd, dst_dir_fd=top)
PY
if TMPDIR=$T/tmp "$IMG" build --root "$D" --no-perf --output "$T/deep.img" >"$T/err" 2>&1 &&
	e2fsck -fn "$T/deep.img" >>"$T/err" 2>&1; then
	ok "a 1,900-level directory chain builds and e2fsck -fn passes"
else
	not_ok "a 1,900-level directory chain"
	diag "$T/err"
fi
rm -f "$T/deep.img"

# Hard links: 65,000 names of one file are what ext4 keeps (e2fsck -fn
# clean); one more is refused with a sentence instead of a wrapped count.
# (The staged tree's filesystem must hold that many: ext4 does not, so
# as root it is a tmpfs of its own.)
H=$T/hard
mkdir -p "$H"
[ -z "$(need_root)" ] && mount -t tmpfs -o size=64m vmt-hard "$H" && at_exit "umount '$H'"
mkdir -p "$H/lib/modules/$REL" "$H/l"
echo shared >"$H/f"
python3 - "$H" 64999 <<'PY'
import os, sys
d = sys.argv[1]
for i in range(int(sys.argv[2])):
    os.link(d + "/f", "%s/l/%05d" % (d, i))
PY
if "$IMG" build --root "$H" --no-perf --output "$T/hard.img" >"$T/err" 2>&1 &&
	e2fsck -fn "$T/hard.img" >>"$T/err" 2>&1; then
	ok "65,000 hard links to one file: built, e2fsck -fn passes"
else
	not_ok "65,000 hard links to one file"
	diag "$T/err"
fi
rm -f "$T/hard.img"
if ln "$H/f" "$H/l/one-more" 2>"$T/err"; then
	refuse "65,001 hard links to one file" "ext4 keeps at most 65000" "$IMG" build --root "$H" --no-perf
else
	skip "65,001 hard links to one file" "$(cat "$T/err")"
fi
rm -rf "${H:?}"/*

# Names that are not UTF-8 (a Latin-1 "cafe" with an accent): the
# manifest stays JSON any parser takes and keeps the name's bytes
# (base64), and verify re-hashes the file by that name.
N=$T/names
mkdir -p "$N/lib/modules/$REL"
echo latin1 >"$N/$(printf 'caf\xe9')"
printf 'x' >"$N/$(printf 'new\nline')"
cat >"$T/names.py" <<'PY'
import base64, json, sys
m = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
names = set()
for k in m["files"]:
    names.add(base64.b64decode(k[7:]) if k.startswith("base64:") else k.encode())
assert b"/caf\xe9" in names, names
assert b"/new\nline" in names, names
PY
if "$IMG" build --root "$N" --no-perf --output "$T/names.img" >"$T/err" 2>&1 &&
	"$IMG" verify "$T/names.img" >>"$T/err" 2>&1 &&
	debugfs -R "dump /.vmtools/manifest.json $T/names.json" "$T/names.img" >>"$T/err" 2>&1 &&
	python3 "$T/names.py" "$T/names.json" >>"$T/err" 2>&1; then
	ok "a file name that is not UTF-8: manifest.json is valid JSON, the name kept (base64), verify passes"
else
	not_ok "a file name that is not UTF-8"
	diag "$T/err"
fi

# verify notices a changed byte.
cp "$T/a.img" "$T/bad.img"
off=$(debugfs -R "bmap /a/b/c/random.bin 0" "$T/bad.img" 2>/dev/null)
pos=$((off * 4096 + 7))
byte=$(od -An -tu1 -j "$pos" -N1 "$T/bad.img" | tr -d ' ')
# shellcheck disable=SC2059
printf "\\x$(printf %02x $((byte ^ 255)))" | dd of="$T/bad.img" bs=1 seek="$pos" conv=notrunc status=none
"$IMG" verify "$T/bad.img" >"$T/verify" 2>&1
st=$?
if [ $st -ne 0 ] && grep -q '/a/b/c/random.bin: content differs' "$T/verify"; then
	ok "verify fails on a corrupted file and names it"
else
	not_ok "verify on a corrupted image (status $st)"
	diag "$T/verify"
fi
check_fails "verify refuses a file that is not an image" "$IMG" verify "$T/mke2fs.conf"
