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
# paragraphs are in examples/*.py. Shell blocks are commands (install and
# build steps), listed, not run here.
. "$top_srcdir/tests/lib.sh"
S=$top_srcdir

python3 - "$S" >"$TMP/samples" 2>&1 <<'PY'
import glob, os, re, sys
S = sys.argv[1]
def blocks(path):
    return re.findall(r"^```(\w*)\n(.*?)^```$", open(path).read(), re.S | re.M)
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
        else:
            n["commands"] = n.get("commands", 0) + 1
            continue
        n[lang] = n.get(lang, 0) + 1
        if not ok:
            bad.append("%s block of %s is neither an example nor word for word in a compiled or run file" % (lang, where))
print("blocks: %s" % ", ".join("%s %d" % kv for kv in sorted(n.items())))
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
eq "every C and Python sample is compiled or run" "$?" 0
sed 's/^/    /' "$TMP/samples"
expect "samples were found" grep -q 'c [0-9]' "$TMP/samples"
# shellcheck disable=SC2086 # flags, split
expect "the guide's C fragments compile and link (-Wall -Wextra -Werror)" ${CC:-cc} -std=gnu11 -Wall -Wextra \
    -Werror -I"$S/include" -shared -fPIC -Wl,--no-undefined -o "$TMP/samples.so" "$S/tests/guide-samples.c" \
    -L"$top_builddir/lib/.libs" -lpreempt
finish
