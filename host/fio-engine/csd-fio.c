// SPDX-License-Identifier: MIT
/*
 * csd-fio.c - fio's external engine for nvme-csd drives (docs/fio.md), over libcsd's C API:
 *   ioengine=external:csd-fio.so
 * Each job opens the drive named by csd_device (default: its filename) and runs, at any
 * iodepth (one thread per slot), one of:
 *   csd_mode=slm    writes are SLM Write, reads SLM Read, of a window of SLM (the job's size)
 *   csd_mode=media  reads are SLM Load, writes SLM Store, of the namespace's LBAs at the
 *                   I/O's offset (through SLM of its own; no data crosses to the host)
 *   csd_mode=exec   each read runs a program (csd_program, its parameters as csd_* options,
 *                   or csd_bpf=FILE.o, an eBPF program loaded for the job) over the window's
 *                   bytes at the I/O's offset and length; csd_verify=1 checks every result
 *                   against the same computation on the host.
 * Built against fio's source of the installed fio (host/fio-engine/build.sh), as fio's own
 * engines are.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fio.h"
#include "optgroup.h"
#include "verify.h"

#include "csd.h"
#include "csd_crc32c.h"

#define CSD_DEFAULT_WINDOW (16u << 20)

/* The engine's options, as fio stores them (strings parsed at init, to name bad values). */
struct csd_fio_options {
	void *pad; /* fio: no option at offset 0 */
	char *device;
	char *mode;
	char *program;
	char *bpf;
	char *record_size;
	char *bpf_mode;
	char *param;
	char *algo;
	char *op;
	char *dtype;
	char *a;
	char *b;
	char *field_offset;
	char *type;
	char *lo;
	char *hi;
	char *scale;
	char *zero_point;
	unsigned int uring;
	unsigned int verify;
};

#define CSD_STR_OPT(n, field, text)                                                        \
	{                                                                                  \
		.name = n, .lname = n, .type = FIO_OPT_STR_STORE,                          \
		.off1 = offsetof(struct csd_fio_options, field), .help = text,             \
		.category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,                  \
	}

static struct fio_option options[] = {
	CSD_STR_OPT("csd_device", device, "the drive (any path libcsd opens; default: the filename)"),
	CSD_STR_OPT("csd_mode", mode, "slm (SLM Write/Read), media (SLM Load/Store) or exec (a program)"),
	CSD_STR_OPT("csd_program", program, "exec: the program's name (checksum, copy, ...) or id"),
	CSD_STR_OPT("csd_bpf", bpf, "exec: an eBPF object loaded for the job and run"),
	CSD_STR_OPT("csd_record_size", record_size, "csd_bpf, filter: bytes per record"),
	CSD_STR_OPT("csd_bpf_mode", bpf_mode, "csd_bpf: filter, map or reduce"),
	CSD_STR_OPT("csd_param", param, "csd_bpf: u64 parameters, comma-separated"),
	CSD_STR_OPT("csd_algo", algo, "checksum: crc32c or xxh64"),
	CSD_STR_OPT("csd_op", op, "elementwise, reduce, filter or convert: the operation"),
	CSD_STR_OPT("csd_dtype", dtype, "reduce: f32, f64, i32 or i64"),
	CSD_STR_OPT("csd_a", a, "elementwise axpb: a"),
	CSD_STR_OPT("csd_b", b, "elementwise axpb: b"),
	CSD_STR_OPT("csd_field_offset", field_offset, "filter: the field's byte offset in a record"),
	CSD_STR_OPT("csd_type", type, "filter: the field's type (i32, i64, u32, u64, f32, f64)"),
	CSD_STR_OPT("csd_lo", lo, "filter: the value compared with (between: the lower bound)"),
	CSD_STR_OPT("csd_hi", hi, "filter between: the upper bound"),
	CSD_STR_OPT("csd_scale", scale, "convert: scale"),
	CSD_STR_OPT("csd_zero_point", zero_point, "convert: zero point"),
	{
		.name = "csd_uring", .lname = "csd_uring", .type = FIO_OPT_BOOL,
		.off1 = offsetof(struct csd_fio_options, uring),
		.help = "/dev/ngXnY through io_uring passthrough (else ioctl)", .def = "0",
		.category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,
	},
	{
		.name = "csd_verify", .lname = "csd_verify", .type = FIO_OPT_BOOL,
		.off1 = offsetof(struct csd_fio_options, verify),
		.help = "exec: check each result against the host's computation", .def = "0",
		.category = FIO_OPT_C_ENGINE, .group = FIO_OPT_G_INVALID,
	},
	{ .name = NULL },
};

enum csd_mode { MODE_SLM, MODE_MEDIA, MODE_EXEC };

