#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""make bench's report: reads the guest's "bench: PEER TEST VALUE UNIT" lines
and writes the table (text, printed too), the CSV and an SVG chart.

    report.py LOG OUTDIR "DATE" "MACHINE"

The rows and the Targets are those of the engine issue: rsoft against rxe
and siw, and against the limits of the machine measured in the same guest;
then the wire issue's (19): the RoCEv2 wire between two namespaces.
Standard library only.
"""
import csv
import math
import sys
import textwrap
from xml.sax.saxutils import escape

PEERS = ("rsoft", "rxe", "siw")
COLOURS = {"rsoft": "#d9480f", "rxe": "#1c7ed6", "siw": "#5c940d"}

# test, label, unit, section; higher is better except for latency.
ROWS = [
    ("write_bw_64k", "ib_write_bw 64 KiB", "MB/s", "bw"),
    ("write_bw_1m", "ib_write_bw 1 MiB", "MB/s", "bw"),
    ("read_bw_64k", "ib_read_bw 64 KiB", "MB/s", "bw"),
    ("read_bw_1m", "ib_read_bw 1 MiB", "MB/s", "bw"),
    ("write_bw_64k_q4", "ib_write_bw 64 KiB -q 4", "MB/s", "bw"),
    ("send_bw_64", "ib_send_bw 64 B", "msg/s", "rate"),
    ("write_bw_64", "ib_write_bw 64 B", "msg/s", "rate"),
    ("send_lat_2", "ib_send_lat 2 B", "usec", "lat"),
    ("write_lat_2", "ib_write_lat 2 B", "usec", "lat"),
    ("read_lat_2", "ib_read_lat 2 B", "usec", "lat"),
]
SECTIONS = {
    "bw": "Bandwidth, MB/s (MiB/s as perftest), higher is better",
    "rate": "Message rate, messages/s, higher is better",
    "lat": "Latency, typical, microseconds, lower is better",
}
# The wire rows (guest.sh's wire()): peer, column heading.
WIRE_PEERS = [
    ("wire_rsoft", "rsoft<->rsoft"),
    ("wire_rsoft_rxe", "rsoft->rxe"),
    ("wire_rxe", "rxe<->rxe"),
]
# rsoft<->rsoft again, with 1% of the packets lost each way, and the
# tests it runs.
LOSS_PEER = "wire_rsoft_loss1"
LOSS_TESTS = ("write_bw_64k", "read_bw_64k")
WIRE_TESTS = ("write_bw_64k", "write_bw_1m", "read_bw_64k", "read_bw_1m",
              "send_bw_64", "send_lat_2")
WIRE_TITLE = ("RoCEv2 wire over a veth pair: rsoft<->rsoft, rsoft_v0 here and "
              "rsoft_v1 in a second namespace (IPv4 GIDs); rsoft->rxe, "
              "rsoft_v1 there the client, rxe0 here the server (IPv4); "
              "rxe<->rxe, rxe_x0 and rxe_x1 on the two ends of a veth pair "
              "both in init_net (IPv6 link-local GIDs: rxe on 6.12 receives "
              "in init_net only)")
# Figures of the machine and of the kernel-side module, in table order.
EXTRA = [
    ("machine", "memcpy_65536", "memcpy 64 KiB, one CPU"),
    ("machine", "memcpy_1048576", "memcpy 1 MiB, one CPU"),
    ("machine", "copyloop_65536", "copy loop of 8-byte words 64 KiB, one CPU"),
    ("machine", "copyloop_1048576", "copy loop of 8-byte words 1 MiB, one CPU"),
    ("machine", "copyloop2_65536", "copy loop 64 KiB, two CPUs at once (sum)"),
    ("machine", "null_syscall", "null system calls (getppid), one CPU"),
    ("kernel", "kernel_memcpy_65536", "kernel memcpy 64 KiB, one CPU"),
    ("kernel", "kernel_memcpy_1048576", "kernel memcpy 1 MiB, one CPU"),
    ("kernel", "poll_cq_per_cqe_batch1", "rsoft0 ib_poll_cq per CQE, 1 per call"),
    ("kernel", "poll_cq_per_cqe_batch16", "rsoft0 ib_poll_cq per CQE, 16 per call"),
    ("kernel", "poll_cq_empty_per_call", "rsoft0 ib_poll_cq of an empty CQ, per call"),
    ("kernel", "post_send_per_wr", "rsoft0 ib_post_send of a 0-byte SEND, executed"),
    ("kernel", "post_recv_per_wr", "rsoft0 ib_post_recv of one receive, 4096 in a row"),
    ("kernel", "send_rate_1pair", "rsoft0 0-byte SENDs posted and polled, one QP pair"),
    ("kernel", "send_rate_2pairs", "the same, two pairs from two CPUs at once (sum)"),
    # rsoft's ICRC and rxe's both run the kernel's crc32_le(), which the
    # bench module times.
    ("kernel", "icrc_crc32_le_4k",
     "ICRC per byte, 4 KiB: kernel crc32_le (rsoft's and rxe's)"),
    # The same calls counted in instructions (tools/bench/icount.sh), which
    # do not move with the host's load.
    ("icount", "post_send_per_wr",
     "rsoft0 ib_post_send of a 0-byte SEND, executed (-icount)"),
    ("icount", "post_recv_per_wr",
     "rsoft0 ib_post_recv of one receive, 4096 in a row (-icount)"),
    ("icount", "poll_cq_empty_per_call",
     "rsoft0 ib_poll_cq of an empty CQ, per call (-icount)"),
]


def load(path):
    """{(peer, test): (value, unit)}; value None for a figure that failed in
    every round."""
    figs = {}
    with open(path, errors="replace") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 5 and parts[0] == "bench:":
                try:
                    v = None if parts[3] == "failed" else float(parts[3])
                    figs[(parts[1], parts[2])] = (v, parts[4])
                except ValueError:
                    pass
    return figs


def value(figs, peer, test):
    v = figs.get((peer, test))
    return v[0] if v else None


def targets(figs, test, section):
    """The issue's Targets for one row: [(text, limit name, limit, ok)]."""
    rsoft = value(figs, "rsoft", test)
    rxe = value(figs, "rxe", test)
    out = []

    def check(text, name, limit, ok_if_higher):
        if rsoft is None or limit is None:
            out.append((text, name, limit, None))
        else:
            out.append((text, name, limit,
                        rsoft >= limit if ok_if_higher else rsoft <= limit))

    if section == "bw" and test != "write_bw_64k_q4":
        size = "65536" if test.endswith("64k") else "1048576"
        # The machine's copy rate: the fastest of glibc's memcpy, a plain
        # loop and the kernel's memcpy (under TCG each instruction sequence
        # has its own speed; rsoft copies with the kernel's).
        mem = max(value(figs, "machine", "memcpy_" + size) or 0,
                  value(figs, "machine", "copyloop_" + size) or 0,
                  value(figs, "kernel", "kernel_memcpy_" + size) or 0)
        check(">= memcpy/2", "memcpy/2", mem / 2 if mem else None, True)
        check(">= 10x rxe", "10x rxe", rxe * 10 if rxe else None, True)
    elif test == "write_bw_64k_q4":
        one = value(figs, "rsoft", "write_bw_64k")
        check(">= 1.6x one QP", "1.6x -q 1", one * 1.6 if one else None, True)
    elif section == "rate":
        sysc = value(figs, "machine", "null_syscall")
        check(">= syscalls/8", "syscalls/8", sysc / 8 if sysc else None, True)
        check(">= 8x rxe", "8x rxe", rxe * 8 if rxe else None, True)
    elif test in ("send_lat_2", "write_lat_2"):
        check("<= rxe/2", "rxe/2", rxe / 2 if rxe else None, False)
    return out


