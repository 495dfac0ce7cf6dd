/* SPDX-License-Identifier: MIT */
/* csd_version.h - the version of libcsd these headers come with (meson.build's project
 * version; meson refuses to configure when they differ). */
#ifndef CSD_VERSION_H
#define CSD_VERSION_H

#define CSD_VERSION_MAJOR 0
#define CSD_VERSION_MINOR 1
#define CSD_VERSION_PATCH 0
#define CSD_VERSION_STRING "0.1.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH, as csd_version_number() returns it. */
#define CSD_VERSION_NUMBER (CSD_VERSION_MAJOR * 10000 + CSD_VERSION_MINOR * 100 + CSD_VERSION_PATCH)

#endif
