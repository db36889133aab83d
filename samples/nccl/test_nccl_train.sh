#!/bin/sh
# Tests of the stand-in libnccl (samples/nccl/) through nccl_train run by
# launch_ranks; no privileges, no GPU.  Not a test of NCCL: of the stand-in's
# barrier and of the launcher.
#
#   four_ranks  one launcher, 4 ranks: all finish, one sane line per rank
#   two_nodes   two launchers of 2 ranks each form one 4-rank job
#   straggler   --slow-rank 2 --slow-factor 1.5: the other ranks' mean
#               allreduce wait grows by about 0.5 * compute-ms, rank 2's does
#               not (the barrier is real)
#   async       FLIGHTREC_FAKE_NCCL_ASYNC=1 (collectives complete through the
#               CUDA stand-in's streams), 4 ranks waiting with --wait stream,
#               then --wait query: all finish
#   hang        --hang-rank 2 --hang-at 2, blocking and asynchronous (both
#               waits): rank 2 says it hangs, ranks 0 and 1 that they wait in
#               collective 2, and the job fails within the stand-in's timeout
#               (FLIGHTREC_FAKE_NCCL_TIMEOUT_S=2 here), no rank finishing
#   prologues   every exported function of the library starts with
#               `push %rbp` (needs nm and objdump; exit 77 = skipped)
#
# usage: test_nccl_train.sh MODE LAUNCH_RANKS NCCL_TRAIN
#        test_nccl_train.sh prologues LIBNCCL
set -u
mode=$1 launch=$2 train=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
	for f in "$tmp"/err*; do [ -s "$f" ] && sed "s|^|$(basename "$f"): |" "$f" >&2; done
	echo "FAIL ($mode): $*" >&2
	exit 1
}

# check_lines FILE NRANKS STEPS MIN_STEP_MS: exactly one sane line per rank
check_lines() {
	awk -v n="$2" -v steps="$3" -v min="$4" '
	/^rank [0-9]+: steps [0-9]+, mean step ms [0-9.]+, mean allreduce wait ms [0-9.]+$/ {
		r = $2; sub(":", "", r); s = $4; sub(",", "", s); step = $8; sub(",", "", step)
		wait = $13
		if (r in seen) { print "rank " r " printed twice"; bad = 1 }
		seen[r] = 1; count++
		if (r + 0 >= n) { print "rank " r " out of range"; bad = 1 }
		if (s + 0 != steps) { print "rank " r ": " s " steps, want " steps; bad = 1 }
		if (step + 0 < min || wait + 0 > step + 0) {
			print "rank " r ": step " step " ms, wait " wait " ms: not sane"; bad = 1 }
		next }
	{ print "unexpected line: " $0; bad = 1 }
	END { if (count != n) { print count " rank lines, want " n; bad = 1 }; exit bad }' "$1"
}

# mean_wait FILE RANK
mean_wait() {
	awk -v r="$2" '$1 == "rank" && $2 == r ":" { print $13 }' "$1"
}

case $mode in
four_ranks)
	"$launch" --ranks 4 --master 127.0.0.1:0 -- \
		"$train" --steps 5 --compute-ms 5 --count 65536 >"$tmp/out" 2>"$tmp/err" ||
		fail "launch_ranks exited $?"
	cat "$tmp/out"
	check_lines "$tmp/out" 4 5 4.5 || fail "bad rank lines"
	;;