def kernel_targets(figs):
    """The issue's kernel-side Targets: [target, figure, verdict] rows."""
    rows = []
    send = value(figs, "kernel", "post_send_per_wr")
    sysc = value(figs, "machine", "null_syscall")
    if send is not None:
        # A null system call's time in this guest, for scale.
        per = f", {send * sysc / 1e9:.1f} null system calls" if sysc else ""
        insns = value(figs, "icount", "post_send_per_wr")
        if insns:
            per += f", {insns:,.0f} instructions"
        rows.append(["kernel 0-byte SEND <= 1 us", f"{send:,.0f} ns{per}",
                     "met" if send <= 1000 else "MISSED"])
    one = value(figs, "kernel", "send_rate_1pair")
    two = value(figs, "kernel", "send_rate_2pairs")
    if one and two:
        rows.append(["2 QP pairs on 2 CPUs >= 1.8x one pair",
                     f"{two / one:.2f}x", "met" if two >= 1.8 * one else "MISSED"])
    return rows


def fmt(v):
    if v is None:
        return "-"
    if v >= 10000:
        return f"{v:,.0f}"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def cell(figs, peer, test):
    v = figs.get((peer, test))
    return "failed" if v and v[0] is None else fmt(v[0] if v else None)


def ratio(a, b):
    return a / b if a is not None and b else None


