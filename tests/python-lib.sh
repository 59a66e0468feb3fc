# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/python-lib.sh: the environment of a Python trainer under test
# (sourced after tests/lib.sh): Debian's interpreter ($PY), the package
# from the source tree and the library from the build tree, and
# preempt-exec ($EXEC). Under the sanitized build the sanitizers' runtimes
# load first into the interpreter (and what it starts), never into the
# test's own commands: a curl with libasan preloaded once hung for good
# in setlocale() at its start (a CI run held for 90 minutes). The
# interpreter's own allocations are not this project's leaks.
PY=/usr/bin/python3
export PYTHONPATH="$(cd "$top_srcdir/python" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
LIBPREEMPT_LIBRARY="$(cd "$top_builddir/lib/.libs" && pwd)/libpreempt.so"
export LIBPREEMPT_LIBRARY
if [ -n "${SANITIZE:-}" ]; then
    PY=$TMP/python3
    printf '#!/bin/sh\nLD_PRELOAD="%s %s" ASAN_OPTIONS="%s" exec /usr/bin/python3 "$@"\n' \
        "$($CC -print-file-name=libasan.so)" "$($CC -print-file-name=libubsan.so)" \
        "${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" >"$PY"
    chmod +x "$PY"
fi
EXEC="$(cd "$top_builddir/tools" && pwd)/preempt-exec"
