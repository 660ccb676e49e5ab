/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spinner.h - a child process that burns CPU, for the unit tests that take
 * a real profile (the agent never samples itself, so the target must be
 * another process).  Included after <cmocka.h>; each test_*.c is its own
 * binary, so the helper is static inline rather than a separate object.
 */
#ifndef VMTOOLS_TESTS_SPINNER_H
#define VMTOOLS_TESTS_SPINNER_H

#include <sys/types.h>
#include <unistd.h>

/* Fork a child that spins until killed, or for 30 s whatever happens. */
static inline pid_t spawn_spinner(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		volatile unsigned long x = 0;

		alarm(30);
		for (;;)
			x++;
	}
	assert_true(pid > 0);
	return pid;
}

#endif
