#!/usr/bin/env bash
# shared_judge.sh JUDGE CAPTURE: runs the shared tshark judge (../shared/tools/iwarp-pcap-check)
# on CAPTURE, or on its first JUDGE_FRAMES frames (default 2000) when it holds more; prints
# the judge's line, with how many frames it saw when cut, and exits with the judge's code.
#
# The judge decodes every frame with `tshark -V` into one shell string and greps it several
# times: about 5 ms a frame here, 90 s for a 1 MiB perftest capture (16,000 frames), most
# of the interop suite's time. The cases' own checker (iwarp_check.py) still reads every
# frame, CRC included; the judge sees every connection's set-up and its first FPDUs. A cut
# falls between frames, and both ends align FPDUs with segments (RFC 5044 §4.1, which
# iwarp_check.py --one-fpdu-per-segment holds uiwarp to), so no FPDU is cut in two.
set -u
judge=$1 cap=$2 max=${JUDGE_FRAMES:-2000}
n=$(capinfos -Mc "$cap" 2>/dev/null | sed -n 's/^Number of packets: *//p')
if [ -n "$n" ] && [ "$n" -gt "$max" ]; then
	head=$(mktemp --suffix=.pcapng)
	trap 'rm -f "$head"' EXIT
	editcap -r "$cap" "$head" "1-$max" || exit 1
	"$judge" "$head"
	rc=$?
	echo "(the judge saw the first $max of $n frames)"
	exit $rc
fi
exec "$judge" "$cap"
