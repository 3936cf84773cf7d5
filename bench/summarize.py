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
    print("Per call: the host launching as the GPU runs (a plain loop of calls). Device: the same calls "
          "queued behind a spinning kernel and run back to back (a CUDA graph or a deep queue). "
          "GB/s and the fraction of copy bandwidth are given for the per-call time, then for the device time.")
    print()
    print("| kernel | variant | dtype | shape | per call (µs) | device (µs) | effective GB/s | of copy BW "
          "| of copy BW (device) | PyTorch per call (µs) | PyTorch device (µs) | speed-up per call "
          "| speed-up device | PyTorch expression |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in ours:
        key = (r["kernel"], r["variant"], r["dtype"], r["shape"])
        t = torch_rows.get(key)
        us, dev = float(r["time_us"]), float(r["device_us"])
        tus = f"{float(t['torch_us']):.1f}" if t else "-"
        tdev = f"{float(t['torch_dev_us']):.1f}" if t else "-"
        speed = f"{float(t['torch_us']) / us:.2f}×" if t else "-"
        dspeed = f"{float(t['torch_dev_us']) / dev:.2f}×" if t else "-"
        expr = t["torch_expr"] if t else "-"
        print(f"| {r['kernel']} | {r['variant']} | {r['dtype']} | {r['shape']} | {us:.1f} | {dev:.1f} | "
              f"{float(r['gbps']):.0f} | {100 * float(r['frac_copy']):.1f}% | {100 * float(r['dev_frac_copy']):.1f}% | "
              f"{tus} | {tdev} | {speed} | {dspeed} | {expr} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
