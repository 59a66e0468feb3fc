#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/install-prefix.sh: make install with another prefix than
# ./configure's (a common habit) would install tools whose runpath and a
# libpreempt.pc that name the configured directories. It stops before
# installing anything, and says how to do it; a staged install (DESTDIR)
# is fine (make distcheck and installcheck run that one).
. "${top_srcdir:-.}/tests/lib.sh"
MAKE=${MAKE:-make}

expect_rc 2 "$MAKE" -s -C "$top_builddir" install prefix="$TMP/elsewhere"
expect_output "libpreempt: make install with other directories than ./configure was given"
expect_output "Configure again with ./configure --prefix=$TMP/elsewhere"
expect "make install prefix=DIR installed nothing" test ! -e "$TMP/elsewhere"
expect_rc 2 "$MAKE" -s -C "$top_builddir" install libdir="$TMP/elsewhere/lib"
expect "make install libdir=DIR installed nothing" test ! -e "$TMP/elsewhere"
finish
