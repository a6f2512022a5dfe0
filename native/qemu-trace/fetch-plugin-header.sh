#!/usr/bin/env bash
# Fetch qemu-plugin.h (GPL-2.0-or-later, from QEMU) out of Debian's qemu source package into DEST.
#
# Debian's qemu-user runs TCG plugins but ships no plugin header, so the build takes it from the
# source package of the same version. Nothing under /etc changes: apt reads a temporary deb-src
# list and keeps its package lists under a temporary directory, which is deleted afterwards.
# Usage: fetch-plugin-header.sh DEST_DIR
set -euo pipefail
dest=${1:?usage: fetch-plugin-header.sh DEST_DIR}
die() { printf 'fetch-plugin-header: error: %s\n' "$*" >&2; exit 1; }

command -v apt-get >/dev/null || die "apt-get is missing; this build needs Debian's qemu source package"
. /etc/os-release
codename=${VERSION_CODENAME:-bookworm}
mirror=${XLAT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${XLAT_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

tmp=$(mktemp -d /tmp/xlat-qemu-src.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/src"
cat >"$tmp/sources.list" <<LIST
deb-src $mirror $codename main
deb-src $mirror $codename-updates main
deb-src $security $codename-security main
LIST
apt_opts=(-o "Dir::Etc::SourceList=$tmp/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$tmp/lists" -o "Dir::Cache=$tmp/cache" -o "Debug::NoLocking=1")
mkdir -p "$tmp/cache/archives/partial"
apt-get -qq "${apt_opts[@]}" update >"$tmp/update.log" 2>&1 \
    || { cat "$tmp/update.log" >&2; die "apt-get update of the temporary deb-src list failed (network?)"; }

# Prefer the source of the installed qemu-user, so the header matches the QEMU that loads the plugin.
want=qemu
ver=$(dpkg-query -W -f='${source:Version}' qemu-user 2>/dev/null || true)
[ -n "$ver" ] && want="qemu=$ver"
cd "$tmp/src"
if ! apt-get -qq "${apt_opts[@]}" --download-only source "$want" >"$tmp/source.log" 2>&1; then
    [ "$want" = qemu ] && { cat "$tmp/source.log" >&2; die "apt-get source qemu failed"; }
    apt-get -qq "${apt_opts[@]}" --download-only source qemu >"$tmp/source.log" 2>&1 \
        || { cat "$tmp/source.log" >&2; die "apt-get source qemu failed"; }
fi
orig=$(ls qemu_*.orig.tar.* 2>/dev/null | head -n1)
[ -n "$orig" ] || die "the qemu source package has no orig tarball"
tar -xf "$orig" --wildcards --no-anchored 'include/qemu/qemu-plugin.h' \
    || die "qemu-plugin.h is not in $orig"
hdr=$(find . -path '*include/qemu/qemu-plugin.h' | head -n1)
mkdir -p "$dest"
cp "$hdr" "$dest/qemu-plugin.h"
echo "${orig} ${want}" >"$dest/qemu-plugin.h.source"
echo "fetch-plugin-header: $dest/qemu-plugin.h from $orig" >&2
