// SPDX-License-Identifier: MIT
/*
 * p2p_guest - the guest half of bench/gpu/full-stack: puts LEN bytes of a known pattern into
 * SLM through csd.ko, then moves them out ROUNDS times two ways and times each:
 *   p2p   csd.ko's peer-to-peer SLM Read straight into BAR 2 of the ivshmem peer (whose
 *         host backing file the host has registered with CUDA);
 *   copy  SLM Read into this guest's memory, then a write to OUT (a virtio-blk disk whose
 *         host file the host reads) with O_DIRECT, flushed.
 * Prints "@@STACK p2p LEN ROUNDS SECONDS" and "@@STACK copy ...". Built static (no /usr).
 * Usage: p2p_guest /dev/csd0 LEN ROUNDS OUT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "csd_ioctl.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what)
{
	printf("@@STACK FAIL %s: %s\n", what, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: p2p_guest /dev/csd0 LEN ROUNDS OUT\n");
		return 2;
	}
	uint64_t len = strtoull(argv[2], NULL, 0);
	int rounds = atoi(argv[3]);
	int fd = open(argv[1], O_RDWR);
	int out = open(argv[4], O_WRONLY | O_DIRECT);
	struct csd_ioc_alloc a = { .size = len };
	struct csd_ioc_xfer x = { 0 };
	struct csd_ioc_p2p p = { 0 };
	uint8_t *buf;
	double t0;

	if (fd < 0)
		die("open csd");
	if (out < 0)
		die("open out");
	if (posix_memalign((void **)&buf, 4096, len))
		die("memory");
	for (uint64_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((i * 31 + 7) & 0xff);
	if (ioctl(fd, CSD_IOC_ALLOC, &a))
		die("CSD_IOC_ALLOC");
	x.handle = a.handle;
	x.len = len;
	x.buf = (uintptr_t)buf;
	if (ioctl(fd, CSD_IOC_WRITE, &x) || x.status)
		die("pattern into SLM");
	memset(buf, 0, len);

	p.handle = a.handle;
	p.len = len;
	p.bar = 2;
	t0 = now();
	for (int r = 0; r < rounds; r++)
		if (ioctl(fd, CSD_IOC_P2P_READ, &p) || p.status)
			die("peer-to-peer SLM Read");
	printf("@@STACK p2p %llu %d %.6f\n", (unsigned long long)len, rounds, now() - t0);

	t0 = now();
	for (int r = 0; r < rounds; r++) {
		if (ioctl(fd, CSD_IOC_READ, &x) || x.status)
			die("SLM Read");
		if (pwrite(out, buf, len, 0) != (ssize_t)len)
			die("write to the disk");
		if (fdatasync(out))
			die("flush");
	}
	printf("@@STACK copy %llu %d %.6f\n", (unsigned long long)len, rounds, now() - t0);
	fflush(stdout);
	return 0;
}
