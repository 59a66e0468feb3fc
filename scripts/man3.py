#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
"""scripts/man3.py HEADER EXAMPLES OUTDIR: the API reference, made from the
header so that it cannot drift from it.

Every documented declaration of include/libpreempt/preempt.h (a /** */
comment at the top level, and what follows it up to a blank line) becomes
one man page in section 3, named by its first name (the macro a C program
calls, where one wraps the exported _size function); the group's other names
get a page that sources it (.so). The comment's text is the DESCRIPTION, its
@return the RETURN VALUE, its "Ownership:" and "Callback-safe:" their own
sections; the EXAMPLE is the code that follows a "/* man: <page> */"
line in EXAMPLES, up to the next one (tests/man-examples.c, which tests/man3.sh compiles with
-Wall -Wextra -Werror), SEE ALSO the pages
the text names. A retired 0.1 name gets a page that says what replaces it.
libpreempt.7 is the overview: the header's conventions and every page, by
the header's sections.

It fails (status 1, one line per fault) when an exported function has no
page, a comment names a parameter (@p) its function lacks, or a function's
page has no example: tests/man3.sh runs it on the header and on doctored
copies."""
import os
import re
import sys

DATE = "2026-12-02"
SOURCE = "libpreempt"
MANUAL = "libpreempt Manual"


def troff(text):
    """Escapes running text for troff."""
    text = text.replace("\\", "\\e")
    out = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def inline(text):
    """Running text: @p name in italics, function names in bold."""
    text = troff(text)
    text = re.sub(r"@p\s+(\*?\w+)", r"\\fI\1\\fP", text)
    text = re.sub(r"\b(preempt_\w+)\(\)", r"\\fB\1\\fP()", text)
    return text


def strip_comment(c):
    """The text of a /** ... */ comment, without its stars."""
    c = c[3:-2]
    lines = []
    for line in c.split("\n"):
        line = re.sub(r"^\s*\* ?", "", line) if lines else line.strip()
        lines.append(line.rstrip())
    return "\n".join(lines).strip()


def scan(header):
    """The header's top-level documented groups, in order: (section, comment,
    declaration text). Sections are the header's "/* ---- name ---- */"
    lines."""
    groups = []
    section = "Types and configuration"
    i, n, depth = 0, len(header), 0
    while i < n:
        if header.startswith("/**", i) and depth == 0 and not header.startswith("/**<", i):
            end = header.index("*/", i) + 2
            comment = header[i:end]
            # the declaration: up to the first blank line at depth 0
            j, d = end, 0
            while j < n:
                ch = header[j]
                if ch == "{":
                    d += 1
                elif ch == "}":
                    d -= 1
                elif header.startswith("/*", j):
                    j = header.index("*/", j) + 2
                    continue
                elif header.startswith("\n\n", j) and d == 0:
                    break
                j += 1
            groups.append((section, strip_comment(comment), header[end:j].strip()))
            i = j
            continue
        if header.startswith(("/* ----", "/* ===="), i):
            end = header.index("*/", i)
            m = re.match(r"/\* [-=]+ (.*?) [-=]+", header[i:end + 2].split("\n")[0])
            if m:
                section = m.group(1).strip()
            i = end + 2
            continue
        if header.startswith("/*", i):
            i = header.index("*/", i) + 2
            continue
        if header[i] == "{":
            depth += 1
        elif header[i] == "}":
            depth -= 1
        i += 1
    return groups


FUNC = re.compile(r"PREEMPT_EXPORT\s+(?:PREEMPT_DEPRECATED_\(\"([^\"]*)\"\)\s*)?([^;{]*?)\b(preempt_\w+)\s*\(([^;]*?)\)\s*;",
                  re.S)
MACRO = re.compile(r"#define\s+(preempt_\w+)\((.*?)\)\s+(preempt_\w+)\(")
TYPE = re.compile(r"^(typedef\s+[^;]*?\(\s*\*\s*(preempt_\w+)\s*\)|struct\s+(preempt_\w+)\s*\{|enum\s+(preempt_\w+)\s*\{)", re.M)


