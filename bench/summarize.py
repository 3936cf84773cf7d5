#!/usr/bin/env python3
"""Joins ftbench --csv output with torch_bench.py output into a Markdown table.

    python3 bench/summarize.py ours.csv [torch.csv] [--date YYYY-MM-DD]
"""
import csv
import sys


def main(argv):
    date = None
    if "--date" in argv:
        i = argv.index("--date")
        date = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    ours = list(csv.DictReader(open(argv[0])))
    torch_rows = {}
    if len(argv) > 1:
        for r in csv.DictReader(open(argv[1])):
            torch_rows[(r["kernel"], r["variant"], r["dtype"], r["shape"])] = r
    if not ours:
        print("(no benchmark rows)")
        return 0
    dev = ours[0]["device"]
    copy = float(ours[0]["copy_gbps"])
    print(f"Device: {dev}; measured copy bandwidth {copy:.0f} GB/s (read + write)" + (f"; {date}" if date else ""))
    print()
    print("| kernel | variant | dtype | shape | time (µs) | effective GB/s | of copy BW | PyTorch (µs) | speed-up | PyTorch expression |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---|")
    for r in ours:
        key = (r["kernel"], r["variant"], r["dtype"], r["shape"])
        t = torch_rows.get(key)
        tus = f"{float(t['torch_us']):.1f}" if t else "-"
        speed = f"{float(t['torch_us']) / float(r['time_us']):.2f}×" if t else "-"
        expr = t["torch_expr"] if t else "-"
        print(f"| {r['kernel']} | {r['variant']} | {r['dtype']} | {r['shape']} | {float(r['time_us']):.1f} | "
              f"{float(r['gbps']):.0f} | {100 * float(r['frac_copy']):.1f}% | {tus} | {speed} | {expr} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
