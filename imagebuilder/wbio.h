/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wbio.h - a write-back io manager for libext2fs over unix_io.
 */
#ifndef VMTOOLS_IMAGEBUILDER_WBIO_H
#define VMTOOLS_IMAGEBUILDER_WBIO_H

#include <ext2fs/ext2fs.h>

/*
 * Writes of up to VM_WBIO_SMALL blocks are kept in memory and reads see
 * them; larger writes go straight to unix_io and replace any kept copy.
 * Flush (and close) writes the kept blocks in block order, each run of
 * consecutive blocks as one write; so does a kept total over
 * VM_WBIO_MAX_KEPT bytes.
 */
#define VM_WBIO_SMALL 16
#define VM_WBIO_MAX_KEPT (64u << 20)

extern io_manager vm_wbio_manager;

#endif
