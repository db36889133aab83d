#!/bin/sh
# ctest unit.cuda_train_smoke: cuda_train runs on the stand-in and prints
# exactly the numbers its header comment documents.
#
# What it is for: keeping samples/cuda_train.c's documented numbers (which
# recorder tests compare recordings against) true; the expected summary is
# recomputed here from the documented formulas.
# What it is NOT for: timing (--step-ms 0; durations are not checked).
#
# Usage: check_cuda_train.sh CUDA_TRAIN
set -u
bin=$1
MiB=1048576
fail=0

# expected N [CAPACITY]: the documented summary for N steps
expected() {
	n=$1 cap=${2:-17179869184}
	echo "cuda_train: summary steps=$n" \
		"peak_bytes=$((1946157056 + n * MiB))" \
		"init_weights=805306368 alloc_io_buffers=67108864 forward=1073741824" \
		"leaky_cache=$((n * MiB)) leak_bytes=$((n * MiB)) leak_allocs=$n" \
		"failed_alloc_bytes=$cap failed_alloc_result=2" \
		"cuda_malloc_ok=$((4 + 3 * n)) cuda_malloc_failed=1 cuda_free=$((2 * n + 4))" \
		"h2d_pageable=${n}x67108864 h2d_pinned_async=${n}x16777216 d2h_pageable=${n}x1048576" \
		"kernels=$((4 * n)) stream_syncs=$n device_syncs=$n device_inuse_at_exit=$((n * MiB))"
}

# run NAME N CAPACITY ENV... -- ARGS...: one run, compared with expected
run() {
	name=$1 n=$2 cap=$3
	shift 3
	out=$(env "$@" 2>&1)
	rc=$?
	got=$(printf '%s\n' "$out" | grep '^cuda_train: summary')
	want=$(expected "$n" "$cap")
	if [ $rc != 0 ] || [ "$got" != "$want" ]; then
		echo "FAIL ($name): exit $rc"
		echo "  want: $want"
		echo "  got:  $got"
		printf '%s\n' "$out" | sed 's/^/  | /'
		fail=1
	else
		echo "ok ($name): $got"
	fi
}

run "3 steps" 3 17179869184 "$bin" --steps 3 --step-ms 0
run "1 step" 1 17179869184 "$bin" --steps 1 --step-ms 0
run "device 1 of 2, 8 GiB" 2 8589934592 FLIGHTREC_FAKE_GPUS=2 FLIGHTREC_FAKE_GPU_BYTES=8589934592 \
	"$bin" --steps 2 --step-ms 0 --device 1

# Too little memory for the weights: the run must fail, not pretend.
if env FLIGHTREC_FAKE_GPU_BYTES=536870912 "$bin" --steps 1 --step-ms 0 >/dev/null 2>&1; then
	echo "FAIL: cuda_train succeeded on a 512 MiB device"
	fail=1
fi
"$bin" --steps 0 >/dev/null 2>&1
[ $? = 2 ] || { echo "FAIL: --steps 0 not rejected with exit 2"; fail=1; }
exit $fail
