# SPDX-License-Identifier: MIT
# dsc-files.sh - sourced by the scripts that build against a Debian source package
# (host/nvme-cli-plugin/build.sh, host/fio-engine/build.sh): dsc_files DIR DSC PACKAGE
# prints the "SUM NAME" lines of the files DIR/DSC lists, each checked against its
# SHA-256 sum, and sets dsc_orig and dsc_debian to the upstream and Debian tarballs' names;
# it calls the script's die with what is wrong (a file missing, a sum that differs).
dsc_files() {
    local dl=$1 dsc=$2 pkg=$3 files sum name
    files=$(awk '/^Checksums-Sha256:/ {on = 1; next} /^[^ ]/ {on = 0} on {print $1, $3}' "$dl/$dsc")
    [ -n "$files" ] || die "$dsc lists no files"
    while read -r sum name; do
        [ -f "$dl/$name" ] || die "$name missing from $dl: delete $dl/$dsc and retry"
        [ "$(sha256sum "$dl/$name" | cut -d' ' -f1)" = "$sum" ] ||
            die "checksum mismatch for $name; delete $dl/${pkg}_* and retry"
    done <<< "$files"
    dsc_orig=$(awk '{print $2}' <<< "$files" | grep '\.orig\.tar\.[a-z]*$')
    dsc_debian=$(awk '{print $2}' <<< "$files" | grep '\.debian\.tar\.')
    echo "$files"
}

# dsc_unpack SRC DIR: the upstream tarball (dsc_orig) and the Debian one (dsc_debian) from
# DIR into a new SRC, with Debian's patches applied as dpkg-source applies them.
dsc_unpack() {
    local src=$1 dl=$2 p
    mkdir -p "$src"
    tar -xf "$dl/$dsc_orig" -C "$src" --strip-components=1
    tar -xf "$dl/$dsc_debian" -C "$src"
    if [ -f "$src/debian/patches/series" ]; then
        grep -v '^\s*#' "$src/debian/patches/series" | while read -r p _; do
            [ -n "$p" ] || continue
            patch -d "$src" -p1 -N -s < "$src/debian/patches/$p" || die "Debian patch $p does not apply"
        done
    fi
}
