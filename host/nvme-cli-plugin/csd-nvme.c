// SPDX-License-Identifier: MIT
/*
 * csd-nvme.c - `nvme csd ...`: nvme-cli's plugin for the CSD command set 1.3
 * (spec/csd-command-set.md). The wire format comes from the project's one spec header,
 * csd_spec.h (opcodes, descriptor codec, log page layouts, status, program and parameter
 * names); the commands go through nvme-cli's device handling and libnvme's passthrough
 * ioctls. Built into Debian's nvme-cli by host/nvme-cli-plugin/build.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"
#include "nvme.h"
#include "libnvme.h"
#include "plugin.h"
#include "nvme-print.h"
#include "util/json.h"

#include "csd_spec.h"

#define CREATE_CMD
#include "csd-nvme.h"

/* Bytes one SLM Read/Write or Program Load chunk carries at most (MDTS may allow less). */
#define CSD_CLI_MAX_XFER (256u << 10)
/* Bytes slm-write reads from a file or stdin at most. */
#define CSD_CLI_MAX_INPUT (1ull << 32)
/* An option of exec not given on the command line. */
#define UNSET ULONG_MAX

static const char *const fmt_help = "output format: normal|json|binary";
static const char *const nsid_help = "namespace id (default: the namespace of a /dev/ngXnY or /dev/nvmeXnY node)";

/* The options of every command on a namespace: -o and --namespace-id (cfg's output_format, nsid). */
#define CSD_NS_OPTS(cfg)                                                        \
	OPT_FMT("output-format", 'o', &(cfg).output_format, fmt_help),          \
	OPT_UINT("namespace-id", 'n', &(cfg).nsid, nsid_help)

/* What slm-read and slm-write take. */
struct csdp_slm_cfg {
	__u64 offset, length;
	char *data;
	bool raw_binary;
	char *output_format;
	__u32 nsid;
};

/* One invocation: the open device and what every command needs to know of it. */
struct csdp_cli {
	struct nvme_dev *dev;
	int fd;
	__u32 nsid;
	enum nvme_print_flags flags;
	__u32 max_xfer;
	const char *what;
};

/* Words for an NVMe status: the command set's name (csd_spec.h), else libnvme's. */
static const char *csdp_status_words(int status)
{
	const char *name = csd_status_name((uint16_t)status);

	return name ? name : nvme_status_to_string(status, false);
}

/*
 * Reports a failure of c->what (with detail, may be NULL): an NVMe status by name and
 * value, or an OS error; as one JSON object on stdout under -o json. Returns err.
 */
static int csdp_report(const struct csdp_cli *c, int err, const char *detail)
{
	char msg[512];
	int e = err == -1 ? errno : -err;

	if (err > 0)
		snprintf(msg, sizeof(msg), "NVMe status: %s (%#x)%s%s", csdp_status_words(err), err,
			 detail ? ": " : "", detail ? detail : "");
	else
		snprintf(msg, sizeof(msg), "%s%s%s", detail ? detail : "", detail ? ": " : "",
			 nvme_strerror(e));
	if (c->flags == JSON) {
		struct json_object *o = json_create_object();

		json_object_add_value_string(o, "command", c->what);
		json_object_add_value_string(o, "error", msg);
		if (err > 0) {
			json_object_add_value_uint64(o, "status", err);
			json_object_add_value_string(o, "status_name", csdp_status_words(err));
			json_object_object_add(o, "dnr", json_object_new_boolean(!!(err & CSD_STATUS_DNR)));
		} else {
			json_object_add_value_int(o, "errno", e);
		}
		json_print_object(o, NULL);
		printf("\n");
		json_free_object(o);
	} else {
		fprintf(stderr, "%s: %s\n", c->what, msg);
	}
	return err;
}

/* Reports a usage error of c->what (printf-style) and returns -EINVAL. */
static int __attribute__((format(printf, 2, 3))) csdp_usage(const struct csdp_cli *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->flags == JSON) {
		struct json_object *o = json_create_object();

		json_object_add_value_string(o, "command", c->what);
		json_object_add_value_string(o, "error", msg);
		json_object_add_value_int(o, "errno", EINVAL);
		json_print_object(o, NULL);
		printf("\n");
		json_free_object(o);
	} else {
		fprintf(stderr, "%s: %s\n", c->what, msg);
	}
	return -EINVAL;
}

/* Closes the device of an invocation. */
static void csdp_close(struct csdp_cli *c)
{
	if (c->dev)
		dev_close(c->dev);
	c->dev = NULL;
}

/*
 * Parses the options, opens the device and checks that it is a CSD (Identify Controller's
 * signature); finds the namespace (*nsid once parsed, else the node's) when need_ns. fmt
 * and nsid point at the options' values, read after parsing. Returns 0 or an
 * error (already reported).
 */
static int csdp_open(struct csdp_cli *c, const char *what, int argc, char **argv, const char *desc,
		    const struct argconfig_commandline_options *opts, char *const *fmt,
		    const __u32 *nsid, bool need_ns)
{
	struct nvme_id_ctrl id;
	int flags, err;

	memset(c, 0, sizeof(*c));
	c->what = what;
	c->flags = NORMAL;
	err = parse_and_open(&c->dev, argc, argv, desc, opts);
	if (err)
		return err;
	c->fd = dev_fd(c->dev);
	flags = validate_output_format(*fmt);
	if (flags < 0) {
		err = csdp_usage(c, "unknown output format '%s' (normal, json or binary)", *fmt);
		goto fail;
	}
	c->flags = flags;
	err = nvme_identify_ctrl(c->fd, &id);
	if (err) {
		csdp_report(c, err, "Identify Controller");
		goto fail;
	}
	if (memcmp(&id.vs[CSD_ID_VS_OFFSET - offsetof(struct nvme_id_ctrl, vs)], CSD_ID_SIGNATURE, 4)) {
		err = csdp_usage(c, "%s is not a CSD (Identify Controller bytes %u..%u are not \"%s\")",
				c->dev->name, CSD_ID_VS_OFFSET, CSD_ID_VS_OFFSET + 3, CSD_ID_SIGNATURE);
		goto fail;
	}
	/* MDTS in units of the minimum page size (4 KiB for the emulated controller) */
	c->max_xfer = id.mdts && id.mdts < 7 ? 4096u << id.mdts : CSD_CLI_MAX_XFER;
	if (c->max_xfer > CSD_CLI_MAX_XFER)
		c->max_xfer = CSD_CLI_MAX_XFER;
	c->nsid = nsid ? *nsid : 0;
	if (need_ns && !c->nsid && nvme_get_nsid(c->fd, &c->nsid)) {
		err = csdp_usage(c, "%s is a controller: give a namespace node (/dev/ngXnY) or --namespace-id",
				c->dev->name);
		goto fail;
	}
	return 0;
fail:
	csdp_close(c);
	return err;
}

/* Sends one command of the command set on c's namespace; *result (may be NULL) gets DW0 | DW1 << 32. */
static int csdp_cmd(const struct csdp_cli *c, __u8 opcode, __u32 cdw10, __u32 cdw11, __u32 cdw12,
		   __u32 cdw13, __u32 cdw14, void *data, __u32 len, __u64 *result)
{
	struct nvme_passthru_cmd64 cmd = {
		.opcode = opcode,
		.nsid = c->nsid,
		.addr = (__u64)(uintptr_t)data,
		.data_len = len,
		.cdw10 = cdw10,
		.cdw11 = cdw11,
		.cdw12 = cdw12,
		.cdw13 = cdw13,
		.cdw14 = cdw14,
	};

	return nvme_submit_io_passthru64(c->fd, &cmd, result);
}

/* Reads log page lid (C0h or C1h, csd_log_page_size bytes) into buf. */
static int csdp_get_log(const struct csdp_cli *c, __u8 lid, void *buf)
{
	struct nvme_get_log_args args = {
		.lpo = 0,
		.result = NULL,
		.log = buf,
		.args_size = sizeof(args),
		.fd = c->fd,
		.timeout = NVME_DEFAULT_IOCTL_TIMEOUT,
		.lid = lid,
		.len = csd_log_page_size(lid),
		.nsid = NVME_NSID_ALL,
		.csi = NVME_CSI_NVM,
		.lsi = NVME_LOG_LSI_NONE,
		.lsp = NVME_LOG_LSP_NONE,
		.uuidx = NVME_UUID_NONE,
		.rae = false,
		.ot = false,
	};
	int err = nvme_get_log_page(c->fd, 4096, &args);

	if (err)
		return csdp_report(c, err, lid == CSD_LOG_CAPABILITIES ? "Get Log Page C0h" : "Get Log Page C1h");
	return 0;
}

