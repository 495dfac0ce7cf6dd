# SPDX-License-Identifier: MIT
# Harness self-test: a test sharing a guest with one of a shorter timeout keeps its own.
# vm: csd=off timeout=12
sleep 6
