#!/bin/bash
# The long fuzz run (issue 16, "hostile input at scale"); never part of CI,
# which runs each target briefly (ctest -L fuzz, FLIGHTREC_FUZZ_SECONDS).
#
#   tests/fuzz/fuzz_long.sh [CPU-SECONDS] [TARGET...]
#
# Builds the libFuzzer targets if needed (clang, -DFLIGHTREC_FUZZ=ON, in
# $BUILD, default build-fuzz-long), then fuzzes every target (or those
# named) one after the other, each with -fork=$JOBS workers (default: the
# machine's cores) and a share of CPU-SECONDS (default 3600) by its weight
# below; crashes, timeouts, leaks and out-of-memory inputs are kept as
# artifacts and the run goes on.  tests/fuzz/corpus/TARGET is then
# minimized again with what the run found (libFuzzer -merge=1, smaller
# inputs first): its named files stay (recordings, regression inputs), the
# seeds the build writes count as known but are not copied in, and a
# target's kept inputs stay under its cap below (by edges only, then from
# smaller inputs only, when by features they would not: the kept corpus may
# then cover a little less than the run did).  Ends with a table per target:
# CPU seconds (measured), executions, coverage (edges "cov" and features
# "ft" as libFuzzer counts them) of the kept corpus with the seeds before and
# after, inputs added, and crashes with their artifact paths (merge-* ones
# crashed while merging); exit 1 when any target crashed.
#
# Reproduce an artifact: $BUILD/tests/fuzz/fuzz_TARGET ARTIFACT (or
# fuzz_TARGET_replay from any build); once fixed, copy it into
# tests/fuzz/corpus/TARGET/ so unit.fuzz_TARGET_replay keeps it fixed.
set -u
cd "$(dirname "$0")/../.."
root=$PWD
budget=${1:-3600}
[ $# -gt 0 ] && shift
build=${BUILD:-build-fuzz-long}
jobs=${JOBS:-$(nproc)}

# target:weight:KiB kept at most:seeds written by the build:extra options
# (the trace-sized targets mutate inputs of at most 20000 bytes: faster, and
# what they keep stays small; longer seeds are cut there)
targets="reader:1.0:1024:-
analyzer:2.0:1280:-:-max_len=20000
archive:0.75:192:-
records:2.0:768:seeds_records:-max_len=20000 -dict=$root/tests/fuzz/strings.dict
outputs:2.0:768:seeds_records:-max_len=20000 -dict=$root/tests/fuzz/strings.dict
pyframes:0.5:96:seeds_pyframes
unwind:1.0:256:seeds_unwind
recorder_elf:1.0:384:corpus_recorder_elf
recorder_maps:0.5:96:corpus_recorder_maps
recorder_python:0.5:96:corpus_recorder_python
recorder_proc:0.25:64:-"

if [ $# -gt 0 ]; then
	want=" $* "
	targets=$(echo "$targets" | while IFS=: read -r name rest; do
		case "$want" in *" $name "*) echo "$name:$rest" ;; esac
	done)
fi
[ -n "$targets" ] || { echo "fuzz_long: no such target: $*" >&2; exit 2; }

if [ ! -f "$build/CMakeCache.txt" ]; then
	CC=clang cmake -S . -B "$build" -DFLIGHTREC_FUZZ=ON -DFLIGHTREC_RECORDER=OFF \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
fi
names=$(echo "$targets" | cut -d: -f1)
build_targets=
for t in $names; do build_targets="$build_targets fuzz_$t"; done
echo "fuzz_long: building$build_targets in $build"
cmake --build "$build" -j"$jobs" --target $build_targets corpus_records corpus_pyframes \
	corpus_unwind corpus_recorder >/dev/null || exit 1

total_weight=$(echo "$targets" | awk -F: '{ w += $2 } END { print w }')
fz=$(cd "$build/tests/fuzz" && pwd)
out=$fz/fuzz_long
mkdir -p "$out"
table=$out/table.txt
: >"$table"
rm -f "$out/crashed"

# "cov ft" of a corpus (the INITED line of a run that only loads it)
coverage() {
	local bin=$1; shift
	"$bin" -runs=0 -rss_limit_mb=4096 -timeout=60 "$@" 2>&1 |
		sed -n 's/.*INITED cov: \([0-9]*\) ft: \([0-9]*\).*/\1 \2/p' | tail -1
}

echo "$targets" | while IFS=: read -r name weight cap seeds extra; do
	bin=$fz/fuzz_$name
	kept=$root/tests/fuzz/corpus/$name
	work=$out/$name
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/artifacts" "$kept"
	seed_dir=
	[ "$seeds" != "-" ] && seed_dir=$fz/$seeds
	cp -p "$kept"/. "$work/corpus/" -r 2>/dev/null
	[ -n "$seed_dir" ] && cp -p "$seed_dir"/. "$work/corpus/" -r
	cpu=$(awk -v b="$budget" -v w="$weight" -v t="$total_weight" 'BEGIN { printf "%d", b * w / t }')
	wall=$(( cpu / jobs ))
	[ "$wall" -lt 10 ] && wall=10
	# -max_len is for mutating only: coverage and merges read whole inputs
	plain=$(echo "$extra" | tr ' ' '\n' | grep -v '^-max_len=' | tr '\n' ' ')
	before=$(coverage "$bin" $plain "$work/corpus")
	echo "fuzz_long: $name: $cpu CPU-seconds ($jobs workers, ${wall}s), starting at cov/ft ${before:-?}"
	/usr/bin/time -f "%U %S" -o "$work/cpu" \
		"$bin" -fork="$jobs" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
		-max_total_time="$wall" -timeout=30 -rss_limit_mb=2560 \
		-artifact_prefix="$work/artifacts/" $extra "$work/corpus" \
		>"$work/log" 2>&1
	used=$(tail -1 "$work/cpu" | awk '{ printf "%d", $1 + $2 }')
	# the last stats line: "#EXECS: cov: N ft: N corp: N ... oom/timeout/crash: a/b/c time: ..."
	last=$(grep -E '^#[0-9]+: cov:' "$work/log" | tail -1)
	execs=$(echo "$last" | sed -n 's/^#\([0-9]*\):.*/\1/p')

	# the kept corpus again: its named files (recordings, regression inputs)
	# stay; its other files and what this run found are minimized (libFuzzer
	# -merge=1, smaller inputs first) against the named files and the
	# build's seeds, which count as known but are not copied.  While the
	# result passes the target's cap: by edges only (-use_counters=0), then
	# from the inputs of at most 16, 8, 4 KiB only.
	base=$work/base
	rm -rf "$base"
	mkdir -p "$base"
	ls "$kept" | grep -vE '^[0-9a-f]{40}$' | while read -r f; do cp -p "$kept/$f" "$base/"; done
	[ -n "$seed_dir" ] && cp -p "$seed_dir"/. "$base/" -r
	ls "$base" | sort >"$work/known"
	ls "$kept" | grep -E '^[0-9a-f]{40}$' | sort >"$work/was"
	for try in 1:0 0:0 0:16384 0:8192 0:4096; do
		counters=${try%:*} limit=${try#*:}
		from=$work/corpus
		if [ "$limit" -gt 0 ]; then # only the inputs up to limit bytes
			from=$work/small
			rm -rf "$from"
			mkdir -p "$from"
			find "$work/corpus" -type f -size -$((limit + 1))c -exec cp -p {} "$from/" \;
		fi
		rm -rf "$work/merged"
		cp -rp "$base" "$work/merged"
		"$bin" -merge=1 -use_counters=$counters -rss_limit_mb=4096 -timeout=60 \
			-artifact_prefix="$work/artifacts/merge-" \
			$plain "$work/merged" "$from" >"$work/merge.log" 2>&1
		ls "$work/merged" | sort | comm -13 "$work/known" - >"$work/new"
		kb=$(cd "$work/merged" && cat $(cat "$work/new") /dev/null | wc -c | awk '{ print int($1 / 1024) }')
		[ "$kb" -le "$cap" ] && break
	done
	ls "$kept" | grep -E '^[0-9a-f]{40}$' | while read -r f; do rm -f "$kept/$f"; done
	while read -r f; do cp -p "$work/merged/$f" "$kept/"; done <"$work/new"
	added=$(comm -13 "$work/was" "$work/new" | wc -l)
	after=$(coverage "$bin" $plain "$kept" ${seed_dir:+"$seed_dir"})
	rmdir "$kept" 2>/dev/null # nothing kept: no empty corpus for the replay test
	arts=$(ls "$work/artifacts" 2>/dev/null | wc -l)
	printf '%-14s %6s %10s %11s %11s %6s %5s\n' "$name" "${used:-?}" "${execs:-?}" \
		"$(echo ${before:-? ?} | tr ' ' /)" "$(echo ${after:-? ?} | tr ' ' /)" "$added" \
		"$arts" >>"$table"
	for a in "$work"/artifacts/*; do
		[ -e "$a" ] && echo "    $a" >>"$table"
	done
	[ "$arts" -gt 0 ] && touch "$out/crashed"
done

echo
echo "fuzz_long: $budget CPU-seconds over $(echo "$names" | wc -w) targets, $jobs workers each"
printf '%-14s %6s %10s %11s %11s %6s %5s\n' target cpu_s execs cov/ft_was cov/ft_now added crash
printf '%-14s %6s %10s %11s %11s %6s %5s\n' '' '' '' '(kept+seeds)' '(kept+seeds)' '' 
cat "$table"
echo "kept corpora (bytes): $(cd "$root/tests/fuzz/corpus" && for d in *; do
	printf '%s %s, ' "$d" "$(cat "$d"/* | wc -c)"; done) in tests/fuzz/corpus/"
if [ -e "$out/crashed" ]; then
	rm -f "$out/crashed"
	exit 1
fi
exit 0
