#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The README's first ten minutes on a fresh machine, as a new user meets them: a fresh
# Debian 12 root (ci/root-lib.sh: debootstrap minbase from this machine's own apt archive,
# nothing else), the packages the README's Requirements say to install first (its
# `apt install ...`, read from README.md), a `git clone` of the commit under test (HEAD;
# committed work only, no build output), then the README's commands exactly as written,
# read from the clone's README.md by tests/markdown_recipes.py (the reader
# python/tests/test_readme.py uses): the ```sh blocks marked '<!-- build recipe -->'
# (make demo) and '<!-- host recipe -->' (csdctl and Python on emu:), in order, in one
# checkout, each one's output compared with the ```text block after it.
# Bound in, because they only save time and are keyed on their inputs: downloads (QEMU's,
# nvme-cli's and fio's source packages in ~/.cache/nvme-csd/dl, the guest kernel's packages
# in ~/.cache/nvme-csd/kernel, apt's .debs, pip's cache) and ccache's caches (QEMU's in
# ~/.cache/nvme-csd/ccache, meson's in ~/.cache/ccache). Not bound: the project's build
# caches (QEMU, nvme-cli and fio build trees), build/, any venv or package of this machine.
# Prints each step's time and 'fresh: N passed, N failed' last; the steps' whole output is in
# LOG_DIR. Usage: tests/fresh/readme-first-ten-minutes.sh   (root; make test-fresh)
# Environment: ROOT (default /var/tmp/nvme-csd-readme), LOG_DIR (default build/fresh),
# KEEP=1 (leave the root in place, unmounted, for a look afterwards), AFTER (a command run
# next in the same checkout when the README's passed, as one more step: .ci/run's make test).
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
root=${ROOT:-/var/tmp/nvme-csd-readme}
logs=${LOG_DIR:-$top/build/fresh}
commit=$(git -C "$top" rev-parse HEAD)
pass=0 fail=0
say() { echo "fresh: $*"; }
finish() { echo "fresh: $pass passed, $fail failed"; [ $fail = 0 ]; }
[ "$(id -u)" = 0 ] || { say "needs root (debootstrap, chroot, mounts; make deps installs packages)"; fail=1; finish; exit 1; }
[ -z "$(git -C "$top" status --porcelain --untracked-files=no)" ] ||
    say "note: the work tree has uncommitted changes; the clone tests the commit $commit alone"

. "$top/ci/root-lib.sh"
if [ "${KEEP:-0}" = 1 ]; then trap root_unmount_all EXIT; else trap root_cleanup EXIT; fi
root_cleanup
rm -rf "$logs" && mkdir -p "$logs"

# step NAME LOG COMMAND...: runs a step, its output into LOG_DIR/LOG with each line led by
# the seconds since the step began; counts it and prints its time (and its log's end on failure).
step() {
    local name=$1 log=$logs/$2 start rc
    shift 2
    start=$(date +%s)
    "$@" 2>&1 | while IFS= read -r line || [ -n "$line" ]; do
        printf '%5d %s\n' $(( EPOCHSECONDS - start )) "$line"
    done > "$log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" = 0 ]; then
        pass=$((pass + 1)); say "ok   $name ($(( $(date +%s) - start )) s)"
    else
        fail=$((fail + 1)); say "FAIL $name (exit $rc after $(( $(date +%s) - start )) s; $log ends:)"
        tail -n 40 "$log" | sed 's/^/    /'
    fi
    return "$rc"
}
# in_root_lib FUNCTION ARGS...: one of ci/root-lib.sh's functions, at low priority (a shared machine).
in_root_lib() { nice -n 19 bash -c '. "$1/ci/root-lib.sh"; root=$2; top=$1; shift 2; "$@"' _ "$top" "$root" "$@"; }

step "a fresh Debian 12 root (debootstrap minbase)" debootstrap.log root_make "" || { finish; exit 1; }
root_mount pip ccache
root_mount_project_cache dl kernel ccache   # the project's downloads and QEMU's ccache, not its build trees

# The Requirements' first step (`apt install git make`: the README's words), then the clone,
# with the root's own git, from this repository at the commit under test.
step "apt install $(root_first_packages "$commit") (the README's Requirements)" apt.log \
    in_root_lib root_install_first "$commit" || { finish; exit 1; }
step "git clone at ${commit:0:12}" clone.log in_root_lib root_clone "$commit" || { finish; exit 1; }

# The README's commands, read from the clone's README.md.
recipes=$root/root/readme-recipes
python3 "$top/tests/markdown_recipes.py" "$root/root/nvme-csd/README.md" "$recipes" \
    '<!-- build recipe -->' '<!-- host recipe -->' || { fail=1; finish; exit 1; }
for script in "$recipes"/*.sh; do
    n=$(basename "$script" .sh)
    first=$(grep -m1 -v '^\s*$' "$script" | cut -c1-50)
    step "README recipe $n: $first" "recipe-$n.log" in_root_lib root_run "cd /root/nvme-csd && sh /root/readme-recipes/$n.sh" || break
    if [ -f "$recipes/$n.expected" ]; then
        cut -c7- "$logs/recipe-$n.log" > "$logs/recipe-$n.out"   # the output without the step's times
        if python3 "$top/tests/markdown_recipes.py" --compare "$logs/recipe-$n.out" "$recipes/$n.expected"; then
            pass=$((pass + 1)); say "ok   README recipe $n prints what the README says"
        else
            fail=$((fail + 1)); say "FAIL README recipe $n prints something else than the README"
        fi
    fi
done
# AFTER (.ci/run: make test): one more command in the same checkout, once the README's passed.
if [ -n "${AFTER:-}" ] && [ $fail = 0 ]; then
    step "then '$AFTER' in the same checkout" after.log in_root_lib root_run "cd /root/nvme-csd && $AFTER" &&
        tail -n 3 "$logs/after.log" | cut -c7- | sed 's/^/    /'   # its own summary
fi
finish
