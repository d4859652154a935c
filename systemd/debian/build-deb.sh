#!/usr/bin/env bash
# Builds dist/mediator_VERSION_ARCH.deb (`make deb`): mediatord and
# mediatorctl linked with the Swift standard library statically (they need
# only the base system and libsystemd), the systemd units, the sysusers.d
# file, the polkit rule, the docs, man pages generated from the commands'
# own help and shell completion (all of `make install`). Maintainer scripts
# create the user and enable mediatord.socket, as debhelper would. Needs dpkg-dev and fakeroot;
# checks the package with lintian when it is installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
[ -x /opt/swift/usr/bin/swift ] && export PATH="/opt/swift/usr/bin:$PATH"
here=systemd/debian

version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Protocol/MediatorVersion.swift)
arch=$(dpkg --print-architecture)
[ -n "$version" ] || { echo "build-deb: no version in MediatorVersion.swift" >&2; exit 1; }

# The static build, its flags in one place (scripts/build-static: relro and now, lld, hot code together).
scripts/build-static mediatord mediatorctl
bin=$(scripts/build-static --show-bin-path)
swift build --product generate-manual
generate_manual="$(swift build --show-bin-path)/generate-manual"

work=$(mktemp -d /tmp/mediator-deb.XXXXXX)
trap 'rm -rf "$work"' EXIT
stage="$work/mediator"
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}" +%Y-%m-%d)
# The same files, in the same places, as `make install PREFIX=/usr`: man
# pages (from the commands' help) and shell completion included.
make --no-print-directory install DESTDIR="$stage" PREFIX=/usr BIN_PATH="$bin" \
    GENERATE_MANUAL="$generate_manual" MAN_DATE="$date" >/dev/null
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/mediatord" "$stage/usr/bin/mediatorctl"

doc="$stage/usr/share/doc/mediator"
install -m 0644 "$here/copyright" "$doc/copyright"
install -m 0644 README.md "$doc/README.md"
sed -e "s|@VERSION@|$version|" -e "s|@DATE@|$(date -u -R -d "$date")|" "$here/changelog" | gzip -9n > "$doc/changelog.gz"
chmod 0644 "$doc/changelog.gz"
# Debian keeps docs compressed above 4 KiB, but the units' Documentation=
# lines name systemd.md and daemon.md as they are.
gzip -9n "$doc/README.md" "$doc/policy.md" "$doc/scale-out.md"

# The shared libraries the binaries need, as Depends (dpkg-shlibdeps wants a debian/control).
mkdir -p "$work/shlibs/debian" && printf 'Source: mediator\n\nPackage: mediator\nArchitecture: any\n' > "$work/shlibs/debian/control"
depends=$(cd "$work/shlibs" && dpkg-shlibdeps -O "$stage/usr/bin/mediatord" "$stage/usr/bin/mediatorctl" 2>/dev/null \
    | sed -n 's/^shlibs:Depends=//p')
# Packed relocations (scripts/build-static) need glibc 2.36, a version
# dpkg-shlibdeps does not see: it is a version need, not a symbol.
if readelf -V "$stage/usr/bin/mediatord" | grep -q GLIBC_ABI_DT_RELR; then
    depends=$(printf '%s' "$depends" | sed -E 's/libc6 \(>= [0-9.]+\)/libc6 (>= 2.36)/')
fi

install -d -m 0755 "$stage/DEBIAN"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@SIZE@|$size|" -e "s|@DEPENDS@|$depends|" \
    "$here/control.in" > "$stage/DEBIAN/control"
for script in postinst prerm postrm; do install -m 0755 "$here/$script" "$stage/DEBIAN/$script"; done
(cd "$stage" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum) > "$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums"

mkdir -p dist
deb="dist/mediator_${version}_${arch}.deb"
fakeroot dpkg-deb --build -Zxz "$stage" "$deb" >/dev/null
echo "build-deb: $deb ($(du -h "$deb" | cut -f1))"
if command -v lintian >/dev/null 2>&1; then
    # Clean of errors and warnings, or the build fails.
    lintian --tag-display-limit 0 --fail-on error,warning "$deb"
fi
