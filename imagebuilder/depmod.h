/* SPDX-License-Identifier: Apache-2.0 */
/*
 * depmod.h - modules.dep & co. for lib/modules/REL when the staged tree
 * lacks them, made by Debian's depmod (kmod) in a private staging copy:
 * the staged root itself is never modified.
 */
#ifndef VMTOOLS_IMAGEBUILDER_DEPMOD_H
#define VMTOOLS_IMAGEBUILDER_DEPMOD_H

#include <sys/types.h>

#include "imagebuilder/tree.h"

struct vm_depmod {
	pid_t pid; /* 0 when nothing runs */
	char *staging; /* private directory, removed by vm_depmod_cleanup */
	char *reldir; /* <staging>/lib/modules/REL */
};

/*
 * Start depmod in the background for <root>/lib/modules/<release> unless it
 * already has modules.dep (then nothing is done).  The staging tree links
 * to the staged modules, so nothing is copied.
 */
int vm_depmod_start(const char *root, const char *release, const char *prog,
		    struct vm_depmod *d, struct vm_error *err);

/*
 * Put the files depmod will write into t (lib/modules/REL/modules.*) as
 * VM_LATE nodes with an estimated size, so the image can be written while
 * depmod still runs.
 */
int vm_depmod_reserve(struct vm_depmod *d, struct vm_tree *t,
		      const char *release, struct vm_error *err);

/* Wait for depmod and give those nodes their real content and size. */
int vm_depmod_finish(struct vm_depmod *d, struct vm_tree *t,
		     const char *release, struct vm_error *err);

/* Stop depmod if still running and remove the staging directory. */
void vm_depmod_cleanup(struct vm_depmod *d);

#endif
