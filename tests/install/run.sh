#!/usr/bin/env bash
# tests/install/run.sh BUILD_DIR: towerflow as another project gets it.
#   1. `cmake --install BUILD_DIR` into a fresh prefix: the tool and its man
#      page, the public headers and nothing else, the libraries (static
#      archives and libtowerflow.so), the CMake package and towerflow.pc;
#   2. every installed header compiles alone against the prefix (so none
#      includes an internal header: the prefix has none), and none names a
#      towerflow header the prefix lacks;
#   3. libtowerflow.so: its SONAME, the public API in its dynamic symbols and
#      no internal class (executor, kernel registry, placer, devices);
#   4. tests/install/consumer, a CMake project outside the tree, finds the
#      install with find_package(towerflow), links towerflow::towerflow,
#      builds and runs (trains a small model, writes and counts records); a
#      second configure and build of it has nothing to do;
#   5. the same consumer linked with towerflow::towerflow_shared runs on
#      libtowerflow.so;
#   6. the same program built with `pkg-config --cflags --libs towerflow`;
#   7. projects that add_subdirectory() and FetchContent the source tree
#      configure with towerflow's tests and benchmarks off, build a module of
#      it, and a second configure rebuilds nothing;
#   8. configured with -DBUILD_SHARED_LIBS=ON, towerflow::towerflow and
#      towerflow.pc are the shared library.
# Prints one line per check; exits non-zero at the first failure.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tw_install_XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cxx=${CXX:-c++}

fail() {
  echo "$1"
  [ -f "${2:-}" ] && tail -n 40 "$2"
  exit 1
}

# 1. The install tree.
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 || fail "install: cmake --install failed" "$tmp/install.log"
libdir=lib
[ -d "$prefix/lib64" ] && libdir=lib64
for f in bin/towerflow include/towerflow/towerflow.h include/towerflow/runtime/session.h \
         "$libdir/libtw_core.a" "$libdir/libtw_train.a" "$libdir/cmake/towerflow/towerflowConfig.cmake" \
         "$libdir/cmake/towerflow/towerflowConfigVersion.cmake" "$libdir/pkgconfig/towerflow.pc"; do
  [ -e "$prefix/$f" ] || { echo "install: $prefix/$f is missing"; exit 1; }
done
shared=$(find "$prefix/$libdir" -maxdepth 1 -name 'libtowerflow.so.*.*.*' -print -quit)
[ -n "$shared" ] || { echo "install: libtowerflow.so.X.Y.Z is missing from $prefix/$libdir"; exit 1; }
# Only include/towerflow/ is public: no internal header, no generated protobuf
# header, no test helper.
for bad in executor.h kernel_registry.h placer.h op_kernel.h device.h session_impl.h '*.pb.h' '*test*'; do
  found=$(find "$prefix/include" -name "$bad" -print -quit)
  [ -z "$found" ] || { echo "install: an internal header was installed: $found"; exit 1; }
