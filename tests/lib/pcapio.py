"""Minimal pcap reading and writing, and the frame builders the replay tests share.

Standard library only: the frames are written field by field from RFC 826 (ARP),
RFC 791 (IPv4) and RFC 792 (ICMP echo).
"""
import struct

LINKTYPE_ETHERNET = 1


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", 1_700_000_000 + i, 0, len(fr), len(fr)))
            f.write(fr)


def read_pcap(path):
    """Frames of a pcap file (microsecond or nanosecond, either byte order)."""
    data = open(path, "rb").read()
    if len(data) < 24:
        raise ValueError(f"{path}: not a pcap file ({len(data)} bytes)")
    magic = struct.unpack("<I", data[:4])[0]
    if magic in (0xA1B2C3D4, 0xA1B23C4D):
        end = "<"
    elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
        end = ">"
    else:
        raise ValueError(f"{path}: bad pcap magic {magic:#x}")
    off, frames = 24, []
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(end + "IIII", data[off:off + 16])
        off += 16
        frames.append(data[off:off + incl])
        off += incl
    return frames


def mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


def ip(s):
    return bytes(int(x) for x in s.split("."))


def cksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def eth(dst, src, etype):
    return dst + src + struct.pack("!H", etype)


def arp(eth_dst, op, sha, spa, tha, tpa):
    return eth(eth_dst, sha, 0x0806) + struct.pack("!HHBBH", 1, 0x0800, 6, 4, op) + sha + spa + tha + tpa


def ipv4(src, dst, proto, payload, ident=0, ttl=64, frag=0x4000, options=b""):
    ihl = 5 + len(options) // 4
    hdr = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, ihl * 4 + len(payload), ident, frag, ttl,
                      proto, 0, src, dst) + options
    hdr = hdr[:10] + struct.pack("!H", cksum(hdr)) + hdr[12:]
    return hdr + payload


def icmp_echo(typ, ident, seq, data):
    body = struct.pack("!BBHHH", typ, 0, 0, ident, seq) + data
    return body[:2] + struct.pack("!H", cksum(body)) + body[4:]
