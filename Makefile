# Top-level build of vmtools: the two binaries (vmtools-image, vmtools-agent),
# the BPF object and its skeleton, the pprof protobuf code, and the tests.
#
# Sources are found by wildcard, one folder per part:
#   common/        code shared by both binaries (linked into both)
#   imagebuilder/  vmtools-image (main.c + the rest as a library for tests)
#   agent/         vmtools-agent: main.c and the subcommands at the top, one
#                  folder per subsystem below (samples/, profile/ with bpf/
#                  and perf/, symbolize/, encode/, serve/, setup/); all but
#                  main.c are a library for the tests
#   bpf/*.bpf.c    BPF programs: clang -target bpf, then bpftool gen skeleton
#   tests/unit/test_*.c    cmocka unit tests, one binary each
#   tests/fuzz/fuzz_*.c    libFuzzer targets, built with clang
#   ui/            the agent's web UI page; with speedscope (fetched with
#                  npm, pinned by version and checksum) assembled in build/ui
#   systemd/       the agent's units and its options file, installed by
#                  `make install` and the Debian packages
#   debian/        the packaging of `make deb` (vmtools-image, vmtools-agent)
# Everything generated goes under $(BUILD); nothing generated is committed.

VERSION := 0.1.0

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
# The agent is a system daemon (section 8): sbin.
SBINDIR ?= $(PREFIX)/sbin
DATADIR ?= $(PREFIX)/share/vmtools
MANDIR ?= $(PREFIX)/share/man
# /etc for the system's own prefix, PREFIX/etc for any other.
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
SYSTEMDUNITDIR ?= $(if $(filter /usr,$(PREFIX)),/lib,$(PREFIX)/lib)/systemd/system
DESTDIR ?=

# `make ARCH=arm64` on an amd64 host (or ARCH=x86 on an arm64 one) builds
# for that architecture with Debian's cross compiler (gcc-<triplet>) and its
# multiarch libraries (<pkg>-dev:<arch>), into build/<arch>: both
# binaries, the BPF programs (compiled for that architecture's registers,
# bpf/unwind.h) and the unit tests.  Debian 12's libext2fs-dev of two
# architectures cannot be installed at once: with CROSS_ROOT=DIR the
# arm64 ones are read from where tests/lib/cross-root.sh unpacked them.
# The BPF programs take the target's UAPI headers (asm/ptrace.h) from the
# cross toolchain's (linux-libc-dev-<arch>-cross).
HOST_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
ARCH ?= $(HOST_ARCH)
TRIPLET_x86 := x86_64-linux-gnu
TRIPLET_arm64 := aarch64-linux-gnu
ifneq ($(ARCH),$(HOST_ARCH))
CROSS_TRIPLET := $(TRIPLET_$(ARCH))
ifeq ($(CROSS_TRIPLET),)
$(error ARCH=$(ARCH): vmtools builds for x86 (x86-64) and arm64)
endif
BUILD ?= build/$(ARCH)
ifeq ($(origin CC),default)
CC := $(CROSS_TRIPLET)-gcc
endif
ifeq ($(origin AR),default)
AR := $(CROSS_TRIPLET)-ar
endif
MULTIARCH := $(CROSS_TRIPLET)
BPF_ARCH_INCLUDE := /usr/$(CROSS_TRIPLET)/include
# The -dev packages of ARCH unpacked into CROSS_ROOT (tests/lib/cross-root.sh),
# where they cannot be installed beside the host's; else installed.
ifneq ($(CROSS_ROOT),)
PKG_CONFIG ?= env PKG_CONFIG_LIBDIR=$(CROSS_ROOT)/usr/lib/$(CROSS_TRIPLET)/pkgconfig:$(CROSS_ROOT)/usr/share/pkgconfig \
	PKG_CONFIG_SYSROOT_DIR=$(CROSS_ROOT) pkg-config