done
"$prefix/bin/towerflow" --help >/dev/null 2>&1 || { echo "install: the installed tool does not run"; exit 1; }
version=$("$prefix/bin/towerflow" --version)
[[ "$version" =~ ^towerflow\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "install: --version says '$version'"; exit 1; }
man=$prefix/share/man/man1/towerflow.1
grep -q '^\.TH TOWERFLOW "1"' "$man" 2>/dev/null && grep -q 'convert fashion.-mnist' "$man" ||
  { echo "install: no man page with the commands at $man"; exit 1; }
echo "install: ok ($(find "$prefix/include" -name '*.h' | wc -l) public headers, $(find "$prefix" -type f | wc -l) files)"

# 2. Every header alone; every towerflow include resolves inside the prefix.
headers=$(cd "$prefix/include" && find towerflow -name '*.h' | sort)
for h in $headers; do
  for inc in $(sed -n 's/^#include [<"]\(towerflow\/[^">]*\)[">].*/\1/p' "$prefix/include/$h"); do
    [ -f "$prefix/include/$inc" ] || { echo "headers: $h includes $inc, which is not installed"; exit 1; }
  done
done
# shellcheck disable=SC2086  # one header per argument
printf '%s\n' $headers | xargs -P "$(nproc)" -I{} sh -c \
  "log=\"$tmp/header.\$\$.log\"; printf '#include <{}>\\n#include <{}>\\n' |
   $cxx -std=c++20 -fsyntax-only -Wall -Wextra -Wpedantic -Werror -I'$prefix/include' -x c++ - 2>\"\$log\" ||
   { echo 'headers: {} does not compile alone:'; head -20 \"\$log\"; exit 255; }" ||
  exit 1
echo "headers: $(echo "$headers" | wc -l) compile alone (twice included), no internal include"

# 3. The shared library's face.
soname=$(readelf -d "$shared" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[[ "$soname" =~ ^libtowerflow\.so\.[0-9]+\.[0-9]+$ ]] || { echo "shared: SONAME is '$soname'"; exit 1; }
[ -e "$prefix/$libdir/$soname" ] || { echo "shared: no $soname link"; exit 1; }
nm -DC --defined-only "$shared" >"$tmp/dynsym.txt"
for want in 'tw::Session::Run(' 'tw::Graph::' 'tw::Tensor::' 'tw::MatMul(' 'tw::io::ExampleBuilder::Serialize' \
            'tw::train::Replicate('; do
  grep -qF "$want" "$tmp/dynsym.txt" || { echo "shared: '$want' is not exported"; exit 1; }
done
# A symbol that is a member, vtable or typeinfo of an internal class (a public
# function may still name one in its signature, as an opaque pointer).
internal='^[0-9a-f]+ [A-Za-z] ((typeinfo|typeinfo name|vtable) for )?tw::(Executor|ExecutorPlan|KernelRegistry|Placer|Placement|SessionImpl|OpKernel|OpKernelContext|DeviceSet|DeviceFactory|Device|InferenceContext|ResourceMgr|example_wire)(::|$)'
if grep -qE "$internal" "$tmp/dynsym.txt"; then
  echo "shared: internal symbols are exported: $(grep -E "$internal" "$tmp/dynsym.txt" | head -5)"
  exit 1
fi
echo "shared: $(basename "$shared"), SONAME $soname, $(wc -l <"$tmp/dynsym.txt") exported symbols, no internal class"

# 4. find_package, static.
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$tmp/consumer.log" 2>&1 || fail "find_package: configuring failed" "$tmp/consumer.log"
cmake --build "$tmp/consumer" >>"$tmp/consumer.log" 2>&1 || fail "find_package: the build failed" "$tmp/consumer.log"
out=$("$tmp/consumer/consumer" "$tmp/a.tfrecord" 2>&1) || fail "find_package: the program failed: $out"
echo "find_package: $out"
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" >"$tmp/again.log" 2>&1 || fail "find_package: reconfiguring failed" "$tmp/again.log"
again=$(cmake --build "$tmp/consumer" -- -n 2>&1 | grep -v '^ninja: Entering' || true)
if [ "${#generator[@]}" -gt 0 ] && [ "$again" != "ninja: no work to do." ]; then
  echo "find_package: a second configure rebuilds: $again"
  exit 1
fi

# 5. find_package, shared.
cmake -S "$src/tests/install/consumer" -B "$tmp/consumer_so" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release -DTOWERFLOW_TARGET=towerflow::towerflow_shared >"$tmp/consumer_so.log" 2>&1 ||
  fail "shared consumer: configuring failed" "$tmp/consumer_so.log"
cmake --build "$tmp/consumer_so" >>"$tmp/consumer_so.log" 2>&1 || fail "shared consumer: the build failed" "$tmp/consumer_so.log"
# (ldd's output is kept first: `ldd | grep -q` fails under pipefail when grep
# stops reading early and ldd dies of SIGPIPE.)
ldd "$tmp/consumer_so/consumer" >"$tmp/ldd.txt"
grep -q "$soname => $prefix" "$tmp/ldd.txt" ||
  { echo "shared consumer: not linked with $prefix/$libdir/$soname:"; cat "$tmp/ldd.txt"; exit 1; }
out=$("$tmp/consumer_so/consumer" "$tmp/s.tfrecord" 2>&1) || fail "shared consumer: the program failed: $out"
echo "find_package, libtowerflow.so: $out"

# 6. pkg-config.
# shellcheck disable=SC2046  # pkg-config's flags are meant to split
$cxx -O1 "$src/tests/install/consumer/main.cc" -o "$tmp/consumer_pc" \
  $(PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig" pkg-config --cflags --libs towerflow) 2>"$tmp/pc.log" ||
  fail "pkg-config: the build failed" "$tmp/pc.log"
out=$(LD_LIBRARY_PATH="$prefix/$libdir" "$tmp/consumer_pc" "$tmp/b.tfrecord" 2>&1) || fail "pkg-config: the program failed: $out"
echo "pkg-config: $out"

# 7. add_subdirectory and FetchContent: configure, build the smallest module,
# configure again: nothing to rebuild.
for how in add_subdirectory FetchContent; do
  dir=$tmp/outer_$how
  mkdir -p "$dir"
  if [ "$how" = add_subdirectory ]; then
    include="add_subdirectory(\"$src\" towerflow)"
  else
    include="include(FetchContent)
FetchContent_Declare(towerflow SOURCE_DIR \"$src\")
FetchContent_MakeAvailable(towerflow)"
  fi
  cat >"$dir/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(outer LANGUAGES CXX)
$include
add_executable(consumer "$src/tests/install/consumer/main.cc")
target_link_libraries(consumer PRIVATE towerflow::towerflow)
CMAKE
  cmake -S "$dir" -B "$dir/build" "${generator[@]}" -DTOWERFLOW_CUDA=OFF >"$dir.log" 2>&1 ||
    fail "$how: configuring failed" "$dir.log"
  if grep -rq 'add_test' --include=CTestTestfile.cmake "$dir/build" 2>/dev/null; then
    echo "$how: towerflow's tests were configured in another project"
    exit 1
  fi
  cmake --build "$dir/build" --target tw_core >>"$dir.log" 2>&1 || fail "$how: building tw_core failed" "$dir.log"
  cmake -S "$dir" -B "$dir/build" >>"$dir.log" 2>&1 || fail "$how: reconfiguring failed" "$dir.log"
  # (Ninja re-checks the CONFIGURE_DEPENDS globs every time: not a rebuild.)
  again=$(cmake --build "$dir/build" --target tw_core -- -n 2>&1 | grep -E 'Building|Linking' || true)
  if [ "${#generator[@]}" -gt 0 ] && [ -n "$again" ]; then
    echo "$how: a second configure rebuilds towerflow: $again"
    exit 1
  fi
  echo "$how: configures (tests and benchmarks off), builds, a second configure rebuilds nothing"
done

# 8. -DBUILD_SHARED_LIBS=ON (configured only: the objects are the same as
# this tree's): towerflow::towerflow is then libtowerflow.so, the static form
# towerflow::towerflow_static, and towerflow.pc links -ltowerflow.
cmake -S "$src" -B "$tmp/shared_cfg" "${generator[@]}" -DBUILD_SHARED_LIBS=ON -DTOWERFLOW_TESTS=OFF \
  -DTOWERFLOW_BENCH=OFF -DTOWERFLOW_CUDA=OFF >"$tmp/shared_cfg.log" 2>&1 ||
  fail "BUILD_SHARED_LIBS=ON: configuring failed" "$tmp/shared_cfg.log"
targets=$(find "$tmp/shared_cfg/CMakeFiles/Export" -name towerflowTargets.cmake -print -quit)
grep -q 'add_library(towerflow::towerflow SHARED IMPORTED)' "$targets" &&
  grep -q 'add_library(towerflow::towerflow_static INTERFACE IMPORTED)' "$targets" ||
  { echo "BUILD_SHARED_LIBS=ON: towerflow::towerflow is not the shared library ($targets)"; exit 1; }
grep -q '^Libs: -L${libdir} -ltowerflow$' "$tmp/shared_cfg/towerflow.pc" ||
  { echo "BUILD_SHARED_LIBS=ON: towerflow.pc does not link -ltowerflow:"; cat "$tmp/shared_cfg/towerflow.pc"; exit 1; }
echo "BUILD_SHARED_LIBS=ON: towerflow::towerflow and towerflow.pc are libtowerflow.so"
