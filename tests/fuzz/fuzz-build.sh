# SPDX-License-Identifier: MIT
# The fuzzing build (sourced by run-fuzz.sh and run-qemu-fuzz.sh): meson's build folder
# build/meson-fuzz, configured once with -Dfuzz=true (clang; libFuzzer coverage, ASan and
# UBSan on every object, asserts on) and brought up to date by ninja, which rebuilds only
# what changed. It holds the fuzz targets (tests/fuzz/fuzz_*) and the instrumented device
# core (qemu-device/core/libcsd_core.a) that QEMU's fuzzer links.
# fuzz_build [TARGET ...]: configure if needed and build TARGETs (default: everything);
# prints the build's folder in FUZZ_BUILD. Returns non-zero when meson or ninja fails.
FUZZ_BUILD="$top/build/meson-fuzz"
fuzz_build() {
    if [ ! -f "$FUZZ_BUILD/build.ninja" ]; then
        echo "fuzz: configuring $FUZZ_BUILD (clang, -Dfuzz=true)"
        rm -rf "$FUZZ_BUILD"
        CC=clang CXX=clang++ meson setup "$FUZZ_BUILD" "$top" -Dfuzz=true -Dbuildtype=debug -Doptimization=1 -Db_ndebug=false \
            > "$top/build/meson-fuzz.setup.log" 2>&1 || { tail -n 30 "$top/build/meson-fuzz.setup.log"; return 1; }
    fi
    nice -n 5 ninja -C "$FUZZ_BUILD" -j "${JOBS:-$(nproc)}" "$@" | grep -v -E '^\[[0-9]+/[0-9]+\] ' ; return "${PIPESTATUS[0]}"
}
