# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/python-lib.sh: the environment of a Python trainer under test
# (sourced after tests/lib.sh): Debian's interpreter ($PY), the package
# from the source tree and the library from the build tree, and
# preempt-exec ($EXEC). Under the sanitized build the sanitizers' runtimes
# load first; the interpreter's own allocations are not this project's
# leaks.
PY=/usr/bin/python3
export PYTHONPATH="$(cd "$top_srcdir/python" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
LIBPREEMPT_LIBRARY="$(cd "$top_builddir/lib/.libs" && pwd)/libpreempt.so"
export LIBPREEMPT_LIBRARY
if [ -n "${SANITIZE:-}" ]; then
    LD_PRELOAD="$($CC -print-file-name=libasan.so) $($CC -print-file-name=libubsan.so)"
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
    export LD_PRELOAD ASAN_OPTIONS
fi
EXEC="$(cd "$top_builddir/tools" && pwd)/preempt-exec"
