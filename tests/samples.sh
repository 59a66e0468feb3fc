#!/bin/sh
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# tests/samples.sh: every code sample of the README and the guide is
# compiled or run by a test. A C block is a whole example program
# (examples/*.c, which tests/examples.sh builds and runs), or each of its
# paragraphs is word for word in a file that is compiled: examples/*.c,
# tests/man-examples.c (tests/man3.sh) or tests/guide-samples.c (compiled
# here, -Wall -Wextra -Werror, linked against the library). A Python block
# is the README's first (tests/python.sh runs it) or its canonical torch
# loop (tests/pytorch-helper.sh runs it, preempted and resumed), or its
# paragraphs are in examples/*.py. A shell block is marked
# "<!-- sample:ID -->" and run as typed by the one test that takes it with
# doc_sample ID (tests/lib.sh; blocks of one ID are alike); the Quick
# start's is the demo's and CI's own command. A JSON block is a trace the
# reference trainer prints: each line an object with an event it prints.
# The three from-source build blocks (autoreconf, configure, make, make
# install) are what scripts/setup.sh and scripts/test.sh run; they are
# marked but run by no test as typed (a build into /usr/local).
. "$top_srcdir/tests/lib.sh"
S=$top_srcdir

python3 - "$S" >"$TMP/samples" 2>&1 <<'PY'
import glob, os, re, sys
S = sys.argv[1]
def blocks(path):
    return re.findall(r"^```(\w*)\n(.*?)^```$", open(path).read(), re.S | re.M)
def marked(path):
    return re.findall(r"^<!-- sample:([\w-]+) -->\n```sh\n(.*?)^```$", open(path).read(), re.S | re.M)
takers = {}
for t in glob.glob(os.path.join(S, "tests/*.sh")):
    for i in re.findall(r"doc_sample ([a-z][a-z0-9-]*)", open(t).read()):
        takers.setdefault(i, set()).add(os.path.relpath(t, S))
BUILD = {"from-clone-short", "from-clone", "from-tarball"}  # scripts/setup.sh and scripts/test.sh
trainer = open(os.path.join(S, "tools/preempt-trainer.c")).read()
samples = {}
readme = os.path.join(S, "README.md")
pys = [b for lang, b in blocks(readme) if lang == "python"]
run_py = {pys[0]} | {b for b in re.findall(r"<!-- example:torch-loop -->\n```python\n(.*?)```\n",
                                          open(readme).read(), re.S)}
c_whole = {open(f).read() for f in glob.glob(os.path.join(S, "examples/*.c"))}
c_text = "".join(open(f).read() for f in glob.glob(os.path.join(S, "examples/*.c")) +
                 [os.path.join(S, "tests/man-examples.c"), os.path.join(S, "tests/guide-samples.c")])
py_text = "".join(open(f).read() for f in glob.glob(os.path.join(S, "examples/*.py")))
bad, n = [], {}
for f in [readme] + sorted(glob.glob(os.path.join(S, "docs/guide/*.md"))):
    for lang, b in blocks(f):
        where = "%s (%s)" % (os.path.relpath(f, S), b.split("\n", 1)[0][:50])
        paras = [p.strip("\n") + "\n" for p in re.split(r"\n\s*\n", b) if p.strip()]
        if lang == "c":
            ok = b in c_whole or all(p in c_text for p in paras)
        elif lang == "python":
            ok = b in run_py or all(p in py_text for p in paras)
        elif lang == "json":
            import json
            try:
                evs = [json.loads(l)["event"] for l in b.splitlines() if l.strip()]
                ok = all('\\"event\\":\\"%s\\"' % e in trainer for e in evs)
            except (ValueError, KeyError, TypeError):
                ok = False
            if not ok:
                bad.append("json block of %s is not a trace the reference trainer prints" % where)
            n["traces"] = n.get("traces", 0) + 1
            continue
        else:
            n["commands"] = n.get("commands", 0) + 1
            continue
        n[lang] = n.get(lang, 0) + 1
        if not ok:
            bad.append("%s block of %s is neither an example nor word for word in a compiled or run file" % (lang, where))
    shells = [b for lang, b in blocks(f) if lang not in ("c", "python", "json")]
    ids = marked(f)
    if len(ids) != len(shells):
        bad.append("%s: %d shell blocks, %d of them marked <!-- sample:ID -->" % (os.path.relpath(f, S), len(shells), len(ids)))
    for i, b in ids:
        if samples.setdefault(i, b) != b:
            bad.append("%s: sample %s differs from its first block" % (os.path.relpath(f, S), i))
for i in sorted(samples):
    if i in BUILD:
        continue
    if len(takers.get(i, ())) != 1:
        bad.append("sample %s is run by %s tests (%s), not one" % (i, len(takers.get(i, ())), ", ".join(sorted(takers.get(i, ())))))
for i in sorted(takers):
    if i not in samples:
        bad.append("%s take sample %s, which no shell block is" % (", ".join(sorted(takers[i])), i))
# the build steps name this version, and packages scripts/setup.sh installs
version = re.search(r"AC_INIT\(\[libpreempt\], \[([^]]*)\]", open(os.path.join(S, "configure.ac")).read()).group(1)
for v in re.findall(r"libpreempt-([0-9][0-9.]*[0-9])", samples.get("from-tarball", "")):
    if v != version:
        bad.append("sample from-tarball names libpreempt-%s; configure.ac says %s" % (v, version))
setup = re.search(r'PACKAGES="([^"]*)"', open(os.path.join(S, "scripts/setup.sh")).read()).group(1).split()
pkgs = re.findall(r"[a-z0-9][a-z0-9.+-]+", samples.get("from-clone", "").split("\nautoreconf")[0].replace("apt-get install", ""))
for pkg in pkgs:
    if pkg not in setup:
        bad.append("sample from-clone installs %s, which scripts/setup.sh does not" % pkg)
print("blocks: %s" % ", ".join("%s %d" % kv for kv in sorted(n.items())))
print("samples run by a test: %d of %d (%s); build steps: %s" % (len(samples) - len(BUILD & set(samples)), len(samples),
      ", ".join("%s %s" % (i, "/".join(sorted(takers.get(i, ())))) for i in sorted(set(samples) - BUILD)), ", ".join(sorted(BUILD & set(samples)))))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
eq "every C and Python sample is compiled or run" "$?" 0
sed 's/^/    /' "$TMP/samples"
expect "samples were found" grep -q 'c [0-9]' "$TMP/samples"
# The Quick start's two commands: the first is the one tests/demo.sh runs,
# the second the one CI runs (.ci/run).
doc_sample quick-start | sed 's/ *#.*//' >"$TMP/quick" || fail "the README has no sample quick-start"
eq "the Quick start's first command is the demo" "$(sed -n 1p "$TMP/quick")" scripts/demo.sh
expect "tests/demo.sh runs it" grep -qF '"$top_srcdir/scripts/demo.sh"' "$S/tests/demo.sh"
eq "the Quick start's second command is the suite" "$(sed -n 2p "$TMP/quick")" scripts/test.sh
expect "CI runs it (.ci/run)" grep -qx 'exec scripts/test.sh' "$S/.ci/run"
# shellcheck disable=SC2086 # flags, split
expect "the guide's C fragments compile and link (-Wall -Wextra -Werror)" ${CC:-cc} -std=gnu11 -Wall -Wextra \
    -Werror -I"$S/include" -shared -fPIC -Wl,--no-undefined -o "$TMP/samples.so" "$S/tests/guide-samples.c" \
    -L"$top_builddir/lib/.libs" -lpreempt
finish