/* One job's state. */
struct csd_fio {
	csd_dev *dev;
	enum csd_mode mode;
	uint32_t lba_size;
	uint64_t lba_count;
	uint64_t window;      /* SLM offset of the window (slm, exec) */
	uint64_t window_size;
	uint8_t *host;        /* exec with csd_verify: the window's bytes as the host has them */
	uint64_t slots;       /* SLM offset of the per-I/O buffers */
	uint64_t slot_size;
	unsigned nslots;
	/* the program */
	uint16_t prog;
	uint16_t loaded;      /* csd_bpf: the slot loaded (unloaded at cleanup) */
	uint32_t elem;        /* bytes per element or record of the input */
	uint32_t out_per_elem; /* output bytes per input element (0: no output range) */
	uint8_t params[64];
	uint32_t param_len;
	uint32_t count_at;    /* offset in params of the element count to fill per I/O, or ~0 */
	/* decoded parameters the host check needs */
	uint32_t op, dtype, type, field_offset, algo, bpf_mode;
	float a, b;
	uint8_t lo[8], hi[8];
	uint64_t bpf_params[CSD_BPF_MAX_PARAMS];
	uint32_t nbpf_params;
	int verify;
	/* the threads serving the slots */
	pthread_mutex_t mu;
	pthread_cond_t work, done_cv;
	struct io_u **queue;  /* waiting for a thread: a ring of nslots */
	unsigned qhead, qlen;
	struct io_u **done;   /* completed, not yet reaped */
	unsigned ndone;
	struct io_u **events; /* reaped by getevents, handed out by event */
	pthread_t *threads;
	unsigned nthreads;
	int stop;
};

