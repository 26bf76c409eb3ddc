#!/usr/bin/env bash
# uiwarp-perf between two instances over a ring pair: Send, Write and Read, bandwidth and
# latency, 2 octets to 1 MiB; each run must complete every size (the tool checks every
# completion's status and exits non-zero on a failed one). Figures are printed, not judged.
# usage: perf_pair.sh UIWARP_PERF
set -u
fail=0
for op in send write read; do
  for mode in "" "--lat"; do
    out=$("$1" --pair --op "$op" $mode --sizes 2:1048576 --iters 50 --csv 2>&1)
    rc=$?
    rows=$(grep -c "^[A-Za-z ]*,\(bw\|lat\),[0-9]" <<<"$out")
    if [ $rc -ne 0 ] || [ "$rows" -ne 20 ]; then
      echo "FAIL: $op ${mode:-bw}: rc $rc, $rows of 20 sizes"; tail -5 <<<"$out"; fail=1
    else
      echo "ok: $op ${mode:-bw}: $(grep ',1048576,' <<<"$out")"
    fi
  done
done
[ $fail -eq 0 ] && echo "PASS" || exit 1