/* The capabilities page of c's device, checked; *entries: how many program entries it holds. */
static int csdp_get_caps(const struct csdp_cli *c, __u8 *page, struct csd_caps_log **caps,
			__u32 *entries)
{
	const __u32 fit = (CSD_LOG_PAGE_SIZE - CSD_CAPS_ENTRIES_OFFSET) / sizeof(struct csd_caps_entry);
	int err = csdp_get_log(c, CSD_LOG_CAPABILITIES, page);

	if (err)
		return err;
	*caps = (struct csd_caps_log *)page;
	if (memcmp((*caps)->magic, CSD_CAPS_MAGIC, 4))
		return csdp_usage(c, "log page C0h does not start with \"%s\"", CSD_CAPS_MAGIC);
	*entries = (*caps)->nr_programs < fit ? (*caps)->nr_programs : fit;
	return 0;
}

/*
 * Opens the device for a command that shows a log page (info, stats, program-list): -o,
 * and -b for the page's bytes; *raw: -b or -o binary.
 */
static int csdp_open_log(struct csdp_cli *c, const char *what, int argc, char **argv,
			const char *desc, bool *raw)
{
	struct config {
		char *output_format;
		bool raw_binary;
	} cfg = { .output_format = "normal" };
	int err;

	OPT_ARGS(opts) = {
		OPT_FMT("output-format", 'o', &cfg.output_format, fmt_help),
		OPT_FLAG("raw-binary", 'b', &cfg.raw_binary, "the log page's bytes"),
		OPT_END()
	};

	err = csdp_open(c, what, argc, argv, desc, opts, &cfg.output_format, NULL, false);
	*raw = !err && (cfg.raw_binary || c->flags == BINARY);
	return err;
}

/* Words for a program type of C0h. */
static const char *csdp_program_type_name(__u8 type)
{
	switch (type) {
	case CSD_PROGRAM_DEVICE: return "device-defined";
	case CSD_PROGRAM_DOWNLOADED: return "downloaded";
	case CSD_PROGRAM_PLUGIN: return "operator plug-in";
	default: return "unknown";
	}
}

/* A C0h entry's name as a C string (the field holds up to 24 bytes, NUL-padded). */
static void csdp_entry_name(const struct csd_caps_entry *e, char out[25])
{
	memcpy(out, e->name, 24);
	out[24] = 0;
}

/* Prints the program entries of C0h (text) or returns them as a JSON array. */
static struct json_object *csdp_show_programs(const struct csd_caps_log *caps, __u32 entries,
					     bool json)
{
	struct json_object *list = json ? json_create_array() : NULL;
	char name[25];
	__u32 i;

	if (!json)
		printf("%-6s %-16s %s\n", "id", "type", "name");
	for (i = 0; i < entries; i++) {
		const struct csd_caps_entry *e = &caps->programs[i];

		csdp_entry_name(e, name);
		if (json) {
			struct json_object *p = json_create_object();

			json_object_add_value_uint64(p, "id", e->id);
			json_object_add_value_string(p, "name", name);
			json_object_add_value_uint64(p, "type", e->type);
			json_object_add_value_string(p, "type_name", csdp_program_type_name(e->type));
			json_array_add_value_object(list, p);
		} else {
			printf("%04xh  %-16s %s\n", e->id, csdp_program_type_name(e->type), name);
		}
	}
	return list;
}

/* Prints a JSON object and frees it. */
static void csdp_print_json(struct json_object *o)
{
	json_print_object(o, NULL);
	printf("\n");
	json_free_object(o);
}

/* info, and program-list (list_only): log page C0h decoded, as JSON, or its bytes. */
static int csdp_caps_cmd(int argc, char **argv, bool list_only)
{
	const char *desc = list_only ?
		"List the device's programs (log page C0h): device-defined ones, downloaded "
		"eBPF programs in their slots and operator plug-ins." :
		"Show the CSD capabilities (log page C0h): SLM size, compute units, descriptor "
		"limits, program slots and types, features and the programs.";
	__u8 page[CSD_LOG_PAGE_SIZE];
	struct csd_caps_log *caps;
	struct csdp_cli c;
	__u32 entries;
	int err;
	bool raw;

	err = csdp_open_log(&c, list_only ? "csd program-list" : "csd info", argc, argv, desc, &raw);
	if (err)
		return err;
	err = csdp_get_caps(&c, page, &caps, &entries);
	if (err)
		goto out;
	if (raw) {
		d_raw(page, sizeof(page));
	} else if (list_only) {
		if (c.flags == JSON)
			csdp_print_json(csdp_show_programs(caps, entries, true));
		else
			csdp_show_programs(caps, entries, false);
	} else if (c.flags == JSON) {
		struct json_object *o = json_create_object();
		char version[16];

		snprintf(version, sizeof(version), "%u.%u", caps->version >> 16, caps->version & 0xffff);
		json_object_add_value_string(o, "device", c.dev->name);
		json_object_add_value_string(o, "version", version);
		json_object_add_value_uint64(o, "slm_size", caps->slm_size);
		json_object_add_value_uint64(o, "compute_units", caps->compute_units);
		json_object_add_value_uint64(o, "max_desc_len", caps->max_desc_len);
		json_object_add_value_uint64(o, "max_ranges", caps->max_ranges);
		json_object_add_value_uint64(o, "max_program_bytes", caps->max_program_bytes);
		json_object_add_value_uint64(o, "downloadable_slots", caps->downloadable_slots);
		json_object_add_value_uint64(o, "program_types", caps->program_types);
		json_object_add_value_uint64(o, "features", caps->features);
		json_object_add_value_uint64(o, "nr_programs", caps->nr_programs);
		json_object_add_value_array(o, "programs", csdp_show_programs(caps, entries, true));
		csdp_print_json(o);
	} else {
		printf("device             %s\n", c.dev->name);
		printf("version            %u.%u\n", caps->version >> 16, caps->version & 0xffff);
		printf("slm_size           %" PRIu64 " (%" PRIu64 " MiB)\n", (uint64_t)caps->slm_size,
		       (uint64_t)caps->slm_size >> 20);
		printf("compute_units      %u\n", caps->compute_units);
		printf("max_desc_len       %u\n", caps->max_desc_len);
		printf("max_ranges         %u\n", caps->max_ranges);
		printf("max_program_bytes  %u\n", caps->max_program_bytes);
		printf("downloadable_slots %u\n", caps->downloadable_slots);
		printf("program_types      %#x%s\n", caps->program_types,
		       caps->program_types & (1u << CSD_PROGRAM_TYPE_EBPF) ? " (eBPF)" : " (none)");
		printf("features           %#x%s%s\n", caps->features,
		       caps->features & CSD_FEATURE_COMPARE_WRITE ? " (Compare and Write)" : "",
		       caps->features & CSD_FEATURE_LBA_WINDOW ? " (Execute's LBA window)" : "");
		printf("programs           %u\n", caps->nr_programs);
		csdp_show_programs(caps, entries, false);
	}
out:
	csdp_close(&c);
	return err;
}

static int csdp_info(int argc, char **argv, struct command *cmd, struct plugin *plugin)
{
	return csdp_caps_cmd(argc, argv, false);
}

static int csdp_program_list(int argc, char **argv, struct command *cmd, struct plugin *plugin)
{
	return csdp_caps_cmd(argc, argv, true);
}

