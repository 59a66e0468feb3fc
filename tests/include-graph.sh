# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The libpreempt authors
# lib/ is modules, a folder each, in one order from the bottom up
# (docs/development.md, "Layout"): a module's files include their own
# module's headers by name and, of a module below, its one door lib/M/M.h
# alone; nothing includes a module above it (so no circle can form), and
# nothing reaches another module's other headers. Outside lib/ only the
# public header, fsm/'s and config.h may be included. Every file of lib/
# is in a module's folder. The same holds where the includes cannot lie:
# the objects a folder builds call no symbol that a folder above it
# defines. The order is this file's; Makefile.am's LIB_MODULES links the
# archives in it, top first.
. "$top_srcdir/tests/lib.sh"
NM=${NM:-nm}
order="base records port etcd job ckpt report cloud trace handler api"
outside=" preempt.h preempt_fsm.h preempt_trace.h config.h "
src="$top_srcdir/lib"

# rank M: M's place in the order (0 for the bottom), empty for no module
rank() {
    _i=0
    for _m in $order; do
        [ "$_m" = "$1" ] && { echo "$_i"; return; }
        _i=$((_i + 1))
    done
}

# every file of lib/ in a module's folder, and every folder a module
loose=$(cd "$src" && find . -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' -o -name '*.def' \) | sed 's|^\./||')
expect "no source file is loose in lib/ (${loose:-none})" test -z "$loose"
for d in "$src"/*/; do
    m=$(basename "$d")
    expect "lib/$m/ is a module of the order" test -n "$(rank "$m")"
done
for m in $order; do
    [ "$m" = api ] || expect "lib/$m/ has its door, lib/$m/$m.h" test -f "$src/$m/$m.h"
done

# docs/design.md's Layers is the tree: each module's folder, from the top
# down, and under it every source file of the folder
layers=$(sed -n '/^## Layers$/,/^- \*\*One definition/p' "$top_srcdir/docs/design.md")
drawn=$(printf '%s\n' "$layers" | sed -n 's|^ lib/\([a-z]*\)/ .*|\1|p' | tr '\n' ' ')
want=$(for m in $order; do echo "$m"; done | tac | tr '\n' ' ')
eq "docs/design.md's Layers draws the modules, top first" "$drawn" "$want"
for f in "$src"/*/*.c; do
    case $f in *.pb.c | */records-kinds.c) continue ;; esac # made by protoc, by records-gen
    case $layers in *"$(basename "$f")"*) ;; *) fail "docs/design.md's Layers does not name ${f#"$src"/}" ;; esac
done

# the includes: one line per edge "FROM-MODULE FILE HEADER"
: >"$TMP/edges"
for m in $order; do
    for f in "$src/$m"/*.c "$src/$m"/*.h "$src/$m"/*.def; do
        [ -f "$f" ] || continue
        case $f in */records-kinds.[ch]) continue ;; esac # made by records-gen (in the build tree; in-tree builds: here)
        sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
            while read -r h; do echo "$m ${f#"$src"/} $h"; done >>"$TMP/edges"
    done
done
n=$(wc -l <"$TMP/edges")
expect "the test reads includes ($n)" test "$n" -gt 100
grep -q '^handler handler/handler-internal.h job/job.h$' "$TMP/edges" && ok ||
    fail "the handler's door to the job core is not seen (the test cannot see)"
: >"$TMP/bad"
while read -r m f h; do
    case $h in
    */*)
        b=${h%%/*} name=${h#*/}
        if [ "$b" = "$m" ]; then
            # its own generated header (trace/trace.pb.h, records/records-kinds.h: in the build tree)
            case $name in *.pb.h | records-kinds.h) ;; *) echo "$f includes its own module's $h by path" >>"$TMP/bad" ;; esac
        elif [ -z "$(rank "$b")" ]; then
            echo "$f includes $h, of no module" >>"$TMP/bad"
        elif [ "$name" != "$b.h" ]; then
            echo "$f includes $h: a header of module $b other than its door $b/$b.h" >>"$TMP/bad"
        elif [ "$(rank "$b")" -ge "$(rank "$m")" ]; then
            echo "$f includes $h: module $b is not below module $m" >>"$TMP/bad"
        fi
        ;;
    *)
        [ -f "$src/$m/$h" ] || case $outside in *" $h "*) ;; *)
            echo "$f includes $h, which is neither its module's nor one it may use" >>"$TMP/bad"
            ;;
        esac
        ;;
    esac
done <"$TMP/edges"
echo "the modules' includes of each other (from -> to: count):"
awk '$3 ~ /\// { split($3, p, "/"); if (p[1] != $1) print $1 " -> " p[1] }' "$TMP/edges" | sort | uniq -c | sed 's/^/    /'
if [ -s "$TMP/bad" ]; then
    fail "includes that break the modules' order:
$(sed 's/^/    /' "$TMP/bad")"
else
    ok
fi

# the objects: a folder's objects (its archive's, and those of the
# library's own sources in it: Makefile.am passes their list) call
# nothing a folder above defines
: >"$TMP/defs"
: >"$TMP/undefs"
mkdir "$TMP/ar"
for m in $order; do
    a="$(cd "$top_builddir" && pwd)/lib/$m/.libs/libpreempt-$m.a"
    objs=
    if [ -f "$a" ]; then
        mkdir "$TMP/ar/$m"
        (cd "$TMP/ar/$m" && ar x "$a") || fail "ar x $a"
        objs=$(find "$TMP/ar/$m" -name '*.o')
    fi
    for lo in ${LIBPREEMPT_OBJECTS:-}; do
        case $lo in lib/"$m"/*) objs="$objs $top_builddir/${lo%/*}/.libs/$(basename "$lo" .lo).o" ;; esac
    done
    [ -n "$objs" ] || { fail "lib/$m/ built no object"; continue; }
    # shellcheck disable=SC2086 # the objects, split
    $NM --defined-only $objs 2>/dev/null | awk -v m="$m" 'NF == 3 && $2 ~ /[TDRB]/ { print $3, m }' >>"$TMP/defs"
    # shellcheck disable=SC2086 # the objects, split
    $NM -u $objs 2>/dev/null | awk -v m="$m" 'NF == 2 { print $2, m }' >>"$TMP/undefs"
done
sort -u -o "$TMP/defs" "$TMP/defs"
sort -u -o "$TMP/undefs" "$TMP/undefs"
join "$TMP/undefs" "$TMP/defs" >"$TMP/uses" # SYMBOL USER-MODULE DEFINING-MODULE
n=$(wc -l <"$TMP/uses")
expect "the test reads the objects' calls between modules ($n)" test "$n" -gt 100
: >"$TMP/up"
while read -r sym user def; do
    [ "$user" = "$def" ] || [ "$(rank "$def")" -lt "$(rank "$user")" ] || echo "lib/$user/ calls $sym, defined in lib/$def/" >>"$TMP/up"
done <"$TMP/uses"
if [ -s "$TMP/up" ]; then
    fail "calls up the modules' order:
$(sed 's/^/    /' "$TMP/up")"
else
    ok
fi
finish
