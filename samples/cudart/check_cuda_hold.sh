#!/bin/sh
# ctest unit.cuda_hold: cuda_hold waits after allocating, frees on SIGUSR1,
# and, with no signal, goes on after its timeout.
#
# What it is for: keeping the sample that --pid recorder tests attach to
# working without a recorder: the "ready" line, the wait, the frees.
# What it is NOT for: attaching (tests/integration does that, as root).
#
# Usage: check_cuda_hold.sh CUDA_HOLD
set -u
bin=$1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

"$bin" 20 >"$tmp/out" 2>&1 &
pid=$!
i=0
until grep -q '^cuda_hold: ready' "$tmp/out" || [ $i -ge 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
if ! grep -q "^cuda_hold: ready pid=$pid ptrs=0x[0-9a-f]*,0x[0-9a-f]*,0x[0-9a-f]*,0x[0-9a-f]* pinned=0x" "$tmp/out"; then
	echo "FAIL: no ready line naming pid $pid"
	fail=1
fi
kill -USR1 $pid
wait $pid
rc=$?
if [ $rc != 0 ] || ! grep -q '^cuda_hold: got SIGUSR1' "$tmp/out" || ! grep -q '^cuda_hold: done' "$tmp/out"; then
	echo "FAIL: signalled run: exit $rc"
	fail=1
fi
sed 's/^/  | /' "$tmp/out"

out=$("$bin" 1 2>&1)
rc=$?
case $out in
*"cuda_hold: timeout"*"cuda_hold: done"*) [ $rc = 0 ] || { echo "FAIL: timeout run exit $rc"; fail=1; } ;;
*) echo "FAIL: timeout run printed: $out"; fail=1 ;;
esac
[ $fail = 0 ] && echo "ok: cuda_hold"
exit $fail