CPPFLAGS += -I$(CROSS_ROOT)/usr/include/$(CROSS_TRIPLET)
LDFLAGS += -Wl,-rpath-link,$(CROSS_ROOT)/usr/lib/$(CROSS_TRIPLET):$(CROSS_ROOT)/lib/$(CROSS_TRIPLET)
else
PKG_CONFIG ?= env PKG_CONFIG_LIBDIR=/usr/lib/$(CROSS_TRIPLET)/pkgconfig:/usr/share/pkgconfig pkg-config
endif
# A program built for ARCH runs here through qemu-user (the man pages
# are made by running the binaries), its loader and C library the cross
# toolchain's, its other libraries the cross root's.
QEMU_x86 := qemu-x86_64
QEMU_arm64 := qemu-aarch64
TARGET_RUN := $(QEMU_$(ARCH)) -L /usr/$(CROSS_TRIPLET) \
	$(if $(CROSS_ROOT),-E LD_LIBRARY_PATH=$(CROSS_ROOT)/usr/lib/$(CROSS_TRIPLET):$(CROSS_ROOT)/lib/$(CROSS_TRIPLET))
endif
BUILD ?= build

CC ?= cc
CFLAGS ?= -O2 -g
LDFLAGS ?=
CLANG ?= clang
BPFTOOL ?= bpftool
PKG_CONFIG ?= pkg-config
PROTOC_C ?= protoc-c
# pprof's profile.proto, from Debian's golang-github-google-pprof-dev.
PPROF_PROTO ?= /usr/share/gocode/src/github.com/google/pprof/proto/profile.proto
FUZZ_SECONDS ?= 10

MULTIARCH ?= $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -dumpmachine)
BPF_ARCH_INCLUDE ?= /usr/include/$(MULTIARCH)

COMMON_PKGS := json-c libcrypto zlib
IMAGE_PKGS := ext2fs com_err libelf $(COMMON_PKGS)
AGENT_PKGS := libbpf libelf libdw libmicrohttpd libdebuginfod libcurl libprotobuf-c zlib libdeflate liblzma blkid jansson $(COMMON_PKGS)
TEST_PKGS := cmocka
ALL_PKGS := $(sort $(IMAGE_PKGS) $(AGENT_PKGS) $(TEST_PKGS))

# pkg-config runs once, and only when a rule needs it: `make check` must be
# able to install the packages before anything asks pkg-config about them.
pkg = $(shell $(PKG_CONFIG) $(1) $(2) || echo __pkg-config-failed__)
PKG_CFLAGS = $(eval PKG_CFLAGS := $$(call pkg,--cflags,$(ALL_PKGS)))$(PKG_CFLAGS)
# A cross root's headers are the target system's, as /usr/include is the
# host's: their warnings are not ours (libbpf's unused helper pointers).
ifneq ($(CROSS_ROOT),)
PKG_CFLAGS = $(eval PKG_CFLAGS := $$(patsubst -I%,-isystem %,$$(call pkg,--cflags,$(ALL_PKGS))))$(PKG_CFLAGS)
endif
IMAGE_LIBS = $(eval IMAGE_LIBS := $$(call pkg,--libs,$(IMAGE_PKGS)))$(IMAGE_LIBS)
# The agent opens libmicrohttpd (serve), libcrypto (setup, serve),
# libdebuginfod (with --debuginfod-url; it brings libcurl) and libcurl
# (serve --push-url) with dlopen when it needs them (common/dl.h), by the
# soname of the development library, instead of linking them: they cost
# every `profile` its start-up.
DL_PKGS := libmicrohttpd libcrypto libdebuginfod libcurl
AGENT_LIBS = $(eval AGENT_LIBS := $$(call pkg,--libs,$(filter-out $(DL_PKGS),$(AGENT_PKGS))))$(AGENT_LIBS)
soname = $(shell objdump -p $(call pkg,--variable=libdir,$(1))/$(2).so | awk '$$1 == "SONAME" { print $$2 }')
MHD_SONAME = $(eval MHD_SONAME := $$(call soname,libmicrohttpd,libmicrohttpd))$(MHD_SONAME)
CRYPTO_SONAME = $(eval CRYPTO_SONAME := $$(call soname,libcrypto,libcrypto))$(CRYPTO_SONAME)
DEBUGINFOD_SONAME = $(eval DEBUGINFOD_SONAME := $$(call soname,libdebuginfod,libdebuginfod))$(DEBUGINFOD_SONAME)
CURL_SONAME = $(eval CURL_SONAME := $$(call soname,libcurl,libcurl))$(CURL_SONAME)
TEST_LIBS = $(eval TEST_LIBS := $$(call pkg,--libs,$(ALL_PKGS)))$(TEST_LIBS)

