#!/bin/sh
# Every CUPTI function the stand-in exports is one NVIDIA's libcupti.so.13
# exports, in the same version node (libcupti.so.13).  Without NVIDIA's
# library on the host, only the stand-in's own versioning is checked.
# Usage: check_exports.sh STANDIN [NVIDIA_LIBCUPTI]
set -u
standin=$1 nvidia=${2:-}
ours=$(objdump -T "$standin" | awk '$NF ~ /^cupti/ { print $(NF-1), $NF }' | sort)
[ -n "$ours" ] || { echo "FAIL: no cupti* exports in $standin"; exit 1; }
fail=0
echo "$ours" | while read -r ver name; do
	[ "$ver" = libcupti.so.13 ] || { echo "FAIL: $name in version $ver"; exit 1; }
done || fail=1
if [ -n "$nvidia" ]; then
	theirs=$(objdump -T "$nvidia" | awk '$NF ~ /^cupti/ { print $(NF-1), $NF }' | sort)
	missing=$(printf '%s\n' "$ours" | comm -23 - "$(printf '%s\n' "$theirs" >/tmp/.cupti_exports.$$; echo /tmp/.cupti_exports.$$)")
	rm -f /tmp/.cupti_exports.$$
	[ -z "$missing" ] || { echo "FAIL: not exported so by $nvidia:"; echo "$missing"; fail=1; }
fi
[ $fail -eq 0 ] && echo "ok: $(echo "$ours" | wc -l) exports"
exit $fail
