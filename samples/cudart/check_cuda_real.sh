#!/bin/sh
# ctest unit.cuda_real: cuda_real loads a libcudart by path and reports the
# error codes of its calls.
#
# What it is for: keeping the sample that recorder tests run against
# NVIDIA's real libcudart working: against the stand-in with no GPUs
# (every call: cudaErrorNoDevice, 100) and, when NVIDIA's library is
# installed, against it (on a machine without a driver every call fails:
# no return code may be 0 except, possibly, cudaFree(NULL)).
# What it is NOT for: recording (tests/integration does that).
#
# Usage: check_cuda_real.sh CUDA_REAL STANDIN_LIBCUDART [NVIDIA_LIBCUDART]
set -u
bin=$1 standin=$2 nvidia=${3:-}
fail=0

out=$(FLIGHTREC_FAKE_GPUS=0 "$bin" "$standin" 2>&1)
rc=$?
want="cuda_real: cudaGetDeviceCount -> 100 cudaErrorNoDevice
cuda_real: device count 0
cuda_real: cudaMalloc -> 100 cudaErrorNoDevice
cuda_real: cudaFree -> 100 cudaErrorNoDevice"
got=$(printf '%s\n' "$out" | grep -v '^cuda_real: loaded')
if [ $rc != 0 ] || [ "$got" != "$want" ]; then
	echo "FAIL: stand-in without GPUs: exit $rc"
	printf '%s\n' "$out" | sed 's/^/  | /'
	fail=1
fi

if [ -n "$nvidia" ] && [ -e "$nvidia" ]; then
	out=$("$bin" "$nvidia" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed 's/^/  nvidia | /'
	count=$(printf '%s\n' "$out" | sed -n 's/^cuda_real: cudaGetDeviceCount -> \([0-9]*\) .*/\1/p')
	malloc=$(printf '%s\n' "$out" | sed -n 's/^cuda_real: cudaMalloc -> \([0-9]*\) .*/\1/p')
	if [ $rc != 0 ] || [ -z "$count" ] || [ -z "$malloc" ]; then
		echo "FAIL: NVIDIA's $nvidia: exit $rc"
		fail=1
	elif [ "$count" = 0 ]; then
		echo "note: NVIDIA's runtime found a device here; nothing to check about errors"
	elif [ "$malloc" = 0 ]; then
		echo "FAIL: cudaGetDeviceCount failed ($count) but cudaMalloc succeeded"
		fail=1
	fi
else
	echo "note: no NVIDIA libcudart installed; only the stand-in checked"
fi
[ $fail = 0 ] && echo "ok: cuda_real"
exit $fail
