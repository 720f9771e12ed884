#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The installed package as a C developer's build finds it: `make install`
# of a configured and built tree (BUILDDIR, by default _build) into a
# staging directory (DESTDIR), moved elsewhere (the CMake and pkg-config
# files must not depend on where they were installed), then
#   - a small CMake project: find_package(resplock 0.1 REQUIRED), linked
#     with resplock::resplock (the shared library) and
#     resplock::resplock_static (the archive, with its dependencies);
#     find_package(resplock 99) must fail;
#   - the same program built with pkg-config, shared, and static from
#     `pkg-config --static --libs resplock` alone (which must name
#     OpenSSL's libraries when the build has TLS);
# each program run against a throwaway redis-server: it checks that the
# header's version macros and the library's rlk_version() agree, takes a
# lock, prints its fence, and releases it.  Run by scripts/check-all.
# Usage: tests/cmake-consumer.sh [BUILDDIR]
set -u
top_srcdir=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top_srcdir/_build}" && pwd) || { echo "FAIL no build directory ${1:-_build}"; exit 1; }
export top_srcdir top_builddir=$build
. "$top_srcdir/tests/redis-lib.sh"
work=$(mktemp -d)
trap 'rlk_redis_stop_all; rm -rf "$work"' EXIT
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); shift; local l; for l in "$@"; do printf '%s\n' "$l" | sed 's/^/  /'; done; }
finish() { echo "$pass passed, $fail failed"; [ "$fail" = 0 ]; exit; }

for tool in cmake pkg-config redis-server redis-cli; do
  command -v "$tool" >/dev/null ||
    { bad "$tool is not installed (scripts/install-deps installs it)"; finish; }
done
tls=no
grep -q '^#define RLK_HAVE_OPENSSL 1' "$build/config.h" && tls=yes
prefix=$(sed -n 's/^prefix=//p' "$build/resplock.pc")

# Installed, then moved.
if make -C "$build" -s install DESTDIR="$work/stage" >"$work/install.log" 2>&1; then
  ok "make install DESTDIR=..."
else
  bad "make install DESTDIR=..." "$(tail -n 20 "$work/install.log")"; finish
fi
mv "$work/stage$prefix" "$work/moved" || { bad "moving $prefix's install"; finish; }
inst=$work/moved
# A build configured --disable-shared installs the archive alone.
shared=no
[ -e "$inst/lib/libresplock.so" ] && shared=yes

rlk_redis_start main "$work" || { bad "could not start redis-server"; finish; }
url="redis://127.0.0.1:$RLK_REDIS_PORT"

mkdir -p "$work/app"
cat >"$work/app/app.c" <<'C'
#include <resplock/resplock.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 2) return 2;
    if (rlk_version_number() != RLK_VERSION_NUMBER || strcmp(rlk_version(), RLK_VERSION_STRING) != 0) {
        fprintf(stderr, "header %s (%d), library %s (%d)\n", RLK_VERSION_STRING, RLK_VERSION_NUMBER,
                rlk_version(), rlk_version_number());
        return 1;
    }
    printf("version %s\n", rlk_version());
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    cfg.conn.url = argv[1];
    rlk_client *cl = rlk_client_new(&cfg);
    if (!cl) return 1;
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 30000;
    rlk_lock *l;
    int r = rlk_lock_acquire(cl, "consumer", &o, &l);
    if (r == RLK_OK) {
        printf("fence %llu\n", (unsigned long long)rlk_lock_fence(l));
        r = rlk_lock_release(l);
        if (r == RLK_OK) puts("released");
    }
    if (r != RLK_OK) fprintf(stderr, "%s: %s\n", rlk_strerror(r), rlk_client_errmsg(cl));
    rlk_client_free(cl);
    return r == RLK_OK ? 0 : 1;
}
C

# run_app NAME PROGRAM: runs it against the server; checks its output.
run_app() {
  local out code
  redis-cli -p "$RLK_REDIS_PORT" DEL consumer >/dev/null
  out=$("$2" "$url" 2>&1); code=$?
  if [ "$code" = 0 ] && [[ $out =~ ^version\ [0-9]+\.[0-9]+\.[0-9]+$'\n'fence\ [0-9]+$'\n'released$ ]]; then
    ok "$1: version checked, lock taken and released"
  else
    bad "$1: exit $code" "$out"
  fi
  [ "$(redis-cli -p "$RLK_REDIS_PORT" EXISTS consumer)" = 0 ] && ok "$1: the lock is gone" ||
    bad "$1: the lock is still there"
}