def rfmt(r):
    if r is None:
        return "-"
    return f"{r:.2f}x" if r < 10 else f"{r:.0f}x"


def verdict(t):
    text, _name, limit, ok = t
    return f"{text}: {'met' if ok else 'MISSED' if ok is False else 'n/a'}"


def table_rows(figs):
    head = ["test", "unit", "rsoft", "rxe", "siw", "rsoft/rxe", "rsoft/siw",
            "limit", "limit value", "rsoft/limit", "targets"]
    rows = []
    for test, label, unit, section in ROWS:
        vals = [value(figs, p, test) for p in PEERS]
        ts = targets(figs, test, section)
        # The machine's limit (or the row's own target) is the first target.
        lim = ts[0] if ts else (None, None, None, None)
        rows.append([label, unit] + [cell(figs, p, test) for p in PEERS] +
                    [rfmt(ratio(vals[0], vals[1])),
                     rfmt(ratio(vals[0], vals[2])),
                     lim[1] or "-", fmt(lim[2]),
                     rfmt(ratio(vals[0], lim[2])),
                     "; ".join(verdict(t) for t in ts) or "-"])
    return head, rows


def wire_rows(figs):
    """The wire table: each pair's figure, rsoft's pairs over rxe<->rxe, and
    the issue's Targets (rsoft<->rsoft at least 3x rxe<->rxe in bandwidth
    and message rate, at most half its latency; rsoft->rxe at least
    rxe<->rxe)."""
    head = ["test", "unit"] + [h for _p, h in WIRE_PEERS] + [
        "rxe loopback", "rsoft<->rsoft/rxe<->rxe", "rsoft->rxe/rxe<->rxe",
        "targets"]
    rows = []
    for test, label, unit, section in ROWS:
        if test not in WIRE_TESTS:
            continue
        rr, rx, xx = (value(figs, p, test) for p, _h in WIRE_PEERS)
        lat = section == "lat"
        ts = []
        for text, v, limit in (
                ("rsoft<->rsoft " + ("<= rxe<->rxe/2" if lat else ">= 3x rxe<->rxe"),
                 rr, xx and (xx / 2 if lat else xx * 3)),
                ("rsoft->rxe " + ("<=" if lat else ">=") + " rxe<->rxe", rx, xx)):
            ok = None if v is None or not limit else (v <= limit if lat else v >= limit)
            ts.append((text, None, limit, ok))
        rows.append([label, unit] + [cell(figs, p, test) for p, _h in WIRE_PEERS] +
                    [cell(figs, "rxe", test), rfmt(ratio(rr, xx)), rfmt(ratio(rx, xx)),
                     "; ".join(verdict(t) for t in ts)])
    # RC under loss, against rsoft<->rsoft's lossless figure.
    for test, label, unit, _section in ROWS:
        if test not in LOSS_TESTS or (LOSS_PEER, test) not in figs:
            continue
        lossy, lossless = (value(figs, p, test) for p in (LOSS_PEER, "wire_rsoft"))
        half = lossless and lossless / 2
        ok = None if lossy is None or not half else lossy >= half
        text = f"1% loss >= rsoft<->rsoft/2 ({rfmt(ratio(lossy, lossless))} of it)"
        rows.append([label + ", 1% loss", unit, cell(figs, LOSS_PEER, test)] +
                    ["-"] * (len(head) - 4) + [verdict((text, None, half, ok))])
    return head, rows


def extra_rows(figs):
    rows = []
    for peer, test, label in EXTRA:
        v = figs.get((peer, test))
        rows.append([label, v[1] if v else "-", fmt(v[0]) if v else "-"])
    return rows


def aligned(head, rows):
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
    return "\n".join([line(head), line(["-" * w for w in widths])] +
                     [line(r) for r in rows])