def params(plist):
    """The parameter names of a prototype's parameter list."""
    names = []
    depth, cur = 0, ""
    for ch in plist + ",":
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            cur = cur.strip()
            m = re.search(r"\(\s*\*\s*(\w+)\s*\)", cur) or re.search(r"(\w+)\s*(\[\s*\])?$", cur)
            if cur and cur != "void" and m:
                names.append(m.group(1))
            cur = ""
        else:
            cur += ch
    return names


def split_sections(text):
    """(description, return value, ownership, callback safety) of a comment."""
    marks = [(m.start(), m.group(0)) for m in re.finditer(r"@return|Ownership:|Callback-safe:", text)]
    parts = {"desc": text[:marks[0][0]] if marks else text, "@return": "", "Ownership:": "", "Callback-safe:": ""}
    for k, (pos, mark) in enumerate(marks):
        end = marks[k + 1][0] if k + 1 < len(marks) else len(text)
        parts[mark] = (parts[mark] + " " + text[pos + len(mark):end]).strip()
    return parts["desc"].strip(), parts["@return"], parts["Ownership:"], parts["Callback-safe:"]


def reflow(text):
    """Paragraphs of the comment (blank lines and list items kept)."""
    out = []
    for para in re.split(r"\n\s*\n", text):
        lines = para.split("\n")
        if any(re.match(r"\s*(- |\d+\. )", ln) for ln in lines):
            items, cur = [], None
            for ln in lines:
                if re.match(r"\s*(- |\d+\. )", ln):
                    cur = [re.sub(r"^\s*(- |\d+\. )", "", ln)]
                    items.append(cur)
                elif cur is not None:
                    cur.append(ln.strip())
                else:
                    out.append(inline(" ".join(x.strip() for x in [ln])))
            for it in items:
                out.append(".IP \\(bu 2\n" + inline(" ".join(x.strip() for x in it)))
            out.append(".PP")
        else:
            out.append(inline(" ".join(x.strip() for x in lines)))
            out.append(".PP")
    while out and out[-1] == ".PP":
        out.pop()
    return "\n".join(out)


def first_sentence(text):
    """The page's one-line summary: the comment's first sentence, cut before
    its first parenthesis or semicolon when it runs long."""
    s = " ".join(text.split())
    m = re.match(r"(.+?[.:])(\s|$)", s)
    s = m.group(1) if m else s
    if len(s) > 70:
        s = re.split(r" \(|; ", s)[0]
    s = s.rstrip(".:,")
    return s[:1].lower() + s[1:] if s[:2] != s[:2].upper() else s


def examples(path):
    """The examples file's blocks: a "/* man: NAME... */" line, then the code
    up to the next such line (or the file's end), the example of each page
    named. name -> code."""
    src = open(path).read()
    out = {}
    for m in re.finditer(r"^/\* man: ([\w ]+?) \*/\n(.*?)(?=^/\* man: |\Z)", src, re.M | re.S):
        for name in m.group(1).split():
            out[name] = m.group(2).strip("\n")
    return out


def page(name, title_names, summary, synopsis, desc, ret, own, safe, example, see):
    h = ['.\\" Made by scripts/man3.py from include/libpreempt/preempt.h: do not edit.',
         '.TH %s 3 "%s" "%s" "%s"' % (name.upper(), DATE, SOURCE, MANUAL),
         ".SH NAME", "%s \\- %s" % (", ".join(troff(x) for x in title_names), troff(summary)),
         ".SH SYNOPSIS", ".nf", "#include <libpreempt/preempt.h>", "", troff(synopsis), ".fi",
         ".PP", "Link with \\fI\\-lpreempt\\fP (\\fBpkg\\-config \\-\\-cflags \\-\\-libs libpreempt\\fP)."]
    if desc:
        h += [".SH DESCRIPTION", reflow(desc)]
    if ret:
        h += [".SH RETURN VALUE", reflow(ret)]
    if own:
        h += [".SH OWNERSHIP", reflow(own)]
    if safe:
        h += [".SH CALLBACK SAFETY", reflow(safe)]
    if example:
        h += [".SH EXAMPLE", ".nf", ".EX", troff(example), ".EE", ".fi"]
    h += [".SH SEE ALSO", ",\n".join("\\fB%s\\fP(%s)" % (s, sec) for s, sec in see)]
    return "\n".join(h) + "\n"


