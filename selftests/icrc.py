#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""icrc.py: an independent RoCEv2 checker (Python 3, standard library only).

  icrc.py capture IFACE SECONDS OUTFILE
      Captures every IPv4/IPv6 UDP frame to port 4791 that IFACE sends or
      receives (an AF_PACKET socket) for SECONDS, or until SIGTERM/SIGINT,
      into OUTFILE, a libpcap file (Ethernet) that tcpdump and tshark read.
      OUTFILE's pcap header is written as soon as the socket listens: a
      caller may start its traffic once the file is not empty. SIGUSR1
      writes out every frame received so far and then creates
      OUTFILE.sync: OUTFILE may be checked while the capture goes on.

  icrc.py check PCAP [--flip | --and-flip] [--src ADDR] [--opcode OP] [--min N]
      Parses every RoCEv2 frame of PCAP (Ethernet, IPv4 or IPv6, UDP 4791,
      BTH) and verifies its ICRC. Prints one line:
        packets N icrc_ok K bad M opcodes 0x64:N
      and exits 0 only if N >= --min (default 1) and no packet is bad.
      --src ADDR    only frames from this IP address count
      --opcode OP   a frame with another BTH opcode counts as bad
      --flip        flip one bit of each packet's payload (or, if it has
                    none, of the last byte the ICRC covers) first: exits 0
                    only if every packet is then rejected, which proves
                    the check can fail
      --and-flip    both in one run (two lines): exits 0 only if every
                    packet passes as sent and fails with the bit flipped

  icrc.py ahead PCAP --src ADDR --max N
      Follows the RC requests that ADDR sends in PCAP (one RC connection)
      and the ACKs, READ responses and atomic acknowledgements that come
      back: prints "requests R acks A ahead M", M the most PSNs a request
      ran ahead of the last one answered (IBA: an answer answers every PSN
      up to its own), and exits 0 only if some were sent and M <= N.

