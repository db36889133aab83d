#!/bin/sh
# ctest unit.cuda_events_smoke: cuda_events runs on the stand-in and prints
# exactly the counts its header comment documents.
#
# What it is for: keeping samples/cuda_events.c's documented counts (which
# the recorder test compares recordings against) true, the event queries'
# answers included (the sample fails when one differs).  How many early
# queries find the kernels still running depends on scheduling (a stalled
# process finds them done), so not_ready is checked to be at most the steps,
# not equal to them.
# What it is NOT for: timing.
#
# Usage: check_cuda_events.sh CUDA_EVENTS
set -u
bin=$1
fail=0

expected() {
	n=$1
	echo "cuda_events: summary steps=$n cudaGraphLaunch=$n cudaGraphLaunch_ptsz=$n" \
		"cudaEventRecord=$((n + 1)) cudaEventRecord_ptsz=$n cudaEventQuery=$((2 * n))" \
		"cudaStreamWaitEvent=$n cudaStreamWaitEvent_ptsz=$n" \
		"cudaEventSynchronize=$((n + 1)) cudaLaunchKernel=$((3 + n))"
}

for n in 1 3; do
	out=$("$bin" --steps $n --kernel-us 5000 2>&1)
	rc=$?
	line=$(printf '%s\n' "$out" | grep '^cuda_events: summary')
	nr=$(printf '%s\n' "$line" | sed -n 's/.* not_ready=\([0-9]*\) .*/\1/p')
	got=$(printf '%s\n' "$line" | sed 's/ not_ready=[0-9]*//')
	want=$(expected $n)
	if [ $rc != 0 ] || [ "$got" != "$want" ] || [ -z "$nr" ] || [ "$nr" -gt "$n" ]; then
		echo "FAIL ($n steps): exit $rc"
		echo "  want: $want"
		echo "  got:  $got"
		printf '%s\n' "$out" | sed 's/^/  | /'
		fail=1
	else
		echo "ok ($n steps): $got"
	fi
done
"$bin" --steps 0 >/dev/null 2>&1
[ $? = 2 ] || { echo "FAIL: --steps 0 not rejected with exit 2"; fail=1; }
exit $fail