static int csdp_stats(int argc, char **argv, struct command *cmd, struct plugin *plugin)
{
	const char *desc = "Show the CSD statistics (log page C1h): commands, bytes moved, busy "
			   "time, the timing model's counters and Executes per program.";
	__u8 caps_page[CSD_LOG_PAGE_SIZE], page[CSD_LOG_STATS_SIZE];
	struct json_object *o = NULL, *counters = NULL, *per = NULL;
	struct csd_caps_log *caps;
	struct csdp_cli c;
	__u32 entries, i, id;
	__u64 v;
	int err;
	bool raw;

	err = csdp_open_log(&c, "csd stats", argc, argv, desc, &raw);
	if (err)
		return err;
	err = csdp_get_log(&c, CSD_LOG_STATISTICS, page);
	if (!err && memcmp(page, CSD_STATS_MAGIC, 4))
		err = csdp_usage(&c, "log page C1h does not start with \"%s\"", CSD_STATS_MAGIC);
	if (!err)
		err = csdp_get_caps(&c, caps_page, &caps, &entries);
	if (err)
		goto out;
	if (raw) {
		d_raw(page, sizeof(page));
		goto out;
	}
	if (c.flags == JSON) {
		o = json_create_object();
		counters = json_create_object();
		per = json_create_array();
	}
	for (i = 0; i < CSD_STAT_COUNT; i++) {
		memcpy(&v, page + CSD_STATS_COUNTERS_OFFSET + 8 * i, 8);
		if (o)
			json_object_add_value_uint64(counters, csd_stat_names[i], v);
		else
			printf("%-24s %" PRIu64 "\n", csd_stat_names[i], (uint64_t)v);
	}
	/* Executes per program id, named by C0h; ids C0h does not list are shown by number */
	for (id = 0; id < CSD_STATS_PER_PROGRAM_COUNT; id++) {
		char name[25];

		memcpy(&v, page + CSD_STATS_PER_PROGRAM_OFFSET + 8 * id, 8);
		if (!v)
			continue;
		snprintf(name, sizeof(name), "%04xh", id);
		for (i = 0; i < entries; i++)
			if (caps->programs[i].id == id)
				csdp_entry_name(&caps->programs[i], name);
		if (o) {
			struct json_object *p = json_create_object();

			json_object_add_value_uint64(p, "id", id);
			json_object_add_value_string(p, "name", name);
			json_object_add_value_uint64(p, "exec_cmds", v);
			json_array_add_value_object(per, p);
		} else {
			printf("exec %-19s %" PRIu64 "\n", name, (uint64_t)v);
		}
	}
	if (o) {
		json_object_add_value_object(o, "counters", counters);
		json_object_add_value_array(o, "per_program", per);
		csdp_print_json(o);
	}
out:
	csdp_close(&c);
	return err;
}

