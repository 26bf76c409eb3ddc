#!/usr/bin/env bash
# A fuzzing campaign: each libFuzzer harness for SECONDS (default 600) in build-fuzz/ (built
# here with clang, ASan and UBSan if missing), seeded as the CI runs are (tests/fuzz/run_fuzz.py).
# Prints one line per harness: runs, executions a second, corpus growth, and the verdict.
# usage: scripts/fuzz-campaign.sh [SECONDS] [HARNESS...]   (default: all of them)
set -u
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(fuzz_net fuzz_tcp fuzz_mpa fuzz_rdmap fuzz_qp)
if [ ! -d build-fuzz ]; then
	CC=clang meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false -Db_lto=false \
		>/dev/null || exit 1
fi
ninja -C build-fuzz >/dev/null || exit 1
declare -A mode=([fuzz_net]="" [fuzz_tcp]=tcp [fuzz_mpa]=mpa [fuzz_rdmap]=rdmap [fuzz_qp]=qp)
failed=0
for h in "${harnesses[@]}"; do
	log=$(mktemp)
	ASAN_OPTIONS=detect_leaks=1 python3 tests/fuzz/run_fuzz.py "build-fuzz/tests/fuzz/$h" "$seconds" \
		${mode[$h]} >"$log" 2>&1
	rc=$?
	runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
	eps=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$')
	units=$(grep -o 'stat::new_units_added: *[0-9]*' "$log" | grep -o '[0-9]*$')
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	verdict=$([ $rc -eq 0 ] && echo "no crash, leak or check failure" || echo "FAILED (see below)")
	echo "$h: ${seconds} s, ${runs:-?} runs (${eps:-?}/s), ${units:-?} new inputs, ${cov:-cov ?}: $verdict"
	if [ $rc -ne 0 ]; then
		tail -40 "$log"
		failed=$((failed + 1))
	fi
	rm -f "$log"
done
exit $failed
