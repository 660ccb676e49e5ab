/* SPDX-License-Identifier: Apache-2.0 */
/*
 * label.h - the rule for the tools disk's ext4 label, one for both ends:
 * `vmtools-image build --label` refuses what `vmtools-agent setup --label`
 * would refuse, so no image is made that setup cannot find.
 */
#ifndef VMTOOLS_COMMON_LABEL_H
#define VMTOOLS_COMMON_LABEL_H

#include "common/error.h"

/* ext4's s_volume_name holds 16 bytes. */
#define VM_LABEL_MAX 16
#define VM_DEFAULT_LABEL "vm-tools"

/*
 * 0 when label can name the tools disk: 1 to 16 bytes of UTF-8 without
 * control characters (it goes into the manifest's JSON and into messages).
 * Else -EINVAL with err saying why; `what` names the option ("--label").
 */
int vm_label_check(const char *label, const char *what, struct vm_error *err);

#endif
