# SPDX-License-Identifier: MIT
# Harness self-test: a guest that freezes entirely is killed by the host-side timeout.
# vm: csd=off timeout=2 memory=512M
echo freeze > /sys/power/state
sleep 1000
