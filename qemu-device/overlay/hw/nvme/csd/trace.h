/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The trace events of hw/nvme/csd/trace-events (csd.c.inc includes this). */
#include "trace/trace-hw_nvme_csd.h"