/* SLM Read (82h) or Write (81h) of len bytes at off, 4-byte aligned, in MDTS-sized pieces. */
static int csdp_slm_xfer(const struct csdp_cli *c, bool write, __u64 off, __u8 *buf, __u64 len)
{
	while (len) {
		__u32 n = len < c->max_xfer ? (__u32)len : c->max_xfer;
		int err = csdp_cmd(c, write ? CSD_OPC_SLM_WRITE : CSD_OPC_SLM_READ, (__u32)off,
				  (__u32)(off >> 32), n, 0, 0, buf, n, NULL);

		if (err)
			return err;
		off += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/*
 * The 4-byte aligned span [*a0, *a1) around [off, off + len) (SLM Read and Write move
 * whole dwords); -EINVAL (reported) for an empty or wrapping range.
 */
static int csdp_span(const struct csdp_cli *c, __u64 off, __u64 len, __u64 *a0, __u64 *a1)
{
	if (!len)
		return csdp_usage(c, "nothing to move: the length is 0");
	if (off + len < off || off + len > UINT64_MAX - 3)
		return csdp_usage(c, "offset %" PRIu64 " + length %" PRIu64 " wraps", (uint64_t)off,
				 (uint64_t)len);
	*a0 = off & ~3ull;
	*a1 = (off + len + 3) & ~3ull;
	if (*a1 - *a0 > SIZE_MAX / 2)
		return csdp_usage(c, "length %" PRIu64 " is too large for one transfer", (uint64_t)len);
	return 0;
}

static int csdp_slm_read(int argc, char **argv, struct command *cmd, struct plugin *plugin)
{
	const char *desc = "SLM Read (82h): LENGTH bytes of SLM from OFFSET, to --data FILE, "
			   "to stdout (--raw-binary) or as a hex dump. Any offset and length: the "
			   "device moves whole dwords, the plugin cuts them and splits by MDTS.";
	__u64 a0 = 0, a1 = 0;
	__u8 *span = NULL;
	struct csdp_cli c;
	int err, fd;
	struct csdp_slm_cfg cfg = { .output_format = "normal" };

	OPT_ARGS(opts) = {
		OPT_SUFFIX("slm-offset", 'm', &cfg.offset, "SLM byte offset"),
		OPT_SUFFIX("length", 'l', &cfg.length, "bytes to read"),
		OPT_FILE("data", 'd', &cfg.data, "file to write the bytes to"),
		OPT_FLAG("raw-binary", 'b', &cfg.raw_binary, "write the bytes to stdout"),
		CSD_NS_OPTS(cfg),
		OPT_END()
	};

	err = csdp_open(&c, "csd slm-read", argc, argv, desc, opts, &cfg.output_format, &cfg.nsid, true);
	if (err)
		return err;
	err = csdp_span(&c, cfg.offset, cfg.length, &a0, &a1);
	if (err)
		goto out;
	span = malloc(a1 - a0);
	if (!span) {
		err = csdp_report(&c, -ENOMEM, "buffer");
		goto out;
	}
	err = csdp_slm_xfer(&c, false, a0, span, a1 - a0);
	if (err) {
		csdp_report(&c, err, "SLM Read");
		goto out;
	}
	__u8 *bytes = span + (cfg.offset - a0);

	if (cfg.data) {
		fd = open(cfg.data, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, bytes, cfg.length) != (ssize_t)cfg.length) {
			err = csdp_report(&c, -errno, cfg.data);
			if (fd >= 0)
				close(fd);
			goto out;
		}
		close(fd);
	} else if (cfg.raw_binary || c.flags == BINARY) {
		d_raw(bytes, cfg.length);
	} else if (c.flags == JSON) {
		struct json_object *o = json_create_object();
		char *hex = malloc(2 * cfg.length + 1);
		__u64 i;

		if (!hex) {
			json_free_object(o);
			err = csdp_report(&c, -ENOMEM, "buffer");
			goto out;
		}
		for (i = 0; i < cfg.length; i++)
			sprintf(hex + 2 * i, "%02x", bytes[i]);
		json_object_add_value_uint64(o, "slm_offset", cfg.offset);
		json_object_add_value_uint64(o, "length", cfg.length);
		json_object_add_value_string(o, "data", hex);
		free(hex);
		csdp_print_json(o);
	} else {
		d(bytes, cfg.length, 16, 1);
	}
out:
	free(span);
	csdp_close(&c);
	return err;
}

/*
 * Reads fd to its end into a new buffer (*len bytes): at most max bytes, or with truncate
 * the first max bytes only. NULL: errno says why (EFBIG: more than max).
 */
static __u8 *csdp_read_all(int fd, __u64 max, bool truncate, __u64 *len)
{
	__u64 cap = 0, n = 0;
	__u8 *buf = NULL, *grown, extra;
	ssize_t r;

	for (;;) {
		if (n == cap && cap == max) {
			if (truncate)
				break;
			r = read(fd, &extra, 1); /* more than max, or its end? */
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				goto fail;
			if (r == 0)
				break;
			errno = EFBIG;
			goto fail;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 1 << 16;
			if (cap > max)
				cap = max;
			grown = realloc(buf, cap ? cap : 1);
			if (!grown)
				goto fail;
			buf = grown;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		n += r;
	}
	if (!buf)
		buf = malloc(1);
	*len = n;
	return buf;
fail:
	free(buf);
	return NULL;
}

static int csdp_slm_write(int argc, char **argv, struct command *cmd, struct plugin *plugin)
{
	const char *desc = "SLM Write (81h): the bytes of --data FILE (stdin without it) into SLM "
			   "at OFFSET; --length takes only the first LENGTH bytes. Any offset and "
			   "length: around an unaligned start or end the plugin reads the dword and "
			   "writes it back merged (not atomic with other writers of those bytes).";
	__u64 a0 = 0, a1 = 0, len = 0;
	__u8 *in = NULL, *span = NULL;
	struct csdp_cli c;
	int err, fd = STDIN_FILENO;
	struct csdp_slm_cfg cfg = { .output_format = "normal" };

	OPT_ARGS(opts) = {
		OPT_SUFFIX("slm-offset", 'm', &cfg.offset, "SLM byte offset"),
		OPT_SUFFIX("length", 'l', &cfg.length, "bytes to write (default: all of the input)"),
		OPT_FILE("data", 'd', &cfg.data, "file to read the bytes from (default: stdin)"),
		CSD_NS_OPTS(cfg),
		OPT_END()
	};

	err = csdp_open(&c, "csd slm-write", argc, argv, desc, opts, &cfg.output_format, &cfg.nsid, true);
	if (err)
		return err;
	if (cfg.data) {
		fd = open(cfg.data, O_RDONLY);
		if (fd < 0) {
			err = csdp_report(&c, -errno, cfg.data);
			goto out;
		}
	}
	in = csdp_read_all(fd, cfg.length ? cfg.length : CSD_CLI_MAX_INPUT, cfg.length != 0, &len);
	if (!in) {
		err = csdp_report(&c, -errno, cfg.data ? cfg.data : "stdin");
		goto out;
	}
	if (cfg.length && len < cfg.length) {
		err = csdp_usage(&c, "the input has %" PRIu64 " bytes, --length asks for %" PRIu64,
				(uint64_t)len, (uint64_t)cfg.length);
		goto out;
	}
	err = csdp_span(&c, cfg.offset, len, &a0, &a1);
	if (err)
		goto out;
	span = malloc(a1 - a0);
	if (!span) {
		err = csdp_report(&c, -ENOMEM, "buffer");
		goto out;
	}
	/* the dwords the range only partly covers keep their other bytes */
	if (cfg.offset != a0)
		err = csdp_slm_xfer(&c, false, a0, span, 4);
	if (!err && cfg.offset + len != a1 && (a1 - a0 > 4 || cfg.offset == a0))
		err = csdp_slm_xfer(&c, false, a1 - 4, span + (a1 - a0 - 4), 4);
	if (err) {
		csdp_report(&c, err, "SLM Read of the dwords around an unaligned range");
		goto out;
	}
	memcpy(span + (cfg.offset - a0), in, len);
	err = csdp_slm_xfer(&c, true, a0, span, a1 - a0);
	if (err) {
		csdp_report(&c, err, "SLM Write");
		goto out;
	}
	if (c.flags == JSON) {
		struct json_object *o = json_create_object();

		json_object_add_value_uint64(o, "slm_offset", cfg.offset);
		json_object_add_value_uint64(o, "length", len);
		csdp_print_json(o);
	} else {
		printf("wrote %" PRIu64 " bytes to SLM offset %" PRIu64 "\n", (uint64_t)len,
		       (uint64_t)cfg.offset);
	}
out:
	if (fd != STDIN_FILENO && fd >= 0)
		close(fd);
	free(in);
	free(span);
	csdp_close(&c);
	return err;
}

/* slm-load and slm-store: one SLM Load (80h) or Store (84h) command. */
static int csdp_slm_move(int argc, char **argv, bool store)
{
	const char *desc = store ?
		"SLM Store (84h): BLOCK-COUNT + 1 blocks (0's based, as nvme write) of SLM from "
		"SLM-OFFSET onto the namespace at START-BLOCK." :
		"SLM Load (80h): BLOCK-COUNT + 1 blocks (0's based, as nvme read) of the "
		"namespace from START-BLOCK into SLM at SLM-OFFSET.";
	struct csdp_cli c;
	int err;
	struct config {
		__u64 slba, offset;
		__u32 count;
		char *output_format;
		__u32 nsid;
	} cfg = { .output_format = "normal" };

	OPT_ARGS(opts) = {
		OPT_SUFFIX("start-block", 's', &cfg.slba, "first logical block"),
		OPT_UINT("block-count", 'c', &cfg.count, "number of blocks, 0's based (0: one block)"),
		OPT_SUFFIX("slm-offset", 'm', &cfg.offset, "SLM byte offset"),
		CSD_NS_OPTS(cfg),
		OPT_END()
	};

	err = csdp_open(&c, store ? "csd slm-store" : "csd slm-load", argc, argv, desc, opts,
		       &cfg.output_format, &cfg.nsid, true);
	if (err)
		return err;
	if (cfg.count > 0xffff) {
		err = csdp_usage(&c, "--block-count %u does not fit NLB (16 bits, at most 65535)", cfg.count);
		goto out;
	}
	err = csdp_cmd(&c, store ? CSD_OPC_SLM_STORE : CSD_OPC_SLM_LOAD, (__u32)cfg.slba,
		      (__u32)(cfg.slba >> 32), cfg.count, (__u32)cfg.offset, (__u32)(cfg.offset >> 32),
		      NULL, 0, NULL);
	if (err) {
		csdp_report(&c, err, store ? "SLM Store" : "SLM Load");
		goto out;
	}
	if (c.flags == JSON) {
		struct json_object *o = json_create_object();

		json_object_add_value_uint64(o, "start_block", cfg.slba);
		json_object_add_value_uint64(o, "blocks", cfg.count + 1);
		json_object_add_value_uint64(o, "slm_offset", cfg.offset);
		csdp_print_json(o);
	} else {
		printf("%s %u blocks from %s %" PRIu64 " %s %" PRIu64 "\n", store ? "stored" : "loaded",
		       cfg.count + 1, store ? "SLM offset" : "block", (uint64_t)(store ? cfg.offset : cfg.slba),
		       store ? "to block" : "into SLM offset", (uint64_t)(store ? cfg.slba : cfg.offset));
	}
out:
	csdp_close(&c);
	return err;
}

static int csdp_slm_load(int argc, char **argv, struct command *cmd, struct plugin *plugin)
{
	return csdp_slm_move(argc, argv, false);
}

static int csdp_slm_store(int argc, char **argv, struct command *cmd, struct plugin *plugin)
{
	return csdp_slm_move(argc, argv, true);
}

/* Parses a whole number (decimal, 0x hex or 0 octal) into *v; false if s is not one. */
static bool csdp_parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return !errno && *end == 0;
}

/* The value of name in a NULL-terminated csd_spec.h name list; false if it is none of them. */
static bool csdp_lookup(const struct csd_name *names, const char *name, __u32 *value)
{
	for (; names->name; names++)
		if (!strcmp(names->name, name)) {
			*value = names->value;
			return true;
		}
	return false;
}

/* The names of a csd_spec.h list, "a, b, c", into buf. */
static const char *csdp_names(const struct csd_name *names, char *buf, size_t n)
{
	size_t used = 0;

	buf[0] = 0;
	for (; names->name && used < n; names++)
		used += snprintf(buf + used, n - used, "%s%s", used ? ", " : "", names->name);
	return buf;
}

/* Everything exec takes besides the device; numbers UNSET, doubles NAN, strings NULL when not given. */
struct csdp_exec_cfg {
	char *program, *ranges, *params_file, *output_format;
	char *op, *dtype, *type, *algo, *mode, *lo, *hi, *param, *zero_point;
	unsigned long m, n, k, rows, cols, count, record_size, field_offset;
	unsigned long batch, channels, height, width, filters, kernel_h, kernel_w;
	unsigned long stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w;
	double alpha, beta, a, b, scale;
	bool trans_a, trans_b, indices, bias;
	__u32 nsid;
};

/* One program parameter option of exec: its name and where its value lives. */
struct csdp_exec_opt {
	const char *name;
	char kind; /* 'u' unsigned long, 'd' double, 's' string, 'f' flag */
	size_t off;
};

#define EXEC_OPT(name, kind, field) { name, kind, offsetof(struct csdp_exec_cfg, field) }
static const struct csdp_exec_opt csd_exec_opts[] = {
	EXEC_OPT("op", 's', op), EXEC_OPT("dtype", 's', dtype), EXEC_OPT("type", 's', type),
	EXEC_OPT("algo", 's', algo), EXEC_OPT("mode", 's', mode), EXEC_OPT("lo", 's', lo),
	EXEC_OPT("hi", 's', hi), EXEC_OPT("param", 's', param),
	EXEC_OPT("m", 'u', m), EXEC_OPT("n", 'u', n), EXEC_OPT("k", 'u', k),
	EXEC_OPT("rows", 'u', rows), EXEC_OPT("cols", 'u', cols), EXEC_OPT("count", 'u', count),
	EXEC_OPT("record-size", 'u', record_size), EXEC_OPT("field-offset", 'u', field_offset),
	EXEC_OPT("zero-point", 's', zero_point), EXEC_OPT("batch", 'u', batch),
	EXEC_OPT("channels", 'u', channels), EXEC_OPT("height", 'u', height),
	EXEC_OPT("width", 'u', width), EXEC_OPT("filters", 'u', filters),
	EXEC_OPT("kernel-h", 'u', kernel_h), EXEC_OPT("kernel-w", 'u', kernel_w),
	EXEC_OPT("stride-h", 'u', stride_h), EXEC_OPT("stride-w", 'u', stride_w),
	EXEC_OPT("pad-h", 'u', pad_h), EXEC_OPT("pad-w", 'u', pad_w),
	EXEC_OPT("dilation-h", 'u', dilation_h), EXEC_OPT("dilation-w", 'u', dilation_w),
	EXEC_OPT("alpha", 'd', alpha), EXEC_OPT("beta", 'd', beta), EXEC_OPT("a", 'd', a),
	EXEC_OPT("b", 'd', b), EXEC_OPT("scale", 'd', scale),
	EXEC_OPT("trans-a", 'f', trans_a), EXEC_OPT("trans-b", 'f', trans_b),
	EXEC_OPT("indices", 'f', indices), EXEC_OPT("bias", 'f', bias),
};

/* Whether exec option o was given. */
static bool csdp_exec_given(const struct csdp_exec_cfg *cfg, const struct csdp_exec_opt *o)
{
	const char *p = (const char *)cfg + o->off;

	switch (o->kind) {
	case 'u': return *(const unsigned long *)p != UNSET;
	case 'd': return !isnan(*(const double *)p);
	case 's': return *(char *const *)p != NULL;
	default: return *(const bool *)p;
	}
}

/*
 * Checks that the parameter options given are among those program takes (a
 * space-separated list, each name followed by a space). Returns 0 or -EINVAL (reported).
 */
static int csdp_exec_allowed(const struct csdp_cli *c, const struct csdp_exec_cfg *cfg,
			    const char *program, const char *takes)
{
	char padded[512], word[40];
	size_t i;

	snprintf(padded, sizeof(padded), " %s", takes);
	for (i = 0; i < sizeof(csd_exec_opts) / sizeof(csd_exec_opts[0]); i++) {
		const struct csdp_exec_opt *o = &csd_exec_opts[i];

		snprintf(word, sizeof(word), " %s ", o->name);
		if (csdp_exec_given(cfg, o) && !strstr(padded, word))
			return csdp_usage(c, "--%s does not apply to %s (it takes: %s)", o->name, program,
					 *takes ? takes : "no parameters");
	}
	return 0;
}

/* An unsigned option that must be given and fit 32 bits, into *v. */
static int csdp_need_u32(const struct csdp_cli *c, const char *program, const char *name,
			unsigned long given, __u32 *v)
{
	if (given == UNSET)
		return csdp_usage(c, "%s needs --%s", program, name);
	if (given > UINT32_MAX)
		return csdp_usage(c, "--%s %lu does not fit 32 bits", name, given);
	*v = (__u32)given;
	return 0;
}

/* An unsigned option that may be left out (default dflt) and must fit 32 bits, into *v. */
static int csdp_opt_u32(const struct csdp_cli *c, const char *name, unsigned long given,
		       __u32 dflt, __u32 *v)
{
	if (given == UNSET) {
		*v = dflt;
		return 0;
	}
	return csdp_need_u32(c, "", name, given, v);
}

/* A name option that must be one of a csd_spec.h list, into *v. */
static int csdp_need_name(const struct csdp_cli *c, const char *program, const char *name,
			 const char *given, const struct csd_name *names, __u32 *v)
{
	char list[256];

	if (!given)
		return csdp_usage(c, "%s needs --%s (%s)", program, name, csdp_names(names, list, sizeof(list)));
	if (!csdp_lookup(names, given, v))
		return csdp_usage(c, "--%s %s is none of %s", name, given, csdp_names(names, list, sizeof(list)));
	return 0;
}

/* The value of filter's lo/hi for the field type: i64, u64 or f64 bytes. */
static int csdp_filter_bound(const struct csdp_cli *c, const char *name, const char *s, __u32 ft,
			    __u8 out[8])
{
	char *end;

	errno = 0;
	if (ft == CSD_FT_F32 || ft == CSD_FT_F64) {
		double v = strtod(s, &end);

		if (errno || end == s || *end)
			return csdp_usage(c, "--%s %s is not a number", name, s);
		memcpy(out, &v, 8);
	} else if (ft == CSD_FT_U32 || ft == CSD_FT_U64) {
		uint64_t v;

		if (!csdp_parse_u64(s, &v))
			return csdp_usage(c, "--%s %s is not an unsigned integer", name, s);
		memcpy(out, &v, 8);
	} else {
		long long v = strtoll(s, &end, 0);

		if (errno || end == s || *end)
			return csdp_usage(c, "--%s %s is not an integer", name, s);
		memcpy(out, &v, 8);
	}
	return 0;
}

/* An option's double, or dflt when not given, as f32. */
static float csdp_f32(double given, float dflt)
{
	return isnan(given) ? dflt : (float)given;
}

/*
 * The parameter bytes of a device-defined program (id 01h..0Ah) from exec's options, into
 * params (*len bytes). Returns 0 or -EINVAL (reported).
 */
static int csdp_device_params(const struct csdp_cli *c, struct csdp_exec_cfg *cfg, __u16 id,
			     __u8 *params, __u32 *len)
{
	const char *name = csd_program_name(id);
	int err = 0;

	switch (id) {
	case CSD_PROG_COPY:
		err = csdp_exec_allowed(c, cfg, name, "");
		*len = 0;
		break;
	case CSD_PROG_GEMM: {
		struct csd_gemm_params p = { 0 };

		err = csdp_exec_allowed(c, cfg, name, "m n k trans-a trans-b alpha beta ");
		err = err ?: csdp_need_u32(c, name, "m", cfg->m, &p.m);
		err = err ?: csdp_need_u32(c, name, "n", cfg->n, &p.n);
		err = err ?: csdp_need_u32(c, name, "k", cfg->k, &p.k);
		p.flags = (cfg->trans_a ? CSD_GEMM_TRANS_A : 0) | (cfg->trans_b ? CSD_GEMM_TRANS_B : 0);
		p.alpha = csdp_f32(cfg->alpha, 1.0f);
		p.beta = csdp_f32(cfg->beta, 0.0f);
		memcpy(params, &p, *len = sizeof(p));
		break;
	}
	case CSD_PROG_ELEMENTWISE: {
		struct csd_elementwise_params p = { 0 };

		err = csdp_exec_allowed(c, cfg, name, "op count a b ");
		err = err ?: csdp_need_name(c, name, "op", cfg->op, csd_elementwise_op_names, &p.op);
		err = err ?: csdp_need_u32(c, name, "count", cfg->count, &p.count);
		p.a = csdp_f32(cfg->a, 0.0f);
		p.b = csdp_f32(cfg->b, 0.0f);
		memcpy(params, &p, *len = sizeof(p));
		break;
	}
	case CSD_PROG_SOFTMAX: {
		struct csd_softmax_params p = { 0 };

		err = csdp_exec_allowed(c, cfg, name, "rows cols ");
		err = err ?: csdp_need_u32(c, name, "rows", cfg->rows, &p.rows);
		err = err ?: csdp_need_u32(c, name, "cols", cfg->cols, &p.cols);
		memcpy(params, &p, *len = sizeof(p));
		break;
	}
	case CSD_PROG_REDUCE: {
		struct csd_reduce_params p = { 0 };

		err = csdp_exec_allowed(c, cfg, name, "op dtype rows cols ");
		err = err ?: csdp_need_name(c, name, "op", cfg->op, csd_reduce_op_names, &p.op);
		err = err ?: csdp_need_name(c, name, "dtype", cfg->dtype, csd_dtype_names, &p.dtype);
		err = err ?: csdp_opt_u32(c, "rows", cfg->rows, 1, &p.rows);
		err = err ?: csdp_need_u32(c, name, "cols", cfg->cols, &p.cols);
		memcpy(params, &p, *len = sizeof(p));
		break;
	}
	case CSD_PROG_FILTER: {
		struct csd_filter_params p = { 0 };
		__u32 ft = 0, op = 0;

		err = csdp_exec_allowed(c, cfg, name, "record-size count field-offset type op lo hi indices ");
		err = err ?: csdp_need_u32(c, name, "record-size", cfg->record_size, &p.record_size);
		err = err ?: csdp_need_u32(c, name, "count", cfg->count, &p.count);
		err = err ?: csdp_opt_u32(c, "field-offset", cfg->field_offset, 0, &p.field_offset);
		err = err ?: csdp_need_name(c, name, "type", cfg->type, csd_field_type_names, &ft);
		err = err ?: csdp_need_name(c, name, "op", cfg->op, csd_filter_op_names, &op);
		if (!err && !cfg->lo)
			err = csdp_usage(c, "%s needs --lo", name);
		if (!err && op == CSD_CMP_BETWEEN && !cfg->hi)
			err = csdp_usage(c, "%s --op between needs --hi", name);
		if (!err && op != CSD_CMP_BETWEEN && cfg->hi)
			err = csdp_usage(c, "--hi applies to --op between only");
		err = err ?: csdp_filter_bound(c, "lo", cfg->lo, ft, p.lo);
		if (!err && cfg->hi)
			err = csdp_filter_bound(c, "hi", cfg->hi, ft, p.hi);
		p.field_type = (uint16_t)ft;
		p.op = (uint16_t)op;
		p.output_mode = cfg->indices ? CSD_FILTER_INDICES : CSD_FILTER_RECORDS;
		memcpy(params, &p, *len = sizeof(p));
		break;
	}
	case CSD_PROG_CONVERT: {
		struct csd_convert_params p = { 0 };
		long long zp = 0;
		char *end;

		err = csdp_exec_allowed(c, cfg, name, "op count scale zero-point ");
		err = err ?: csdp_need_name(c, name, "op", cfg->op, csd_convert_op_names, &p.op);
		err = err ?: csdp_need_u32(c, name, "count", cfg->count, &p.count);
		if (!err && cfg->zero_point) {
			errno = 0;
			zp = strtoll(cfg->zero_point, &end, 0);
			if (errno || end == cfg->zero_point || *end || zp < INT32_MIN || zp > INT32_MAX)
				err = csdp_usage(c, "--zero-point %s is not a 32-bit integer", cfg->zero_point);
		}
		p.scale = csdp_f32(cfg->scale, 1.0f);
		p.zero_point = (int32_t)zp;
		memcpy(params, &p, *len = sizeof(p));
		break;
	}
	case CSD_PROG_CHECKSUM:
	case CSD_PROG_DECOMPRESS: {
		__u32 algo = 0;

		err = csdp_exec_allowed(c, cfg, name, "algo ");
		err = err ?: csdp_need_name(c, name, "algo", cfg->algo,
					   id == CSD_PROG_CHECKSUM ? csd_checksum_algo_names :
					   csd_decompress_algo_names, &algo);
		memcpy(params, &algo, *len = sizeof(algo));
		break;
	}
	case CSD_PROG_CONV2D: {
		struct csd_conv2d_params p = { 0 };

		err = csdp_exec_allowed(c, cfg, name, "batch channels height width filters kernel-h "
				       "kernel-w stride-h stride-w pad-h pad-w dilation-h dilation-w bias ");
		err = err ?: csdp_opt_u32(c, "batch", cfg->batch, 1, &p.n);
		err = err ?: csdp_need_u32(c, name, "channels", cfg->channels, &p.c);
		err = err ?: csdp_need_u32(c, name, "height", cfg->height, &p.h);
		err = err ?: csdp_need_u32(c, name, "width", cfg->width, &p.w);
		err = err ?: csdp_need_u32(c, name, "filters", cfg->filters, &p.k);
		err = err ?: csdp_need_u32(c, name, "kernel-h", cfg->kernel_h, &p.r);
		err = err ?: csdp_need_u32(c, name, "kernel-w", cfg->kernel_w, &p.s);
		err = err ?: csdp_opt_u32(c, "stride-h", cfg->stride_h, 1, &p.stride_h);
		err = err ?: csdp_opt_u32(c, "stride-w", cfg->stride_w, 1, &p.stride_w);
		err = err ?: csdp_opt_u32(c, "pad-h", cfg->pad_h, 0, &p.pad_h);
		err = err ?: csdp_opt_u32(c, "pad-w", cfg->pad_w, 0, &p.pad_w);
		err = err ?: csdp_opt_u32(c, "dilation-h", cfg->dilation_h, 1, &p.dilation_h);
		err = err ?: csdp_opt_u32(c, "dilation-w", cfg->dilation_w, 1, &p.dilation_w);
		p.flags = cfg->bias ? CSD_CONV2D_HAS_BIAS : 0;
		memcpy(params, &p, *len = sizeof(p));
		break;
	}
	default:
		err = csdp_usage(c, "program %04xh takes its parameters from --params-file", id);
	}
	return err;
}

/* The parameters of a downloaded eBPF program (struct csd_bpf_params and its u64s). */
static int csd_bpf_params(const struct csdp_cli *c, struct csdp_exec_cfg *cfg, const char *name,
			  __u8 *params, __u32 *len)
{
	struct csd_bpf_params p = { 0 };
	__u64 values[CSD_BPF_MAX_PARAMS];
	char *list, *tok, *save = NULL;
	int err;

	err = csdp_exec_allowed(c, cfg, name, "count mode param ");
	err = err ?: csdp_need_u32(c, name, "count", cfg->count, &p.record_count);
	err = err ?: csdp_need_name(c, name, "mode", cfg->mode, csd_bpf_mode_names, &p.mode);
	if (err)
		return err;
	if (cfg->param) {
		list = strdup(cfg->param);
		if (!list)
			return csdp_report(c, -ENOMEM, "buffer");
		for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			uint64_t v;

			if (p.nr_params == CSD_BPF_MAX_PARAMS || !csdp_parse_u64(tok, &v)) {
				free(list);
				return csdp_usage(c, "--param takes at most %u unsigned integers, comma-separated "
						 "(\"%s\")", CSD_BPF_MAX_PARAMS, cfg->param);
			}
			values[p.nr_params++] = v;
		}
		free(list);
	}
	memcpy(params, &p, sizeof(p));
	memcpy(params + sizeof(p), values, 8 * p.nr_params);
	*len = sizeof(p) + 8 * p.nr_params;
	return 0;
}

