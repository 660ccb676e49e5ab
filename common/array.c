// SPDX-License-Identifier: Apache-2.0
/*
 * array.c - growing heap arrays (array.h).
 */
#include "common/array.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The first allocation: small arrays stay small, large ones double fast. */
#define FIRST_CAP 16

int vm_array_reserve(void **v, size_t *cap, size_t need, size_t elem)
{
	/* No object may be larger than PTRDIFF_MAX; malloc refuses more. */
	size_t most = elem ? (size_t)PTRDIFF_MAX / elem : 0;
	size_t ncap = *cap ? *cap : FIRST_CAP;
	void *nv;

	if (need <= *cap)
		return 0;
	if (need > most)
		return -ENOMEM;
	while (ncap < need)
		ncap = ncap > most / 2 ? need : ncap * 2;
	/* Doubling may pass what fits; need itself fits. */
	if (ncap > most)
		ncap = need;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}
