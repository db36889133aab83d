#!/bin/sh
# libflightrec_cupti.so in a CUDA program on the stand-in runtime and
# stand-in libcupti: kernel records with their launches' correlation ids
# and exact durations; and with CUPTI unavailable (slot held, library
# missing) exactly one line on stderr and a normal run.
# Usage: check_cupti_inject.sh HARNESS LIBFLIGHTREC_CUPTI STANDIN_CUPTI_DIR
set -u
harness=$1 inject=$2 cupti_dir=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

run() { # name mode expected-stderr [env...]
	name=$1 mode=$2 want=$3
	shift 3
	env "$@" FLIGHTREC_FAKE_KERNEL_US=137 "$harness" "$mode" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	printf '%s' "$want" >"$tmp/want"
	if [ $rc -ne 0 ] || ! cmp -s "$tmp/err" "$tmp/want"; then
		echo "FAIL $name: rc $rc; stderr:"; cat "$tmp/err"; echo "wanted stderr:"; cat "$tmp/want"
		fail=1
	else
		echo "ok $name"
	fi
}

run kernels kernels "" CUDA_INJECTION64_PATH="$inject" LD_LIBRARY_PATH="$cupti_dir"
grep -qx 'cupti_harness: 6 launches, 6 kernels, 137000 ns each' "$tmp/out" ||
	{ echo "FAIL kernels: summary"; cat "$tmp/out"; fail=1; }
run many many "" CUDA_INJECTION64_PATH="$inject" LD_LIBRARY_PATH="$cupti_dir"
# the batch count depends on CUpti_ActivityKernelN's size; the harness checks the largest is 32
grep -q '^cupti_harness: 3000 launches, 3000 kernels in [0-9]* batches$' "$tmp/out" ||
	{ echo "FAIL many: summary"; cat "$tmp/out"; fail=1; }
run not-injected none "" LD_LIBRARY_PATH="$cupti_dir"
run slot-held none "flightrec-cupti: another profiler already uses CUPTI in this process (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED); no GPU kernel times
" CUDA_INJECTION64_PATH="$inject" LD_LIBRARY_PATH="$cupti_dir" FLIGHTREC_FAKE_CUPTI_HELD=1
run no-libcupti none "flightrec-cupti: cannot load libcupti ($tmp/none/libcupti.so.13: cannot open shared object file: No such file or directory); no GPU kernel times
" CUDA_INJECTION64_PATH="$inject" FLIGHTREC_CUPTI_LIB="$tmp/none/libcupti.so.13"
run bad-injection-path none "cudart stand-in: CUDA_INJECTION64_PATH $tmp/none.so: $tmp/none.so: cannot open shared object file: No such file or directory
" CUDA_INJECTION64_PATH="$tmp/none.so" LD_LIBRARY_PATH="$cupti_dir"
exit $fail