def main(argv):
    if len(argv) != 4:
        sys.stderr.write("usage: man3.py HEADER EXAMPLES OUTDIR\n")
        return 2
    header, exfile, outdir = argv[1:]
    # C++'s extern "C" braces are no declaration's
    text = re.sub(r"#ifdef __cplusplus\n.*?#endif\n", "", open(header).read(), flags=re.S)
    exs = examples(exfile)
    faults = []
    pages = {}      # page name -> (section, primary names)
    links = {}      # other name -> page
    bodies = {}
    documented = set()
    order = []
    for section, comment, decl in scan(text):
        funcs = list(FUNC.finditer(decl))
        macros = {m.group(3): m.group(1) for m in MACRO.finditer(decl)}
        types = [m.group(2) or m.group(3) or m.group(4) for m in TYPE.finditer(decl)]
        if not funcs and not types:
            continue
        desc, ret, own, safe = split_sections(comment)
        names = []
        synopsis = []
        for f in funcs:
            fname = f.group(3)
            documented.add(fname)
            if fname in macros:
                names.append(macros[fname])
            names.append(fname)
            proto = re.sub(r"\s+", " ", f.group(0).replace("PREEMPT_EXPORT ", ""))
            proto = re.sub(r"PREEMPT_DEPRECATED_\(\"[^\"]*\"\)\s*", "", proto)
            synopsis.append(proto)
            for m in MACRO.finditer(decl):
                if m.group(3) == fname:
                    synopsis.append("#define %s(%s) ..." % (m.group(1), m.group(2)))
            plist = params(f.group(4))
            for p in re.findall(r"@p\s+\*?(\w+)", comment):
                if p not in plist and len(funcs) == 1:
                    faults.append("%s: the comment names @p %s, which is not a parameter (%s)"
                                  % (fname, p, ", ".join(plist) or "none"))
        if types and not funcs:
            names = types
            synopsis = [decl]
            section = "Types"
        name = names[0]
        if funcs and name not in exs:
            faults.append("%s: no example (a function after \"/* man: %s */\" in %s)" % (name, name, exfile))
        pages[name] = (section, names)
        order.append(name)
        for other in names[1:]:
            links[other] = name
        bodies[name] = (names, first_sentence(desc or comment), "\n".join(synopsis), desc, ret, own, safe,
                        exs.get(name))
    # retired names: their deprecation message names the replacement
    for m in FUNC.finditer(text):
        if m.group(1) and m.group(3) not in pages:
            pages[m.group(3)] = ("0.1's names, deprecated", [m.group(3)])
            order.append(m.group(3))
            proto = re.sub(r"\s+", " ", re.sub(r"PREEMPT_EXPORT |PREEMPT_DEPRECATED_\(\"[^\"]*\"\)\s*", "", m.group(0)))
            use = m.group(1).split("use ", 1)[-1]
            bodies[m.group(3)] = ([m.group(3)], "deprecated: use %s" % use, proto,
                                  "Deprecated since 1.0, removed in 2.0: 0.1's form. Use %s instead. A program "
                                  "that calls it compiles with a warning that names the replacement, and runs "
                                  "(CHANGELOG.md, \"Migrating from 0.1\"). Define PREEMPT_NO_DEPRECATED before "
                                  "including the header to hide it." % use, "", "", "", None)
    # every exported function has a page
    for m in FUNC.finditer(text):
        if m.group(3) not in pages and m.group(3) not in links:
            faults.append("%s: exported, but no documented declaration (a /** */ comment before it)" % m.group(3))
    if faults:
        for f in faults:
            sys.stderr.write("man3.py: %s\n" % f)
        return 1
    os.makedirs(outdir, exist_ok=True)
    known = set(pages) | set(links)
    for name in order:
        names, summary, synopsis, desc, ret, own, safe, example = bodies[name]
        mentioned = []
        for s in re.findall(r"\b(preempt_\w+)\b", " ".join([desc, ret, own, safe, example or ""])):
            s = links.get(s, s)
            if s in pages and s != name and s not in mentioned:
                mentioned.append(s)
        see = [(s, 3) for s in mentioned] + [("libpreempt", 7)]
        with open(os.path.join(outdir, name + ".3"), "w") as f:
            f.write(page(name, names, summary, synopsis, desc, ret, own, safe, example, see))
    for other, name in links.items():
        with open(os.path.join(outdir, other + ".3"), "w") as f:
            f.write(".so man3/%s.3\n" % name)
    # the overview
    top = re.match(r"/\*.*?\*/\s*/\*(.*?)\*/", text, re.S).group(1)
    top = strip_comment("/**" + top + "*/")
    intro, _, conventions = top.partition("Conventions")
    conventions = conventions.split("\n", 1)[1] if "\n" in conventions else conventions
    by_section = {}
    for name in order:
        by_section.setdefault(pages[name][0], []).append(name)
    o = ['.\\" Made by scripts/man3.py from include/libpreempt/preempt.h: do not edit.',
         '.TH LIBPREEMPT 7 "%s" "%s" "%s"' % (DATE, SOURCE, MANUAL),
         ".SH NAME", "libpreempt \\- survive preemption of distributed training without losing a step",
         ".SH SYNOPSIS", ".nf", "#include <libpreempt/preempt.h>", ".fi", ".PP",
         "Link with \\fI\\-lpreempt\\fP (\\fBpkg\\-config \\-\\-cflags \\-\\-libs libpreempt\\fP).",
         ".SH DESCRIPTION",
         "When any worker of a job learns it will be terminated (SIGTERM, a scheduler's signal, a GCE, AWS or "
         "Azure notice), every worker agrees on one step, saves a consistent checkpoint there, optionally "
         "trains on through the grace period and saves again before the deadline, and exits with a "
         "\"restart me\" code (42 by default). On restart the newest committed checkpoint is restored and "
         "training resumes at exactly the next step. A job's workers agree through etcd; a worker alone "
         "needs nothing but its checkpoint directory. The library runs an explicit state machine on a "
         "libevent loop, with no background threads: a synchronous trainer calls \\fBpreempt_run\\fP() "
         "around each step; an asynchronous one calls \\fBpreempt_step_end\\fP() and acts on the action; "
         "any event loop can drive it through \\fBpreempt_handler_get_fd\\fP().",
         ".SH CONVENTIONS", reflow(conventions.strip()),
         ".SH THE API BY TASK"]
    for sec, names in by_section.items():
        o.append(".SS %s" % troff(sec[:1].upper() + sec[1:]))
        o.append(",\n".join("\\fB%s\\fP(3)" % n for n in names))
    o += [".SH SEE ALSO",
          "\\fBpreempt\\-trainer\\fP(1), \\fBpreempt\\-launch\\fP(1), \\fBpreemptctl\\fP(1), \\fBpreempt\\-exec\\fP(1), "
          "\\fBpreempt\\-ckpt\\fP(1), \\fBpreempt\\-replay\\fP(1), \\fBfsmdump\\fP(1); README.md and the guide (guide/*.md) in "
          "/usr/share/doc/libpreempt\\-dev"]
    with open(os.path.join(outdir, "libpreempt.7"), "w") as f:
        f.write("\n".join(o) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
