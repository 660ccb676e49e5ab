// SPDX-License-Identifier: Apache-2.0
/*
 * array.c - growing heap arrays (array.h).
 */
#include "common/array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* The first allocation: small arrays stay small, large ones double fast. */
#define FIRST_CAP 16

int vm_array_reserve(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t ncap = *cap ? *cap : FIRST_CAP;
	void *nv;

	if (need <= *cap)
		return 0;
	if (elem == 0 || need > SIZE_MAX / elem)
		return -ENOMEM;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	/* Doubling may pass what fits; need itself fits. */
	if (ncap > SIZE_MAX / elem)
		ncap = need;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}
