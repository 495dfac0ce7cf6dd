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
