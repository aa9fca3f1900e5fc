#!/usr/bin/env bash
# tests/install/package.sh BUILD_DIR: the Debian package (cmake/package.cmake).
#   1. `cpack -G DEB` makes towerflow_<version>_<arch>.deb;
#   2. its control fields name the package, its version and its Debian
#      dependencies (found by dpkg-shlibdeps, OpenBLAS declared);
#   3. it holds the tool, libtowerflow.so, the archives, the headers, the CMake
#      package and towerflow.pc under /usr;
#   4. apt resolves its dependencies (`apt-get install --simulate ./<deb>`);
#   5. unpacked into an empty root (dpkg-deb -x), its tool runs `towerflow ops`
#      and a program built with its pkg-config file runs.
# Prints one line per check; exits non-zero at the first failure.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tw_package_XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fail() {
  echo "$1"
  [ -f "${2:-}" ] && tail -n 40 "$2"
  exit 1
}

(cd "$build" && cpack -G DEB -B "$tmp/pkg") >"$tmp/cpack.log" 2>&1 || fail "cpack: failed" "$tmp/cpack.log"
deb=$(find "$tmp/pkg" -maxdepth 1 -name 'towerflow_*.deb' -print -quit)
[ -n "$deb" ] || fail "cpack: no towerflow_*.deb in $tmp/pkg" "$tmp/cpack.log"
echo "cpack: $(basename "$deb") ($(du -h "$deb" | cut -f1))"

depends=$(dpkg-deb -f "$deb" Depends)
[ "$(dpkg-deb -f "$deb" Package)" = towerflow ] || { echo "control: Package is not towerflow"; exit 1; }
for dep in libc6 libstdc++6 libprotobuf zlib1g libopenblas0-pthread; do
  grep -q "$dep" <<<"$depends" || { echo "control: Depends lacks $dep: $depends"; exit 1; }
done
echo "control: Version $(dpkg-deb -f "$deb" Version), Depends: $depends"

dpkg-deb -c "$deb" | awk '{print $6}' >"$tmp/contents.txt"
for f in ./usr/bin/towerflow ./usr/share/man/man1/towerflow.1 ./usr/include/towerflow/towerflow.h ./usr/lib/libtw_core.a \
         ./usr/lib/cmake/towerflow/towerflowConfig.cmake ./usr/lib/pkgconfig/towerflow.pc; do
  grep -qxF "$f" "$tmp/contents.txt" || { echo "contents: $f is missing"; exit 1; }
done
grep -q '^\./usr/lib/libtowerflow\.so\.[0-9]*\.[0-9]*\.[0-9]*$' "$tmp/contents.txt" ||
  { echo "contents: libtowerflow.so.X.Y.Z is missing"; exit 1; }
echo "contents: $(wc -l <"$tmp/contents.txt") entries: the tool and its man page, the libraries, the headers, the CMake and pkg-config files"

if apt-get install --simulate "$deb" >"$tmp/apt.log" 2>&1; then
  grep -q '^Inst towerflow' "$tmp/apt.log" || fail "apt: the simulation does not install towerflow" "$tmp/apt.log"
  echo "apt: install --simulate resolves every dependency"
else
  fail "apt: install --simulate failed" "$tmp/apt.log"
fi

root=$tmp/root
dpkg-deb -x "$deb" "$root"
ops=$("$root/usr/bin/towerflow" ops 2>&1) || fail "unpacked: towerflow ops failed: $ops"
echo "unpacked: towerflow ops lists $(grep -c . <<<"$ops") lines"
# shellcheck disable=SC2046  # pkg-config's flags are meant to split
${CXX:-c++} -O1 "$src/tests/install/consumer/main.cc" -o "$tmp/consumer" \
  $(PKG_CONFIG_PATH="$root/usr/lib/pkgconfig" pkg-config --cflags --libs towerflow) 2>"$tmp/cc.log" ||
  fail "unpacked: building against the package failed" "$tmp/cc.log"
out=$(LD_LIBRARY_PATH="$root/usr/lib" "$tmp/consumer" "$tmp/r.tfrecord" 2>&1) || fail "unpacked: the program failed: $out"
echo "unpacked: a program built with its towerflow.pc: $out"
