// SPDX-License-Identifier: MIT
/*
 * agent_guest - the guest half of bench/gpu/full-stack's agent run: creates PAIRS agent
 * queue pairs of DEPTH entries (CSD_IOC_AGENT_QUEUE), pair i in bytes [i * REGION,
 * (i + 1) * REGION) of the ivshmem peer's BAR 2, prints each one's layout as
 * "@@STACK AGENT region,len,bus,sq,cq,db,data,depth,nsid,lba_size,qid" (what
 * csd-agent-check and agent_gpu take), then "@@STACK READY", and holds the pairs (the file
 * open) until a line arrives on its standard input (the serial console), from the host
 * process once its agents are done. Built static (no /usr).
 * Usage: agent_guest /dev/csd0 PAIRS DEPTH REGION
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "csd_ioctl.h"

int main(int argc, char **argv)
{
	char line[64];
	int fd, pairs, i;
	uint32_t depth;
	uint64_t region;

	if (argc != 5) {
		fprintf(stderr, "usage: agent_guest /dev/csd0 PAIRS DEPTH REGION\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR);
	pairs = atoi(argv[2]);
	depth = strtoul(argv[3], NULL, 0);
	region = strtoull(argv[4], NULL, 0);
	if (fd < 0) {
		printf("@@STACK FAIL open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (i = 0; i < pairs; i++) {
		struct csd_ioc_agent_queue q = { .bar_offset = i * region, .len = region, .depth = depth };

		if (ioctl(fd, CSD_IOC_AGENT_QUEUE, &q) || q.status) {
			printf("@@STACK FAIL agent queue %d: %s, status 0x%x\n", i, strerror(errno), q.status);
			return 1;
		}
		printf("@@STACK AGENT %llx,%llx,%llx,%llx,%llx,%llx,%llx,%u,%u,%u,%u\n",
		       (unsigned long long)q.bar_offset, (unsigned long long)q.len,
		       (unsigned long long)q.bus_addr, (unsigned long long)q.sq_offset,
		       (unsigned long long)q.cq_offset, (unsigned long long)q.db_offset,
		       (unsigned long long)q.data_offset, q.depth, q.nsid, q.lba_size, q.qid);
	}
	printf("@@STACK READY\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		sleep(3600);
	close(fd);
	return 0;
}