def write_text(path, figs, date, machine):
    head, rows = table_rows(figs)
    text = f"rsoft make bench, {date}\n{machine}\n\n" + aligned(head, rows)
    if any(p in (k[0] for k in figs) for p, _h in WIRE_PEERS):
        text += ("\n\n" + "\n".join(textwrap.wrap(WIRE_TITLE, 100)) + "\n\n" +
                 aligned(*wire_rows(figs)))
    text += "\n\n" + aligned(["machine and kernel-side figure", "unit", "value"],
                             extra_rows(figs))
    kt = kernel_targets(figs)
    if kt:
        text += "\n\n" + aligned(["kernel-side target", "figure", "verdict"], kt)
    text += "\n"
    with open(path, "w") as f:
        f.write(text)
    return text


def write_csv(path, figs):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        # The perftest rows, then the machine's and the kernel-side figures
        # (source "machine", "kernel" or "icount", their figure under
        # "value").
        w.writerow(["test", "unit", "rsoft", "rxe", "siw", "rsoft_over_rxe",
                    "rsoft_over_siw", "limit", "limit_value",
                    "rsoft_over_limit", "targets", "source", "value"])
        for test, _label, unit, section in ROWS:
            vals = [value(figs, p, test) for p in PEERS]
            ts = targets(figs, test, section)
            lim = ts[0] if ts else (None, None, None, None)
            num = lambda v: "" if v is None else f"{v:.6g}"
            w.writerow([test, unit] + [num(v) for v in vals] +
                       [num(ratio(vals[0], vals[1])),
                        num(ratio(vals[0], vals[2])), lim[1] or "",
                        num(lim[2]), num(ratio(vals[0], lim[2])),
                        "; ".join(verdict(t) for t in ts), "perftest", ""])
        # The wire rows the same way, their pair under "source".
        extra = list(EXTRA) + [(p, t, "") for p, _h in WIRE_PEERS for t in WIRE_TESTS]
        extra += [(LOSS_PEER, t, "") for t in LOSS_TESTS]
        for peer, test, _label in extra:
            v = figs.get((peer, test))
            if v:
                w.writerow([test, v[1]] + [""] * 9 +
                           [peer, "failed" if v[0] is None else f"{v[0]:.6g}"])


