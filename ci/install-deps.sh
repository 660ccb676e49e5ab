#!/usr/bin/env bash
# ci/install-deps.sh - installs the Debian 12 packages vmtools needs to build
# and test, and nothing else.  Idempotent: when everything is present it
# returns at once without touching apt.  Run by `make check` and `make demo`.
set -euo pipefail

# Build: compilers, BPF toolchain, libraries (each found with pkg-config).
BUILD_PKGS=(
	gcc make pkg-config git
	clang llvm libclang-rt-14-dev # BPF object; libFuzzer and sanitizers
	bpftool                       # BPF skeleton generation
	libext2fs-dev comerr-dev      # vmtools-image writes ext4 with libext2fs
	libbpf-dev libelf-dev         # loading BPF; reading ELF symbols
	liblzma-dev                   # .gnu_debugdata (MiniDebugInfo) symbols
	libmicrohttpd-dev             # the REST service
	libdebuginfod-dev             # debug files from debuginfod servers
	libprotobuf-c-dev protobuf-c-compiler golang-github-google-pprof-dev # pprof
	zlib1g-dev                    # gzip of profiles
	libjson-c-dev                 # JSON requests and the manifest
	libssl-dev                    # SHA-256 (libcrypto)
	libblkid-dev                  # finding the tools disk by label
	linux-libc-dev                # UAPI headers for the BPF program
	libcmocka-dev                 # unit tests
	clang-format                  # make format-check
)
# Tests: the real programs the tests drive.
TEST_PKGS=(
	e2fsprogs kmod curl ca-certificates
	golang-go                       # go tool pprof reads what we emit
	postgresql-15 postgresql-contrib # a real PostgreSQL and pgbench
	linux-perf                      # perf, bundled into images and a backend
	bpfcc-tools                     # bcc, checked against the linked headers
	qemu-system-x86 busybox-static cpio # the end-to-end VM test
	valgrind procps psmisc iproute2 util-linux file binutils xz-utils
	debuginfod                      # a real debuginfod server (symbols test)
)

missing=()
for p in "${BUILD_PKGS[@]}" "${TEST_PKGS[@]}"; do
	case $p in \#*) continue ;; esac
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "ci/install-deps.sh: missing Debian packages: ${missing[*]}" >&2
	echo "Install them as root: apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "ci/install-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
