// SPDX-License-Identifier: MIT
/* libcsd-dev's smoke test in C (tests/packages/test-packages.sh builds it with
 * 'pkg-config --cflags --libs csd'): the version call, the spec header's names, and a
 * checksum and a store round trip on the device named by argv[1]. */
#include <stdio.h>
#include <string.h>

#include <csd.h>

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "smoke.c:%d: %s failed: %s\n", __LINE__, #cond, csd_last_error()); \
            return 1;                                                                 \
        }                                                                             \
    } while (0)

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    CHECK(strcmp(csd_version(), CSD_VERSION_STRING) == 0);  /* the library is the headers' */
    CHECK(csd_version_number() == CSD_VERSION_NUMBER);
    CHECK(csd_status_name(CSD_STATUS_INVALID_PROGRAM) != NULL);  /* csd_spec.h, from the same package */
    csd_dev *dev = NULL;
    CHECK(csd_open(argv[1], &dev) == 0);
    uint64_t off = 0, sum = 0, len = 0;
    CHECK(csd_slm_alloc(dev, 4096, 4096, &off) == 0);
    CHECK(csd_slm_write(dev, off, "123456789", 9) == 0);
    csd_range r = {off, 9};
    CHECK(csd_checksum(dev, CSD_CKSUM_CRC32C, r, &sum) == 0 && sum == 0xE3069283u);  /* CRC-32C check value */
    CHECK(csd_store_format_flags(dev, CSD_FORMAT_FORCE) == 0);  /* over the store csdctl made there */
    CHECK(csd_store_put(dev, "c", "from C", 6) == 0);
    char back[16] = {0};
    CHECK(csd_store_get(dev, "c", back, sizeof back, &len) == 0 && len == 6 && memcmp(back, "from C", 6) == 0);
    csd_close(dev);
    printf("smoke.c: libcsd %s ok\n", csd_version());
    return 0;
}