# ---- CMake
cat >"$work/app/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.13)
project(consumer C)
find_package(resplock 0.1 REQUIRED)
add_executable(app app.c)
target_link_libraries(app resplock::resplock)
add_executable(app_static app.c)
target_link_libraries(app_static resplock::resplock_static)
CM
if cmake -S "$work/app" -B "$work/app/build" -DCMAKE_PREFIX_PATH="$inst" >"$work/cmake.log" 2>&1 &&
   cmake --build "$work/app/build" >>"$work/cmake.log" 2>&1; then
  ok "CMake: find_package(resplock 0.1 REQUIRED), resplock::resplock and resplock::resplock_static build"
  run_app "CMake, resplock::resplock" "$work/app/build/app"
  libs=$(ldd "$work/app/build/app" 2>&1)
  if [ "$shared" = yes ]; then
    if grep -q "libresplock\.so.* => $inst/lib/" <<<"$libs"; then ok "CMake, resplock::resplock: runs with the installed libresplock.so"
    else bad "CMake, resplock::resplock: runs with the installed libresplock.so" "$libs"; fi
  else
    if ! grep -q libresplock <<<"$libs"; then ok "CMake, resplock::resplock: the static library (no shared one installed)"
    else bad "CMake, resplock::resplock: the static library (no shared one installed)" "$libs"; fi
  fi
  libs=$(ldd "$work/app/build/app_static" 2>&1)
  if ! grep -q libresplock <<<"$libs"; then ok "CMake, static: no libresplock.so"
  else bad "CMake, static: no libresplock.so" "$libs"; fi
  run_app "CMake, static" "$work/app/build/app_static"
else
  bad "CMake: find_package(resplock 0.1 REQUIRED) and the build" "$(tail -n 30 "$work/cmake.log")"
fi
# A version the package is not.
mkdir -p "$work/newer"
sed 's/find_package(resplock 0.1 REQUIRED)/find_package(resplock 99 REQUIRED)/' \
  "$work/app/CMakeLists.txt" >"$work/newer/CMakeLists.txt"
cp "$work/app/app.c" "$work/newer/"
if out=$(cmake -S "$work/newer" -B "$work/newer/build" -DCMAKE_PREFIX_PATH="$inst" 2>&1); then
  bad "CMake: find_package(resplock 99) fails" "$out"
elif grep -q 'compatible with requested version "99"' <<<"$out" &&
     grep -q "resplockConfig.cmake, version: $(sed -n 's/^Version: //p' "$build/resplock.pc")\$" <<<"$out"; then
  ok "CMake: find_package(resplock 99) fails: the installed version does not fit"
else
  bad "CMake: find_package(resplock 99) fails for its version" "$out"
fi

# ---- pkg-config (--define-prefix: the .pc file's prefix is where it was
# moved; openssl.pc's paths come out odd with it, but are the system's)
pc() { PKG_CONFIG_PATH="$inst/lib/pkgconfig" pkg-config --define-prefix "$@"; }
static_libs=$(pc --static --libs resplock)
if [ "$tls" = yes ]; then
  [[ " $static_libs " == *" -lssl "* && " $static_libs " == *" -lcrypto "* ]] &&
    ok "pkg-config --static --libs resplock names OpenSSL's libraries: $static_libs" ||
    bad "pkg-config --static --libs resplock names OpenSSL's libraries (a TLS build)" "$static_libs"
else
  [[ " $static_libs " != *" -lssl "* ]] &&
    ok "pkg-config --static --libs resplock: no OpenSSL without TLS: $static_libs" ||
    bad "pkg-config --static --libs resplock names OpenSSL in a build without TLS" "$static_libs"
fi
# OpenSSL as a package (Requires.private): its own .pc file says what a
# static link needs, and where its headers are.
requires=$(pc --print-requires-private resplock)
if [ "$tls" = yes ]; then
  grep -qx 'openssl' <<<"$requires" && ok "resplock.pc: Requires.private: openssl" ||
    bad "resplock.pc: Requires.private: openssl (a TLS build)" "got: $requires"
else
  [ -z "$requires" ] && ok "resplock.pc: no Requires.private without TLS" ||
    bad "resplock.pc: no Requires.private without TLS" "got: $requires"
fi
cc=${CC:-cc}
if [ "$shared" = no ]; then
  : # -lresplock is the archive, and needs --static's libraries: below
elif $cc -o "$work/app/pc" "$work/app/app.c" $(pc --cflags resplock) $(pc --libs resplock) \
     -Wl,-rpath,"$inst/lib" >"$work/pc.log" 2>&1; then
  ok "pkg-config: builds"
  run_app "pkg-config, shared" "$work/app/pc"
else
  bad "pkg-config: builds" "$(cat "$work/pc.log")"
fi
# The archive, with nothing but what --static --libs names.
if $cc -o "$work/app/pc_static" "$work/app/app.c" $(pc --cflags resplock) \
     ${static_libs/-lresplock/-l:libresplock.a} >"$work/pc.log" 2>&1; then
  ok "pkg-config --static: builds with libresplock.a"
  run_app "pkg-config, static" "$work/app/pc_static"
else
  bad "pkg-config --static: builds with libresplock.a" "$(cat "$work/pc.log")"
fi
finish