static int csd_fail(struct thread_data *td, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int csd_fail(struct thread_data *td, int err, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_err("csd: %s: %s\n", td->o.name, msg);
	return err < 0 ? err : -err;
}

static int csd_lib_fail(struct thread_data *td, int rc, const char *what)
{
	return csd_fail(td, rc, "%s: %s", what, csd_last_error());
}

/* A name from a spec table (csd_spec.h), or -1 naming the choices. */
static int csd_lookup(struct thread_data *td, const char *opt, const char *v, const struct csd_name *t,
		      uint32_t *out)
{
	char choices[256] = "";

	if (!v)
		return csd_fail(td, EINVAL, "%s is needed", opt);
	for (const struct csd_name *n = t; n->name; n++) {
		if (!strcmp(n->name, v)) {
			*out = n->value;
			return 0;
		}
		snprintf(choices + strlen(choices), sizeof(choices) - strlen(choices), "%s%s",
			 n == t ? "" : ", ", n->name);
	}
	return csd_fail(td, EINVAL, "%s=%s: not one of %s", opt, v, choices);
}

static int csd_number(struct thread_data *td, const char *opt, const char *v, uint64_t def, uint64_t *out)
{
	char *end;

	if (!v) {
		*out = def;
		return 0;
	}
	errno = 0;
	*out = strtoull(v, &end, 0);
	if (errno || end == v || *end)
		return csd_fail(td, EINVAL, "%s=%s: not a number", opt, v);
	return 0;
}

static int csd_float(struct thread_data *td, const char *opt, const char *v, float def, float *out)
{
	char *end;

	if (!v) {
		*out = def;
		return 0;
	}
	*out = strtof(v, &end);
	if (end == v || *end)
		return csd_fail(td, EINVAL, "%s=%s: not a number", opt, v);
	return 0;
}

/* filter's lo/hi: an integer for integer fields (two's complement), a double for f32/f64. */
static int csd_value(struct thread_data *td, const char *opt, const char *v, uint32_t type, uint8_t out[8])
{
	char *end;

	memset(out, 0, 8);
	if (!v)
		return 0;
	if (type == CSD_FT_F32 || type == CSD_FT_F64) {
		double d = strtod(v, &end);

		if (end == v || *end)
			return csd_fail(td, EINVAL, "%s=%s: not a number", opt, v);
		memcpy(out, &d, 8);
	} else {
		errno = 0;
		uint64_t u = *v == '-' ? (uint64_t)strtoll(v, &end, 0) : strtoull(v, &end, 0);

		if (errno || end == v || *end)
			return csd_fail(td, EINVAL, "%s=%s: not an integer", opt, v);
		memcpy(out, &u, 8);
	}
	return 0;
}

static void put32(struct csd_fio *c, uint32_t v)
{
	memcpy(c->params + c->param_len, &v, 4);
	c->param_len += 4;
}

static void put_bytes(struct csd_fio *c, const void *p, uint32_t n)
{
	memcpy(c->params + c->param_len, p, n);
	c->param_len += n;
}

/* The program of csd_program / csd_bpf and its parameter block (count filled per I/O). */
static int csd_setup_program(struct thread_data *td, struct csd_fio *c, struct csd_fio_options *o)
{
	uint64_t v;
	int err = 0;

	c->count_at = ~0u;
	c->elem = 1;
	if (o->bpf) {
		FILE *f = fopen(o->bpf, "rb");
		long size;
		void *image;
		uint32_t fault = 0;
		char *p, *save = NULL;

		if (!f)
			return csd_fail(td, errno, "csd_bpf=%s: %s", o->bpf, strerror(errno));
		fseek(f, 0, SEEK_END);
		size = ftell(f);
		fseek(f, 0, SEEK_SET);
		image = malloc(size > 0 ? size : 1);
		if (size <= 0 || fread(image, 1, size, f) != (size_t)size) {
			fclose(f);
			free(image);
			return csd_fail(td, EIO, "csd_bpf=%s: cannot read it", o->bpf);
		}
		fclose(f);
		err = csd_number(td, "csd_record_size", o->record_size, 0, &v);
		if (!err && (v == 0 || v > CSD_MAX_RECORD_SIZE))
			err = csd_fail(td, EINVAL, "csd_bpf needs csd_record_size (1 to %u)", CSD_MAX_RECORD_SIZE);
		if (!err)
			err = csd_lookup(td, "csd_bpf_mode", o->bpf_mode ? o->bpf_mode : "filter", csd_bpf_mode_names,
					 &c->bpf_mode);
		if (!err && c->bpf_mode == CSD_BPF_CHASE)
			err = csd_fail(td, EINVAL, "csd_bpf_mode=chase reads the namespace, not the I/O's SLM");
		c->elem = (uint32_t)v;
		if (!err) {
			int rc = csd_program_load(c->dev, image, (uint32_t)size, c->elem, &c->loaded, &fault);

			if (rc && fault == 0xFFFFFFFFu) /* no instruction: the image is no ELF object it takes */
				err = csd_fail(td, rc, "csd_bpf=%s refused: %s", o->bpf, csd_last_error());
			else if (rc)
				err = csd_fail(td, rc, "csd_bpf=%s refused: %s (instruction %u)", o->bpf,
					       csd_last_error(), fault);
		}
		free(image);
		if (err)
			return err;
		c->prog = c->loaded;
		for (p = o->param ? strtok_r(o->param, ",", &save) : NULL; p; p = strtok_r(NULL, ",", &save)) {
			if (c->nbpf_params == CSD_BPF_MAX_PARAMS)
				return csd_fail(td, EINVAL, "csd_param: at most %d values", CSD_BPF_MAX_PARAMS);
			if (csd_number(td, "csd_param", p, 0, &c->bpf_params[c->nbpf_params]))
				return -EINVAL;
			c->nbpf_params++;
		}
		c->count_at = 0;
		put32(c, 0);
		put32(c, c->bpf_mode);
		put32(c, c->nbpf_params);
		put32(c, 0);
		put_bytes(c, c->bpf_params, c->nbpf_params * 8);
		c->out_per_elem = c->bpf_mode == CSD_BPF_FILTER ? c->elem : c->bpf_mode == CSD_BPF_MAP ? 8 : 0;
		if (c->verify)
			return csd_fail(td, EINVAL, "csd_verify: the host cannot run a downloaded program");
		return 0;
	}
	if (!o->program)
		return csd_fail(td, EINVAL, "csd_mode=exec needs csd_program or csd_bpf");
	c->prog = 0;
	for (uint16_t id = 1; id <= CSD_NR_DEVICE_PROGRAMS; id++)
		if (!strcmp(csd_program_name(id), o->program))
			c->prog = id;
	if (!c->prog) {
		if (csd_number(td, "csd_program", o->program, 0, &v) || v == 0 || v > CSD_MAX_PROGRAM_ID)
			return csd_fail(td, EINVAL, "csd_program=%s: no program of that name or id", o->program);
		c->prog = (uint16_t)v;
	}
	switch (c->prog) {
	case CSD_PROG_COPY:
		c->out_per_elem = 1;
		break;
	case CSD_PROG_CHECKSUM:
		err = csd_lookup(td, "csd_algo", o->algo, csd_checksum_algo_names, &c->algo);
		put32(c, c->algo);
		if (!err && c->verify && c->algo != CSD_CKSUM_CRC32C)
			err = csd_fail(td, EINVAL, "csd_verify: the host checks crc32c only");
		break;
	case CSD_PROG_ELEMENTWISE:
		err = csd_lookup(td, "csd_op", o->op, csd_elementwise_op_names, &c->op);
		if (!err && c->op < CSD_EW_RELU)
			err = csd_fail(td, EINVAL, "csd_op=%s takes two inputs; the I/O has one range", o->op);
		err = err ?: csd_float(td, "csd_a", o->a, 0, &c->a);
		err = err ?: csd_float(td, "csd_b", o->b, 0, &c->b);
		if (!err && c->verify && c->op != CSD_EW_RELU && c->op != CSD_EW_ABS && c->op != CSD_EW_AXPB)
			err = csd_fail(td, EINVAL, "csd_verify: the host checks relu, abs and axpb (exact in f32)");
		c->elem = 4;
		c->out_per_elem = 4;
		put32(c, c->op);
		c->count_at = c->param_len;
		put32(c, 0);
		put_bytes(c, &c->a, 4);
		put_bytes(c, &c->b, 4);
		break;
	case CSD_PROG_REDUCE:
		err = csd_lookup(td, "csd_op", o->op, csd_reduce_op_names, &c->op);
		err = err ?: csd_lookup(td, "csd_dtype", o->dtype ? o->dtype : "f32", csd_dtype_names, &c->dtype);
		c->elem = c->dtype == CSD_DT_F32 || c->dtype == CSD_DT_I32 ? 4 : 8;
		c->out_per_elem = 0; /* one row: 8 bytes, the slot's */
		put32(c, c->op);
		put32(c, c->dtype);
		put32(c, 1); /* rows */
		c->count_at = c->param_len;
		put32(c, 0); /* cols */
		break;
	case CSD_PROG_FILTER:
		err = csd_number(td, "csd_record_size", o->record_size, 0, &v);
		if (!err && (v == 0 || v > 65536))
			err = csd_fail(td, EINVAL, "filter needs csd_record_size");
		c->elem = (uint32_t)v;
		err = err ?: csd_number(td, "csd_field_offset", o->field_offset, 0, &v);
		c->field_offset = (uint32_t)v;
		err = err ?: csd_lookup(td, "csd_type", o->type, csd_field_type_names, &c->type);
		err = err ?: csd_lookup(td, "csd_op", o->op, csd_filter_op_names, &c->op);
		err = err ?: csd_value(td, "csd_lo", o->lo, c->type, c->lo);
		err = err ?: csd_value(td, "csd_hi", o->hi, c->type, c->hi);
		if (!err && !o->lo)
			err = csd_fail(td, EINVAL, "filter needs csd_lo");
		if (!err && c->op == CSD_CMP_BETWEEN && !o->hi)
			err = csd_fail(td, EINVAL, "filter csd_op=between needs csd_hi");
		c->out_per_elem = c->elem;
		put32(c, c->elem);
		c->count_at = c->param_len;
		put32(c, 0);
		put32(c, c->field_offset);
		put32(c, c->type | c->op << 16);
		put32(c, CSD_FILTER_RECORDS);
		put32(c, 0);
		put_bytes(c, c->lo, 8);
		put_bytes(c, c->hi, 8);
		break;
	case CSD_PROG_CONVERT: {
		float scale = 1.0f;
		uint64_t zp = 0;

		err = csd_lookup(td, "csd_op", o->op, csd_convert_op_names, &c->op);
		err = err ?: csd_float(td, "csd_scale", o->scale, 1.0f, &scale);
		err = err ?: csd_number(td, "csd_zero_point", o->zero_point, 0, &zp);
		if (!err && c->verify)
			err = csd_fail(td, EINVAL, "csd_verify: the host does not check convert");
		c->elem = c->op == CSD_CVT_F16_F32 || c->op == CSD_CVT_BF16_F32 ? 2 :
			  c->op == CSD_CVT_I8_F32 || c->op == CSD_CVT_U8_F32 ? 1 : 4;
		c->out_per_elem = c->op == CSD_CVT_F32_F16 || c->op == CSD_CVT_F32_BF16 ? 2 :
				  c->op == CSD_CVT_F32_I8 ? 1 : 4;
		put32(c, c->op);
		c->count_at = c->param_len;
		put32(c, 0);
		put_bytes(c, &scale, 4);
		put32(c, (uint32_t)zp);
		break;
	}
	default:
		return csd_fail(td, EINVAL, "csd_program=%s: exec runs copy, checksum, elementwise (one input), reduce, "
			       "filter, convert or csd_bpf over the I/O's range", o->program);
	}
	return err;
}

/* Host's view of a finite f32 test value for the window (no NaN, no -0). */
static float csd_pattern_value(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (float)((int32_t)(*s >> 33) % 2000000) / 1000.0f + 0.5f;
}

static void *csd_worker(void *arg);

static int csd_init(struct thread_data *td)
{
	struct csd_fio_options *o = td->eo;
	struct csd_fio *c;
	const char *path = o->device ? o->device : (td->files && td->files[0] ? td->files[0]->file_name : NULL);
	uint64_t slm = 0;
	unsigned long long max_bs = td_max_bs(td);
	int rc;

	if (!path)
		return csd_fail(td, EINVAL, "no drive: set csd_device (or filename)");
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	td->io_ops_data = c;
	c->verify = o->verify;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->work, NULL);
	pthread_cond_init(&c->done_cv, NULL);
	rc = o->uring ? csd_open_uring(path, td->o.iodepth, &c->dev) : csd_open(path, &c->dev);
	if (rc)
		return csd_lib_fail(td, rc, path);
	csd_info(c->dev, &slm, NULL, NULL);
	csd_ns_info(c->dev, &c->lba_size, &c->lba_count);
	if (!o->mode)
		c->mode = o->program || o->bpf ? MODE_EXEC : MODE_SLM;
	else if (!strcmp(o->mode, "slm"))
		c->mode = MODE_SLM;
	else if (!strcmp(o->mode, "media"))
		c->mode = MODE_MEDIA;
	else if (!strcmp(o->mode, "exec"))
		c->mode = MODE_EXEC;
	else
		return csd_fail(td, EINVAL, "csd_mode=%s: not slm, media or exec", o->mode);
	if (c->mode == MODE_EXEC && (rc = csd_setup_program(td, c, o)))
		return rc;
	if (c->mode != MODE_EXEC && (o->program || o->bpf))
		return csd_fail(td, EINVAL, "csd_program and csd_bpf need csd_mode=exec");
	if (c->mode != MODE_EXEC && c->verify)
		return csd_fail(td, EINVAL, "csd_verify checks programs' results: csd_mode=%s runs none%s",
				c->mode == MODE_SLM ? "slm" : "media",
				c->mode == MODE_SLM ? " (fio's verify checks SLM data)" : "");
	if (c->mode == MODE_MEDIA && td->o.verify != VERIFY_NONE)
		return csd_fail(td, EINVAL, "csd_mode=media moves no data to the host: fio's verify cannot apply");
	if (c->mode == MODE_EXEC && (td_write(td) || td_trim(td)))
		return csd_fail(td, EINVAL, "csd_mode=exec runs programs on reads (rw=read or randread)");

	/* SLM: the window (slm, exec) and a buffer per I/O slot (media: the I/O; exec: the output) */
	c->nslots = td->o.iodepth;
	c->window_size = c->mode == MODE_MEDIA ? 0 : td->o.size ? td->o.size : CSD_DEFAULT_WINDOW;
	if (c->mode == MODE_MEDIA)
		c->slot_size = max_bs;
	else if (c->mode == MODE_EXEC)
		c->slot_size = c->out_per_elem ? (max_bs / c->elem + 1) * c->out_per_elem : 8;
	c->slot_size = (c->slot_size + 4095) & ~4095ull;
	if (c->window_size + c->slot_size * c->nslots > slm)
		return csd_fail(td, ENOSPC, "a window of %" PRIu64 " bytes and %u slots of %" PRIu64
			       " need more than the drive's %" PRIu64 " bytes of SLM (smaller size, bs or iodepth)",
			       c->window_size, c->nslots, c->slot_size, slm);
	if (c->window_size && (rc = csd_slm_alloc(c->dev, c->window_size, 4096, &c->window)))
		return csd_lib_fail(td, rc, "SLM for the window");
	if (c->slot_size && (rc = csd_slm_alloc(c->dev, c->slot_size * c->nslots, 4096, &c->slots)))
		return csd_lib_fail(td, rc, "SLM for the I/O slots");
	if (c->mode == MODE_EXEC) { /* the window's contents: finite f32 values, kept for the check */
		uint64_t seed = td->o.rand_seed ^ 0x9E3779B97F4A7C15ull;
		size_t chunk = 1u << 20;
		uint8_t *buf = c->verify ? malloc(c->window_size) : malloc(chunk);

		if (!buf)
			return -ENOMEM;
		for (uint64_t at = 0; at < c->window_size; at += chunk) {
			size_t n = c->window_size - at < chunk ? c->window_size - at : chunk;
			uint8_t *p = c->verify ? buf + at : buf;

			for (size_t i = 0; i + 4 <= n; i += 4) {
				float f = csd_pattern_value(&seed);

				memcpy(p + i, &f, 4);
			}
			if ((rc = csd_slm_write(c->dev, c->window + at, p, n))) {
				free(buf);
				return csd_lib_fail(td, rc, "filling the window");
			}
		}
		if (c->verify)
			c->host = buf;
		else
			free(buf);
	}
	c->queue = calloc(c->nslots, sizeof(*c->queue));
	c->done = calloc(c->nslots, sizeof(*c->done));
	c->events = calloc(c->nslots, sizeof(*c->events));
	c->threads = calloc(c->nslots, sizeof(*c->threads));
	if (!c->queue || !c->done || !c->events || !c->threads)
		return -ENOMEM;
	for (; c->nthreads < c->nslots; c->nthreads++)
		if (pthread_create(&c->threads[c->nthreads], NULL, csd_worker, td))
			return csd_fail(td, EAGAIN, "cannot start thread %u", c->nthreads);
	return 0;
}

