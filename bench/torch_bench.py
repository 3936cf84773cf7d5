#!/usr/bin/env python3
"""PyTorch side of ftbench: times the PyTorch expression of each ftbench row on the same
GPU, with the same method (CUDA events around every call after warm-up, median, inputs
rotated through enough sets to exceed 3x L2, random data).

    python3 bench/torch_bench.py ours.csv > torch.csv

reads ftbench's --csv output and writes one row per line of it:
kernel,variant,dtype,shape,torch_us,torch_expr
"""
import csv
import math
import sys

import torch
import torch.nn.functional as F

DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
ACT = {"gelu": lambda t: F.gelu(t, approximate="tanh"), "relu": F.relu, "silu": F.silu, "identity": lambda t: t}


def attention(kernel, shape, dt):
    """SDPA over the same cache (always [B, Hkv, L, D]; PyTorch has no appending form)."""
    B, H, Hkv, D, L = (shape[k] for k in ("B", "H", "Hkv", "D", "L"))
    gqa = H != Hkv

    def make():
        return (torch.randn(B, H, 1, D, device="cuda", dtype=dt), torch.randn(B, Hkv, L, D, device="cuda", dtype=dt),
                torch.randn(B, Hkv, L, D, device="cuda", dtype=dt))

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa) if gqa else F.scaled_dot_product_attention(q, k, v)
    return ("F.scaled_dot_product_attention" + (" (enable_gqa)" if gqa else ""), make, fn)


def expression(kernel, variant, shape, dt):
    """(description, make_inputs, fn) for the PyTorch eager form of one kernel."""
    if kernel in ("self_attention", "cross_attention"):
        return attention(kernel, shape, dt)
    m, n = shape["m"], shape["n"]
    def rows():
        return torch.randn(m, n, device="cuda", dtype=dt)

    def vec(mean=0.0):
        return torch.randn(n, device="cuda", dtype=dt) + mean

    if kernel == "layernorm":
        return ("F.layer_norm(x)", lambda: (rows(), vec(1), vec()),
                lambda x, g, b: F.layer_norm(x, (n,), g, b, 1e-5))
    if kernel == "rmsnorm":
        return ("F.rms_norm(x)", lambda: (rows(), vec(1)), lambda x, g: F.rms_norm(x, (n,), g, 1e-6))
    if kernel == "add_bias_residual_layernorm":
        return ("s = x + r + b; F.layer_norm(s)", lambda: (rows(), rows(), vec(), vec(1), vec()),
                lambda x, r, bias, g, b: F.layer_norm(x + r + bias, (n,), g, b, 1e-5))
    if kernel == "add_bias_residual_rmsnorm":
        return ("s = x + r + b; F.rms_norm(s)", lambda: (rows(), rows(), vec(), vec(1)),
                lambda x, r, bias, g: F.rms_norm(x + r + bias, (n,), g, 1e-6))
    if kernel == "add_bias_act":
        act = ACT[variant]
        return (f"{variant}(x + b)", lambda: (rows(), vec()), lambda x, b: act(x + b))
    if kernel == "add_bias_residual":
        return ("x + r + b", lambda: (rows(), rows(), vec()), lambda x, r, b: x + r + b)
    raise SystemExit(f"torch_bench: no PyTorch form for {kernel}")


def time_us(make, fn, set_bytes, iters=100, warmup=10):
    l2 = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 << 20)
    nsets = max(1, math.ceil(3 * l2 / max(set_bytes, 1)) + 1)
    free, _ = torch.cuda.mem_get_info()
    while nsets > 1 and nsets * set_bytes * 3 > 0.5 * free:  # x3: PyTorch temporaries
        nsets -= 1
    sets = [make() for _ in range(nsets)]
    for i in range(warmup):
        fn(*sets[i % nsets])
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        args = sets[(warmup + i) % nsets]
        starts[i].record()
        fn(*args)
        ends[i].record()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    return t[iters // 2] * 1000.0


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    out = csv.writer(sys.stdout)
    out.writerow(["kernel", "variant", "dtype", "shape", "torch_us", "torch_expr"])
    with torch.inference_mode():
        for r in rows:
            shape = {k: int(v) for k, v in (kv.split("=") for kv in r["shape"].split())}
            dt = DT[r["dtype"]]
            desc, make, fn = expression(r["kernel"], r["variant"], shape, dt)
            sample = make()
            set_bytes = sum(t.numel() * t.element_size() for t in sample)
            del sample
            us = time_us(make, fn, set_bytes)
            out.writerow([r["kernel"], r["variant"], r["dtype"], r["shape"], f"{us:.2f}", desc])
            sys.stdout.flush()
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