two_nodes)
	"$launch" --ranks 4 --first-rank 0 --local-ranks 2 --master 127.0.0.1:0 -- \
		"$train" --steps 5 --compute-ms 5 >"$tmp/out0" 2>"$tmp/err0" &
	node0=$!
	port=
	for _ in $(seq 100); do
		port=$(sed -n 's/^launch_ranks: master 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$tmp/err0")
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || { kill "$node0"; fail "node 0 launcher printed no master port"; }
	"$launch" --ranks 4 --first-rank 2 --local-ranks 2 --master "127.0.0.1:$port" -- \
		"$train" --steps 5 --compute-ms 5 >"$tmp/out1" 2>"$tmp/err1"
	rc1=$?
	wait "$node0"
	rc0=$?
	cat "$tmp/out0" "$tmp/out1" >"$tmp/out"
	cat "$tmp/out"
	[ "$rc0" = 0 ] && [ "$rc1" = 0 ] || fail "launchers exited $rc0 and $rc1"
	check_lines "$tmp/out" 4 5 4.5 || fail "bad rank lines"
	[ "$(grep -c '^rank [01]:' "$tmp/out0")" = 2 ] && [ "$(grep -c '^rank [23]:' "$tmp/out1")" = 2 ] ||
		fail "ranks did not run on the node they were given"
	;;
straggler)
	compute_ms=40
	for run in base slow; do
		extra=
		[ "$run" = slow ] && extra="--slow-rank 2 --slow-factor 1.5"
		# shellcheck disable=SC2086
		"$launch" --ranks 4 --master 127.0.0.1:0 -- "$train" --steps 12 \
			--compute-ms $compute_ms --count 1048576 $extra >"$tmp/$run" 2>"$tmp/err.$run" ||
			fail "$run run: launch_ranks exited $?"
		echo "$run:"
		cat "$tmp/$run"
		check_lines "$tmp/$run" 4 12 $((compute_ms * 9 / 10)) || fail "$run run: bad rank lines"
	done
	growth_others=0
	for r in 0 1 3; do
		g=$(awk -v a="$(mean_wait "$tmp/slow" $r)" -v b="$(mean_wait "$tmp/base" $r)" \
			'BEGIN { printf "%.2f", a - b }')
		echo "rank $r: mean allreduce wait grew by $g ms"
		growth_others=$(awk -v s="$growth_others" -v g="$g" 'BEGIN { printf "%.2f", s + g / 3 }')
	done
	growth_slow=$(awk -v a="$(mean_wait "$tmp/slow" 2)" -v b="$(mean_wait "$tmp/base" 2)" \
		'BEGIN { printf "%.2f", a - b }')
	want=$((compute_ms / 2))
	echo "other ranks: wait grew by $growth_others ms on average (want about $want);" \
		"slow rank 2: by $growth_slow ms (want about 0)"
	awk -v g="$growth_others" -v w="$want" 'BEGIN { exit !(g >= 0.5 * w && g <= 1.75 * w) }' ||
		fail "other ranks' wait grew by $growth_others ms, want $want ms give or take"
	awk -v g="$growth_slow" -v w="$want" 'BEGIN { exit !(g <= 0.5 * w) }' ||
		fail "the slow rank itself waited $growth_slow ms longer: it should not wait"
	;;
async)
	for wait in stream query; do
		FLIGHTREC_FAKE_NCCL_ASYNC=1 "$launch" --ranks 4 --master 127.0.0.1:0 -- \
			"$train" --steps 5 --compute-ms 5 --count 65536 --wait $wait \
			>"$tmp/out.$wait" 2>"$tmp/err.$wait" || fail "--wait $wait: launch_ranks exited $?"
		echo "--wait $wait:"
		cat "$tmp/out.$wait"
		check_lines "$tmp/out.$wait" 4 5 4.5 || fail "--wait $wait: bad rank lines"
	done
	;;
hang)
	for run in "0 none" "1 stream" "1 query"; do
		# shellcheck disable=SC2086 # two words: async mode and wait
		set -- $run
		start=$(date +%s)
		FLIGHTREC_FAKE_NCCL_TIMEOUT_S=2 FLIGHTREC_FAKE_NCCL_ASYNC=$1 "$launch" --ranks 3 \
			--master 127.0.0.1:0 -- "$train" --steps 4 --compute-ms 5 --wait "$2" \
			--hang-rank 2 --hang-at 2 >"$tmp/out" 2>"$tmp/err.$1.$2" &&
			fail "async $1, --wait $2: the job did not fail"
		took=$(($(date +%s) - start))
		echo "async $1, --wait $2: failed after $took s"
		grep -q "rank 2: hanging before collective 2" "$tmp/err.$1.$2" &&
			grep -q "rank 0: waiting in collective 2" "$tmp/err.$1.$2" &&
			grep -q "rank 1: waiting in collective 2" "$tmp/err.$1.$2" ||
			fail "async $1, --wait $2: the ranks did not say they hang and wait"
		[ ! -s "$tmp/out" ] || fail "async $1, --wait $2: a rank finished"
		[ "$took" -lt 30 ] || fail "async $1, --wait $2: took $took s, want the 2 s timeout"
	done
	;;
prologues)
	lib=$launch
	command -v nm >/dev/null && command -v objdump >/dev/null ||
		{ echo "SKIP: nm or objdump missing"; exit 77; }
	nm -D --defined-only "$lib" | awk '$2 ~ /^[TW]$/ { print $1, $3 }' >"$tmp/syms"
	total=0 bad=0
	while read -r addr name; do
		total=$((total + 1))
		first=$(objdump -d --no-show-raw-insn --start-address=0x"$addr" \
			--stop-address=$((0x$addr + 4)) "$lib" |
			awk '/^ *[0-9a-f]+:/ { $1 = ""; sub(/^ +/, ""); print; exit }')
		case $first in
		"push "*"%rbp") ;;
		*) echo "$name starts with: $first"; bad=$((bad + 1)) ;;
		esac
	done <"$tmp/syms"
	echo "$total exported functions, $bad not starting with push %rbp"
	[ "$total" -ge 40 ] || fail "only $total exported functions (want 20 nccl* and 20 pnccl*)"
	[ "$bad" = 0 ] || fail "$bad exported functions do not start with push %rbp"
	;;
*)
	echo "usage: test_nccl_train.sh four_ranks|two_nodes|straggler|async|hang LAUNCH_RANKS" \
		"NCCL_TRAIN" >&2
	exit 2
	;;
esac
echo "PASS ($mode)"
