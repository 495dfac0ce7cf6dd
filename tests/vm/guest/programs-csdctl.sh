# SPDX-License-Identifier: MIT
# Programs of your own from the shell: csdctl program load, list, run (filter, map,
# reduce over a stored object, results checked with numpy), unload, and clear errors for
# a refused image and an empty slot.
# vm: csd=on slm=64M
. /csd/tests/lib.sh
check csdctl format --force  # over what the tests before it in this guest left
python3 - <<'PY' || fail "making records"
import numpy as np
r = np.zeros(5000, dtype=[("key", "<i4"), ("field", "<u4"), ("payload", "<u8")])
r["key"] = np.arange(5000) % 1000 - 500
r["field"] = np.arange(5000)
r.tofile("/tmp/recs.bin")
PY
check csdctl put recs /tmp/recs.bin
slot=$(csdctl --json program load /csd/bpf/threshold.o --record-size 16 | python3 -c 'import json,sys; print(json.load(sys.stdin)["slot"])')
[ "$slot" = 256 ] || fail "program load: slot $slot, not 0x100"
csdctl program list | grep -q '^0100h  threshold$' || fail "program list"
out=$(csdctl --json program run 0x100 recs --record-size 16 --mode filter --param 250 --out hot)
echo "$out" | grep -q '"matches":1245' || fail "filter: $out"
csdctl get hot /tmp/hot.bin
python3 - <<'PY' || fail "filter result"
import numpy as np
dt = [("key", "<i4"), ("field", "<u4"), ("payload", "<u8")]
r, hot = np.fromfile("/tmp/recs.bin", dtype=dt), np.fromfile("/tmp/hot.bin", dtype=dt)
assert np.array_equal(hot, r[r["key"] > 250]), "kept records differ"
PY
[ "$(csdctl program run 0x100 recs --record-size 16 --mode reduce --param 250)" = 1245 ] || fail "reduce"
pslot=$(csdctl --json program load /csd/bpf/project.o --record-size 16 --slot 0x150 | python3 -c 'import json,sys; print(json.load(sys.stdin)["slot"])')
[ "$pslot" = 336 ] || fail "load into slot 0x150: $pslot"
check csdctl program run 0x150 recs --record-size 16 --mode map --param 2
csdctl get recs.map /tmp/map.npy
python3 -c '
import numpy as np
m = np.load("/tmp/map.npy")
assert m.dtype == np.uint64 and np.array_equal(m, np.arange(5000, dtype=np.uint64) * 3), m[:4]
' || fail "map result"
err=$(csdctl program load /csd/bpf/loop.o --record-size 16 2>&1) && fail "a looping program was accepted"
echo "$err" | grep -q "refused by the verifier at instruction [0-9]*: Invalid Program Image" || fail "load error: $err"
check csdctl program unload 0x100
check csdctl program unload 0x150
err=$(csdctl program unload 0x100 2>&1) && fail "unloading an empty slot succeeded"
echo "$err" | grep -q "Invalid Program" || fail "unload error: $err"
[ -z "$(csdctl program list)" ] || fail "programs left loaded"
echo "csdctl program load, list, run (filter, map, reduce), unload and errors: ok"
