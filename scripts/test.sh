#!/usr/bin/env bash
# The full test suite: installs what it needs, then builds and runs
#   build/        unit, integration (demo, pcap replay, Linux kernel ping) and style suites
#   build-asan/   the unit suites again under AddressSanitizer and UndefinedBehaviorSanitizer
#   build-fuzz/   the libFuzzer harnesses (clang), $UIW_FUZZ_SECONDS each (default 30)
# Ends with one summary line: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1

fuzz_seconds=${UIW_FUZZ_SECONDS:-30}
passed=0 failed=0

# configure DIR [meson options...]: a build directory, made once and reused.
configure() {
	local dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >/dev/null || return 1
	fi
}

# run NAME DIR [meson test options...]: builds, runs, adds the counts to the totals.
run() {
	local name=$1 dir=$2
	shift 2
	echo "=== $name"
	if ! ninja -C "$dir" >"$dir/ninja.log" 2>&1; then
		cat "$dir/ninja.log"
		echo "$name: build failed"
		failed=$((failed + 1))
		return
	fi
	meson test -C "$dir" --print-errorlogs "$@" | tee "$dir/test.out"
	local ok fail
	ok=$(sed -n 's/^Ok: *\([0-9]*\)/\1/p' "$dir/test.out" | tail -1)
	fail=$(sed -n 's/^Fail: *\([0-9]*\)/\1/p' "$dir/test.out" | tail -1)
	timeout=$(sed -n 's/^Timeout: *\([0-9]*\)/\1/p' "$dir/test.out" | tail -1)
	passed=$((passed + ${ok:-0}))
	failed=$((failed + ${fail:-1} + ${timeout:-0}))
}

configure build && run "unit, integration and style" build ||
	{ echo "configure build failed"; failed=$((failed + 1)); }
configure build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug -Db_lto=false &&
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		run "unit under ASan+UBSan" build-asan --suite unit ||
	{ echo "configure build-asan failed"; failed=$((failed + 1)); }
CC=clang configure build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false -Db_lto=false &&
	meson configure build-fuzz -Dfuzz_seconds="$fuzz_seconds" >/dev/null &&
	run "fuzz (${fuzz_seconds}s each)" build-fuzz --suite fuzz ||
	{ echo "configure build-fuzz failed"; failed=$((failed + 1)); }

echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