The ICRC (InfiniBand Architecture, RoCEv2 annex A17.3.3; Linux's
drivers/infiniband/sw/rxe/rxe_icrc.c): CRC-32 (IEEE 802.3, reflected, as
zlib.crc32) over 8 bytes of 0xff (the masked LRH of InfiniBand), then the IP
header, the UDP header, the BTH, the extension headers, the payload and the
pad, with the variant fields set to all ones: IPv4 TOS, TTL and header
checksum; IPv6 traffic class, flow label and hop limit; the UDP checksum;
BTH byte 4 (FECN, BECN, reserved). It ends the packet, stored inverted
(zlib's result as is) in little-endian byte order. rxe seeds its raw
crc32_le with 0xdebb20e3: crc32_le(~0, 8 x 0xff), so that ~rxe's value is
zlib.crc32(b"\\xff" * 8 + covered bytes).
"""

# (Imports are few and the capture's are its own: in the TCG test guest each
# module costs seconds.)
import struct
import sys
import zlib

ROCE_PORT = 4791
ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
VLAN_TYPES = (0x8100, 0x88A8)

# Extension header bytes after the BTH by the low 5 bits of the opcode
# (RC and UC; UD adds its DETH): IBA table 38, rxe_opcode.c.
EXT_LEN = {
    0x00: 0, 0x01: 0, 0x02: 0, 0x03: 4, 0x04: 0, 0x05: 4,  # SEND
    0x06: 16, 0x07: 0, 0x08: 0, 0x09: 4, 0x0A: 16, 0x0B: 20,  # RDMA WRITE
    0x0C: 16,  # RDMA READ request
    0x0D: 4, 0x0E: 0, 0x0F: 4, 0x10: 4,  # RDMA READ response
    0x11: 4, 0x12: 12,  # ACK, ATOMIC ACK
    0x13: 28, 0x14: 28,  # CMP_SWAP, FETCH_ADD
    0x16: 4, 0x17: 4,  # SEND with invalidate
    0x1C: 20, 0x1D: 16,  # FLUSH, ATOMIC WRITE
}
DETH_LEN = 8


def ext_len(opcode):
    """Extension header bytes of an opcode, or None if unknown."""
    kind, op = opcode & 0xE0, opcode & 0x1F
    if kind in (0x00, 0x20):  # RC, UC
        return EXT_LEN.get(op)
    if kind == 0x60 and op in (0x04, 0x05):  # UD SEND_ONLY (+ immediate)
        return DETH_LEN + EXT_LEN[op]
    return None


def ip_text(b):
    """An IPv4 or IPv6 address's bytes as text."""
    if len(b) == 4:
        return ".".join(str(x) for x in b)
    words = [f"{w:x}" for w in struct.unpack("!8H", b)]
    return ":".join(words)  # (not compressed: compare with ip_norm)


def ip_norm(text):
    """An address given on the command line, as ip_text prints it."""
    if ":" not in text:
        return ip_text(bytes(int(x) for x in text.split(".")))
    head, _, tail = text.partition("::")
    h = [int(w, 16) for w in head.split(":") if w]
    t = [int(w, 16) for w in tail.split(":") if w]
    return ip_text(struct.pack("!8H", *(h + [0] * (8 - len(h) - len(t)) + t)))


# --- capture ---------------------------------------------------------------

def roce_frame(frame):
    """(ip_offset, ethertype) if frame is an IP UDP packet to port 4791."""
    off = 12
    if len(frame) < off + 2:
        return None
    etype = struct.unpack_from("!H", frame, off)[0]
    while etype in VLAN_TYPES and len(frame) >= off + 6:
        off += 4
        etype = struct.unpack_from("!H", frame, off)[0]
    ip = off + 2
    if etype == ETH_P_IP and len(frame) >= ip + 20:
        ihl = (frame[ip] & 0x0F) * 4
        if frame[ip + 9] != 17 or len(frame) < ip + ihl + 8:
            return None
        udp = ip + ihl
    elif etype == ETH_P_IPV6 and len(frame) >= ip + 48:
        if frame[ip + 6] != 17:  # (no extension headers)
            return None
        udp = ip + 40
    else:
        return None
    if struct.unpack_from("!H", frame, udp + 2)[0] != ROCE_PORT:
        return None
    return ip, etype


def capture(iface, seconds, outfile):
    import select
    import signal
    import socket
    import time

    stop, sync = [], []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(1))
    signal.signal(signal.SIGUSR1, lambda *_: sync.append(1))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind((iface, 0))
    s.setblocking(False)
    n = 0
    snaplen = 65535
    buf = bytearray(snaplen)
    with open(outfile, "wb") as out:
        # libpcap: magic, version 2.4, UTC, accuracy, snaplen, Ethernet
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, 1))
        out.flush()
        end = time.monotonic() + seconds
        while True:
            if not stop and not sync:
                left = end - time.monotonic()
                if left <= 0:
                    stop.append(1)
                else:
                    try:
                        select.select([s], [], [], min(left, 0.2))
                    except InterruptedError:
                        pass
            # drain what is queued (on a stop or sync too: nothing that
            # went by before it is lost)
            while True:
                try:
                    size = s.recv_into(buf, snaplen, socket.MSG_TRUNC)
                except (BlockingIOError, InterruptedError):
                    break
                got = min(size, snaplen)
                frame = bytes(buf[:got])
                if roce_frame(frame) is None:
                    continue
                t = time.time()
                out.write(struct.pack("<IIII", int(t), int((t % 1) * 1e6), got, size)
                          + frame)
                n += 1
            out.flush()
            if sync:
                sync.clear()
                with open(outfile + ".sync", "w") as f:
                    f.write(f"{n}\n")
            if stop:
                break
    s.close()
    print(f"captured {n} RoCEv2 frames on {iface}", file=sys.stderr)
    return 0


# --- check -----------------------------------------------------------------

