#!/usr/bin/env python3
"""Writes the replay test's input pcap and the replies a correct host sends back.

How it was made: every frame is built field by field by tests/lib/pcapio.py (RFC 826,
RFC 791, RFC 792); nothing is captured. The host under test is 10.0.2.2/24 with MAC
02:00:00:00:02:02; the peer is 10.0.2.1, 02:00:00:00:02:01.

Input: an ARP request for the host, ICMP echo requests of several sizes (one with IP
options, one padded to the Ethernet minimum), and frames a host must not answer (bad
checksums, truncation, other addresses, broadcast echo, a fragment, a VLAN tag, a runt,
ARP for another address). Expected: the gratuitous ARP the host sends at start, the ARP
reply, and one echo reply per good request, in order, with the IPv4 identification and
header checksum zero (the test compares those two fields separately).

usage: mk_replay_pcap.py IN.pcap EXPECTED.pcap
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from pcapio import arp, eth, icmp_echo, ip, ipv4, mac, write_pcap  # noqa: E402

HOST_MAC, PEER_MAC = mac("02:00:00:00:02:02"), mac("02:00:00:00:02:01")
BCAST, ZERO = b"\xff" * 6, b"\0" * 6
HOST_IP, PEER_IP = ip("10.0.2.2"), ip("10.0.2.1")
ECHO_ID = 0x1234


def echo_request(seq, data, options=b"", dst=HOST_IP, eth_dst=HOST_MAC, frag=0x4000):
    return eth(eth_dst, PEER_MAC, 0x0800) + ipv4(PEER_IP, dst, 1, icmp_echo(8, ECHO_ID, seq, data),
                                                 ident=seq, frag=frag, options=options)


def echo_reply(seq, data):
    frame = eth(PEER_MAC, HOST_MAC, 0x0800) + ipv4(HOST_IP, PEER_IP, 1, icmp_echo(0, ECHO_ID, seq, data))
    return zero_id_and_cksum(frame)


def zero_id_and_cksum(frame):
    b = bytearray(frame)
    b[18:20] = b"\0\0"
    b[24:26] = b"\0\0"
    return bytes(b)


def main(in_path, expected_path):
    sizes = [56, 0, 1, 1000, 1472]
    good = [echo_request(i + 1, bytes((i * 7 + k) & 0xFF for k in range(n))) for i, n in enumerate(sizes)]
    inp, exp = [], []
    exp.append(arp(BCAST, 1, HOST_MAC, HOST_IP, ZERO, HOST_IP))          # announcement at start
    inp.append(arp(BCAST, 1, PEER_MAC, PEER_IP, ZERO, HOST_IP))
    exp.append(arp(PEER_MAC, 2, HOST_MAC, HOST_IP, PEER_MAC, PEER_IP))
    for i, fr in enumerate(good):
        inp.append(fr)
        exp.append(echo_reply(i + 1, bytes((i * 7 + k) & 0xFF for k in range(sizes[i]))))
    # With IP options (4 NOPs): the reply carries none.
    inp.append(echo_request(6, b"opts", options=b"\x01" * 4))
    exp.append(echo_reply(6, b"opts"))
    # Padded to the 60-byte Ethernet minimum: the padding is not echoed.
    inp.append(echo_request(7, b"") + b"\xee" * 18)
    exp.append(echo_reply(7, b""))

    # Frames that must get no answer at all.
    bad = bytearray(echo_request(20, b"bad ip checksum"))
    bad[24] ^= 0xFF
    inp.append(bytes(bad))
    bad = bytearray(echo_request(21, b"bad icmp checksum"))
    bad[36] ^= 0xFF
    inp.append(bytes(bad))
    inp.append(echo_request(22, b"truncated" * 10)[:60])
    inp.append(echo_request(23, b"to someone else", dst=ip("10.0.2.3")))
    inp.append(echo_request(24, b"to broadcast", dst=ip("10.0.2.255"), eth_dst=BCAST))
    inp.append(echo_request(25, b"a fragment", frag=0x2000))
    inp.append(echo_request(26, b"another MAC", eth_dst=mac("02:00:00:00:02:09")))
    vlan = echo_request(27, b"vlan")
    inp.append(vlan[:12] + b"\x81\x00\x00\x05" + vlan[12:])
    inp.append(b"\x02" * 10)
    inp.append(arp(BCAST, 1, PEER_MAC, PEER_IP, ZERO, ip("10.0.2.3")))
    # One more good request last, so the bad ones cannot hide a stall.
    inp.append(echo_request(8, b"last"))
    exp.append(echo_reply(8, b"last"))
    write_pcap(in_path, inp)
    write_pcap(expected_path, exp)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
