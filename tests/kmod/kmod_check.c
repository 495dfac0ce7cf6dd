// SPDX-License-Identifier: MIT
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
 *   kmod_check program-race PATH USER_A USER_B BPFDIR ROUNDS   as root: tenants A and B
 *                                  (processes of those users, several threads in A) race
 *                                  over one slot: A's two threads unload it while B loads
 *                                  into it; A's second thread unloads it while A's first
 *                                  uploads a 2-chunk image and B loads into it; A executes
 *                                  it while A's second thread unloads it and B loads into
 *                                  it. B's program must survive each round and A must never
 *                                  run B's program
 *   kmod_check program-quota PATH USER_A USER_B BPFDIR  as root: the per-user quotas of
 *                                  slots and of bytes being uploaded (module parameters),
 *                                  over two files and several threads of A; B unaffected
 *   kmod_check p2p-other PATH BAR OWN OTHER LEN  as a second tenant: a pattern of its own
 *                                  into its window at OWN; the first tenant's window at
 *                                  OTHER and a range straddling both refuse it
 *   kmod_check partition PATH LBAS CHAR  the file's LBA partition: the device reports LBAS
 *                                  LBAs; its first and last LBA take CHAR written by
 *                                  namespace I/O, SLM Store and Compare and Write, read back
 *                                  by namespace I/O and SLM Load; every LBA command past its
 *                                  end (and wrapping ones) fails as past the drive's end
 *   kmod_check agent PATH BAR_OFFSET LEN DEPTH SLM ACTION...  as root: an agent queue pair
 *                                  in the peer's BAR (CSD_IOC_AGENT_QUEUE), refused for bad
 *                                  arguments; then each ACTION in order, the file held open:
 *                                  host:STEP,STEP the host's CPU agent drives the pair
 *                                  (tests/vm/host/agent-run.sh SLM LAYOUT STEP...); reset:
 *                                  the controller is reset (nvme-core recovers it);
 *                                  sh:SCRIPT: the shell script SCRIPT runs and must succeed
 * Prints 'kmod_check: N passed, N failed' (except hold and free).
 */
#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../kmod/uapi/csd_ioctl.h"

static int passed, failed;

static int report(void);

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

/* ------------------------------------------------------------ programs of two tenants */

#define RACE_RECORDS 64
#define RACE_PARAM 5 /* records: key 100 at 0, field 1 at 4 */
#define PROJECT_SUM (RACE_PARAM * RACE_RECORDS + RACE_RECORDS * (RACE_RECORDS - 1) / 2)
#define THRESHOLD_SUM RACE_RECORDS
#define IMAGE_MAX (1 << 20)

/* What both tenants' processes share (MAP_SHARED before fork). */
struct shared {
	pthread_barrier_t step; /* A's and B's main threads */
	volatile uint16_t slot;
	volatile int a_started; /* B may begin: A's slot is loaded, or (upload round) A's
				 * second thread unloaded it during the upload, or the upload ended
				 */
	volatile int a_done;
	int failures;   /* checks that failed, in either process */
	int b_loaded[3]; /* rounds of each race in which B got the slot */
	int b_lost[3];   /* ... and then lost its program (or its ownership of it) */
	int a_both;     /* rounds in which both of A's unloads succeeded */
	int a_foreign;  /* Executes of A that ran another program */
	int a_execs;    /* A's Executes that ran */
};

static struct shared *sh;
static const char *bpfdir;

/* Counts a failed check of a tenant process in the shared summary. */
static void shared_expect(int ok, const char *what)
{
	if (!ok)
		__atomic_add_fetch(&sh->failures, 1, __ATOMIC_SEQ_CST);
	expect(ok, what);
}

static uint32_t load_image_file(const char *name, uint8_t *img)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", bpfdir, name);
	return read_image(path, img, IMAGE_MAX);
}

/* Becomes user `name` (its uid, gid and groups), as a tenant's process. */
static void become(const char *name)
{
	struct passwd *pw = getpwnam(name);

	if (!pw || initgroups(name, pw->pw_gid) || setgid(pw->pw_gid) || setuid(pw->pw_uid)) {
		perror(name);
		exit(2);
	}
}