def write_svg(path, figs, date, machine):
    """Per section, a log-scale bar per device and test; the dashed mark is
    the Target rsoft's bar should reach (or stay under, for latency)."""
    left, plot, right = 190, 560, 200
    width = left + plot + right
    bar, gap, rowgap = 11, 2, 14
    rowh = len(PEERS) * (bar + gap) + rowgap
    out = []
    y = 64

    def text(x, yy, s, size=12, anchor="start", weight="normal", fill="#222"):
        out.append(f'<text x="{x:.1f}" y="{yy:.1f}" font-size="{size}" '
                   f'text-anchor="{anchor}" font-weight="{weight}" '
                   f'fill="{fill}">{escape(s)}</text>')

    for section, title in SECTIONS.items():
        rows = [r for r in ROWS if r[3] == section]
        vals = [v for t, *_ in rows for p in PEERS
                if (v := value(figs, p, t))]
        vals += [ts[2] for t, _l, _u, s in rows
                 for ts in targets(figs, t, s)[:1] if ts[2]]
        if not vals:
            continue
        lo = 10 ** math.floor(math.log10(min(vals)))
        hi = 10 ** math.ceil(math.log10(max(vals) * 1.01))
        xof = lambda v: left + plot * (math.log10(v / lo) / math.log10(hi / lo))
        text(8, y, title, 14, weight="bold")
        y += 12
        top = y
        for test, label, unit, sec in rows:
            text(left - 10, y + 1.5 * (bar + gap) + 4, label, 12, "end")
            for i, peer in enumerate(PEERS):
                v = value(figs, peer, test)
                by = y + i * (bar + gap)
                if v:
                    out.append(f'<rect x="{left}" y="{by}" width="{xof(v) - left:.1f}" '
                               f'height="{bar}" fill="{COLOURS[peer]}"/>')
                    text(xof(v) + 4, by + bar - 1.5, fmt(v), 10)
                else:
                    text(left + 4, by + bar - 1.5, f"{peer}: no figure", 10)
            ts = targets(figs, test, sec)
            if ts and ts[0][2]:
                x = xof(ts[0][2])
                out.append(f'<line x1="{x:.1f}" y1="{y - 3}" x2="{x:.1f}" '
                           f'y2="{y + len(PEERS) * (bar + gap) + 1}" stroke="#000" '
                           'stroke-width="1.5" stroke-dasharray="4,3"/>')
                text(x + 3, y - 3, "target: " + ts[0][1], 9, fill="#555")
            # rsoft's standing, right of the plot.
            rs = value(figs, "rsoft", test)
            notes = [f"{rfmt(ratio(rs, value(figs, p, test)))} {p}"
                     for p in PEERS[1:] if ratio(rs, value(figs, p, test))]
            text(left + plot + 12, y + bar, "rsoft = " + ", ".join(notes), 11)
            # Each Target: met, or how much of it rsoft reaches.
            for k, t in enumerate(ts):
                _text, name, limit, ok = t
                if ok is None:
                    s, colour = f"{name}: n/a", "#555"
                elif ok:
                    s, colour = f"{name}: met", "#2b8a3e"
                else:
                    got = rs / limit if sec != "lat" else limit / rs
                    s, colour = f"{name}: {got:.0%} of it", "#c92a2a"
                text(left + plot + 12, y + (2 + k) * bar + 6 + 2 * k, s, 11,
                     weight="bold", fill=colour)
            y += rowh
        # Decade grid and labels.
        d = lo
        while d <= hi * 1.0001:
            x = xof(d)
            out.insert(0, f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" '
                          f'y2="{y - rowgap + 2}" stroke="#ddd"/>')
            text(x, y - rowgap + 14, f"{d:,.0f}" if d >= 1 else f"{d:g}", 10,
                 "middle", fill="#555")
            d *= 10
        y += 30
    # The machine's and the kernel-side figures, as a caption.
    known = [(label, figs[(peer, test)]) for peer, test, label in EXTRA
             if (peer, test) in figs]
    if known:
        text(8, y, "Same guest, machine and kernel side", 14, weight="bold")
        y += 6
        for label, (v, unit) in known:
            y += 16
            text(left - 10, y, fmt(v) + " " + unit, 12, "end")
            text(left, y, label, 12)
        y += 20
    # The wire rows, as a caption too: three pairs of other devices.
    head, rows = wire_rows(figs)
    if any(p in (k[0] for k in figs) for p, _h in WIRE_PEERS):
        y += 10
        text(8, y, "RoCEv2 wire over a veth pair (see bench.txt)", 14, weight="bold")
        y += 6
        for r in rows:
            y += 16
            text(left - 10, y, r[0], 12, "end")
            text(left, y, ",  ".join(f"{h} {c}" for h, c in zip(head[2:5], r[2:5])) +
                 f" {r[1]}", 12)
        y += 20
    # Legend and caption.
    lx = left
    for peer in PEERS:
        out.append(f'<rect x="{lx}" y="30" width="12" height="12" '
                   f'fill="{COLOURS[peer]}"/>')
        text(lx + 16, 40, peer, 12)
        lx += 80
    text(lx + 10, 40, "log scale; dashed: the issue's Target for rsoft", 11,
         fill="#555")
    height = y + 10
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
           f'height="{height}" viewBox="0 0 {width} {height}" '
           'font-family="DejaVu Sans, Verdana, sans-serif">',
           f'<rect width="{width}" height="{height}" fill="#fff"/>']
    svg.append(f'<text x="8" y="18" font-size="15" font-weight="bold">'
               f'{escape(f"rsoft vs rxe and siw, make bench {date}")}</text>')
    svg.append(f'<text x="{width - 8}" y="18" font-size="10" text-anchor="end" '
               f'fill="#555">{escape(machine)}</text>')
    with open(path, "w") as f:
        f.write("\n".join(svg + out + ["</svg>"]) + "\n")


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    log, outdir, date, machine = sys.argv[1:]
    figs = load(log)
    if not any(k[0] == "rsoft" for k in figs):
        sys.exit("report.py: no rsoft figure in " + log)
    print(write_text(f"{outdir}/bench.txt", figs, date, machine), end="")
    write_csv(f"{outdir}/bench.csv", figs)
    write_svg(f"{outdir}/bench.svg", figs, date, machine)


if __name__ == "__main__":
    main()
