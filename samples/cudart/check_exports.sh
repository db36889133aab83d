#!/bin/sh
# ctest unit.cudart_exports: the stand-in libcudart exports what NVIDIA's does.
#
# What it is for: checking the built library, not its source: the SONAME
# (libcudart.so.12), stripped to .dynsym with a build id, exactly the symbols listed in libcudart.map, each in
# version node libcudart.so.12, each at its own address, each starting with
# `push %rbp` (what uprobes emulate; endbr64 or a shrink-wrapped test would
# be single-stepped), and, when NVIDIA's libcudart is installed, that every
# exported name exists in it too.
# What it is NOT for: behaviour (test_cudart_standin.c does that).
#
# Usage: check_exports.sh LIBCUDART MAPFILE [NVIDIA_LIBCUDART]
# Exit 0 pass, 1 fail, 77 skipped (binutils missing).
set -u
lib=$1 map=$2 nvidia=${3:-}
for tool in nm objdump readelf; do
	command -v $tool >/dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

soname=$(readelf -d "$lib" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[ "$soname" = libcudart.so.12 ] || { echo "FAIL: SONAME is '$soname', want libcudart.so.12"; fail=1; }

# Stripped like NVIDIA's: dynamic symbols only, a build id.
if readelf -S "$lib" | grep -q '\.symtab'; then
	echo "FAIL: $lib has a .symtab; NVIDIA's is stripped to .dynsym"
	fail=1
fi
readelf -n "$lib" | grep -q 'Build ID' || { echo "FAIL: $lib has no build id"; fail=1; }

# Wanted: the names between "global:" and "local:" in the map.
sed -n '/global:/,/local:/p' "$map" | sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_]*\);.*/\1/p' |
	sort >"$tmp/want"
nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' >"$tmp/versioned"
sed 's/@.*//' "$tmp/versioned" | sort >"$tmp/have"
if ! cmp -s "$tmp/want" "$tmp/have"; then
	echo "FAIL: exported functions differ from $map (< map, > library):"
	diff "$tmp/want" "$tmp/have"
	fail=1
fi
if grep -v '@@libcudart\.so\.12$' "$tmp/versioned"; then
	echo "FAIL: the symbols above are not in version node libcudart.so.12"
	fail=1
fi
dups=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $1 }' | sort | uniq -d)
[ -z "$dups" ] || { echo "FAIL: several exported functions share address(es) $dups"; fail=1; }

# First instruction of every exported function (labels like <sym-0x10>,
# objdump's names for code between symbols, are skipped).
objdump -d --no-show-raw-insn "$lib" |
	awk '/^[0-9a-f]+ <[A-Za-z0-9_.@]+>:$/ { name = $2; sub(/^</, "", name); sub(/>:$/, "", name);
	       sub(/@.*/, "", name); getline; $1 = ""; sub(/^ +/, ""); print name "\t" $0 }' |
	sort >"$tmp/first"
while read -r name; do
	insn=$(awk -F '\t' -v n="$name" '$1 == n { print $2; exit }' "$tmp/first")
	case $insn in
	"push %rbp") ;;
	*) echo "FAIL: $name starts with '$insn', not push %rbp"; fail=1 ;;
	esac
done <"$tmp/want"

if [ -n "$nvidia" ] && [ -e "$nvidia" ]; then
	nm -D --defined-only "$nvidia" | awk '{ print $3 }' | sed 's/@.*//' | sort -u >"$tmp/nvidia"
	missing=$(comm -23 "$tmp/want" "$tmp/nvidia")
	if [ -n "$missing" ]; then
		echo "FAIL: not exported by $nvidia: $missing"
		fail=1
	else
		echo "ok: all $(wc -l <"$tmp/want") names exist in $nvidia"
	fi
else
	echo "note: no NVIDIA libcudart installed; names not compared"
fi
[ $fail = 0 ] && echo "ok: $(wc -l <"$tmp/want") exports, SONAME, stripped, versions, push %rbp prologues"
exit $fail