/* An integer field v against lo (and hi, for a range) as the filter's op compares them. */
#define CSDF_COMPARE(op, v, lo, hi) \
	((op) == CSD_CMP_EQ ? (v) == (lo) : (op) == CSD_CMP_NE ? (v) != (lo) : \
	 (op) == CSD_CMP_LT ? (v) < (lo) : (op) == CSD_CMP_LE ? (v) <= (lo) : \
	 (op) == CSD_CMP_GT ? (v) > (lo) : (op) == CSD_CMP_GE ? (v) >= (lo) : \
	 (v) >= (lo) && (v) <= (hi))

/* ---- the host's computations (csd_verify) */

static int csd_field_matches(const struct csd_fio *c, const uint8_t *rec)
{
	const uint8_t *f = rec + c->field_offset;
	int lo_ok, hi_ok, eq;

	if (c->type == CSD_FT_F32 || c->type == CSD_FT_F64) {
		double v, lo, hi;
		float f32;

		if (c->type == CSD_FT_F32) {
			memcpy(&f32, f, 4);
			v = f32;
		} else {
			memcpy(&v, f, 8);
		}
		memcpy(&lo, c->lo, 8);
		memcpy(&hi, c->hi, 8);
		eq = v == lo;
		lo_ok = v > lo;
		hi_ok = v <= hi;
		switch (c->op) {
		case CSD_CMP_EQ: return eq;
		case CSD_CMP_NE: return v != lo;
		case CSD_CMP_LT: return v < lo;
		case CSD_CMP_LE: return v <= lo;
		case CSD_CMP_GT: return lo_ok;
		case CSD_CMP_GE: return v >= lo;
		default: return v >= lo && hi_ok;
		}
	} else if (c->type == CSD_FT_I32 || c->type == CSD_FT_I64) {
		int64_t v, lo, hi;
		int32_t i32;

		if (c->type == CSD_FT_I32) {
			memcpy(&i32, f, 4);
			v = i32;
		} else {
			memcpy(&v, f, 8);
		}
		memcpy(&lo, c->lo, 8);
		memcpy(&hi, c->hi, 8);
		return CSDF_COMPARE(c->op, v, lo, hi);
	} else {
		uint64_t v, lo, hi;
		uint32_t u32;

		if (c->type == CSD_FT_U32) {
			memcpy(&u32, f, 4);
			v = u32;
		} else {
			memcpy(&v, f, 8);
		}
		memcpy(&lo, c->lo, 8);
		memcpy(&hi, c->hi, 8);
		return CSDF_COMPARE(c->op, v, lo, hi);
	}
}

