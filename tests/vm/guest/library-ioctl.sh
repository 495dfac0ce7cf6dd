# libcsd's integration suite in the guest over ioctl passthrough on /dev/ng0n1.
# vm: csd=on slm=64M
CSD_TEST_DEVICE=/dev/ng0n1 exec csd-library-tests --gtest_brief=1