/* Program Load of an image (slot 0: any); returns 0 and the slot, the status, or -errno. */
static int prog_load(int fd, const uint8_t *img, uint32_t size, uint16_t slot, uint16_t *got)
{
	struct csd_ioc_program_load l = { .image = (uintptr_t)img, .size = size, .record_size = 16,
					  .type = 1, .slot = slot };

	if (ioctl(fd, CSD_IOC_PROGRAM_LOAD, &l))
		return -errno;
	if (l.status)
		return (int)l.status;
	if (got)
		*got = l.slot;
	return 0;
}

/* Program Unload: 0, the status, or -errno. */
static int prog_unload(int fd, uint16_t slot)
{
	struct csd_ioc_program_unload u = { .slot = slot };

	if (ioctl(fd, CSD_IOC_PROGRAM_UNLOAD, &u))
		return -errno;
	return (int)u.status;
}

/* A tenant's records (RACE_RECORDS of 16 bytes) in a new allocation; its handle. */
static uint32_t race_records(int fd)
{
	struct csd_ioc_alloc a = { .size = 4096 };
	static uint8_t rec[RACE_RECORDS * 16];
	struct csd_ioc_xfer x = { .len = sizeof(rec), .buf = (uintptr_t)rec };
	uint32_t key = 100, field = 1;

	for (int i = 0; i < RACE_RECORDS; i++) {
		memcpy(rec + 16 * i, &key, 4);
		memcpy(rec + 16 * i + 4, &field, 4);
	}
	if (ioctl(fd, CSD_IOC_ALLOC, &a)) {
		perror("CSD_IOC_ALLOC");
		exit(2);
	}
	x.handle = a.handle;
	if (ioctl(fd, CSD_IOC_WRITE, &x) || x.status) {
		perror("CSD_IOC_WRITE");
		exit(2);
	}
	return a.handle;
}

/* A reduce Execute of slot over the tenant's records: 0 and the sum, the status, or -errno. */
static int prog_reduce(int fd, uint32_t handle, uint16_t slot, uint64_t *sum)
{
	uint64_t rr[4] = { 0, RACE_RECORDS * 16, 0, 0 };
	uint32_t p[6] = { RACE_RECORDS, 2, 1, 0, RACE_PARAM, 0 }; /* reduce, one param */
	struct csd_ioc_exec e = { .handle = handle };
	uint8_t d[128];

	e.desc = (uintptr_t)d;
	e.desc_len = descriptor(d, slot, 2, rr, p, sizeof(p));
	if (ioctl(fd, CSD_IOC_EXEC, &e))
		return -errno;
	if (e.status)
		return (int)e.status;
	*sum = (uint64_t)e.dw1 << 32 | e.dw0;
	return 0;
}

/* B's side of a round once A is done: if it got the slot, its program is still there. */
static void b_check(int fd, uint32_t handle, int loaded, uint16_t slot, int race)
{
	uint64_t sum = 0;
	int r;

	if (!loaded)
		return;
	sh->b_loaded[race]++;
	r = prog_reduce(fd, handle, slot, &sum);
	if (r || sum != THRESHOLD_SUM) {
		sh->b_lost[race]++;
		printf("B's program in slot %#x is gone: Execute gave %d (sum %llu)\n", slot, r,
		       (unsigned long long)sum);
	}
	r = prog_unload(fd, slot);
	if (r)
		printf("B's unload of its slot %#x gave %d\n", slot, r);
}

/* B: loads threshold into sh->slot until it gets it or A is done (then once more). */
static int b_grab(int fd, const uint8_t *img, uint32_t size)
{
	while (!sh->a_started)
		sched_yield();
	for (;;) {
		int done = sh->a_done;

		if (prog_load(fd, img, size, sh->slot, NULL) == 0)
			return 1;
		if (done)
			return 0;
	}
}

struct a_thread {
	int fd;
	uint16_t slot;
	pthread_barrier_t *go;
	int result;
	const uint8_t *img;
	uint32_t size;
	volatile int *stop;
	int unloads; /* successful unloads (the second thread of the upload round) */
};

static void *a_unload(void *arg)
{
	struct a_thread *t = arg;

	pthread_barrier_wait(t->go);
	t->result = prog_unload(t->fd, t->slot);
	return NULL;
}

static void *a_upload(void *arg)
{
	struct a_thread *t = arg;

	pthread_barrier_wait(t->go);
	t->result = prog_load(t->fd, t->img, t->size, t->slot, NULL);
	*t->stop = 1;
	sh->a_started = 1;
	return NULL;
}