/* One row's reduction as the drive computes it (core/src/programs/reduce.cc); no NaN here. */
static uint64_t csd_reduce_host(const struct csd_fio *c, const uint8_t *x, uint32_t n)
{
	uint64_t bits = 0, best = 0;
	double fs = 0, fv;
	int64_t iv, ibest = 0;
	int want_max = c->op == CSD_RED_MAX || c->op == CSD_RED_ARGMAX;
	int is_float = c->dtype == CSD_DT_F32 || c->dtype == CSD_DT_F64;
	__int128 exact = 0;

	for (uint32_t i = 0; i < n; i++) {
		float f32;
		int32_t i32;

		if (c->dtype == CSD_DT_F32) {
			memcpy(&f32, x + 4 * i, 4);
			fv = f32;
			iv = 0;
		} else if (c->dtype == CSD_DT_F64) {
			memcpy(&fv, x + 8 * i, 8);
			iv = 0;
		} else if (c->dtype == CSD_DT_I32) {
			memcpy(&i32, x + 4 * i, 4);
			iv = i32;
			fv = 0;
		} else {
			memcpy(&iv, x + 8 * i, 8);
			fv = 0;
		}
		if (c->op == CSD_RED_SUM || c->op == CSD_RED_MEAN) {
			fs += fv;
			bits += (uint64_t)iv;
			exact += iv;
		} else if (i == 0 || (is_float ? (want_max ? fv > fs : fv < fs) : (want_max ? iv > ibest : iv < ibest))) {
			fs = fv;
			ibest = iv;
			best = i;
		}
	}
	if (c->op == CSD_RED_ARGMAX || c->op == CSD_RED_ARGMIN)
		return best;
	if (c->op == CSD_RED_MEAN) {
		double m = is_float ? fs / n : (double)exact / n;

		memcpy(&bits, &m, 8);
		return bits;
	}
	if (is_float) {
		memcpy(&bits, &fs, 8);
		return bits;
	}
	if (c->op == CSD_RED_SUM)
		return bits;
	memcpy(&bits, &ibest, 8);
	return bits;
}