WARNINGS := -Wall -Wextra -Werror -Wno-unused-parameter
ifeq ($(SANITIZE),1)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif
ifeq ($(FUZZ),1)
SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -DVMTOOLS_FUZZING
endif
ALL_CFLAGS = -std=gnu11 $(WARNINGS) $(CPPFLAGS) $(CFLAGS) $(SANFLAGS) -D_GNU_SOURCE \
	-DVMTOOLS_VERSION='"$(VERSION)"' -DVMTOOLS_DATADIR='"$(DATADIR)"' \
	-I. -I$(BUILD) $(PKG_CFLAGS) -MMD -MP
ALL_LDFLAGS = $(LDFLAGS) $(SANFLAGS)

COMMON_SRCS := $(wildcard common/*.c)
IMAGE_SRCS := $(filter-out imagebuilder/main.c,$(wildcard imagebuilder/*.c))
AGENT_SRCS := $(filter-out agent/main.c,$(wildcard agent/*.c agent/*/*.c agent/*/*/*.c))
BPF_SRCS := $(wildcard bpf/*.bpf.c)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
PROGRAM_SRCS := $(filter-out tests/programs/pgwait-ask.c tests/programs/nofplib.c \
	tests/programs/nofpdl.c tests/programs/arm64-offsets.c \
	tests/programs/arm64-frames.c tests/programs/pg-status-offset.c,\
	$(wildcard tests/programs/*.c))
# Seeds that are build outputs (ELF files) are made by a script per target.
FUZZ_SEED_GENS := $(wildcard tests/fuzz/seeds/fuzz_*.sh)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
PROTO_C := $(BUILD)/proto/profile.pb-c.c
PROTO_H := $(BUILD)/proto/profile.pb-c.h
PROTO_OBJ := $(BUILD)/obj/proto/profile.pb-c.o
SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/bpf/%.skel.h,$(BPF_SRCS))
# kernel-config/vmtools.config as a C string: the checker's one source.
KCONFIG_H := $(BUILD)/gen/kconfig_fragment.h
# agent/encode/flame.js as a C string: the script inside every SVG.
FLAME_JS_H := $(BUILD)/gen/flame_js.h
GENERATED := $(PROTO_H) $(SKELS) $(KCONFIG_H) $(FLAME_JS_H)

COMMON_LIB := $(BUILD)/libvmcommon.a
IMAGE_LIB := $(BUILD)/libvmimage.a
AGENT_LIB := $(BUILD)/libvmagent.a
IMAGE_BIN := $(BUILD)/vmtools-image
AGENT_BIN := $(BUILD)/vmtools-agent
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz-bin/%,$(FUZZ_SRCS))
PROGRAM_BINS := $(patsubst tests/programs/%.c,$(BUILD)/programs/%,$(PROGRAM_SRCS)) \
	$(BUILD)/programs/pgwait-ask.so $(BUILD)/programs/libnofp.so \
	$(BUILD)/programs/libnofpdl.so $(BUILD)/programs/arm64-frames

.PHONY: ui man deb all check check-asan check-fuzz check-unit check-integration check-vm \
	deps tests install uninstall clean format format-check demo demo-stop bench
.DELETE_ON_ERROR:
# Keep intermediate files (the BPF object) so rebuilds stay incremental.
.SECONDARY:

all: $(IMAGE_BIN) $(AGENT_BIN) ui

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# Generated code is compiled with our warnings except the ones protoc-c's
# output trips over.
$(PROTO_OBJ): $(PROTO_C)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -Wno-missing-field-initializers -c $< -o $@

$(PROTO_C) $(PROTO_H) &: $(PPROF_PROTO)
	@mkdir -p $(@D)
	cp $(PPROF_PROTO) $(BUILD)/proto/profile.proto
	cd $(BUILD)/proto && $(PROTOC_C) --c_out=. profile.proto

$(KCONFIG_H): kernel-config/vmtools.config
	@mkdir -p $(@D)
	{ echo '/* Generated from $< by the Makefile; do not edit. */'; \
	  echo 'static const char vm_kconfig_fragment_text[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/\t"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } >$@

# Its comment lines stay out of the SVGs: they are for the reader of the
# source.
$(FLAME_JS_H): agent/encode/flame.js
	@mkdir -p $(@D)
	{ echo '/* Generated from $< by the Makefile; do not edit. */'; \
	  echo 'static const char vm_flame_js[] ='; \
	  sed -e '/^\/\//d' -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/\t"/' -e 's/$$/\\n"/' $<; \
	  echo ';'; } >$@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h)
	@mkdir -p $(@D)
	$(CLANG) -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(ARCH) \
		-I$(BPF_ARCH_INCLUDE) -I. -c $< -o $@

$(BUILD)/bpf/%.skel.h: $(BUILD)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

# Generated headers must exist before the first compile (afterwards -MMD
# tracks them).  The image builder needs only the kernel config fragment,
# so it builds where the BPF programs do not (an architecture the
# unwinder does not know yet).
$(call obj,$(COMMON_SRCS) $(IMAGE_SRCS) imagebuilder/main.c): | $(KCONFIG_H)
$(call obj,$(AGENT_SRCS) agent/main.c $(UNIT_SRCS) $(FUZZ_SRCS)): | $(GENERATED)

$(COMMON_LIB): $(call obj,$(COMMON_SRCS))
$(IMAGE_LIB): $(call obj,$(IMAGE_SRCS))
$(AGENT_LIB): $(call obj,$(AGENT_SRCS)) $(PROTO_OBJ)
$(COMMON_LIB) $(IMAGE_LIB) $(AGENT_LIB):
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(IMAGE_BIN): $(call obj,imagebuilder/main.c) $(IMAGE_LIB) $(COMMON_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(IMAGE_LIBS)

$(AGENT_BIN): $(call obj,agent/main.c) $(AGENT_LIB) $(COMMON_LIB)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(AGENT_LIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(AGENT_LIB) $(IMAGE_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(TEST_LIBS)

$(BUILD)/fuzz-bin/%: $(BUILD)/obj/tests/fuzz/%.o $(AGENT_LIB) $(IMAGE_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(TEST_LIBS)

# Workloads the tests profile: known functions, frame pointers, no inlining.
$(BUILD)/programs/%: tests/programs/%.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARNINGS) -O1 -g -fno-omit-frame-pointer -fno-inline \
		-fno-optimize-sibling-calls -pthread -o $@ $< $(LDFLAGS)

# The workload without frame pointers, built as most code is, the shared
# library of ours it calls through its PLT (found beside it), and the one
# it loads with dlopen() when asked (beside it too, never linked).
$(BUILD)/programs/nofp: tests/programs/nofp.c $(BUILD)/programs/libnofp.so
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARNINGS) -O2 -fomit-frame-pointer -g -pthread -o $@ $< \
		-L$(@D) -lnofp -Wl,-rpath,'$$ORIGIN' $(LDFLAGS)

$(BUILD)/programs/libnofp.so: tests/programs/nofplib.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARNINGS) -Wmissing-prototypes -O2 -fomit-frame-pointer -g \
		-fPIC -shared -o $@ $< $(LDFLAGS)

$(BUILD)/programs/libnofpdl.so: tests/programs/nofpdl.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARNINGS) -Wmissing-prototypes -O2 -fomit-frame-pointer -g \
		-fPIC -shared -o $@ $< $(LDFLAGS)

# The agent's wait-event tables, printed for comparison with a running
# PostgreSQL's (tests/integration/36-pg-versions.sh).
$(BUILD)/programs/pgwait-dump: $(call obj,tests/programs/pgwait-dump.c) $(AGENT_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(TEST_LIBS)

# A process that passes for PostgreSQL to the memory snapshot: its
# globals in .dynsym, as the server exports them.
$(BUILD)/programs/memctx-hostile: tests/programs/memctx-hostile.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARNINGS) -O1 -g -pthread -rdynamic -o $@ $< $(LDFLAGS)

# The memory-context tree the agent reads from a live PostgreSQL.
$(BUILD)/programs/memctx-dump: $(call obj,tests/programs/memctx-dump.c) $(AGENT_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(TEST_LIBS)

# What building an unwind table costs, cold and cached (bench/unwind.sh).
$(BUILD)/programs/unwind-build: $(call obj,tests/programs/unwind-build.c) $(AGENT_LIB) $(COMMON_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(TEST_LIBS)

# An arm64 program whose unwind rules tests/unit/test_unwind_arm64.c
# reads on any host: arm64's compiler, with pointer authentication.
$(BUILD)/programs/arm64-frames: tests/programs/arm64-frames.c
	@mkdir -p $(@D)
	$(LAUNCHER_CC_aarch64) -std=gnu11 $(WARNINGS) -O2 -g -mbranch-protection=standard \
		-o $@ $<

# Preloaded into a PostgreSQL server executable to ask it its wait events.
$(BUILD)/programs/pgwait-ask.so: tests/programs/pgwait-ask.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARNINGS) -O1 -g -D_GNU_SOURCE -fPIC -shared -o $@ $< $(LDFLAGS)

# The launchers vmtools-image puts at /bin/NAME: static (they must run in a
# chroot of the image, with no libc), one per architecture a bundled tool
# may be of (an arm64 kernel's image is packed on an amd64 host too), each
# built by that architecture's compiler (Debian's gcc-<triplet>), embedded
# with .incbin.
LAUNCHER_CC_x86_64 ?= x86_64-linux-gnu-gcc
LAUNCHER_CC_aarch64 ?= aarch64-linux-gnu-gcc
LAUNCHERS := $(BUILD)/launcher/vmtools-launch-x86_64 $(BUILD)/launcher/vmtools-launch-aarch64
$(BUILD)/launcher/vmtools-launch-%: imagebuilder/launcher/launcher.c
	@mkdir -p $(@D)
	$(LAUNCHER_CC_$*) -std=gnu11 $(WARNINGS) -Os -static -s -D_GNU_SOURCE -o $@ $<
$(call obj,imagebuilder/launcher_blob.c): $(LAUNCHERS)
# bpf/unwind_arm64.h's numbers checked against the arm64 UAPI headers at
# compile time, by the same compiler (tests/programs/arm64-offsets.c), on
# every build: the agent's own objects wait for it.
ARM64_OFFSETS := $(BUILD)/launcher/arm64-offsets.o
$(ARM64_OFFSETS): tests/programs/arm64-offsets.c bpf/unwind_arm64.h
	@mkdir -p $(@D)
	$(LAUNCHER_CC_aarch64) -std=gnu11 $(WARNINGS) -I. -c -o $@ $<
$(AGENT_LIB): | $(ARM64_OFFSETS)
$(call obj,imagebuilder/launcher_blob.c): ALL_CFLAGS += \
	-DVMTOOLS_LAUNCHER_X86_64='"$(BUILD)/launcher/vmtools-launch-x86_64"' \
	-DVMTOOLS_LAUNCHER_AARCH64='"$(BUILD)/launcher/vmtools-launch-aarch64"'
$(call obj,agent/serve/mhd.c): ALL_CFLAGS += -DVM_MHD_SONAME='"$(MHD_SONAME)"'
$(call obj,common/sha256.c): ALL_CFLAGS += -DVM_CRYPTO_SONAME='"$(CRYPTO_SONAME)"'
$(call obj,agent/symbolize/debuginfod.c): ALL_CFLAGS += -DVM_DEBUGINFOD_SONAME='"$(DEBUGINFOD_SONAME)"'
$(call obj,common/base64.c): ALL_CFLAGS += -DVM_CRYPTO_SONAME='"$(CRYPTO_SONAME)"'
$(call obj,agent/continuous/curl.c): ALL_CFLAGS += -DVM_CURL_SONAME='"$(CURL_SONAME)"'
# The unwinder's test walks its own frames: built as most code is, without
# frame pointers.
$(call obj,tests/unit/test_unwind.c): ALL_CFLAGS += -O2 -fomit-frame-pointer
$(call obj,tests/unit/test_bpf_unwind.c): ALL_CFLAGS += -O2 -fomit-frame-pointer
$(call obj,tests/unit/test_unwind_steps.c): ALL_CFLAGS += -O2 -fomit-frame-pointer

tests: all $(UNIT_BINS) $(PROGRAM_BINS)

# --- the web UI ---------------------------------------------------------------
# speedscope (MIT) is fetched at build time with npm by version, and the
# tarball is checked against the integrity the npm registry published for
# that version (sha512, pinned here): a changed tarball fails the build.
# build/ui gets our page (ui/) and speedscope's release (its LICENSE kept,
# its demo profile left out), as `make
# install` puts it under DATADIR/ui and `vmtools-image build --ui-dir` on
# the tools disk.
SPEEDSCOPE_VERSION := 1.25.0
SPEEDSCOPE_INTEGRITY := sha512-cpf9HWTZf1ijLXBJrk87Ve/54tnYx6rlf0gUThvn3ook6h63hLXVOQiMf44PT+XoV503cPfvfiT5gP5vojp6Ag==
SPEEDSCOPE_TGZ := $(BUILD)/npm/speedscope-$(SPEEDSCOPE_VERSION).tgz
UI_SRCS := $(wildcard ui/*.html ui/*.js ui/*.css)
UI_DIR := $(BUILD)/ui
UI_STAMP := $(BUILD)/.ui-built

$(SPEEDSCOPE_TGZ):
	@mkdir -p $(@D)
	cd $(@D) && npm pack --silent --ignore-scripts speedscope@$(SPEEDSCOPE_VERSION) >/dev/null
	@got="sha512-$$(sha512sum $@ | cut -c1-128 | tr a-f A-F | basenc --base16 -d | base64 -w0)"; \
	if [ "$$got" != "$(SPEEDSCOPE_INTEGRITY)" ]; then \
		echo "speedscope $(SPEEDSCOPE_VERSION): the tarball's checksum $$got is not the pinned $(SPEEDSCOPE_INTEGRITY); not using it" >&2; \
		rm -f $@; exit 1; fi

$(UI_STAMP): $(SPEEDSCOPE_TGZ) $(UI_SRCS)
	rm -rf $(UI_DIR) $(UI_DIR).tmp
	mkdir -p $(UI_DIR).tmp/speedscope
	tar -xzf $(SPEEDSCOPE_TGZ) -C $(UI_DIR).tmp/speedscope --strip-components=3 \
		--exclude='perf-vertx-*' --exclude='file-format-schema.json' \
		package/dist/release
	tar -xzf $(SPEEDSCOPE_TGZ) -C $(UI_DIR).tmp/speedscope --strip-components=1 package/LICENSE
	install -m 0644 $(UI_SRCS) $(UI_DIR).tmp/
	mv $(UI_DIR).tmp $(UI_DIR)
	touch $@

ui: $(UI_STAMP)

# --- man pages, units --------------------------------------------------------
# The man pages are written once, by the binaries: help2man turns the
# top-level --help and --version into the page, and man/NAME.h2m adds a
# section per subcommand made of that subcommand's --help (and what no
# --help says: files, see also).  The units take their paths from here.
MAN_PAGES := $(BUILD)/man/vmtools-image.1 $(BUILD)/man/vmtools-agent.8
IMAGE_COMMANDS := build verify inspect
AGENT_COMMANDS := serve setup profile check-kernel
UNITS := $(patsubst systemd/%.in,$(BUILD)/systemd/%,$(wildcard systemd/*.service.in))

# What help2man runs: the binary, or for another architecture a script of
# the same name that runs it under TARGET_RUN.
$(BUILD)/run/%: $(BUILD)/%
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec %s %s "$$@"\n' '$(TARGET_RUN)' '$(abspath $<)' >$@
	chmod +x $@
run_bin = $(if $(TARGET_RUN),$(BUILD)/run/$(1),$(BUILD)/$(1))

# man_commands BIN COMMAND...: an h2m section per command, its --help as is.
man_commands = for c in $(2); do \
	printf '[%s]\n.nf\n' "COMMAND $$(echo $$c | tr a-z A-Z)"; \
	$(1) $$c --help | sed -e 's/\\/\\e/g' -e 's/^[.'"'"']/\\\&&/'; \
	printf '.fi\n'; done

$(BUILD)/man/vmtools-image.1: $(call run_bin,vmtools-image) man/vmtools-image.h2m
	@mkdir -p $(@D)
	{ cat man/vmtools-image.h2m; $(call man_commands,$<,$(IMAGE_COMMANDS)); } >$@.h2m
	help2man --no-info --section=1 --source='vmtools $(VERSION)' \
		--name='pack a kernel'"'"'s modules, headers and perf into an ext4 image' \
		--include=$@.h2m --output=$@.tmp $<
	mv $@.tmp $@

$(BUILD)/man/vmtools-agent.8: $(call run_bin,vmtools-agent) man/vmtools-agent.h2m
	@mkdir -p $(@D)
	{ sed -e 's|@DATADIR@|$(DATADIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' man/vmtools-agent.h2m; \
	  $(call man_commands,$<,$(AGENT_COMMANDS)); } >$@.h2m
	help2man --no-info --section=8 --source='vmtools $(VERSION)' \
		--name='profile the PostgreSQL of a guest on demand' \
		--include=$@.h2m --output=$@.tmp $<
	mv $@.tmp $@

man: $(MAN_PAGES)

$(BUILD)/systemd/%: systemd/%.in
	@mkdir -p $(@D)
	sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $< >$@

# --- Debian packages ----------------------------------------------------------
# `make deb`: dpkg-buildpackage -b on a copy of the tracked files in
# $(BUILD)/deb/vmtools-$(VERSION) (it writes the .deb files beside the source
# tree, so they land in $(BUILD)/deb).  The packages build with their own
# BUILD and PREFIX=/usr (debian/rules); speedscope's checked tarball is
# handed over so the package build fetches nothing.  The same source and
# SOURCE_DATE_EPOCH (default: debian/changelog's date) give the same bytes.
DEB_DIR := $(BUILD)/deb
DEB_SRC := $(DEB_DIR)/vmtools-$(VERSION)
# Another architecture's packages: dpkg-buildpackage -a, its build
# dependencies (arm64 -dev packages) not installed but in CROSS_ROOT
# (debian/rules reads it from the environment).
DEB_ARCH_x86 := amd64
DEB_ARCH_arm64 := arm64
DEB_CROSS := $(if $(CROSS_TRIPLET),-a$(DEB_ARCH_$(ARCH)) -d)

deb: $(SPEEDSCOPE_TGZ)
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_SRC)
	git ls-files -z | xargs -0 cp -a --parents -t $(DEB_SRC)
	cd $(DEB_SRC) && SPEEDSCOPE_TGZ=$(abspath $(SPEEDSCOPE_TGZ)) CROSS_ROOT=$(CROSS_ROOT) \
		dpkg-buildpackage -b $(DEB_CROSS) -us -uc -j$${DEB_JOBS:-2} >../build.log 2>&1 || \
		{ tail -n 40 ../build.log; echo "make deb: dpkg-buildpackage failed (log: $(DEB_DIR)/build.log)" >&2; exit 1; }
	rm -rf $(DEB_SRC)
	@ls -l $(DEB_DIR)/*.deb

FUZZ_SEEDS := $(patsubst tests/fuzz/seeds/%.sh,$(BUILD)/fuzz-seeds/%.made,$(FUZZ_SEED_GENS))
$(BUILD)/fuzz-seeds/%.made: tests/fuzz/seeds/%.sh tests/lib/elf.sh
	rm -rf $(BUILD)/fuzz-seeds/$* && mkdir -p $(BUILD)/fuzz-seeds/$*
	bash $< $(BUILD)/fuzz-seeds/$*
	touch $@

fuzz-bins: $(FUZZ_BINS) $(FUZZ_SEEDS)

# --- checks ---------------------------------------------------------------
# `make check` = install what is missing, build, then run every suite through
# tests/run.sh, which prints the one summary line CI reads.

deps:
	@BUILD=$(BUILD) bash ci/install-deps.sh

check: deps
	@$(MAKE) --no-print-directory tests
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SANITIZE=1 tests
	@if [ -n "$(FUZZ_SRCS)" ]; then \
		$(MAKE) --no-print-directory BUILD=$(BUILD)/fuzz FUZZ=1 CC=$(CLANG) fuzz-bins; fi
	@BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/run.sh all

check-unit: tests
	@BUILD=$(BUILD) bash tests/run.sh unit

check-asan:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/asan SANITIZE=1 tests
	@BUILD=$(BUILD) bash tests/run.sh asan

check-fuzz:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/fuzz FUZZ=1 CC=$(CLANG) fuzz-bins
	@BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/run.sh fuzz

check-integration: all
	@BUILD=$(BUILD) bash tests/run.sh integration

check-vm: all
	@BUILD=$(BUILD) bash tests/run.sh vm

# `make demo ARCH=arm64` boots the arm64 guest (emulated): the image
# builder, the web UI and the npm trees are this machine's ($(HOST_BUILD)),
# the guest's agent is the arm64 one of $(BUILD).
HOST_BUILD := $(if $(CROSS_TRIPLET),$(patsubst %/$(ARCH),%,$(BUILD)),$(BUILD))
DEMO_ARCH := $(if $(filter arm64,$(ARCH)),arm64,amd64)

demo:
	@BUILD=$(HOST_BUILD) bash ci/install-deps.sh
	@$(MAKE) --no-print-directory ARCH=$(HOST_ARCH) BUILD=$(HOST_BUILD) all
	@if [ -n "$(CROSS_TRIPLET)" ]; then root="$(CROSS_ROOT)"; \
		[ -n "$$root" ] || root=$$(bash tests/lib/cross-root.sh | sed -n 's/^CROSS_ROOT=//p'); \
		$(MAKE) --no-print-directory CROSS_ROOT="$$root" $(BUILD)/vmtools-agent || \
		echo "make demo: the $(ARCH) agent does not build (above); the guest boots without it" >&2; fi
	@BUILD=$(HOST_BUILD) VM_ARCH=$(DEMO_ARCH) VMTOOLS_AGENT_ARM64=$(abspath $(BUILD))/vmtools-agent \
		bash tools/demo.sh

demo-stop:
	@BUILD=$(HOST_BUILD) bash tools/demo.sh stop

bench: all
	@for b in bench/*.sh; do BUILD=$(BUILD) bash $$b || exit 1; done

# --- style ------------------------------------------------------------------
FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' 2>/dev/null)

format:
	clang-format -i $(FORMAT_SRCS)

format-check:
	clang-format --dry-run --Werror $(FORMAT_SRCS)

# --- install ----------------------------------------------------------------
install: all $(MAN_PAGES) $(UNITS)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SBINDIR) $(DESTDIR)$(DATADIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(SYSCONFDIR)/default
	install -m 0755 $(IMAGE_BIN) $(DESTDIR)$(BINDIR)/
	install -m 0755 $(AGENT_BIN) $(DESTDIR)$(SBINDIR)/
	install -m 0644 $(BUILD)/man/vmtools-image.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 $(BUILD)/man/vmtools-agent.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 $(UNITS) $(DESTDIR)$(SYSTEMDUNITDIR)/
	install -m 0644 systemd/vmtools-agent.default $(DESTDIR)$(SYSCONFDIR)/default/vmtools-agent
	install -m 0644 kernel-config/vmtools.config $(DESTDIR)$(DATADIR)/
	rm -rf $(DESTDIR)$(DATADIR)/ui
	install -d $(DESTDIR)$(DATADIR)/ui/speedscope
	cd $(UI_DIR) && find . -type f -exec install -m 0644 -D {} $(DESTDIR)$(DATADIR)/ui/{} \;

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/vmtools-image $(DESTDIR)$(SBINDIR)/vmtools-agent
	rm -f $(DESTDIR)$(MANDIR)/man1/vmtools-image.1 $(DESTDIR)$(MANDIR)/man8/vmtools-agent.8
	rm -f $(patsubst $(BUILD)/systemd/%,$(DESTDIR)$(SYSTEMDUNITDIR)/%,$(UNITS))
	rm -f $(DESTDIR)$(SYSCONFDIR)/default/vmtools-agent
	rm -rf $(DESTDIR)$(DATADIR)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