static void *a_unload_loop(void *arg)
{
	struct a_thread *t = arg;

	pthread_barrier_wait(t->go);
	while (!*t->stop) {
		if (prog_unload(t->fd, t->slot) == 0) {
			t->unloads++;
			sh->a_started = 1; /* B loads into it now */
		}
	}
	return NULL;
}

struct a_exec {
	int fd;
	uint32_t handle;
	uint16_t slot;
	volatile int ran; /* Executes that completed with success */
	volatile int ended;
};

static void *a_exec_loop(void *arg)
{
	struct a_exec *x = arg;

	for (;;) {
		uint64_t sum = 0;
		int r = prog_reduce(x->fd, x->handle, x->slot, &sum);

		if (r) {
			x->ended = 1;
			break; /* EPERM once unloaded (or the drive's Invalid Program) */
		}
		x->ran++;
		__atomic_add_fetch(&sh->a_execs, 1, __ATOMIC_SEQ_CST);
		if (sum != PROJECT_SUM) {
			__atomic_add_fetch(&sh->a_foreign, 1, __ATOMIC_SEQ_CST);
			printf("A's Execute of slot %#x ran another program (sum %llu, not %d)\n",
			       x->slot, (unsigned long long)sum, PROJECT_SUM);
		}
	}
	return NULL;
}

/* Tenant A's rounds of the three races. */
static void race_a(const char *path, int rounds)
{
	static uint8_t project[IMAGE_MAX], big[IMAGE_MAX];
	uint32_t np = load_image_file("project.o", project), nb = load_image_file("long_program.o", big);
	int fd = open_dev(path);
	uint32_t handle = race_records(fd);
	pthread_barrier_t go;
	pthread_t t1, t2;

	shared_expect(np > 0 && nb > 256 * 1024, "A: images readable (long_program.o over one chunk)");
	/* 1: two threads of A unload its slot while B loads into it */
	for (int i = 0; i < rounds; i++) {
		struct a_thread u1 = { .fd = fd, .go = &go }, u2 = { .fd = fd, .go = &go };
		uint16_t slot = 0;

		if (prog_load(fd, project, np, 0, &slot)) {
			shared_expect(0, "A: program load");
			break;
		}
		sh->slot = slot;
		sh->a_done = 0;
		sh->a_started = 1;
		u1.slot = u2.slot = slot;
		pthread_barrier_init(&go, NULL, 2);
		pthread_barrier_wait(&sh->step); /* B starts loading */
		pthread_create(&t1, NULL, a_unload, &u1);
		pthread_create(&t2, NULL, a_unload, &u2);
		pthread_join(t1, NULL);
		pthread_join(t2, NULL);
		pthread_barrier_destroy(&go);
		if (u1.result == 0 && u2.result == 0)
			__atomic_add_fetch(&sh->a_both, 1, __ATOMIC_SEQ_CST);
		sh->a_done = 1;
		pthread_barrier_wait(&sh->step); /* B checks and unloads */
		pthread_barrier_wait(&sh->step);
	}
	/* 2: A's second thread unloads the slot A's first is uploading into; B loads into it */
	for (int i = 0; i < rounds; i++) {
		volatile int stop = 0;
		struct a_thread up = { .fd = fd, .go = &go, .img = big, .size = nb, .stop = &stop },
				un = { .fd = fd, .go = &go, .stop = &stop };

		up.slot = un.slot = sh->slot = 0x1f0;
		sh->a_done = 0;
		sh->a_started = 0;
		pthread_barrier_init(&go, NULL, 2);
		pthread_barrier_wait(&sh->step);
		pthread_create(&t1, NULL, a_upload, &up);
		pthread_create(&t2, NULL, a_unload_loop, &un);
		pthread_join(t1, NULL);
		pthread_join(t2, NULL);
		pthread_barrier_destroy(&go);
		if (up.result == 0 && un.unloads == 0)
			prog_unload(fd, up.slot); /* A's program, still there */
		sh->a_done = 1;
		pthread_barrier_wait(&sh->step);
		pthread_barrier_wait(&sh->step);
	}
	/* 3: A executes its slot while its second thread unloads it and B loads into it */
	for (int i = 0; i < rounds; i++) {
		struct a_exec x = { .fd = fd, .handle = handle };
		uint16_t slot = 0;
		int r;

		if (prog_load(fd, project, np, 0, &slot)) {
			shared_expect(0, "A: program load");
			break;
		}
		x.slot = sh->slot = slot;
		sh->a_done = 0;
		sh->a_started = 1;
		pthread_barrier_wait(&sh->step);
		pthread_create(&t1, NULL, a_exec_loop, &x);
		while (x.ran < 2 && !x.ended)
			usleep(100);
		/* the drive refuses an Unload while an Execute of the slot runs: again */
		while ((r = prog_unload(fd, slot)) > 0 && (r & 0x7ff) == 0x1c7)
			;
		shared_expect(r == 0, "A: unload of its slot while it executes it");
		pthread_join(t1, NULL);
		sh->a_done = 1;
		pthread_barrier_wait(&sh->step);
		pthread_barrier_wait(&sh->step);
	}
	close(fd);
}

