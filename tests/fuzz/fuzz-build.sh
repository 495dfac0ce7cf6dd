# SPDX-License-Identifier: MIT
# The fuzzing build (sourced by run-fuzz.sh and run-qemu-fuzz.sh): meson's build folder
# build/meson-fuzz, configured once with -Dfuzz=enabled (clang; libFuzzer coverage, ASan and
# UBSan on every object, asserts on) and brought up to date by ninja, which rebuilds only
# what changed. It holds the fuzz targets (tests/fuzz/fuzz_*) and the instrumented device
# core (core/libcsd_core.a) that QEMU's fuzzer links.
# fuzz_build [TARGET ...]: configure if needed and build TARGETs (default: everything);
# prints the build's folder in FUZZ_BUILD. Returns non-zero when meson or ninja fails.
FUZZ_BUILD="$top/build/meson-fuzz"
fuzz_build() {
    if [ ! -f "$FUZZ_BUILD/build.ninja" ]; then
        echo "fuzz: configuring $FUZZ_BUILD (clang, -Dfuzz=enabled)"
        rm -rf "$FUZZ_BUILD"
        CC=clang CXX=clang++ meson setup "$FUZZ_BUILD" "$top" -Dfuzz=enabled -Dbuildtype=debug -Doptimization=1 -Db_ndebug=false \
            > "$top/build/meson-fuzz.setup.log" 2>&1 || { tail -n 30 "$top/build/meson-fuzz.setup.log"; return 1; }
    fi
    local log="$top/build/meson-fuzz.ninja.log"
    nice -n 5 ninja -C "$FUZZ_BUILD" -j "${JOBS:-$(nproc)}" "$@" > "$log" 2>&1 && return 0
    if grep -q "rebuilding 'build.ninja'" "$log" && [ -z "${FUZZ_BUILD_WIPED:-}" ]; then
        echo "fuzz: $FUZZ_BUILD cannot be regenerated (options of an older layout): configuring it anew"
        rm -rf "$FUZZ_BUILD"
        FUZZ_BUILD_WIPED=1 fuzz_build "$@"
        return
    fi
    grep -v -E '^\[[0-9]+/[0-9]+\] ' "$log" | tail -n 40
    return 1
}
