# libcsd's integration suite in the guest over io_uring passthrough on /dev/ng0n1.
# vm: csd=on slm=64M
CSD_TEST_DEVICE=/dev/ng0n1 CSD_TEST_URING=1 exec csd-library-tests --gtest_brief=1
