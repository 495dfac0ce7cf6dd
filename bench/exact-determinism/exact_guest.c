// SPDX-License-Identifier: MIT
/*
 * Guest side of bench/exact-determinism: the command sequence of
 * tests/vm/guest/timing_exact.py (SLM Load 4 MiB, SLM Store 1 MiB, gemm 1024^3), each once
 * unmeasured and then REPEAT times, timed around the passthrough ioctl with CLOCK_MONOTONIC,
 * in a static program so that the guest can be a kernel and an initramfs alone (the GPU
 * machine has no guest root image). Nothing is printed until the last command (a line on
 * the serial console while a command runs is the guest's own noise: the UART's interrupts
 * come as the host's chardev drains it, in host time). Prints "@@EXACT <name> <ns>" per command and the C1h
 * counters model_holds / model_overruns at the end. Usage: exact_guest NG_DEV CTRL_DEV REPEAT
 */
#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { SLM_LOAD = 0x80, SLM_STORE = 0x84, EXECUTE = 0x85, GEMM = 0x02, LBA = 4096 };

static int ns_fd, ctrl_fd;

/* Returns the ns one passthrough command took; exits on a failed or refused command. */
static long long run(const char *what, struct nvme_passthru_cmd64 *cmd, int admin)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = ioctl(admin ? ctrl_fd : ns_fd, admin ? NVME_IOCTL_ADMIN64_CMD : NVME_IOCTL_IO64_CMD, cmd);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (rc != 0) {
		printf("@@EXACT FAIL %s: %s %#x\n", what, rc < 0 ? "ioctl error" : "NVMe status", rc);
		exit(1);
	}
	return (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
}

/* An SLM Load or Store of nlb blocks at slba and SLM offset off. */
static struct nvme_passthru_cmd64 slm_move(uint8_t opcode, uint64_t slba, uint32_t nlb, uint64_t off)
{
	struct nvme_passthru_cmd64 c = { .opcode = opcode, .nsid = 1 };

	c.cdw10 = (uint32_t)slba;
	c.cdw11 = (uint32_t)(slba >> 32);
	c.cdw12 = nlb - 1;
	c.cdw13 = (uint32_t)off;
	c.cdw14 = (uint32_t)(off >> 32);
	return c;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: exact_guest NG_DEV CTRL_DEV REPEAT\n");
		return 2;
	}
	int repeat = atoi(argv[3]);

	mlockall(MCL_CURRENT | MCL_FUTURE);
	ns_fd = open(argv[1], O_RDWR);
	ctrl_fd = open(argv[2], O_RDWR);
	if (ns_fd < 0 || ctrl_fd < 0) {
		printf("@@EXACT FAIL open %s / %s\n", argv[1], argv[2]);
		return 1;
	}

	/* gemm 1024^3 over SLM 0, 4 MiB, 8 MiB: the descriptor of csd_guest.descriptor() */
	const uint32_t m = 1024;
	static uint8_t desc[4096] __attribute__((aligned(4096)));
	uint8_t *p = desc;
	uint16_t hdr16[4] = { 1, GEMM, 3, 0 };
	uint32_t plen = 24;

	memcpy(p, "CSDX", 4), p += 4;
	memcpy(p, hdr16, 8), p += 8;
	memcpy(p, &plen, 4), p += 4;
	for (int i = 0; i < 3; i++) {
		uint64_t r[2] = { (uint64_t)i * 4 * 1048576, (uint64_t)m * m * 4 };

		memcpy(p, r, 16), p += 16;
	}
	uint32_t dims[4] = { m, m, m, 0 };
	float ab[2] = { 1.0f, 0.0f };

	memcpy(p, dims, 16), p += 16;
	memcpy(p, ab, 8), p += 8;
	struct nvme_passthru_cmd64 gemm = { .opcode = EXECUTE, .nsid = 1 };

	gemm.addr = (uintptr_t)desc;
	gemm.data_len = (uint32_t)(p - desc);
	gemm.cdw10 = gemm.data_len;

	struct {
		const char *name;
		struct nvme_passthru_cmd64 cmd;
	} work[] = {
		{ "slm_load_4MiB", slm_move(SLM_LOAD, 0, 4 * 1048576 / LBA, 0) },
		{ "slm_store_1MiB", slm_move(SLM_STORE, 4096, 1048576 / LBA, 0) },
		{ "gemm_1024", gemm },
	};
	enum { WORKS = sizeof(work) / sizeof(work[0]), MAX_REPEAT = 100 };
	static long long took[WORKS][MAX_REPEAT];

	if (repeat < 1 || repeat > MAX_REPEAT)
		repeat = 5;
	for (unsigned w = 0; w < WORKS; w++) {
		struct nvme_passthru_cmd64 c = work[w].cmd;

		run(work[w].name, &c, 0); /* once unmeasured: code and pages in memory */
		for (int i = 0; i < repeat; i++) {
			c = work[w].cmd;
			took[w][i] = run(work[w].name, &c, 0);
		}
	}
	for (unsigned w = 0; w < WORKS; w++)
		for (int i = 0; i < repeat; i++)
			printf("@@EXACT %s %lld\n", work[w].name, took[w][i]);

	/* C1h (statistics): model_overruns, model_holds, model_hold_ns are counters 20..22 */
	static uint64_t page[512] __attribute__((aligned(4096)));
	struct nvme_passthru_cmd64 log = { .opcode = 0x02, .nsid = 0xffffffff };

	log.addr = (uintptr_t)page;
	log.data_len = sizeof(page);
	log.cdw10 = 0xC1 | ((sizeof(page) / 4 - 1) << 16);
	run("get log C1h", &log, 1);
	printf("@@EXACT counters model_overruns=%llu model_holds=%llu model_hold_ns=%llu\n",
	       (unsigned long long)page[1 + 20], (unsigned long long)page[1 + 21], (unsigned long long)page[1 + 22]);
	return 0;
}
