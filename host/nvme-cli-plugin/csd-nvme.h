/* SPDX-License-Identifier: MIT */
/*
 * csd-nvme.h - the `nvme csd` plugin's command list, in nvme-cli's plugin form
 * (cmd.h's PLUGIN/COMMAND_LIST/ENTRY, read several times by define_cmd.h).
 */
#undef CMD_INC_FILE
#define CMD_INC_FILE plugins/csd/csd-nvme

#if !defined(CSD_NVME) || defined(CMD_HEADER_MULTI_READ)
#define CSD_NVME

#include "cmd.h"

PLUGIN(NAME("csd", "nvme-csd computational storage (CSD command set 1.3)", NVME_VERSION),
	COMMAND_LIST(
		ENTRY("info", "Capabilities (log page C0h): SLM, compute units, limits, programs", csdp_info)
		ENTRY("stats", "Statistics (log page C1h): command, byte and per-program counters", csdp_stats)
		ENTRY("slm-read", "SLM Read (82h): SLM bytes to a file, stdout or a hex dump", csdp_slm_read)
		ENTRY("slm-write", "SLM Write (81h): a file's bytes (or stdin) into SLM", csdp_slm_write)
		ENTRY("slm-load", "SLM Load (80h): namespace blocks into SLM", csdp_slm_load)
		ENTRY("slm-store", "SLM Store (84h): SLM bytes onto namespace blocks", csdp_slm_store)
		ENTRY("exec", "Execute (85h): run a program by name over SLM ranges", csdp_exec)
		ENTRY("program-load", "Program Load (89h): an eBPF object into a slot", csdp_program_load)
		ENTRY("program-unload", "Program Unload (8Ch): empty a slot", csdp_program_unload)
		ENTRY("program-list", "The device's programs (device-defined, downloaded, plug-ins)", csdp_program_list)
	)
);

#endif

#include "define_cmd.h"