/* Compares the drive's result for an I/O with the host's; 0 or EILSEQ (logged). */
static int csd_check(struct thread_data *td, struct csd_fio *c, struct io_u *io_u, uint64_t in, uint32_t n,
		     uint64_t out, uint32_t dw0, uint32_t dw1)
{
	const uint8_t *x = c->host + io_u->offset;
	uint64_t len = io_u->xfer_buflen;
	uint8_t *got = NULL, *want = NULL;
	uint64_t got_len = 0, want_len = 0;
	int bad = 0;

	(void)in;
	switch (c->prog) {
	case CSD_PROG_CHECKSUM: {
		uint32_t crc = csd_crc32c(x, len);

		if (dw0 != crc || dw1 != 0) {
			log_err("csd: %s: checksum of %" PRIu64 "+%" PRIu64 ": the drive %08x, the host %08x\n",
				td->o.name, (uint64_t)io_u->offset, len, dw0, crc);
			return EILSEQ;
		}
		return 0;
	}
	case CSD_PROG_COPY:
		want = malloc(len);
		memcpy(want, x, len);
		want_len = len;
		break;
	case CSD_PROG_ELEMENTWISE:
		want_len = (uint64_t)n * 4;
		want = malloc(want_len);
		for (uint32_t i = 0; i < n; i++) {
			float v, r;

			memcpy(&v, x + 4 * i, 4);
			r = c->op == CSD_EW_RELU ? (v > 0 ? v : 0.0f) : c->op == CSD_EW_ABS ? fabsf(v) : c->a * v + c->b;
			memcpy(want + 4 * i, &r, 4);
		}
		break;
	case CSD_PROG_REDUCE: {
		uint64_t r = csd_reduce_host(c, x, n);

		want_len = 8;
		want = malloc(8);
		memcpy(want, &r, 8);
		break;
	}
	case CSD_PROG_FILTER: {
		uint32_t kept = 0;

		want = malloc(len);
		for (uint32_t i = 0; i < n; i++) {
			if (csd_field_matches(c, x + (uint64_t)i * c->elem)) {
				memcpy(want + want_len, x + (uint64_t)i * c->elem, c->elem);
				want_len += c->elem;
				kept++;
			}
		}
		if (dw0 != want_len || dw1 != kept) {
			log_err("csd: %s: filter of %" PRIu64 "+%" PRIu64 ": the drive kept %u records (%u bytes), "
				"the host %u (%" PRIu64 ")\n", td->o.name, (uint64_t)io_u->offset, len, dw1, dw0, kept,
				want_len);
			free(want);
			return EILSEQ;
		}
		break;
	}
	default:
		return 0;
	}
	got_len = want_len;
	got = malloc(got_len ? got_len : 1);
	if (got_len && csd_slm_read(c->dev, out, got, got_len)) {
		log_err("csd: %s: reading the result back: %s\n", td->o.name, csd_last_error());
		bad = EIO;
	} else if (memcmp(got, want, got_len)) {
		uint64_t i = 0;

		while (got[i] == want[i])
			i++;
		log_err("csd: %s: %s of %" PRIu64 "+%" PRIu64 ": the drive's result differs from the host's at "
			"byte %" PRIu64 "\n", td->o.name, csd_program_name(c->prog), (uint64_t)io_u->offset, len, i);
		bad = EILSEQ;
	}
	free(got);
	free(want);
	return bad;
}