/* Parses "OFFSET:LENGTH,..." into ranges (at most max); *nr how many. */
static int csdp_parse_ranges(const struct csdp_cli *c, const char *s, struct csd_desc_range *ranges,
			    __u32 max, __u32 *nr)
{
	char *list = strdup(s), *tok, *save = NULL, *colon;
	int err = 0;

	if (!list)
		return csdp_report(c, -ENOMEM, "buffer");
	*nr = 0;
	for (tok = strtok_r(list, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		colon = strchr(tok, ':');
		if (colon)
			*colon = 0;
		if (!colon || !csdp_parse_u64(tok, &ranges[*nr].offset) ||
		    !csdp_parse_u64(colon + 1, &ranges[*nr].length))
			err = csdp_usage(c, "--ranges takes OFFSET:LENGTH pairs, comma-separated (\"%s\")", s);
		else if (++*nr == max && strtok_r(NULL, ",", &save))
			err = csdp_usage(c, "--ranges: more than %u ranges", max);
	}
	free(list);
	if (!err && !*nr)
		err = csdp_usage(c, "--ranges takes at least one OFFSET:LENGTH");
	return err;
}

/* The program named s (a C0h name, or an id): *id and its C0h type (0xff: not listed). */
static int csdp_find_program(const struct csdp_cli *c, const char *s, __u16 *id, __u8 *type,
			    const char **name)
{
	static char found[25];
	__u8 page[CSD_LOG_PAGE_SIZE];
	struct csd_caps_log *caps;
	__u32 entries, i;
	uint64_t num;
	bool by_id = csdp_parse_u64(s, &num);
	int err;

	if (by_id && num > CSD_MAX_PROGRAM_ID)
		return csdp_usage(c, "program id %s is above %#x", s, CSD_MAX_PROGRAM_ID);
	err = csdp_get_caps(c, page, &caps, &entries);
	if (err)
		return err;
	for (i = 0; i < entries; i++) {
		const struct csd_caps_entry *e = &caps->programs[i];

		csdp_entry_name(e, found);
		if (by_id ? e->id == num : !strcmp(found, s)) {
			*id = e->id;
			*type = e->type;
			*name = found;
			return 0;
		}
	}
	if (!by_id)
		return csdp_usage(c, "the device has no program named '%s' (nvme csd program-list)", s);
	*id = (__u16)num;
	*type = 0xff;
	snprintf(found, sizeof(found), "%04xh", *id);
	*name = found;
	return 0;
}

static int csdp_exec(int argc, char **argv, struct command *cmd, struct plugin *plugin)
{
	const char *desc =
		"Execute (85h): run PROGRAM (a name from program-list, or an id) over SLM ranges "
		"(--ranges OFFSET:LENGTH,...; the program's inputs then outputs), parameters as "
		"options:\n"
		"  copy: none\n"
		"  gemm: --m --n --k [--trans-a] [--trans-b] [--alpha=1] [--beta=0]\n"
		"  elementwise: --op --count [--a=0] [--b=0]\n"
		"  softmax: --rows --cols\n"
		"  reduce: --op --dtype [--rows=1] --cols\n"
		"  filter: --record-size --count [--field-offset=0] --type --op --lo\n"
		"    [--hi] [--indices]\n"
		"  convert: --op --count [--scale=1] [--zero-point=0]\n"
		"  checksum: --algo (crc32c, xxh64)\n"
		"  conv2d: [--batch=1] --channels --height --width --filters\n"
		"    --kernel-h --kernel-w [--stride-h/-w=1] [--pad-h/-w=0]\n"
		"    [--dilation-h/-w=1] [--bias]\n"
		"  decompress: --algo (zstd, lz4)\n"
		"  a downloaded eBPF program: --count (records; chase: hop limit)\n"
		"    --mode (filter, map, reduce, chase) [--param=U64,...] (chase:\n"
		"    the start LBA first, one range: out, 16 bytes)\n"
		"  any program: --params-file FILE (parameter bytes as they are)\n"
		"Prints the completion's DW0 and DW1 (their meaning: docs/command-set.md).";
	struct csd_desc_range ranges[CSD_MAX_RANGES];
	__u8 params[CSD_MAX_DESC_LEN], *descr = NULL;
	__u32 nr = 0, param_len = 0, desc_len, dw0, dw1;
	const char *name = NULL;
	struct csdp_cli c;
	__u64 result = 0;
	__u16 id = 0;
	__u8 type = 0;
	int err;
	struct csdp_exec_cfg cfg = {
		.output_format = "normal",
		.m = UNSET, .n = UNSET, .k = UNSET, .rows = UNSET, .cols = UNSET, .count = UNSET,
		.record_size = UNSET, .field_offset = UNSET, .batch = UNSET,
		.channels = UNSET, .height = UNSET, .width = UNSET, .filters = UNSET,
		.kernel_h = UNSET, .kernel_w = UNSET, .stride_h = UNSET, .stride_w = UNSET,
		.pad_h = UNSET, .pad_w = UNSET, .dilation_h = UNSET, .dilation_w = UNSET,
		.alpha = NAN, .beta = NAN, .a = NAN, .b = NAN, .scale = NAN,
	};

	OPT_ARGS(opts) = {
		OPT_STR("program", 'p', &cfg.program, "program name (program-list) or id"),
		OPT_LIST("ranges", 'r', &cfg.ranges, "SLM ranges OFFSET:LENGTH,..."),
		OPT_FILE("params-file", 'P', &cfg.params_file, "parameter bytes, sent as they are"),
		OPT_STR("op", 0, &cfg.op, "operation (elementwise, reduce, filter, convert)"),
		OPT_STR("dtype", 0, &cfg.dtype, "reduce: element type (f32, f64, i32, i64)"),
		OPT_STR("type", 0, &cfg.type, "filter: field type (i32, i64, u32, u64, f32, f64)"),
		OPT_STR("algo", 0, &cfg.algo, "checksum (crc32c, xxh64) or decompress (zstd, lz4)"),
		OPT_STR("mode", 0, &cfg.mode, "downloaded program: filter, map, reduce or chase"),
		OPT_STR("lo", 0, &cfg.lo, "filter: value compared with (lower bound of between)"),
		OPT_STR("hi", 0, &cfg.hi, "filter: upper bound of between"),
		OPT_LIST("param", 0, &cfg.param, "downloaded program: u64 parameters, comma-separated"),
		OPT_LONG("m", 0, &cfg.m, "gemm: rows of op(A) and C"),
		OPT_LONG("n", 0, &cfg.n, "gemm: columns of op(B) and C"),
		OPT_LONG("k", 0, &cfg.k, "gemm: columns of op(A), rows of op(B)"),
		OPT_LONG("rows", 0, &cfg.rows, "softmax, reduce: rows"),
		OPT_LONG("cols", 0, &cfg.cols, "softmax, reduce: columns"),
		OPT_LONG("count", 0, &cfg.count, "elements (elementwise, convert) or records (filter, eBPF)"),
		OPT_LONG("record-size", 0, &cfg.record_size, "filter: bytes per record"),
		OPT_LONG("field-offset", 0, &cfg.field_offset, "filter: byte offset of the field"),
		OPT_STR("zero-point", 0, &cfg.zero_point, "convert: zero point (i32)"),
		OPT_LONG("batch", 0, &cfg.batch, "conv2d: N"),
		OPT_LONG("channels", 0, &cfg.channels, "conv2d: C"),
		OPT_LONG("height", 0, &cfg.height, "conv2d: H"),
		OPT_LONG("width", 0, &cfg.width, "conv2d: W"),
		OPT_LONG("filters", 0, &cfg.filters, "conv2d: K"),
		OPT_LONG("kernel-h", 0, &cfg.kernel_h, "conv2d: R"),
		OPT_LONG("kernel-w", 0, &cfg.kernel_w, "conv2d: S"),
		OPT_LONG("stride-h", 0, &cfg.stride_h, "conv2d: vertical stride"),
		OPT_LONG("stride-w", 0, &cfg.stride_w, "conv2d: horizontal stride"),
		OPT_LONG("pad-h", 0, &cfg.pad_h, "conv2d: vertical padding"),
		OPT_LONG("pad-w", 0, &cfg.pad_w, "conv2d: horizontal padding"),
		OPT_LONG("dilation-h", 0, &cfg.dilation_h, "conv2d: vertical dilation"),
		OPT_LONG("dilation-w", 0, &cfg.dilation_w, "conv2d: horizontal dilation"),
		OPT_DOUBLE("alpha", 0, &cfg.alpha, "gemm: alpha"),
		OPT_DOUBLE("beta", 0, &cfg.beta, "gemm: beta"),
		OPT_DOUBLE("a", 0, &cfg.a, "elementwise: a (axpb: a*x+b)"),
		OPT_DOUBLE("b", 0, &cfg.b, "elementwise: b"),
		OPT_DOUBLE("scale", 0, &cfg.scale, "convert: scale"),
		OPT_FLAG("trans-a", 0, &cfg.trans_a, "gemm: A is stored k x m"),
		OPT_FLAG("trans-b", 0, &cfg.trans_b, "gemm: B is stored n x k"),
		OPT_FLAG("indices", 0, &cfg.indices, "filter: write u32 record indices, not records"),
		OPT_FLAG("bias", 0, &cfg.bias, "conv2d: the third range is a bias"),
		CSD_NS_OPTS(cfg),
		OPT_END()
	};

	err = csdp_open(&c, "csd exec", argc, argv, desc, opts, &cfg.output_format, &cfg.nsid, true);
	if (err)
		return err;
	if (!cfg.program) {
		err = csdp_usage(&c, "--program is required (nvme csd program-list names them)");
		goto out;
	}
	if (!cfg.ranges) {
		err = csdp_usage(&c, "--ranges is required (OFFSET:LENGTH,...)");
		goto out;
	}
	err = csdp_parse_ranges(&c, cfg.ranges, ranges, CSD_MAX_RANGES, &nr);
	err = err ?: csdp_find_program(&c, cfg.program, &id, &type, &name);
	if (err)
		goto out;
	if (cfg.params_file) {
		int fd = open(cfg.params_file, O_RDONLY);
		__u64 n = 0;
		__u8 *bytes = fd < 0 ? NULL : csdp_read_all(fd, CSD_MAX_DESC_LEN, false, &n);

		if (fd >= 0)
			close(fd);
		if (!bytes) {
			err = csdp_report(&c, -errno, cfg.params_file);
			goto out;
		}
		memcpy(params, bytes, n);
		param_len = (__u32)n;
		free(bytes);
		err = csdp_exec_allowed(&c, &cfg, name, "");
	} else if (type == CSD_PROGRAM_DEVICE && csd_program_name(id)) {
		err = csdp_device_params(&c, &cfg, id, params, &param_len);
	} else if (type == CSD_PROGRAM_DOWNLOADED) {
		err = csd_bpf_params(&c, &cfg, name, params, &param_len);
	} else {
		err = csdp_exec_allowed(&c, &cfg, name, "");  /* a plug-in or an id C0h does not list */
	}
	if (err)
		goto out;
	desc_len = (__u32)csd_desc_size(nr, param_len);
	if (desc_len > CSD_MAX_DESC_LEN) {
		err = csdp_usage(&c, "the descriptor would be %u bytes, more than %u", desc_len, CSD_MAX_DESC_LEN);
		goto out;
	}
	descr = calloc(1, desc_len);
	if (!descr) {
		err = csdp_report(&c, -ENOMEM, "buffer");
		goto out;
	}
	csd_desc_encode(descr, id, (__u16)nr, ranges, params, param_len);
	err = csdp_cmd(&c, CSD_OPC_EXECUTE, desc_len, 0, 0, 0, 0, descr, desc_len, &result);
	dw0 = (__u32)result;
	dw1 = (__u32)(result >> 32);
	if (err) {
		char detail[160];

		if (err > 0 && CSD_STATUS_CODE(err) == CSD_STATUS_OUTPUT_OVERFLOW)
			snprintf(detail, sizeof(detail), "%s: output range too small (DW0 %u: bytes needed, "
				 "DW1 %u)", name, dw0, dw1);
		else
			snprintf(detail, sizeof(detail), "%s", name);
		csdp_report(&c, err, detail);
		goto out;
	}
	if (c.flags == JSON) {
		struct json_object *o = json_create_object();

		json_object_add_value_string(o, "program", name);
		json_object_add_value_uint64(o, "id", id);
		json_object_add_value_uint64(o, "dw0", dw0);
		json_object_add_value_uint64(o, "dw1", dw1);
		json_object_add_value_uint64(o, "result", result);
		csdp_print_json(o);
	} else {
		printf("%s: dw0 0x%08x dw1 0x%08x\n", name, dw0, dw1);
	}
out:
	free(descr);
	csdp_close(&c);
	return err;
}

static int csdp_program_load(int argc, char **argv, struct command *cmd, struct plugin *plugin)
{
	const char *desc = "Program Load (89h): an eBPF object (clang -O2 -target bpf -c) into a "
			   "slot (0100h..01FFh; without --slot the device picks one), for records of "
			   "RECORD-SIZE bytes, in MDTS-sized chunks. Prints the slot.";
	__u8 *image = NULL;
	__u64 size = 0, off, result = 0;
	struct csdp_cli c;
	__u16 slot;
	int err, fd = -1;
	struct config {
		char *file;
		__u32 record_size, slot;
		char *output_format;
		__u32 nsid;
	} cfg = { .output_format = "normal" };

	OPT_ARGS(opts) = {
		OPT_FILE("file", 'f', &cfg.file, "the eBPF object"),
		OPT_UINT("record-size", 'r', &cfg.record_size, "bytes per record the program reads (1..4096)"),
		OPT_UINT("slot", 's', &cfg.slot, "slot 0x100..0x1ff (default: the device picks)"),
		CSD_NS_OPTS(cfg),
		OPT_END()
	};

	err = csdp_open(&c, "csd program-load", argc, argv, desc, opts, &cfg.output_format, &cfg.nsid, true);
	if (err)
		return err;
	if (!cfg.file || !cfg.record_size) {
		err = csdp_usage(&c, "--file and --record-size are required");
		goto out;
	}
	if (cfg.slot > 0xffff) {
		err = csdp_usage(&c, "--slot %#x is not a slot id (0x100..0x1ff)", cfg.slot);
		goto out;
	}
	fd = open(cfg.file, O_RDONLY);
	image = fd < 0 ? NULL : csdp_read_all(fd, UINT32_MAX, false, &size);
	if (!image) {
		err = csdp_report(&c, -errno, cfg.file);
		goto out;
	}
	if (!size) {
		err = csdp_usage(&c, "%s is empty", cfg.file);
		goto out;
	}
	slot = (__u16)cfg.slot;
	for (off = 0; off < size; off += c.max_xfer) {
		__u32 n = size - off < c.max_xfer ? (__u32)(size - off) : c.max_xfer;

		err = csdp_cmd(&c, CSD_OPC_PROGRAM_LOAD, csd_program_load_cdw10(slot, CSD_PROGRAM_TYPE_EBPF),
			      (__u32)size, (__u32)off, n, cfg.record_size, image + off, n, &result);
		if (err) {
			char detail[128];

			if (err > 0 && CSD_STATUS_CODE(err) == CSD_STATUS_INVALID_PROGRAM_IMAGE)
				snprintf(detail, sizeof(detail), (__u32)result == CSD_IMAGE_FAULT_NONE ?
					 "%s: not an image the device reads (ELF)" :
					 "%s: the device refused instruction %u", cfg.file, (__u32)result);
			else
				snprintf(detail, sizeof(detail), "%s, chunk at byte %" PRIu64, cfg.file,
					 (uint64_t)off);
			csdp_report(&c, err, detail);
			goto out;
		}
		slot = (__u16)result; /* later chunks name the slot the first one got */
	}
	if (c.flags == JSON) {
		struct json_object *o = json_create_object();

		json_object_add_value_uint64(o, "slot", slot);
		json_object_add_value_uint64(o, "bytes", size);
		csdp_print_json(o);
	} else {
		printf("loaded %s into slot 0x%04x\n", cfg.file, slot);
	}
out:
	if (fd >= 0)
		close(fd);
	free(image);
	csdp_close(&c);
	return err;
}

static int csdp_program_unload(int argc, char **argv, struct command *cmd, struct plugin *plugin)
{
	const char *desc = "Program Unload (8Ch): empty a slot (a slot still being loaded: the "
			   "upload is abandoned).";
	struct csdp_cli c;
	int err;
	struct config {
		__u32 slot;
		char *output_format;
		__u32 nsid;
	} cfg = { .output_format = "normal" };

	OPT_ARGS(opts) = {
		OPT_UINT("slot", 's', &cfg.slot, "slot 0x100..0x1ff"),
		CSD_NS_OPTS(cfg),
		OPT_END()
	};

	err = csdp_open(&c, "csd program-unload", argc, argv, desc, opts, &cfg.output_format, &cfg.nsid, true);
	if (err)
		return err;
	if (!cfg.slot || cfg.slot > 0xffff) {
		err = csdp_usage(&c, "--slot is required (0x100..0x1ff)");
		goto out;
	}
	err = csdp_cmd(&c, CSD_OPC_PROGRAM_UNLOAD, cfg.slot, 0, 0, 0, 0, NULL, 0, NULL);
	if (err) {
		char detail[32];

		snprintf(detail, sizeof(detail), "slot 0x%04x", cfg.slot);
		csdp_report(&c, err, detail);
		goto out;
	}
	if (c.flags == JSON) {
		struct json_object *o = json_create_object();

		json_object_add_value_uint64(o, "slot", cfg.slot);
		csdp_print_json(o);
	} else {
		printf("unloaded slot 0x%04x\n", cfg.slot);
	}
out:
	csdp_close(&c);
	return err;
}
