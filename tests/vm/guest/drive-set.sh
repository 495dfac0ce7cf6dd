# SPDX-License-Identifier: MIT
# Several drives as one: three CSD controllers, libcsd's DriveSet suite and the Python
# open_many tests against their NVM namespaces (found as the ng nodes with block devices).
# vm: csd=on slm=64M drives=3 alone timeout=300
. /csd/tests/lib.sh
drives=""
for b in /dev/nvme*n*; do
    [ -b "$b" ] && drives="$drives${drives:+,}/dev/ng${b#/dev/nvme}"
done
echo "drives: $drives"
[ "$(echo "$drives" | tr ',' '\n' | wc -l)" = 3 ] || fail "three NVM namespaces expected, found: $drives"
CSD_TEST_DRIVES=$drives csd-drive-set-tests --gtest_brief=1 || fail "DriveSet suite"
cd /csd/python
CSD_TEST_DRIVES=$drives python3 -m pytest -q -rs -p no:cacheprovider tests/test_drive_set.py || fail "open_many tests"
# csdctl --drives: a striped tensor, its whole-tensor reductions, a row-block gemm
cd /tmp
python3 -c "
import numpy as np
np.save('x.npy', np.arange(3000, dtype=np.float32)); np.save('a.npy', np.full((50, 8), 2, np.float32))
np.save('b.npy', np.full((8, 4), 3, np.float32))"
csdctl --drives $drives format --force > /dev/null || fail "csdctl --drives format"
csdctl --drives $drives put x x.npy --placement striped || fail "put striped"
csdctl --drives $drives put a a.npy --placement striped && csdctl --drives $drives put b b.npy --placement replicated \
    || fail "put a, b"
[ "$(csdctl --drives $drives run reduce x --op sum)" = "sum x 4498500" ] || fail "csdctl --drives reduce sum"
[ "$(csdctl --drives $drives run reduce x --op argmax)" = "argmax x 2999" ] || fail "csdctl --drives reduce argmax"
csdctl --drives $drives run gemm a b c && csdctl --drives $drives get c c.npy || fail "csdctl --drives gemm"
python3 -c "import numpy as np; c = np.load('c.npy'); assert c.shape == (50, 4) and (c == 48).all(), c" \
    || fail "the gemm's C is not 2*3*8 everywhere"
csdctl --drives $drives ls | tail -1 | grep -q "^4 objects on 3 drives" || fail "csdctl --drives ls"
echo "csdctl --drives: put striped/replicated, reduce sum/argmax, gemm, ls: ok"
# last, as it takes a drive away: the second drive's PCI function is removed while reductions
# over the set run; the answers before are right and the failure names the drive
victim=$(echo "$drives" | cut -d, -f2)
python3 /csd/tests/drive_set_failure.py "$drives" 1 /sys/class/nvme/$(ctrl_of $victim)/device/remove \
    || fail "a drive removed mid-operation"
