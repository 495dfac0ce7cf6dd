# libcsd's integration suite in the guest over io_uring passthrough on /dev/ng0n1, speaking
# the vendor commands and then the standard NVMe computational storage command sets.
# vm: csd=on slm=64M device=csd.nvme-cs=on
CSD_TEST_DEVICE=/dev/ng0n1 CSD_TEST_URING=1 csd-library-tests --gtest_brief=1 || exit 1
CSD_TEST_DEVICE=/dev/ng0n1 CSD_TEST_URING=1 CSD_FRONT_END=nvme-cs exec csd-library-tests --gtest_brief=1