/* Tenant B's side of race_a's rounds. */
static void race_b(const char *path, int rounds)
{
	static uint8_t threshold[IMAGE_MAX];
	uint32_t n = load_image_file("threshold.o", threshold);
	int fd = open_dev(path);
	uint32_t handle = race_records(fd);

	shared_expect(n > 0, "B: image readable");
	for (int i = 0; i < 3 * rounds; i++) {
		int loaded;

		pthread_barrier_wait(&sh->step);
		loaded = b_grab(fd, threshold, n);
		pthread_barrier_wait(&sh->step);
		b_check(fd, handle, loaded, sh->slot, i / rounds);
		pthread_barrier_wait(&sh->step);
	}
	close(fd);
}

/* Runs fn as user `name` in a child process; returns its pid. */
static pid_t tenant(const char *name, void (*fn)(const char *, int), const char *path, int rounds)
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		alarm(600); /* a tenant stuck at a barrier its partner never reaches */
		become(name);
		fn(path, rounds);
		fflush(stdout);
		_exit(0);
	}
	return pid;
}

/* Waits for a tenant's process; whether it exited with 0. */
static int tenant_ok(pid_t pid)
{
	int st = 0;

	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The shared state, its barrier for `parties` processes. */
static struct shared *shared_new(unsigned int parties)
{
	pthread_barrierattr_t attr;
	struct shared *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				-1, 0);

	if (s == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	memset(s, 0, sizeof(*s));
	pthread_barrierattr_init(&attr);
	pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
	pthread_barrier_init(&s->step, &attr, parties);
	return s;
}

/* Writes a module parameter of csd.ko; whether it took. */
static int set_param(const char *name, const char *value)
{
	char path[256];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/module/csd/parameters/%s", name);
	f = fopen(path, "w");
	if (!f)
		return 0;
	ok = fputs(value, f) >= 0;
	return fclose(f) == 0 && ok;
}

struct quota_thread {
	int fd;
	const uint8_t *img;
	uint32_t size;
	int ok, edquot, other;
};

/* Loads and unloads an image 8 times; counts what each load gave. */
static void *quota_loader(void *arg)
{
	struct quota_thread *q = arg;

	for (int i = 0; i < 8; i++) {
		uint16_t slot = 0;
		int r = prog_load(q->fd, q->img, q->size, 0, &slot);

		if (r == 0) {
			q->ok++;
			if (prog_unload(q->fd, slot))
				q->other++;
		} else if (r == -EDQUOT) {
			q->edquot++;
		} else {
			printf("load gave %d\n", r);
			q->other++;
		}
	}
	return NULL;
}

/* Tenant A under quotas the parent set: 2 slots, then bytes (the phase in sh->slot). */
static void quota_a(const char *path, int unused)
{
	static uint8_t small[IMAGE_MAX], big[IMAGE_MAX];
	uint32_t ns = load_image_file("threshold.o", small), nb = load_image_file("long_program.o", big);
	int f1 = open_dev(path), f2 = open_dev(path);
	uint16_t s1 = 0, s2 = 0, s3 = 0;

	(void)unused;
	shared_expect(ns > 0 && nb > 0, "A: images readable");
	/* phase 1: program_slots_per_user=2, bytes unlimited */
	pthread_barrier_wait(&sh->step);
	shared_expect(prog_load(f1, small, ns, 0, &s1) == 0, "A: first slot");
	shared_expect(prog_load(f2, small, ns, 0, &s2) == 0, "A: second slot, through another file");
	shared_expect(prog_load(f1, small, ns, 0, &s3) == -EDQUOT, "A: a third slot: EDQUOT");
	shared_expect(prog_load(f2, small, ns, 0, &s3) == -EDQUOT,
		      "A: a third slot through the other file: EDQUOT");
	pthread_barrier_wait(&sh->step); /* B loads: another user's quota */
	pthread_barrier_wait(&sh->step);
	shared_expect(prog_unload(f1, s1) == 0, "A: unloads one");
	shared_expect(prog_load(f2, small, ns, 0, &s3) == 0, "A: then loads again");
	shared_expect(prog_unload(f2, s2) == 0 && prog_unload(f2, s3) == 0, "A: unloads the rest");
	/* phase 2: slots unlimited, program_loading_bytes_per_user below the big image */
	pthread_barrier_wait(&sh->step);
	shared_expect(prog_load(f1, big, nb, 0, &s1) == -EDQUOT,
		      "A: an upload over the bytes quota: EDQUOT");
	shared_expect(prog_load(f1, small, ns, 0, &s1) == 0 && prog_unload(f1, s1) == 0,
		      "A: a small one fits");
	shared_expect(prog_load(f1, big, 5 << 20, 0, &s1) == 0x4002,
		      "A: an image over 4 MiB: the drive's Invalid Field, not EDQUOT");
	/* phase 3: bytes quota of one big image; four threads over two files upload it */
	pthread_barrier_wait(&sh->step);
	{
		struct quota_thread q[4];
		pthread_t t[4];
		int ok = 0, edq = 0, other = 0;

		for (int i = 0; i < 4; i++) {
			q[i] = (struct quota_thread){ .fd = i % 2 ? f2 : f1, .img = big, .size = nb };
			pthread_create(&t[i], NULL, quota_loader, &q[i]);
		}
		for (int i = 0; i < 4; i++) {
			pthread_join(t[i], NULL);
			ok += q[i].ok;
			edq += q[i].edquot;
			other += q[i].other;
		}
		printf("4 threads x 8 uploads of %u bytes, quota %u: %d loaded, %d EDQUOT\n", nb,
		       nb + 4096, ok, edq);
		shared_expect(other == 0 && ok + edq == 32 && ok > 0,
			      "A: concurrent uploads: each loaded or EDQUOT, nothing else");
		shared_expect(prog_load(f1, big, nb, 0, &s1) == 0 && prog_unload(f1, s1) == 0,
			      "A: afterwards the quota is whole again");
	}
	pthread_barrier_wait(&sh->step);
	close(f1);
	close(f2);
}

/* Tenant B while A is at its slot quota: its own quota is untouched. */
static void quota_b(const char *path, int unused)
{
	static uint8_t small[IMAGE_MAX];
	uint32_t ns = load_image_file("threshold.o", small);
	int fd = open_dev(path);
	uint16_t s = 0;

	(void)unused;
	pthread_barrier_wait(&sh->step);
	pthread_barrier_wait(&sh->step);
	shared_expect(prog_load(fd, small, ns, 0, &s) == 0 && prog_unload(fd, s) == 0,
		      "B: loads while A is at its quota");
	pthread_barrier_wait(&sh->step);
	pthread_barrier_wait(&sh->step);
	pthread_barrier_wait(&sh->step);
	pthread_barrier_wait(&sh->step);
	close(fd);
}

/*
 * An SLM allocation of len bytes holding the pattern (i * mul + add) & 0xff, and a
 * peer-to-peer read of all of it into BAR bar at offset 0, for the caller to aim.
 */
static struct csd_ioc_p2p p2p_source(int fd, uint64_t len, unsigned int mul, unsigned int add,
				     uint32_t bar, const char *written)
{
	struct csd_ioc_alloc a = { .size = len };
	struct csd_ioc_xfer x = { 0 };
	struct csd_ioc_p2p p = { 0 };
	char *pat = malloc(len);

	for (uint64_t i = 0; i < len; i++)
		pat[i] = (char)((i * mul + add) & 0xff);
	expect(ioctl(fd, CSD_IOC_ALLOC, &a) == 0, "allocation for the peer transfer");
	x.handle = a.handle;
	x.len = len;
	x.buf = (uintptr_t)pat;
	expect(ioctl(fd, CSD_IOC_WRITE, &x) == 0 && x.status == 0, written);
	free(pat);
	p.handle = a.handle;
	p.len = len;
	p.bar = bar;
	return p;
}

/* Asks the host to run check NAME with ARGS; whether it answered success. */
static int ask_host(const char *line)
{
	char reply[64] = "";

	printf("@@CSD HOSTCHECK %s\n", line);
	fflush(stdout);
	if (!fgets(reply, sizeof(reply), stdin))
		return 0;
	return !strncmp(reply, "@@HOST 0", 8);
}

/* Resets the controller of the csd device and waits until it is live again. */
static int reset_controller(void)
{
	char state[32] = "";
	int i, fd = open("/sys/class/nvme/nvme0/reset_controller", O_WRONLY);

	if (fd < 0 || write(fd, "1", 1) != 1) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	close(fd);
	for (i = 0; i < 100; i++) {
		FILE *f = fopen("/sys/class/nvme/nvme0/state", "r");

		if (f && fgets(state, sizeof(state), f) && !strncmp(state, "live", 4)) {
			fclose(f);
			return 1;
		}
		if (f)
			fclose(f);
		usleep(100000);
	}
	return 0;
}

/* kmod_check agent: see the top of this file. */
static int agent(int fd, char **argv, int argc)
{
	uint64_t off = strtoull(argv[3], NULL, 0), len = strtoull(argv[4], NULL, 0);
	struct csd_ioc_agent_queue q = { .bar_offset = off, .len = len };
	struct csd_ioc_agent_queue bad = q;
	const char *slm = argv[6];
	char line[1024];
	int i;

	q.depth = strtoul(argv[5], NULL, 0);
	bad.depth = 1;
	expect(fails_with(fd, CSD_IOC_AGENT_QUEUE, &bad, EINVAL), "agent queue of depth 1 refused");
	bad.depth = q.depth;
	bad.len = len - 512;
	expect(fails_with(fd, CSD_IOC_AGENT_QUEUE, &bad, EINVAL), "agent queue of a length not a page multiple refused");
	bad.len = 8192;
	expect(fails_with(fd, CSD_IOC_AGENT_QUEUE, &bad, EINVAL), "agent queue with no room for data refused");
	bad.len = len;
	bad.bar_offset = 1ull << 40;
	expect(fails_with(fd, CSD_IOC_AGENT_QUEUE, &bad, EPERM), "agent queue outside the peer's window refused");
	bad.bar_offset = off;
	bad.reserved = 1;
	expect(fails_with(fd, CSD_IOC_AGENT_QUEUE, &bad, EINVAL), "agent queue with reserved bits set refused");
	expect(ioctl(fd, CSD_IOC_AGENT_QUEUE, &q) == 0 && q.status == 0 && q.qid,
	       "agent queue pair created");
	if (!q.qid) {
		printf("status 0x%x\n", q.status);
		return report();
	}
	printf("agent queue pair %u: bus 0x%llx, SQ +%llu, CQ +%llu, doorbells +%llu, data +%llu, nsid %u\n",
	       q.qid, (unsigned long long)q.bus_addr, (unsigned long long)q.sq_offset,
	       (unsigned long long)q.cq_offset, (unsigned long long)q.db_offset,
	       (unsigned long long)q.data_offset, q.nsid);
	for (i = 7; i < argc; i++) {
		if (!strcmp(argv[i], "reset")) {
			expect(reset_controller(), "controller reset with the agent queue pair live: live again");
			continue;
		}
		if (!strncmp(argv[i], "sh:", 3)) {
			snprintf(line, sizeof(line), "sh %s", argv[i] + 3);
			expect(system(line) == 0, argv[i]);
			continue;
		}
		if (strncmp(argv[i], "host:", 5)) {
			fprintf(stderr, "unknown action %s\n", argv[i]);
			return 2;
		}
		snprintf(line, sizeof(line), "agent-run %s %llx,%llx,%llx,%llx,%llx,%llx,%llx,%u,%u,%u,%u %s", slm,
			 (unsigned long long)off, (unsigned long long)len, (unsigned long long)q.bus_addr,
			 (unsigned long long)q.sq_offset, (unsigned long long)q.cq_offset,
			 (unsigned long long)q.db_offset, (unsigned long long)q.data_offset, q.depth,
			 q.nsid, q.lba_size, q.qid, argv[i] + 5);
		for (char *c = line; *c; c++)
			if (*c == ',' && c > line + strlen(line) - strlen(argv[i] + 5))
				*c = ' ';
		expect(ask_host(line), argv[i]);
	}
	return report();
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
	if (!strcmp(what, "agent") && argc >= 7)
		return agent(fd, argv, argc);
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
	if (!strcmp(what, "program-race") && argc == 7) {
		int rounds = atoi(argv[6]);
		pid_t a, b;

		close(fd);
		bpfdir = argv[5];
		sh = shared_new(2);
		a = tenant(argv[3], race_a, argv[2], rounds);
		b = tenant(argv[4], race_b, argv[2], rounds);
		expect(tenant_ok(a) && tenant_ok(b), "both tenants ran to the end");
		for (int k = 0; k < 3; k++)
			printf("%s: %d rounds; B got the slot in %d, then lost its program in %d\n",
			       k == 0 ? "two unloads by A, a load by B" :
			       k == 1 ? "an unload by A during A's upload, a load by B" :
			       "A's Executes, an unload by A, a load by B",
			       rounds, sh->b_loaded[k], sh->b_lost[k]);
		printf("both of A's unloads succeeded in %d rounds; A ran %d Executes, %d of "
		       "another's program\n", sh->a_both, sh->a_execs, sh->a_foreign);
		expect(sh->failures == 0, "no failed check in the tenants");
		expect(sh->b_loaded[0] + sh->b_loaded[1] + sh->b_loaded[2] > 0,
		       "B loaded into the contested slot");
		expect(sh->b_lost[0] + sh->b_lost[1] + sh->b_lost[2] == 0,
		       "no unload or cleanup of A removed or disowned B's program");
		expect(sh->a_both == 0, "one of two unloads of a slot unloads it, the other refuses");
		expect(sh->a_execs > 0 && sh->a_foreign == 0, "A's Executes ran only A's program");
		return report();
	}
	if (!strcmp(what, "program-quota") && argc == 6) {
		char big[32];
		pid_t a, b;
		int ok;

		close(fd);
		bpfdir = argv[5];
		sh = shared_new(3); /* A, B and this process, which sets the quotas */
		a = tenant(argv[3], quota_a, argv[2], 0);
		b = tenant(argv[4], quota_b, argv[2], 0);
		ok = set_param("program_slots_per_user", "2") &&
		     set_param("program_loading_bytes_per_user", "0");
		expect(ok, "quota parameters set: 2 slots per user");
		pthread_barrier_wait(&sh->step);
		pthread_barrier_wait(&sh->step);
		pthread_barrier_wait(&sh->step);
		expect(set_param("program_slots_per_user", "0") &&
		       set_param("program_loading_bytes_per_user", "300000"),
		       "300000 bytes being uploaded per user");
		pthread_barrier_wait(&sh->step);
		{
			static uint8_t img[IMAGE_MAX];

			snprintf(big, sizeof(big), "%u", load_image_file("long_program.o", img) + 4096);
		}
		expect(set_param("program_loading_bytes_per_user", big), "one big image's bytes");
		pthread_barrier_wait(&sh->step);
		pthread_barrier_wait(&sh->step);
		expect(set_param("program_slots_per_user", "16") &&
		       set_param("program_loading_bytes_per_user", "4194304"), "defaults again");
		expect(tenant_ok(a) && tenant_ok(b), "both tenants ran to the end");
		expect(sh->failures == 0, "no failed check in the tenants");
		return report();
	}
	if (!strcmp(what, "p2p-other") && argc == 7) {
		uint64_t own = strtoull(argv[4], NULL, 0), other = strtoull(argv[5], NULL, 0);
		uint64_t len = strtoull(argv[6], NULL, 0);
		struct csd_ioc_p2p p = p2p_source(fd, len, 17, 3, (uint32_t)atoi(argv[3]), "own pattern written into SLM");

		p.bar_offset = other;
		expect(fails_with(fd, CSD_IOC_P2P_READ, &p, EPERM),
		       "into the other tenant's window: EPERM");
		p.len = 8192;
		p.bar_offset = own - 4096;
		expect(fails_with(fd, CSD_IOC_P2P_READ, &p, EPERM),
		       "straddling the two windows: EPERM");
		p.len = len;
		p.bar_offset = own;
		expect(ioctl(fd, CSD_IOC_P2P_READ, &p) == 0 && p.status == 0, "into its own window");
		return report();
	}
	if (!strcmp(what, "p2p") && argc == 6) {
		uint64_t len = strtoull(argv[4], NULL, 0), window = strtoull(argv[5], NULL, 0);
		struct csd_ioc_p2p p = p2p_source(fd, len, 31, 7, (uint32_t)atoi(argv[3]), "pattern written into SLM");

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
