#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/debian.sh: the Debian packages as a distribution builds and a user
# installs them. The distributed source (make distdir) builds with
# dpkg-buildpackage -us -uc -b into libpreempt0, libpreempt-dev,
# libpreempt-tools and python3-libpreempt; lintian reports no error; the
# packages install with apt-get (both lines are the README's sample, run
# as typed); the C examples build against the installed -dev package with
# pkg-config alone and run (tests/installed.sh); every tool answers
# --version; Debian's python3 imports the module and loads the installed
# library. The packages are purged at the end (also on a failure): the
# machine is left as it was.
. "${top_srcdir:-.}/tests/lib.sh"
MAKE=${MAKE:-make}
PKGS="libpreempt0 libpreempt-dev libpreempt-tools python3-libpreempt"
version=$(sed -n 's/^AC_INIT(\[libpreempt\], \[\([^]]*\)\].*/\1/p' "$top_srcdir/configure.ac")
# dpkg refuses at once while another package manager holds its lock (an
# operator's apt-get install beside the suite failed this test once): wait
# for the lock, bounded, before each dpkg call.
dpkg_free() {
    python3 -c 'import fcntl; fcntl.lockf(open("/var/lib/dpkg/lock-frontend", "a"), fcntl.LOCK_EX | fcntl.LOCK_NB)' \
        2>/dev/null
}
dpkg_lock() { poll 300 dpkg_free || fail "dpkg's lock is still held after 300 s"; }
purge() { dpkg_lock; dpkg --purge $PKGS >/dev/null 2>&1; }
trap 'purge; rm -rf "$TMP"' EXIT

for t in dpkg-buildpackage lintian dh; do
    command -v "$t" >/dev/null || { fail "$t is missing (Debian: apt-get install dpkg-dev debhelper dh-python lintian; scripts/setup.sh does)"; finish; }
done
[ "$(id -u)" = 0 ] || { fail "installing the packages needs root"; finish; }
# a machine where they are installed already (an earlier run that was killed)
dpkg-query -W $PKGS >/dev/null 2>&1 && purge

src="$TMP/src/libpreempt-$version"
mkdir -p "$TMP/src"
expect_rc 0 "$MAKE" -s -C "$top_builddir" distdir distdir="$src" || finish
# The README's and install.md's two lines (sample "debs"), as typed, in
# the clean copy: the build, then apt-get install of the .debs in ..
doc_sample debs | sed 's/ *#.*//' >"$TMP/debs" || fail "no sample debs in the README"
build=$(sed -n 1p "$TMP/debs") install=$(sed -n 2p "$TMP/debs")
eq "the sample's first line builds the packages" "$build" "dpkg-buildpackage -us -uc -b"
(cd "$src" && export DEB_BUILD_OPTIONS="parallel=2" && eval "$build") >"$TMP/build.log" 2>&1
rc=$?
eq "$build" "$rc" 0
[ "$rc" -eq 0 ] || { tail -n 30 "$TMP/build.log" | sed 's/^/    /'; finish; }
for p in $PKGS; do
    expect "the $p package is built" ls "$TMP/src/${p}_${version}_"*.deb
done

lintian --fail-on error "$TMP/src/libpreempt_${version}_"*.changes >"$TMP/lintian" 2>&1
rc=$?
eq "lintian --fail-on error" "$rc" 0
[ "$rc" -eq 0 ] || sed 's/^/    /' "$TMP/lintian"

for p in $PKGS; do
    expect "the sample installs the $p package" sh -c "echo '$install' | grep -qF ' ../${p}_*.deb'"
done
dpkg_lock
expect_rc 0 sh -c "cd '$src' && $install" || finish
eq "dpkg says they are installed" "$(dpkg-query -W -f='${Status} ' $PKGS)" \
    "install ok installed install ok installed install ok installed install ok installed "
expect "the shared library is libpreempt.so.0 in the system's path" sh -c "ldconfig -p | grep -q 'libpreempt.so.0 '"
# libcurl is loaded at run time (dlopen: lib/etcd/curl-api.h), so dpkg-shlibdeps
# cannot see it: the package names it
expect "libpreempt0 depends on libcurl4, which it loads when a job needs it" \
    sh -c "dpkg-query -W -f='\${Depends}' libpreempt0 | grep -q 'libcurl4 (>= '"

# the README's examples against the installed -dev package, pkg-config alone
(unset PKG_CONFIG_PATH; LIBDIR= top_srcdir="$top_srcdir" CC=cc sh "$top_srcdir/tests/installed.sh") >"$TMP/out" 2>&1
eq "the README's examples build with pkg-config against libpreempt-dev and run" "$?" 0
sed 's/^/    /' "$TMP/out"

for t in fsmdump preempt-replay preempt-trainer preempt-launch preemptctl preempt-ckpt preempt-exec; do
    expect_rc 0 "/usr/bin/$t" --version && expect_output "$version"
    expect "$t has its manual page" test -f "/usr/share/man/man1/$t.1.gz"
done

# the API reference in libpreempt-dev: a page per public function, the overview
for p in man3/preempt_step_end.3 man3/preempt_handler_new.3 man3/preempt_config.3 man7/libpreempt.7; do
    expect "libpreempt-dev has /usr/share/man/$p.gz" test -f "/usr/share/man/$p.gz"
done
expect "dpkg -S names libpreempt-dev for preempt_step_end(3)" \
    sh -c "dpkg -S /usr/share/man/man3/preempt_step_end.3.gz | grep -q '^libpreempt-dev'"
if command -v man >/dev/null 2>&1; then
    expect "man -w 3 preempt_step_end finds it" sh -c "man -w 3 preempt_step_end | grep -q preempt_step_end.3"
fi

# Debian's interpreter, nothing of the source tree in its path
(cd / && env -u PYTHONPATH -u LIBPREEMPT_LIBRARY -u LD_PRELOAD /usr/bin/python3 -c \
    'import libpreempt; print(libpreempt.__file__, libpreempt.version())') >"$TMP/out" 2>&1
eq "python3 imports the installed module, which loads the installed library" "$(cat "$TMP/out")" \
    "/usr/lib/python3/dist-packages/libpreempt/__init__.py $version"
finish
