#!/usr/bin/env bash
# Installs a fairpool build and builds tests/consumers/consumer.cpp and minimal.cpp (the
# README's first program) against it three ways.
#
#   check.sh SOURCE_ROOT BUILD_DIR PREFIX LIBDIR SCRATCH
#
# 0. minimal.cpp is what it claims: at most 25 lines of at most 100 columns, no core::
#    or detail::, no integer literal where a duration goes;
# 1. meson install into SCRATCH/stage (DESTDIR), and a look at what landed;
# 2. CMake: find_package(fairpool 0.2 REQUIRED) with CMAKE_PREFIX_PATH=stage/PREFIX;
# 3. pkg-config: g++ with `pkg-config --cflags --libs fairpool`, the .pc read from the
#    stage (PKG_CONFIG_SYSROOT_DIR prefixes its paths with the stage);
# 4. Meson: a project whose subprojects/fairpool is a link to SOURCE_ROOT,
#    dependency('fairpool') forced to the fallback, set up with the default buildtype and
#    again with --buildtype=release (-O3), where fairpool must build without -Werror
#    although the project itself asks for werror=true.
# Each consumer is run and must exit 0. Prints every command; exits 1 on any failure.
# FAIRPOOL_CONSUMER_LIBRARY_ONLY=1: BUILD_DIR was configured with the tests, benchmarks
# and examples disabled (the library-only check of tools/run-tests): the same checks.
set -Eeuo pipefail
[ $# -eq 5 ] || { echo "usage: $0 SOURCE_ROOT BUILD_DIR PREFIX LIBDIR SCRATCH" >&2; exit 2; }
src=$1 build=$2 prefix=$3 libdir=$4 scratch=$5
jobs=${FAIRPOOL_CONSUMER_JOBS:-2}

run() { echo "+ $*"; "$@"; }
run_logged() {  # run_logged LOG COMMAND...: the output goes to LOG, shown on failure
  local log=$1; shift
  echo "+ $* >$log"
  "$@" >"$log" 2>&1 || { tail -60 "$log"; fail "$*"; }
}
fail() { echo "FAILED: $*"; exit 1; }
trap 'echo "FAILED at line $LINENO: $BASH_COMMAND"' ERR

echo "== minimal.cpp: the shortest program, as the README shows it"
minimal=$src/tests/consumers/minimal.cpp
[ "$(wc -l <"$minimal")" -le 25 ] || fail "minimal.cpp has $(wc -l <"$minimal") lines, more than 25"
if awk 'length > 100 { exit 1 }' "$minimal"; then :; else fail "minimal.cpp has a line longer than 100 columns"; fi
if grep -nE 'core::|detail::' "$minimal"; then fail "minimal.cpp names core:: or detail::"; fi
# A duration field or argument given a bare integer (acquire_timeout = 2000, timeout{5}, (0, ...)).
# (2s, std::chrono::seconds(2) and 2'000ms are durations; 2000 and 2'000 are not.)
bare="[0-9][0-9']*([^0-9'a-zA-Z_.]|$)"
if grep -nE "(timeout|interval|grace|lifetime|threshold|backoff|idle|jitter)[a-z_]* *(=|\\{|\\() *$bare" "$minimal" ||
   grep -nE "async_[a-z_]*\\( *$bare" "$minimal"; then
  fail "minimal.cpp gives a duration as an integer literal"
fi

rm -rf "$scratch"
mkdir -p "$scratch"
stage=$scratch/stage
root=$stage$prefix
case $libdir in /*) lib=$stage$libdir ;; *) lib=$root/$libdir ;; esac

echo "== install: $build into DESTDIR=$stage (prefix $prefix)"
run meson install -C "$build" --no-rebuild --quiet --destdir "$stage"
for f in "$root/include/fairpool/asio.hpp" "$root/include/fairpool/version.hpp" \
         "$root/include/fairpool/core/scheduler.hpp" "$root/include/fairpool/core/prometheus.hpp" \
         "$root/include/fairpool/trace/trace.hpp" "$root/include/fairpool/asio/pool.hpp" \
         "$root/include/fairpool/asio/detail/pool_state.hpp" "$lib/libfairpool.a" \
         "$lib/pkgconfig/fairpool.pc" "$lib/cmake/fairpool/fairpoolConfig.cmake" \
         "$lib/cmake/fairpool/fairpoolConfigVersion.cmake" \
         "$root/bin/fairpool-replay" "$root/bin/fairpool-sim"; do
  [ -e "$f" ] || fail "not installed: ${f#"$stage"}"
done
echo "installed: $(cd "$stage" && find . -type f | wc -l) files"
goldens=("$src"/tests/traces/golden/*.trace)
golden=${goldens[0]}
run "$root/bin/fairpool-replay" --check "$golden"
run "$root/bin/fairpool-sim" --seed 1 --events 200 --quiet

echo "== CMake: find_package(fairpool 0.2 REQUIRED)"
run_logged "$scratch/cmake.log" cmake -S "$src/tests/consumers/cmake" -B "$scratch/cmake" \
  -DCMAKE_PREFIX_PATH="$root" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS="-Wall -Wextra -Wpedantic -Werror"
grep "fairpool" "$scratch/cmake/CMakeCache.txt" | grep -m1 "^fairpool_DIR" || fail "fairpool_DIR not set"
run cmake --build "$scratch/cmake" -j "$jobs"
run "$scratch/cmake/consumer"
run "$scratch/cmake/minimal"
# The version file: before 1.0 another minor version is not compatible.
for wrong in 0.1 0.3 1.0; do
  echo "+ cmake ... -DFAIRPOOL_REQUEST=$wrong (must fail)"
  if cmake -S "$src/tests/consumers/cmake" -B "$scratch/cmake-$wrong" -DCMAKE_PREFIX_PATH="$root" \
       -DFAIRPOOL_REQUEST="$wrong" >"$scratch/cmake-$wrong.log" 2>&1; then
    fail "find_package(fairpool $wrong) accepted version 0.2.0"
  fi
  grep -q "fairpoolConfig.cmake, version: 0.2.0" "$scratch/cmake-$wrong.log" \
    || { cat "$scratch/cmake-$wrong.log"; fail "find_package(fairpool $wrong) failed for another reason"; }
done

echo "== pkg-config: g++ \$(pkg-config --cflags --libs fairpool)"
export PKG_CONFIG_LIBDIR=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$stage
[ "$(pkg-config --modversion fairpool)" = 0.2.0 ] || fail "pkg-config says version $(pkg-config --modversion fairpool)"
cflags=$(pkg-config --cflags fairpool)
libs=$(pkg-config --libs fairpool)
echo "cflags: $cflags"
echo "libs: $libs"
# shellcheck disable=SC2086 # the flags are words
run g++ -std=c++20 -O1 -Wall -Wextra -Wpedantic -Werror $cflags "$src/tests/consumers/consumer.cpp" \
    -o "$scratch/pkg-config-consumer" $libs
# shellcheck disable=SC2086
run g++ -std=c++20 -O1 -Wall -Wextra -Wpedantic -Werror $cflags "$minimal" -o "$scratch/pkg-config-minimal" $libs
unset PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR
run "$scratch/pkg-config-consumer"
run "$scratch/pkg-config-minimal"

echo "== Meson: dependency('fairpool') from subprojects/fairpool"
project=$scratch/meson-project
mkdir -p "$project/subprojects"
cp "$src/tests/consumers/meson/meson.build" "$src/tests/consumers/consumer.cpp" "$minimal" "$project/"
ln -s "$src" "$project/subprojects/fairpool"
# The link points back at the tree holding this scratch directory: remove it on the way
# out, so that nothing walking the tree meets a cycle.
trap 'rm -f "$project/subprojects/fairpool"' EXIT
# meson_consumer NAME [SETUP OPTION...]: sets the project up in SCRATCH/NAME-build (logs
# NAME-setup.log, NAME-build.log), checks where fairpool came from and what it builds,
# builds and runs the consumer.
meson_consumer() {
  local name=$1; shift
  local dir=$scratch/$name-build
  run_logged "$scratch/$name-setup.log" meson setup "$dir" "$project" --wrap-mode=nodownload \
    --force-fallback-for=fairpool "$@"
  grep "Dependency fairpool found: YES .*(overridden)" "$scratch/$name-setup.log" \
    || fail "the consumer did not take fairpool from its subproject"
  # As a subproject fairpool builds its three libraries and nothing else (no tests, tools).
  grep "^fairpool| Build targets in project: 3$" "$scratch/$name-setup.log" \
    || fail "the subproject builds more than core, trace and the adapter"
  run_logged "$scratch/$name-build.log" ninja -C "$dir" -j "$jobs"
  run "$dir/consumer"
  run "$dir/minimal"
}
meson_consumer meson

echo "== Meson, --buildtype=release: fairpool's own werror=false beats the project's werror=true"
meson_consumer meson-release --buildtype=release
# Every fairpool object is compiled at -O3 and without -Werror; the consumer with -Werror.
python3 - "$scratch/meson-release-build/compile_commands.json" <<'PY' || fail "the release build's flags"
import json, sys
flags = {c["file"]: c["command"].split() for c in json.load(open(sys.argv[1]))}
ours = [f for f in flags if "subprojects/fairpool/" in f]
bad = [f for f in ours if "-O3" not in flags[f] or "-Werror" in flags[f]]
consumer = [f for f in flags if f.endswith("consumer.cpp") or f.endswith("minimal.cpp")]
if not ours or bad or not consumer or "-Werror" not in flags[consumer[0]]:
    sys.exit(f"fairpool objects: {ours}; with -Werror or without -O3: {bad}; consumer: {consumer}")
print(f"{len(ours)} fairpool objects at -O3 without -Werror, consumer.cpp with -Werror")
PY

trap - ERR
echo "consumers: consumer and minimal built and ran all three ways (Meson twice: default buildtype and release)"
