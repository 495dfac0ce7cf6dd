# SPDX-License-Identifier: MIT
# Harness self-test: a test that never ends is killed by the guest-side timeout.
# vm: csd=off timeout=3
sleep 1000
