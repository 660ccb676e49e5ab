// SPDX-License-Identifier: Apache-2.0
/*
 * setup_observe.c - what an earlier setup left, read without changing
 * anything: whether a disk is mounted at the mountpoint, which device it
 * is, and the kernel release its manifest was built for.  `serve
 * --no-setup` reports it on /healthz when another process (the systemd
 * unit vmtools-setup.service, an inittab line) did the setup and the
 * agent's own file system is read-only.
 */
#include "agent/setup/setup.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>

#include "agent/setup/disk_open.h"
#include "agent/setup/setup_int.h"
#include "common/cleanup.h"
#include "common/manifest.h"

/* The device node of dev as the kernel names it (/dev/NAME), or NULL. */
static char *device_name(dev_t dev)
{
	char path[64], line[256];
	_cleanup_fclose_ FILE *f = NULL;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", major(dev),
		 minor(dev));
	f = fopen(path, "re");
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f)) {
		char *name;

		if (strncmp(line, "DEVNAME=", 8))
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (asprintf(&name, "/dev/%s", line + 8) < 0)
			return NULL;
		return name;
	}
	return NULL;
}

int vm_setup_observe(const struct vm_setup_options *o,
		     struct vm_setup_result *res, struct vm_error *err)
{
	const char *mnt = o->mountpoint ? o->mountpoint :
					  VM_SETUP_DEFAULT_MOUNTPOINT;
	_cleanup_manifest_ struct vm_manifest *m = NULL;
	char resolved[PATH_MAX];
	struct utsname u;
	dev_t dev;
	int r;

	/* As setup names it: /var/run/vm-tools is /run/vm-tools. */
	if (realpath(mnt, resolved))
		mnt = resolved;
	vm_setup_set_str(&res->mountpoint, mnt);
	r = vm_setup_mounted_at(mnt, &dev);
	if (r < 0)
		return vm_error_errno(err, -r,
				      "cannot read /proc/self/mountinfo");
	if (r == 0)
		return vm_error_set(
			err, ENODEV,
			"no tools disk is mounted at %s; run `vmtools-agent setup` (vmtools-setup.service) to mount it",
			mnt);
	res->mounted = true;
	res->device = device_name(dev);
	r = vm_disk_load_manifest(mnt, dev, &m, err);
	if (r < 0)
		return r;
	vm_setup_set_str(&res->image_release, m->kernel_release);
	uname(&u);
	vm_setup_set_str(&res->running_release, u.release);
	res->release_match = !strcmp(m->kernel_release, u.release);
	return 0;
}