/* ---- one I/O, on a slot's thread */

static int csd_do(struct thread_data *td, struct csd_fio *c, struct io_u *io_u)
{
	uint64_t len = io_u->xfer_buflen, off = io_u->offset;
	uint64_t slot = c->slots + (uint64_t)io_u->index * c->slot_size;
	int rc;

	if (!ddir_rw(io_u->ddir))
		return 0; /* sync, trim: nothing to do */
	switch (c->mode) {
	case MODE_SLM:
		if (off + len > c->window_size)
			return EINVAL;
		rc = io_u->ddir == DDIR_WRITE ? csd_slm_write(c->dev, c->window + off, io_u->xfer_buf, len)
					      : csd_slm_read(c->dev, c->window + off, io_u->xfer_buf, len);
		break;
	case MODE_MEDIA:
		if (off % c->lba_size || len % c->lba_size) {
			log_err("csd: %s: %" PRIu64 "+%" PRIu64 " is not in whole LBAs of %u bytes\n", td->o.name,
				off, len, c->lba_size);
			return EINVAL;
		}
		rc = io_u->ddir == DDIR_WRITE ? csd_slm_store(c->dev, off / c->lba_size, len / c->lba_size, slot)
					      : csd_slm_load(c->dev, off / c->lba_size, len / c->lba_size, slot);
		break;
	default: {
		uint8_t params[64];
		uint32_t n = (uint32_t)(len / c->elem), dw0 = 0, dw1 = 0;
		csd_range r[2] = { { c->window + off, (uint64_t)n * c->elem }, { slot, c->slot_size } };
		uint16_t nr = c->out_per_elem || c->prog == CSD_PROG_REDUCE ? 2 : 1;

		if (off + len > c->window_size || n == 0)
			return EINVAL;
		memcpy(params, c->params, c->param_len);
		if (c->count_at != ~0u)
			memcpy(params + c->count_at, &n, 4);
		if (c->loaded && c->bpf_mode == CSD_BPF_REDUCE)
			nr = 1;
		if (c->loaded)
			rc = csd_program_run(c->dev, c->prog, c->bpf_mode, r[0], r[1], n, c->bpf_params, c->nbpf_params,
					     &dw0, &dw1);
		else
			rc = csd_execute(c->dev, c->prog, r, nr, params, c->param_len, &dw0, &dw1);
		if (!rc && c->verify)
			return csd_check(td, c, io_u, r[0].offset, n, slot, dw0, dw1);
		break;
	}
	}
	if (rc) {
		log_err("csd: %s: %s\n", td->o.name, csd_last_error());
		return rc == -EIO ? EIO : -rc;
	}
	return 0;
}

