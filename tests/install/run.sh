#!/usr/bin/env bash
# tests/install/run.sh BUILD_DIR: towerflow as another project gets it.
#   1. `cmake --install BUILD_DIR` into a fresh prefix: the tool, the headers,
#      the libraries, the CMake package and towerflow.pc are there;
#   2. tests/install/consumer, a CMake project outside the tree, finds it with
#      find_package(towerflow), links towerflow::towerflow, builds and runs
#      (trains a small model, writes and counts records);
#   3. the same program built with `pkg-config --cflags --libs towerflow`;
#   4. a project that add_subdirectory()s the source tree configures with
#      towerflow's tests and benchmarks off and its paths its own.
# Prints one line per check; exits non-zero at the first failure.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tw_install_XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

fail() {
  echo "$1"
  [ -f "${2:-}" ] && tail -n 40 "$2"
  exit 1
}

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || fail "install: cmake --install failed" "$tmp/install.log"
for f in bin/towerflow include/towerflow/towerflow.h include/towerflow/proto/example.pb.h \
         lib/libtw_core.a lib/libtw_train.a lib/cmake/towerflow/towerflowConfig.cmake \
         lib/cmake/towerflow/towerflowConfigVersion.cmake lib/pkgconfig/towerflow.pc; do
  [ -e "$prefix/$f" ] || { echo "install: $prefix/$f is missing"; exit 1; }
done
if find "$prefix/include" -name '*test*' | grep -q .; then
  echo "install: test helpers were installed: $(find "$prefix/include" -name '*test*' | head -3)"
  exit 1
fi
"$prefix/bin/towerflow" --help >/dev/null 2>&1 || { echo "install: the installed tool does not run"; exit 1; }
echo "install: ok ($(find "$prefix" -type f | wc -l) files in $prefix)"

cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$tmp/consumer.log" 2>&1 || fail "find_package: configuring failed" "$tmp/consumer.log"
cmake --build "$tmp/consumer" >>"$tmp/consumer.log" 2>&1 || fail "find_package: the build failed" "$tmp/consumer.log"
out=$("$tmp/consumer/consumer" "$tmp/a.tfrecord" 2>&1) || fail "find_package: the program failed: $out"
echo "find_package: $out"

# shellcheck disable=SC2046  # pkg-config's flags are meant to split
c++ -O1 "$src/tests/install/consumer/main.cc" -o "$tmp/consumer_pc" \
  $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs towerflow) 2>"$tmp/pc.log" ||
  fail "pkg-config: the build failed" "$tmp/pc.log"
out=$("$tmp/consumer_pc" "$tmp/b.tfrecord" 2>&1) || fail "pkg-config: the program failed: $out"
echo "pkg-config: $out"

mkdir -p "$tmp/outer"
cat >"$tmp/outer/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(outer LANGUAGES CXX)
add_subdirectory("$src" towerflow)
add_executable(consumer "$src/tests/install/consumer/main.cc")
target_link_libraries(consumer PRIVATE towerflow::towerflow)
CMAKE
cmake -S "$tmp/outer" -B "$tmp/outer/build" "${generator[@]}" -DTOWERFLOW_CUDA=OFF >"$tmp/outer.log" 2>&1 ||
  fail "add_subdirectory: configuring failed" "$tmp/outer.log"
if grep -q 'add_test' "$tmp/outer/build/towerflow/CTestTestfile.cmake" 2>/dev/null; then
  echo "add_subdirectory: towerflow's tests were configured in another project"
  exit 1
fi
echo "add_subdirectory: configures, tests and benchmarks off"
