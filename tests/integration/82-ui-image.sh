#!/usr/bin/env bash
# tests/integration/82-ui-image.sh - `vmtools-image build --ui-dir` packs
# the agent's web UI (build/ui) into the tools disk at
# /usr/share/vmtools/ui, byte for byte, listed and hashed in the manifest
# (verify passes), reproducibly; --no-ui leaves it out; a --ui-dir that is
# not a directory is refused, naming it, with nothing written.
. "$(dirname "$0")/../lib/tap.sh"

UI=$BUILD/ui
skip_unless "the web UI packed into the tools image" "$(need_cmd debugfs e2fsck)" \
	"$([ -f "$UI/index.html" ] || echo "needs $UI (make ui)")"

mkdir -p "$T/root/lib/modules/6.1.0-ui/kernel"
build() { "$VMTOOLS_IMAGE" build --root "$T/root" --no-perf --source-date-epoch 1700000000 "$@"; }

check "build --ui-dir" build --ui-dir "$UI" --output "$T/a.img"
js=$(cd "$UI/speedscope" && ls speedscope-*.js)
for f in index.html ui.js "speedscope/$js" speedscope/index.html; do
	debugfs -R "dump /usr/share/vmtools/ui/$f $T/out" "$T/a.img" >/dev/null 2>&1
	check "the image's /usr/share/vmtools/ui/$f is build/ui's" cmp "$UI/$f" "$T/out"
	rm -f "$T/out"
done
check "the manifest lists and hashes them" \
	bash -c "debugfs -R 'cat /.vmtools/manifest.json' '$T/a.img' 2>/dev/null | grep -q '/usr/share/vmtools/ui/speedscope/$js'"
check "vmtools-image verify passes" "$VMTOOLS_IMAGE" verify "$T/a.img"
check "e2fsck -fn finds nothing" e2fsck -fn "$T/a.img"
check "built twice: the same bytes" \
	bash -c "'$VMTOOLS_IMAGE' build --root '$T/root' --no-perf --source-date-epoch 1700000000 --ui-dir '$UI' --output '$T/b.img' >/dev/null && cmp '$T/a.img' '$T/b.img'"
check "--no-ui packs none" build --no-ui --output "$T/c.img"
check "  (nothing at /usr/share/vmtools/ui)" \
	bash -c "debugfs -R 'stat /usr/share/vmtools/ui' '$T/c.img' 2>&1 | grep -q 'File not found'"
build --ui-dir "$T/nothing" --output "$T/d.img" >"$T/d.out" 2>&1
check_said $? 1 "$T/d.out" "a --ui-dir that is not there is refused, naming it" "$T/nothing"
check "  and nothing is written" test ! -e "$T/d.img"
