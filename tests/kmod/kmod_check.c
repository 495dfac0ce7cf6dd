/*
 * kmod_check - exercises csd.ko's ioctls from user space for the guest tests.
 *   kmod_check hold PATH FILE      allocate 1 MiB, write a secret, put the handle in FILE,
 *                                  then sleep until killed
 *   kmod_check probe PATH HANDLE   as another user: every access to HANDLE must fail;
 *                                  own ranges outside an allocation must fail
 *   kmod_check badargs PATH        NULL pointers, huge and wrapping lengths, bad counts,
 *                                  unknown ioctl numbers: clean errors only
 *   kmod_check free PATH           print the SLM bytes no one has allocated
 *   kmod_check p2p PATH BAR LEN WINDOW  write a known pattern into SLM, deliver it into
 *                                  the configured peer's BAR at offset 0 (peer-to-peer);
 *                                  the BAR's bytes from WINDOW on and other BARs refuse it
 *   kmod_check zero-race PATH      fill 32 MiB with a pattern and free it; then, while a
 *                                  thread keeps reading the next handle, allocate it again:
 *                                  the first read that succeeds must see zeros only
 *   kmod_check program-hold PATH IMAGE FILE   load eBPF IMAGE (16-byte records), put its
 *                                  slot in FILE, then sleep until killed
 *   kmod_check program-probe PATH SLOT IMAGE  as another user: that slot can be neither
 *                                  run nor unloaded; a program of one's own can
 *   kmod_check partition PATH LBAS CHAR  the file's LBA partition: the device reports LBAS
 *                                  LBAs; its first and last LBA take CHAR written by
 *                                  namespace I/O, SLM Store and Compare and Write, read back
 *                                  by namespace I/O and SLM Load; every LBA command past its
 *                                  end (and wrapping ones) fails as past the drive's end
 * Prints 'kmod_check: N passed, N failed' (except hold and free).
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "../../kmod/uapi/csd_ioctl.h"

static int passed, failed;

static void expect(int ok, const char *what)
{
	if (ok) {
		passed++;
		printf("ok   %s\n", what);
	} else {
		failed++;
		printf("FAIL %s (errno %d: %s)\n", what, errno, strerror(errno));
	}
}

/* The ioctl fails with errno e. */
static int fails_with(int fd, unsigned long req, void *arg, int e)
{
	errno = 0;
	return ioctl(fd, req, arg) == -1 && errno == e;
}

static int open_dev(const char *path)
{
	int fd = open(path, O_RDWR);

	if (fd < 0) {
		perror(path);
		exit(2);
	}
	return fd;
}

/*
 * An execute descriptor (the command set's section 4), encoded here on purpose rather
 * than with the project's codec: nr ranges of (offset, length), then plen parameter bytes.
 * Returns its length.
 */
static uint32_t descriptor(uint8_t *d, uint16_t program, uint16_t nr, const uint64_t *ranges,
			   const void *params, uint32_t plen)
{
	uint16_t version = 1, flags = 0;

	memcpy(d, "CSDX", 4);
	memcpy(d + 4, &version, 2);
	memcpy(d + 6, &program, 2);
	memcpy(d + 8, &nr, 2);
	memcpy(d + 10, &flags, 2);
	memcpy(d + 12, &plen, 4);
	memcpy(d + 16, ranges, 16 * nr);
	if (plen)
		memcpy(d + 16 + 16 * nr, params, plen);
	return 16 + 16 * nr + plen;
}

static uint32_t read_image(const char *path, uint8_t *img, uint32_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(img, 1, cap, f) : 0;

	if (f)
		fclose(f);
	return (uint32_t)n;
}

struct race {
	int fd;
	uint32_t handle;
	volatile int stop;
	int reads; /* successful reads */
	int dirty; /* of which saw the old pattern */
};

