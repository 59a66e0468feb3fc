#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# scripts/setup.sh: installs the Debian packages libpreempt's build, tests
# and demo need (as root, non-interactive, only what is missing) and
# configures the tree when that has not been done. Safe to run again.
set -eu
PACKAGES="autoconf automake libtool pkg-config make gcc libc6-dev binutils \
libevent-dev libcurl4-openssl-dev libjansson-dev liburing-dev check \
nanopb libnanopb-dev protobuf-compiler \
etcd-server etcd-client curl graphviz valgrind strace \
clang libclang-rt-14-dev openssl help2man groff-base mandoc mkdocs locales \
python3 python3-pytest python3-pip python3-setuptools python3-torch \
slurm-wlm munge python3-yaml libglib2.0-dev libuv1-dev \
dpkg-dev debhelper dh-python lintian python3-all abigail-tools \
prometheus-node-exporter prometheus librsvg2-bin"

missing=""
for p in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "setup: these Debian packages are missing and installing them needs root:$missing" >&2
        exit 1
    fi
    echo "setup: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # shellcheck disable=SC2086 # word splitting of the package list is intended
    apt-get install -y -q --no-install-recommends $missing
fi

cd "$(dirname "$0")/.."
if [ ! -x configure ]; then
    echo "setup: autoreconf"
    autoreconf -fi
fi
if [ ! -f Makefile ]; then
    echo "setup: configure --enable-werror"
    ./configure --enable-werror
fi