def read_pcap(path):
    """Yields (link type, frame) of a libpcap file (one still being written:
    a last record not complete yet is left out)."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError(f"{path}: not a pcap file ({len(data)} bytes)")
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        raise ValueError(f"{path}: not a libpcap file (magic {magic.hex()})")
    linktype = struct.unpack_from(e + "I", data, 20)[0] & 0x0FFFFFFF
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack_from(e + "IIII", data, off)[2]
        off += 16
        if off + incl > len(data):
            break
        yield linktype, data[off:off + incl]
        off += incl


def to_ethernet(linktype, frame):
    """The frame as Ethernet (pcap link types 1, and 113/276 of 'any')."""
    if linktype == 1:
        return frame
    if linktype == 113 and len(frame) >= 16:  # Linux cooked v1
        return bytes(12) + frame[14:]
    if linktype == 276 and len(frame) >= 20:  # Linux cooked v2
        return bytes(12) + frame[0:2] + frame[20:]
    return None


def ipv4_csum_ok(hdr):
    s = sum(struct.unpack(f"!{len(hdr) // 2}H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


class Packet:
    def __init__(self, frame, at):
        self.frame, self.ip, self.etype = frame, at[0], at[1]
        ip = self.ip
        if self.etype == ETH_P_IP:
            self.iphdr_len = (frame[ip] & 0x0F) * 4
            self.src = ip_text(frame[ip + 12:ip + 16])
            self.ip_len = struct.unpack_from("!H", frame, ip + 2)[0]
        else:
            self.iphdr_len = 40
            self.src = ip_text(frame[ip + 8:ip + 24])
            self.ip_len = 40 + struct.unpack_from("!H", frame, ip + 4)[0]
        self.udp = ip + self.iphdr_len
        self.udp_len = struct.unpack_from("!H", frame, self.udp + 4)[0]
        self.bth = self.udp + 8
        self.end = self.udp + self.udp_len  # (Ethernet padding after)
        self.opcode = frame[self.bth] if len(frame) > self.bth else None

    def malformed(self):
        """Why the packet cannot be a RoCEv2 packet, or None."""
        f = self.frame
        if self.udp_len < 8 + 12 + 4:
            return f"UDP length {self.udp_len} leaves no room for BTH and ICRC"
        if self.end > len(f) or self.ip + self.ip_len > len(f):
            return "truncated frame"
        if self.ip + self.ip_len != self.end:
            return f"IP length {self.ip_len} and UDP length {self.udp_len} disagree"
        if self.etype == ETH_P_IP and not ipv4_csum_ok(f[self.ip:self.udp]):
            return "bad IPv4 header checksum"
        if (self.udp_len - 8) % 4:
            return f"BTH to ICRC is {self.udp_len - 8} bytes, not a multiple of 4"
        if f[self.bth + 1] & 0x0F:
            return f"BTH TVer {f[self.bth + 1] & 0x0F}"
        return None

    def flipped(self):
        """The frame with one bit of the payload (or, if there is none, of
        the last byte before the ICRC) flipped."""
        start = self.bth + 12 + (ext_len(self.opcode) or 0)
        at = start if start < self.end - 4 else self.end - 5
        frame = bytearray(self.frame)
        frame[at] ^= 0x01
        return bytes(frame)

    def icrc(self, frame):
        """(computed, carried) ICRC of frame (this packet's bytes)."""
        ip, udp, bth = self.ip, self.udp, self.bth
        hdr = bytearray(frame[ip:bth + 12])
        if self.etype == ETH_P_IP:
            hdr[1] = 0xFF  # TOS
            hdr[8] = 0xFF  # TTL
            hdr[10:12] = b"\xff\xff"  # header checksum
        else:
            hdr[0] |= 0x0F  # traffic class: its high half (byte 0), its
            hdr[1:4] = b"\xff\xff\xff"  # low half and the flow label
            hdr[7] = 0xFF  # hop limit
        u = udp - ip
        hdr[u + 6:u + 8] = b"\xff\xff"  # UDP checksum
        hdr[bth - ip + 4] = 0xFF  # FECN, BECN, reserved
        crc = zlib.crc32(b"\xff" * 8)
        crc = zlib.crc32(hdr, crc)
        crc = zlib.crc32(frame[bth + 12:self.end - 4], crc)
        carried = struct.unpack_from("<I", frame, self.end - 4)[0]
        return crc, carried


def check(path, flip=False, src=None, want_op=None, minimum=1):
    """Checks every packet of path as sent (flip False) or with a bit
    flipped (True); prints the summary line; returns the exit status."""
    n = ok = bad = 0
    ops = {}
    shown = 0

    def complain(i, p, why):
        nonlocal shown
        if shown < 10:
            op = "?" if p.opcode is None else f"{p.opcode:#04x}"
            print(f"# frame {i}: from {p.src} opcode {op}: {why}")
        shown += 1

    for i, (linktype, raw) in enumerate(read_pcap(path), 1):
        frame = to_ethernet(linktype, raw)
        at = roce_frame(frame) if frame is not None else None
        if at is None:
            continue
        p = Packet(frame, at)
        if src is not None and p.src != src:
            continue
        n += 1
        ops[p.opcode] = ops.get(p.opcode, 0) + 1
        why = p.malformed()
        if why is None and want_op is not None and p.opcode != want_op:
            why = f"opcode {p.opcode:#04x}, want {want_op:#04x}"
        if why is not None:
            bad += 1
            complain(i, p, why)
            continue
        crc, carried = p.icrc(p.flipped() if flip else frame)
        if crc == carried:
            ok += 1
            if flip:
                complain(i, p, f"a flipped bit went unnoticed (ICRC {crc:#010x})")
        else:
            bad += 1
            if not flip:
                complain(i, p, f"ICRC {carried:#010x}, computed {crc:#010x}")
    # (A frame cut before its BTH has no opcode: "-".)
    opcodes = " ".join(("-" if op is None else f"{op:#04x}") + f":{c}"
                       for op, c in sorted(ops.items(), key=lambda e: (e[0] is None, e[0] or 0))) or "-"
    print(f"packets {n} icrc_ok {ok} bad {bad} opcodes {opcodes}"
          + (" (one payload bit flipped in each)" if flip else ""))
    if n < minimum:
        print(f"# {n} packets, want at least {minimum}")
        return 1
    if flip:
        return 0 if ok == 0 else 1
    return 0 if bad == 0 else 1


def ahead(path, src, most):
    """Checks that src's RC requests run at most `most` PSNs ahead of the
    answers; prints the summary line; returns the exit status."""
    requests = acks = worst = 0
    answered = None
    for linktype, raw in read_pcap(path):
        frame = to_ethernet(linktype, raw)
        at = roce_frame(frame) if frame is not None else None
        if at is None:
            continue
        p = Packet(frame, at)
        # RC only (the CM's MADs are UD), up to the BTH's end (a capture
        # may keep no more).
        if p.opcode is None or p.opcode > 0x1F or len(frame) < p.bth + 12:
            continue
        psn = struct.unpack_from("!I", frame, p.bth + 8)[0] & 0xFFFFFF
        answer = 0x0D <= p.opcode <= 0x12
        if p.src == src and not answer:
            requests += 1
            if answered is None:
                answered = (psn - 1) & 0xFFFFFF
            worst = max(worst, (psn - answered) & 0xFFFFFF)
        elif p.src != src and answer and answered is not None:
            acks += 1
            # Answers come in order; a late duplicate says nothing new.
            if 0 < (psn - answered) & 0xFFFFFF < 1 << 23:
                answered = psn
    print(f"requests {requests} acks {acks} ahead {worst}")
    return 0 if requests and worst <= most else 1


def usage():
    print(__doc__.split("\nThe ICRC")[0], file=sys.stderr)
    return 2


def main(argv):
    if len(argv) == 4 and argv[0] == "capture":
        return capture(argv[1], float(argv[2]), argv[3])
    if len(argv) >= 2 and argv[0] == "check":
        path, rest = argv[1], argv[2:]
        flips, src, op, minimum = [False], None, None, 1
        while rest:
            a = rest.pop(0)
            if a == "--flip":
                flips = [True]
            elif a == "--and-flip":
                flips = [False, True]
            elif a == "--src" and rest:
                src = ip_norm(rest.pop(0))
            elif a == "--opcode" and rest:
                op = int(rest.pop(0), 0)
            elif a == "--min" and rest:
                minimum = int(rest.pop(0))
            else:
                return usage()
        # (each pass runs, so that the output tells both verdicts)
        return max([check(path, f, src, op, minimum) for f in flips])
    if len(argv) == 6 and argv[0] == "ahead" and argv[2] == "--src" and argv[4] == "--max":
        return ahead(argv[1], ip_norm(argv[3]), int(argv[5]))
    return usage()


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (OSError, ValueError) as e:
        print(f"icrc.py: {e}", file=sys.stderr)
        sys.exit(2)