/* Reads 4 KiB in the middle of the allocation `handle` until told to stop. */
static void *race_reader(void *arg)
{
	struct race *r = arg;
	static uint8_t page[4096];
	struct csd_ioc_xfer x = { .handle = r->handle, .offset = 16 << 20, .len = sizeof(page),
				  .buf = (uintptr_t)page };

	while (!r->stop) {
		if (ioctl(r->fd, CSD_IOC_READ, &x) || x.status)
			continue;
		r->reads++;
		for (size_t i = 0; i < sizeof(page); i++) {
			if (page[i]) {
				r->dirty++;
				break;
			}
		}
	}
	return NULL;
}

static int report(void)
{
	printf("kmod_check: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: kmod_check hold|probe|badargs|free PATH [ARG]\n");
		return 2;
	}
	int fd = open_dev(argv[2]);
	const char *what = argv[1];
	static char buf[1 << 20];

	if (!strcmp(what, "hold") && argc == 4) {
		struct csd_ioc_alloc a = { .size = 1 << 20 };
		struct csd_ioc_xfer x = { 0 };

		if (ioctl(fd, CSD_IOC_ALLOC, &a)) {
			perror("CSD_IOC_ALLOC");
			return 1;
		}
		memset(buf, 'S', sizeof(buf));
		x.handle = a.handle;
		x.len = sizeof(buf);
		x.buf = (uintptr_t)buf;
		if (ioctl(fd, CSD_IOC_WRITE, &x) || x.status) {
			fprintf(stderr, "write failed\n");
			return 1;
		}
		FILE *f = fopen(argv[3], "w");
		fprintf(f, "%u\n", a.handle);
		fclose(f);
		for (;;)
			pause();
	}
	if (!strcmp(what, "zero-race")) {
		struct csd_ioc_alloc a = { .size = 32 << 20 }, b = { .size = 32 << 20 };
		struct csd_ioc_xfer x = { .len = sizeof(buf), .buf = (uintptr_t)buf };
		struct race r = { .fd = fd };
		pthread_t t;
		int ok = ioctl(fd, CSD_IOC_ALLOC, &a) == 0;

		memset(buf, 'P', sizeof(buf));
		x.handle = a.handle;
		for (x.offset = 0; ok && x.offset < a.size; x.offset += sizeof(buf))
			ok = ioctl(fd, CSD_IOC_WRITE, &x) == 0 && !x.status;
		expect(ok, "32 MiB filled with a pattern");
		expect(ioctl(fd, CSD_IOC_FREE, &a.handle) == 0, "and freed");
		r.handle = a.handle + 1; /* handles are handed out in order */
		pthread_create(&t, NULL, race_reader, &r);
		usleep(100000);
		expect(ioctl(fd, CSD_IOC_ALLOC, &b) == 0 && b.handle == r.handle,
		       "the next allocation gets the next handle");
		usleep(100000);
		r.stop = 1;
		pthread_join(t, NULL);
		printf("%d reads while and after it was allocated, %d saw the old pattern\n", r.reads,
		       r.dirty);
		expect(r.reads > 0 && r.dirty == 0,
		       "no read of a new allocation sees the previous owner's data");
		return report();
	}
	if (!strcmp(what, "program-hold") && argc == 5) {
		static uint8_t img[65536];
		struct csd_ioc_program_load l = { .image = (uintptr_t)img, .record_size = 16, .type = 1 };

		l.size = read_image(argv[3], img, sizeof(img));
		if (!l.size || ioctl(fd, CSD_IOC_PROGRAM_LOAD, &l) || l.status) {
			fprintf(stderr, "program load failed (status 0x%x)\n", l.status);
			return 1;
		}
		FILE *f = fopen(argv[4], "w");
		fprintf(f, "%u\n", l.slot);
		fclose(f);
		for (;;)
			pause();
	}
	if (!strcmp(what, "partition") && argc == 5) {
		uint64_t lbas = strtoull(argv[3], NULL, 0), last = lbas - 1;
		const uint32_t oor = 0x4080; /* LBA Out of Range, DNR */
		struct csd_ioc_info info = { 0 };
		struct csd_ioc_alloc a = { .size = 8192 };
		struct csd_ioc_xfer x = { .len = 4096, .buf = (uintptr_t)buf };
		struct csd_ioc_ns_io io = { .nlb = 1, .buf = (uintptr_t)buf };
		struct csd_ioc_lba l = { .nlb = 1 };
		char c = argv[4][0];
		int ok;

		expect(ioctl(fd, CSD_IOC_INFO, &info) == 0 && info.lba_count == lbas,
		       "the device reports the partition's size");
		memset(buf, c, 512);
		io.write = CSD_NS_IO_WRITE;
		expect(ioctl(fd, CSD_IOC_NS_IO, &io) == 0 && !io.status, "write of its first LBA");
		io.slba = last;
		expect(ioctl(fd, CSD_IOC_NS_IO, &io) == 0 && !io.status, "write of its last LBA");
		memset(buf, 0, 1024);
		io.write = CSD_NS_IO_READ;
		expect(ioctl(fd, CSD_IOC_NS_IO, &io) == 0 && !io.status && buf[0] == c && buf[511] == c,
		       "its last LBA reads back");
		/* SLM Store then Load through the partition; Compare and Write of its last LBA */
		expect(ioctl(fd, CSD_IOC_ALLOC, &a) == 0, "an allocation");
		memset(buf, c, 4096);
		x.handle = a.handle;
		expect(ioctl(fd, CSD_IOC_WRITE, &x) == 0 && !x.status, "SLM filled");
		l.handle = a.handle;
		l.slba = 1;
		expect(ioctl(fd, CSD_IOC_STORE, &l) == 0 && !l.status, "SLM Store into its LBA 1");
		l.offset = 4096;
		expect(ioctl(fd, CSD_IOC_LOAD, &l) == 0 && !l.status, "SLM Load of its LBA 1");
		memset(buf, 0, 4096);
		x.offset = 4096;
		x.len = 512;
		ok = ioctl(fd, CSD_IOC_READ, &x) == 0 && !x.status && buf[0] == c && buf[511] == c;
		expect(ok, "what SLM Store wrote, SLM Load brought back");
		memset(buf, c, 512);
		memset(buf + 512, c ^ 0x20, 512);
		io.write = CSD_NS_IO_COMPARE_WRITE;
		io.slba = last;
		expect(ioctl(fd, CSD_IOC_NS_IO, &io) == 0 && !io.status, "Compare and Write of its last LBA");
		expect(ioctl(fd, CSD_IOC_NS_IO, &io) == 0 && (io.status & 0x7ff) == 0x285,
		       "the same again: Compare Failure");
		memset(buf + 512, c, 512);
		memset(buf, c ^ 0x20, 512);
		expect(ioctl(fd, CSD_IOC_NS_IO, &io) == 0 && !io.status, "and back");
		/* past the partition's end, and wrapping: as past the drive's end */
		for (int k = 0; k < 3; k++) {
			uint64_t slba = k == 0 ? lbas : k == 1 ? last : UINT64_MAX - 1;
			uint64_t nlb = k == 1 ? 2 : 1;

			io.slba = slba;
			io.nlb = nlb;
			io.write = CSD_NS_IO_READ;
			errno = 0;
			ok = ioctl(fd, CSD_IOC_NS_IO, &io);
			expect((ok == 0 && io.status == oor) || (ok == -1 && errno == EINVAL),
			       "namespace read past the partition: refused");
			io.write = CSD_NS_IO_WRITE;
			ok = ioctl(fd, CSD_IOC_NS_IO, &io);
			expect((ok == 0 && io.status == oor) || (ok == -1 && errno == EINVAL),
			       "namespace write past the partition: refused");
			io.write = CSD_NS_IO_COMPARE_WRITE;
			ok = ioctl(fd, CSD_IOC_NS_IO, &io);
			expect((ok == 0 && io.status == oor) || (ok == -1 && errno == EINVAL),
			       "Compare and Write past the partition: refused");
			l.slba = slba;
			l.nlb = (uint32_t)nlb;
			l.offset = 0;
			expect(ioctl(fd, CSD_IOC_LOAD, &l) == 0 && l.status == oor,
			       "SLM Load past the partition: LBA Out of Range");
			expect(ioctl(fd, CSD_IOC_STORE, &l) == 0 && l.status == oor,
			       "SLM Store past the partition: LBA Out of Range");
		}
		io.nlb = 1;
		io.slba = 0;
		io.write = 3;
		expect(fails_with(fd, CSD_IOC_NS_IO, &io, EINVAL), "namespace I/O of an unknown kind: EINVAL");
		io.write = CSD_NS_IO_READ;
		io.buf = 0;
		expect(fails_with(fd, CSD_IOC_NS_IO, &io, EINVAL), "namespace read into NULL: EINVAL");
		io.nlb = 0;
		io.buf = (uintptr_t)buf;
		expect(fails_with(fd, CSD_IOC_NS_IO, &io, EINVAL), "a Flush with a buffer: EINVAL");
		io.nlb = 256;
		io.write = CSD_NS_IO_COMPARE_WRITE;
		expect(fails_with(fd, CSD_IOC_NS_IO, &io, EINVAL), "Compare and Write over 64 KiB: EINVAL");
		return report();
	}
	if (!strcmp(what, "program-probe") && argc == 5) {
		static uint8_t img[65536];
		uint32_t other = (uint32_t)strtoul(argv[3], NULL, 0);
		struct csd_ioc_program_unload u = { .slot = other };
		struct csd_ioc_program_load l = { .image = (uintptr_t)img, .record_size = 16, .type = 1 };
		struct csd_ioc_alloc a = { .size = 8192 };
		struct csd_ioc_exec e = { 0 };
		uint64_t rr[4] = { 0, 64, 4096, 64 };
		uint32_t p[6] = { 4, 0, 1, 0, 0, 0 }; /* 4 records, filter, one param */
		uint8_t d[128];

		l.size = read_image(argv[4], img, sizeof(img));
		expect(l.size > 0, "image readable");
		expect(fails_with(fd, CSD_IOC_PROGRAM_UNLOAD, &u, EPERM), "unloading another user's program: EPERM");
		expect(ioctl(fd, CSD_IOC_ALLOC, &a) == 0, "own allocation");
		e.handle = a.handle;
		e.desc = (uintptr_t)d;
		e.desc_len = descriptor(d, (uint16_t)other, 2, rr, p, sizeof(p));
		expect(fails_with(fd, CSD_IOC_EXEC, &e, EPERM), "running another user's program: EPERM");
		l.slot = (uint16_t)other;
		expect(ioctl(fd, CSD_IOC_PROGRAM_LOAD, &l) == 0 && (l.status & 0x7ff) == 0x1c7,
		       "loading into another user's slot: the drive's Program Slot In Use");
		l.slot = 0;
		expect(ioctl(fd, CSD_IOC_PROGRAM_LOAD, &l) == 0 && l.status == 0 && l.slot != other,
		       "loading a program of one's own");
		e.desc_len = descriptor(d, l.slot, 2, rr, p, sizeof(p));
		expect(ioctl(fd, CSD_IOC_EXEC, &e) == 0 && e.status == 0, "running one's own program");
		u.slot = l.slot;
		expect(ioctl(fd, CSD_IOC_PROGRAM_UNLOAD, &u) == 0 && u.status == 0, "unloading one's own program");
		u.slot = 0x42;
		expect(fails_with(fd, CSD_IOC_PROGRAM_UNLOAD, &u, EINVAL), "unloading a non-slot: EINVAL");
		l.image = 0;
		expect(fails_with(fd, CSD_IOC_PROGRAM_LOAD, &l, EFAULT), "loading from NULL: EFAULT");
		return report();
	}
	if (!strcmp(what, "p2p") && argc == 6) {
		uint64_t len = strtoull(argv[4], NULL, 0), window = strtoull(argv[5], NULL, 0);
		struct csd_ioc_alloc a = { .size = len };
		struct csd_ioc_xfer x = { 0 };
		struct csd_ioc_p2p p = { 0 };
		char *pat = malloc(len);

		for (uint64_t i = 0; i < len; i++)
			pat[i] = (char)((i * 31 + 7) & 0xff);
		expect(ioctl(fd, CSD_IOC_ALLOC, &a) == 0, "allocation for the peer transfer");
		x.handle = a.handle;
		x.len = len;
		x.buf = (uintptr_t)pat;
		expect(ioctl(fd, CSD_IOC_WRITE, &x) == 0 && x.status == 0, "pattern written into SLM");
		p.handle = a.handle;
		p.len = len;
		p.bar = (uint32_t)atoi(argv[3]);
		expect(ioctl(fd, CSD_IOC_P2P_READ, &p) == 0 && p.status == 0, "peer-to-peer SLM Read into the BAR");
		p.bar_offset = window;
		expect(fails_with(fd, CSD_IOC_P2P_READ, &p, EPERM),
		       "inside the BAR but past the configured window: EPERM");
		p.bar_offset = window - 4096;
		expect(fails_with(fd, CSD_IOC_P2P_READ, &p, EPERM), "straddling the window's end: EPERM");
		p.bar_offset = 0;
		p.bar = 0;
		p.len = 4096;
		expect(fails_with(fd, CSD_IOC_P2P_READ, &p, EPERM) || errno == EINVAL,
		       "another BAR: refused");
		p.bar = (uint32_t)atoi(argv[3]);
		p.bar_offset = 4096 * 1024;
		expect(fails_with(fd, CSD_IOC_P2P_READ, &p, EINVAL), "a range past the BAR's end: EINVAL");
		p.bar_offset = 100;
		expect(fails_with(fd, CSD_IOC_P2P_READ, &p, EINVAL), "an unaligned BAR offset: EINVAL");
		free(pat);
		return report();
	}
	if (!strcmp(what, "free")) {
		struct csd_ioc_info info;

		if (ioctl(fd, CSD_IOC_INFO, &info))
			return 1;
		printf("%llu\n", (unsigned long long)info.free_bytes);
		return 0;
	}
	if (!strcmp(what, "probe") && argc == 4) {
		uint32_t other = (uint32_t)strtoul(argv[3], NULL, 10);
		struct csd_ioc_xfer x = { .handle = other, .len = 4096, .buf = (uintptr_t)buf };
		struct csd_ioc_lba l = { .handle = other, .nlb = 1 };
		struct csd_ioc_exec e = { .handle = other };
		struct csd_ioc_alloc mine = { .size = 8192 };
		uint8_t d[64];
		uint64_t rr[4] = { 0, 4096, 4096, 4096 };

		expect(fails_with(fd, CSD_IOC_READ, &x, ENOENT), "reading another user's allocation: ENOENT");
		expect(fails_with(fd, CSD_IOC_WRITE, &x, ENOENT), "writing another user's allocation: ENOENT");
		expect(fails_with(fd, CSD_IOC_LOAD, &l, ENOENT), "SLM Load into another user's allocation: ENOENT");
		expect(fails_with(fd, CSD_IOC_STORE, &l, ENOENT), "SLM Store from another user's allocation: ENOENT");
		e.desc = (uintptr_t)d;
		e.desc_len = descriptor(d, 1, 2, rr, NULL, 0);
		expect(fails_with(fd, CSD_IOC_EXEC, &e, ENOENT), "Execute on another user's allocation: ENOENT");
		expect(ioctl(fd, CSD_IOC_ALLOC, &mine) == 0, "own allocation");
		expect(fails_with(fd, CSD_IOC_FREE, &other, ENOENT), "freeing another user's allocation: ENOENT");
		e.handle = mine.handle;
		rr[0] = 4096;
		rr[1] = 8192;
		e.desc_len = descriptor(d, 1, 2, rr, NULL, 0);
		expect(fails_with(fd, CSD_IOC_EXEC, &e, ERANGE), "Execute past the end of own allocation: ERANGE");
		x.handle = mine.handle;
		x.offset = 8192;
		expect(fails_with(fd, CSD_IOC_READ, &x, ERANGE), "read past the end of own allocation: ERANGE");
		x.offset = 0;
		x.len = 8192;
		memset(buf, 0, 8192);
		expect(ioctl(fd, CSD_IOC_READ, &x) == 0 && x.status == 0, "reading own allocation");
		{
			int zero = 1;

			for (int i = 0; i < 8192; i++)
				zero &= buf[i] == 0;
			expect(zero, "a new allocation reads as zeros (no one's old data)");
		}
		expect(ioctl(fd, CSD_IOC_FREE, &mine.handle) == 0, "freeing own allocation");
		expect(fails_with(fd, CSD_IOC_READ, &x, ENOENT), "a freed handle is gone");
		return report();
	}
	if (!strcmp(what, "badargs")) {
		struct csd_ioc_alloc a = { .size = 65536 };
		struct csd_ioc_xfer x;
		struct csd_ioc_exec e;
		struct csd_ioc_lba l;
		uint8_t d[8192];
		uint64_t rr[34] = { 0, 16 }; /* range 0: 16 bytes at offset 0 */
		struct csd_ioc_info info;
		uint32_t bogus = 0xdeadbeef;

		expect(ioctl(fd, CSD_IOC_INFO, &info) == 0, "CSD_IOC_INFO");
		expect(fails_with(fd, CSD_IOC_INFO, NULL, EFAULT), "INFO into NULL: EFAULT");
		expect(fails_with(fd, CSD_IOC_ALLOC, NULL, EFAULT), "ALLOC from NULL: EFAULT");
		expect(fails_with(fd, CSD_IOC_EXEC, (void *)16, EFAULT), "EXEC from a bad pointer: EFAULT");
		expect(fails_with(fd, _IO(CSD_IOC_MAGIC, 0x77), NULL, ENOTTY), "unknown ioctl number: ENOTTY");
		expect(fails_with(fd, _IOWR('N', 0x48, struct csd_ioc_exec), &e, ENOTTY), "NVMe ioctl number: ENOTTY");
		struct csd_ioc_alloc z = { .size = 0 };
		expect(fails_with(fd, CSD_IOC_ALLOC, &z, EINVAL), "allocation of 0 bytes: EINVAL");
		z = (struct csd_ioc_alloc){ .size = 4096, .align = 12345 };
		expect(fails_with(fd, CSD_IOC_ALLOC, &z, EINVAL), "alignment not a power of two: EINVAL");
		z = (struct csd_ioc_alloc){ .size = UINT64_MAX };
		expect(fails_with(fd, CSD_IOC_ALLOC, &z, EINVAL), "allocation of 2^64-1 bytes: EINVAL");
		expect(ioctl(fd, CSD_IOC_ALLOC, &a) == 0, "allocation of 64 KiB");
		expect(fails_with(fd, CSD_IOC_FREE, &bogus, ENOENT), "freeing an unknown handle: ENOENT");
		x = (struct csd_ioc_xfer){ .handle = a.handle, .offset = UINT64_MAX - 3, .len = 8, .buf = (uintptr_t)buf };
		expect(fails_with(fd, CSD_IOC_WRITE, &x, ERANGE), "offset + length wrapping 2^64: ERANGE");
		x = (struct csd_ioc_xfer){ .handle = a.handle, .len = UINT64_MAX & ~3ULL, .buf = (uintptr_t)buf };
		expect(fails_with(fd, CSD_IOC_READ, &x, ERANGE), "huge length: ERANGE");
		x = (struct csd_ioc_xfer){ .handle = a.handle, .len = 6, .buf = (uintptr_t)buf };
		expect(fails_with(fd, CSD_IOC_WRITE, &x, EINVAL), "length not a multiple of 4: EINVAL");
		x = (struct csd_ioc_xfer){ .handle = a.handle, .len = 4096, .buf = 0 };
		expect(fails_with(fd, CSD_IOC_WRITE, &x, EFAULT), "writing from a NULL buffer: EFAULT");
		expect(fails_with(fd, CSD_IOC_READ, &x, EFAULT), "reading into a NULL buffer: EFAULT");
		l = (struct csd_ioc_lba){ .handle = a.handle, .nlb = 0 };
		expect(fails_with(fd, CSD_IOC_LOAD, &l, EINVAL), "SLM Load of 0 LBAs: EINVAL");
		l = (struct csd_ioc_lba){ .handle = a.handle, .nlb = 65536 };
		expect(fails_with(fd, CSD_IOC_LOAD, &l, ERANGE), "SLM Load larger than the allocation: ERANGE");
		l = (struct csd_ioc_lba){ .handle = a.handle, .nlb = 1, .slba = UINT64_MAX };
		expect(ioctl(fd, CSD_IOC_LOAD, &l) == 0 && (l.status & 0x7ff) == 0x080,
		       "SLM Load past the namespace: LBA Out of Range from the drive");
		uint32_t algo = 0;

		memset(&e, 0, sizeof(e));
		e.handle = a.handle;
		e.desc = (uintptr_t)d;
		expect(ioctl(fd, CSD_IOC_EXEC, &e) == 0 && (e.status & 0x7ff) == 0x002,
		       "Execute with a 0-byte descriptor: the drive's Invalid Field");
		e.desc_len = 4097;
		expect(ioctl(fd, CSD_IOC_EXEC, &e) == 0 && (e.status & 0x7ff) == 0x002,
		       "Execute with a 4097-byte descriptor: the drive's Invalid Field");
		e.desc_len = 0xFFFFFFFF;
		expect(ioctl(fd, CSD_IOC_EXEC, &e) == 0 && (e.status & 0x7ff) == 0x002,
		       "Execute with a 4 GiB descriptor: the drive's Invalid Field");
		e.desc_len = descriptor(d, 8, 1, rr, &algo, 4);
		e.desc = 0;
		expect(fails_with(fd, CSD_IOC_EXEC, &e, EFAULT), "Execute with a NULL descriptor: EFAULT");
		e.desc = (uintptr_t)d;
		e.desc_len = descriptor(d, 8, 0, rr, &algo, 4);
		expect(ioctl(fd, CSD_IOC_EXEC, &e) == 0 && (e.status & 0x7ff) == 0x1c1,
		       "Execute with 0 ranges: the drive's Invalid Descriptor");
		e.desc_len = descriptor(d, 8, 17, rr, &algo, 4);
		expect(ioctl(fd, CSD_IOC_EXEC, &e) == 0 && (e.status & 0x7ff) == 0x1c1,
		       "Execute with 17 ranges: the drive's Invalid Descriptor");
		e.desc_len = descriptor(d, 8, 1, rr, &algo, 4) - 1;
		expect(ioctl(fd, CSD_IOC_EXEC, &e) == 0 && (e.status & 0x7ff) == 0x1c1,
		       "Execute whose length disagrees with its header: the drive's Invalid Descriptor");
		rr[0] = UINT64_MAX - 7;
		e.desc_len = descriptor(d, 8, 1, rr, &algo, 4);
		expect(fails_with(fd, CSD_IOC_EXEC, &e, ERANGE), "Execute range wrapping 2^64: ERANGE");
		rr[0] = 0;
		e.desc_len = descriptor(d, 8, 1, rr, &algo, 4);
		expect(ioctl(fd, CSD_IOC_EXEC, &e) == 0 && e.status == 0, "a good Execute still works");
		e.desc_len = descriptor(d, 0x42, 1, rr, &algo, 4);
		expect(ioctl(fd, CSD_IOC_EXEC, &e) == 0 && (e.status & 0x7ff) == 0x1c0,
		       "unknown program: the drive's Invalid Program");
		return report();
	}
	fprintf(stderr, "kmod_check: unknown command %s\n", what);
	return 2;
}
