// SPDX-License-Identifier: Apache-2.0
/*
 * faults-touch.c - a test workload with a known faults profile: it maps
 * --mib MiB of anonymous memory (256 by default) and writes one byte to
 * each page in touch_memory(), so nearly every page fault it takes is
 * under that function; then it holds the memory until --hold seconds have
 * passed, so that its mappings are still there when the profiler looks
 * them up.  Transparent huge pages are refused for the mapping: each
 * fault then maps one page, as the profile's bytes assume.
 *
 * It starts touching when standard input ends (or at once without
 * --wait), so a test can start the profiler first.
 *
 * usage: faults-touch [--mib N] [--hold SECONDS] [--comm NAME] [--wait]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Not inlined: the profile must see this frame. */
__attribute__((noinline)) static void touch_memory(volatile char *p, size_t len,
						   size_t page)
{
	for (size_t off = 0; off < len; off += page)
		p[off] = 1;
}

int main(int argc, char **argv)
{
	size_t mib = 256, page = (size_t)sysconf(_SC_PAGESIZE), len;
	unsigned hold = 10;
	int wait = 0;
	char *p, c;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mib") && i + 1 < argc)
			mib = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--hold") && i + 1 < argc)
			hold = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--comm") && i + 1 < argc)
			prctl(PR_SET_NAME, argv[++i]);
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else {
			fprintf(stderr,
				"usage: faults-touch [--mib N] [--hold SECONDS] [--comm NAME] [--wait]\n");
			return 2;
		}
	}
	len = mib << 20;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED) {
		perror("faults-touch: mmap");
		return 1;
	}
	madvise(p, len, MADV_NOHUGEPAGE);
	while (wait && read(0, &c, 1) > 0)
		;
	touch_memory(p, len, page);
	printf("touched %zu MiB\n", mib);
	fflush(stdout);
	sleep(hold);
	return 0;
}