static void *csd_worker(void *arg)
{
	struct thread_data *td = arg;
	struct csd_fio *c = td->io_ops_data;

	pthread_mutex_lock(&c->mu);
	for (;;) {
		struct io_u *io_u;

		while (!c->qlen && !c->stop)
			pthread_cond_wait(&c->work, &c->mu);
		if (c->stop)
			break;
		io_u = c->queue[c->qhead];
		c->qhead = (c->qhead + 1) % c->nslots;
		c->qlen--;
		pthread_mutex_unlock(&c->mu);
		io_u->error = csd_do(td, c, io_u);
		io_u->resid = io_u->error ? io_u->xfer_buflen : 0;
		pthread_mutex_lock(&c->mu);
		c->done[c->ndone++] = io_u;
		pthread_cond_signal(&c->done_cv);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static enum fio_q_status csd_queue(struct thread_data *td, struct io_u *io_u)
{
	struct csd_fio *c = td->io_ops_data;

	fio_ro_check(td, io_u);
	pthread_mutex_lock(&c->mu);
	c->queue[(c->qhead + c->qlen) % c->nslots] = io_u;
	c->qlen++;
	pthread_cond_signal(&c->work);
	pthread_mutex_unlock(&c->mu);
	return FIO_Q_QUEUED;
}

static int csd_getevents(struct thread_data *td, unsigned int min, unsigned int max, const struct timespec *t)
{
	struct csd_fio *c = td->io_ops_data;
	struct timespec until;
	unsigned n;

	if (t) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += t->tv_sec;
		until.tv_nsec += t->tv_nsec;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_lock(&c->mu);
	while (c->ndone < min) {
		if (!t)
			pthread_cond_wait(&c->done_cv, &c->mu);
		else if (pthread_cond_timedwait(&c->done_cv, &c->mu, &until) == ETIMEDOUT)
			break;
	}
	n = c->ndone < max ? c->ndone : max;
	memcpy(c->events, c->done, n * sizeof(*c->events));
	memmove(c->done, c->done + n, (c->ndone - n) * sizeof(*c->done));
	c->ndone -= n;
	pthread_mutex_unlock(&c->mu);
	return n;
}

static struct io_u *csd_event(struct thread_data *td, int ev)
{
	struct csd_fio *c = td->io_ops_data;

	return c->events[ev];
}

static void csd_cleanup(struct thread_data *td)
{
	struct csd_fio *c = td->io_ops_data;

	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_broadcast(&c->work);
	pthread_mutex_unlock(&c->mu);
	for (unsigned i = 0; i < c->nthreads; i++)
		pthread_join(c->threads[i], NULL);
	if (c->dev) {
		if (c->loaded)
			csd_program_unload(c->dev, c->loaded);
		csd_close(c->dev); /* frees the SLM */
	}
	free(c->host);
	free(c->queue);
	free(c->done);
	free(c->events);
	free(c->threads);
	free(c);
	td->io_ops_data = NULL;
}

static int csd_open_file(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;
}

static int csd_close_file(struct thread_data *td, struct fio_file *f)
{
	(void)td;
	(void)f;
	return 0;
}

/* What the job's offsets span: the namespace (media) or the SLM window. */
static int csd_get_file_size(struct thread_data *td, struct fio_file *f)
{
	struct csd_fio_options *o = td->eo;
	const char *mode = o->mode ? o->mode : o->program || o->bpf ? "exec" : "slm";

	if (!strcmp(mode, "media")) {
		const char *path = o->device ? o->device : f->file_name;
		csd_dev *dev = NULL;
		uint32_t lba = 0;
		uint64_t n = 0;
		int rc = csd_open(path, &dev);

		if (rc)
			return csd_lib_fail(td, rc, path);
		csd_ns_info(dev, &lba, &n);
		csd_close(dev);
		f->real_file_size = n * lba;
	} else {
		f->real_file_size = td->o.size ? td->o.size : CSD_DEFAULT_WINDOW;
	}
	fio_file_set_size_known(f);
	return 0;
}

struct ioengine_ops ioengine = {
	.name = "csd",
	.version = FIO_IOOPS_VERSION,
	.flags = FIO_DISKLESSIO | FIO_NODISKUTIL | FIO_NOEXTEND,
	.init = csd_init,
	.queue = csd_queue,
	.getevents = csd_getevents,
	.event = csd_event,
	.cleanup = csd_cleanup,
	.open_file = csd_open_file,
	.close_file = csd_close_file,
	.get_file_size = csd_get_file_size,
	.options = options,
	.option_struct_size = sizeof(struct csd_fio_options),
};
