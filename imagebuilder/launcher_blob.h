/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launcher_blob.h - the bytes of the static launcher put at /bin/NAME.
 */
#ifndef VMTOOLS_IMAGEBUILDER_LAUNCHER_BLOB_H
#define VMTOOLS_IMAGEBUILDER_LAUNCHER_BLOB_H

extern const unsigned char vm_launcher_start[];
extern const unsigned char vm_launcher_end[];

#endif
