/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bundle.h - an executable with its libraries and loader, behind a
 * launcher, added to the image tree:
 *   /bin/NAME                        static launcher (launcher/launcher.c)
 *   /lib/vmtools/NAME/NAME           the executable
 *   /lib/vmtools/NAME/lib/SONAME...  its DT_NEEDED closure and the loader
 *   /lib/vmtools/NAME/ld.so          -> lib/<loader name>
 */
#ifndef VMTOOLS_IMAGEBUILDER_BUNDLE_H
#define VMTOOLS_IMAGEBUILDER_BUNDLE_H

#include "common/manifest.h"
#include "imagebuilder/tree.h"

/* Where a bundled tool's loader and libraries come from. */
struct vm_bundle_from {
	const char *root; /* the staged root */
	/*
	 * Where the loader and libraries of a tool of another architecture
	 * than the host's are (`build --sysroot`); NULL: root.  A tool of
	 * the host's architecture takes the host's unless this is given.
	 */
	const char *sysroot;
	int machine; /* the ELF machine of the image's kernel; 0: unknown */
};

/*
 * Add `binary` (a host path) as tool basename(binary), with the launcher
 * of its architecture; records it in m.
 */
int vm_bundle_add(struct vm_tree *t, const char *binary,
		  const struct vm_bundle_from *from, struct vm_manifest *m,
		  struct vm_error *err);

/* perf of the staged root (usr/bin/perf), else of the host PATH; NULL. */
char *vm_bundle_default_perf(const char *root);

#endif
