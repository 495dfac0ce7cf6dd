# SPDX-License-Identifier: MIT
# Harness self-test: a passing test in the same boot as a frozen one still counts.
# vm: csd=off timeout=2 memory=512M
true
