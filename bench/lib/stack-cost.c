// SPDX-License-Identifier: Apache-2.0
/*
 * stack-cost.c - runs one program of stack-cost.bpf.c for a while, for
 * bench/offcpu.sh (and bench/offcpu-vm.sh in a guest), and prints what
 * the kernel accounted for it (kernel.bpf_stats_enabled must be 1):
 *
 *	run_time_ns run_cnt stack_calls frames
 *
 * usage: stack-cost OBJECT PROGRAM SECONDS
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* The sum over CPUs of counts[key]. */
static unsigned long long sum_counts(int fd, __u32 key)
{
	int n = libbpf_num_possible_cpus();
	unsigned long long *v, total = 0;

	if (n <= 0)
		return 0;
	v = calloc(n, sizeof(*v));
	if (v && !bpf_map_lookup_elem(fd, &key, v))
		for (int i = 0; i < n; i++)
			total += v[i];
	free(v);
	return total;
}

int main(int argc, char **argv)
{
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	struct bpf_object *obj;
	struct bpf_program *prog, *p;
	struct bpf_link *link;
	int counts;

	if (argc != 4) {
		fprintf(stderr, "usage: stack-cost OBJECT PROGRAM SECONDS\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "stack-cost: cannot open %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, argv[2]);
	if (!prog) {
		fprintf(stderr, "stack-cost: %s has no program %s\n", argv[1],
			argv[2]);
		return 1;
	}
	bpf_object__for_each_program(p, obj)
		bpf_program__set_autoload(p, p == prog);
	if (bpf_object__load(obj)) {
		fprintf(stderr, "stack-cost: cannot load %s: %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	link = bpf_program__attach(prog);
	if (!link) {
		fprintf(stderr, "stack-cost: cannot attach %s: %s\n", argv[2],
			strerror(errno));
		return 1;
	}
	sleep(atoi(argv[3]));
	bpf_link__destroy(link);
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len)) {
		fprintf(stderr, "stack-cost: no statistics for %s: %s\n",
			argv[2], strerror(errno));
		return 1;
	}
	counts = bpf_object__find_map_fd_by_name(obj, "counts");
	printf("%llu %llu %llu %llu\n", (unsigned long long)info.run_time_ns,
	       (unsigned long long)info.run_cnt, sum_counts(counts, 0),
	       sum_counts(counts, 1));
	bpf_object__close(obj);
	return 0;
}
