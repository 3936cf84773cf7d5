#!/usr/bin/env python3
"""PyTorch side of ftbench: times the PyTorch expression of each ftbench row on the same
GPU, with the same method (CUDA events around every call after warm-up, median per call
and device time, inputs rotated through enough sets to exceed 3x L2, random data).

    python3 bench/torch_bench.py ours.csv > torch.csv

reads ftbench's --csv output and writes one row per line of it:
kernel,variant,dtype,shape,torch_us,torch_dev_us,torch_expr
Lines with no PyTorch counterpart (ftbench's floors kv_read, kv_stream and launch_empty)
are skipped with a note on stderr; summarize.py shows "-" for them.
"""
import csv
import math
import sys
import time

import torch
import torch.nn.functional as F

DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
ACT = {"gelu": lambda t: F.gelu(t, approximate="tanh"), "relu": F.relu, "silu": F.silu, "identity": lambda t: t}


class NoForm(Exception):
    """A row with no PyTorch counterpart: ftbench's own floors (kv_read, kv_stream,
    launch_empty), or a kernel this script does not know. main() skips it with a note."""


def parent_rows(B, W):
    """[B] row indices: each row's parent, a random beam of its own item (W rows an item)."""
    return torch.arange(B, device="cuda") // W * W + torch.randint(0, W, (B,), device="cuda")


def attention(kernel, variant, shape, dt):
    """SDPA over the same cache (always [B, Hkv, L, D]; PyTorch has no appending form).
    With a cache indirection table (variant "... table W=n"), PyTorch's beam search form:
    the caches reordered by parent (index_select, as Hugging Face's _reorder_cache), then
    SDPA."""
    B, H, Hkv, D, L = (shape[k] for k in ("B", "H", "Hkv", "D", "L"))
    gqa = H != Hkv
    if " table W=" in variant:
        W = int(variant.split(" table W=")[1].split()[0])

        def make_beam():
            return (torch.randn(B, H, 1, D, device="cuda", dtype=dt), torch.randn(B, Hkv, L, D, device="cuda", dtype=dt),
                    torch.randn(B, Hkv, L, D, device="cuda", dtype=dt), parent_rows(B, W))

        def fn_beam(q, k, v, idx):
            return F.scaled_dot_product_attention(q, k.index_select(0, idx), v.index_select(0, idx), enable_gqa=gqa)
        return ("K, V index_select by parent + F.scaled_dot_product_attention", make_beam, fn_beam)

    def make():
        return (torch.randn(B, H, 1, D, device="cuda", dtype=dt), torch.randn(B, Hkv, L, D, device="cuda", dtype=dt),
                torch.randn(B, Hkv, L, D, device="cuda", dtype=dt))

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=gqa) if gqa else F.scaled_dot_product_attention(q, k, v)
    return ("F.scaled_dot_product_attention" + (" (enable_gqa)" if gqa else ""), make, fn)


def bench_lengths(B, S, avg):
    """The lengths ftbench uses: spread evenly over [1, S] around avg (all S without)."""
    if avg <= 0 or avg >= S:
        return [S] * B
    return [min(S, max(1, round(2.0 * avg * (b + 0.5) / B))) for b in range(B)]


def key_mask(lengths, S):
    """[B, S] bool, True where a position is padding."""
    lens = torch.tensor(lengths, device="cuda")
    return torch.arange(S, device="cuda")[None, :] >= lens[:, None]


def w(*shape, dt, scale=None):
    t = torch.randn(*shape, device="cuda", dtype=torch.float32)
    if scale is not None:
        t *= scale
    return t.to(dt)


def masked_softmax(variant, shape, dt):
    B, H, S, D = (shape[k] for k in ("B", "H", "S", "D"))
    scale = 1.0 / math.sqrt(D)
    mask = (~key_mask([S] * B, S))[:, None, :, None] & (~key_mask([S] * B, S))[:, None, None, :]
    mask = mask.to(dt)
    return ("F.softmax(s*scale + (1-mask)*-10000)", lambda: (torch.randn(B, H, S, S, device="cuda", dtype=dt),),
            lambda s: F.softmax(s * scale + (1.0 - mask) * -10000.0, dim=-1))


def bert_layer(variant, shape, dt):
    """The usual eager BERT layer (linear, view/transpose, matmul, softmax, layer_norm);
    returns it and, as a second (description, fn), nn.TransformerEncoderLayer's fused
    inference path on the same weights."""
    B, S, N, H, Fd, avg = (shape[k] for k in ("B", "S", "N", "H", "F", "avg"))
    D = N // H
    lengths = bench_lengths(B, S, avg)
    pad = key_mask(lengths, S)
    keep = (~pad).to(dt)
    add_mask = ((1.0 - keep[:, None, :, None] * keep[:, None, None, :]) * -10000.0).to(dt)
    Wqkv, bqkv = w(3 * N, N, dt=dt, scale=N ** -0.5), w(3 * N, dt=dt, scale=0.1)
    Wo, bo = w(N, N, dt=dt, scale=N ** -0.5), w(N, dt=dt, scale=0.1)
    W1, b1 = w(Fd, N, dt=dt, scale=N ** -0.5), w(Fd, dt=dt, scale=0.1)
    W2, b2 = w(N, Fd, dt=dt, scale=Fd ** -0.5), w(N, dt=dt, scale=0.1)
    g1, be1, g2, be2 = (w(N, dt=dt) for _ in range(4))

    def eager(x):
        q, k, v = F.linear(x, Wqkv, bqkv).split(N, dim=-1)
        q, k, v = (t.view(B, S, H, D).transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D) + add_mask
        ctx = torch.matmul(F.softmax(scores, dim=-1), v).transpose(1, 2).reshape(B, S, N)
        h1 = F.layer_norm(F.linear(ctx, Wo, bo) + x, (N,), g1, be1, 1e-6)
        inter = F.gelu(F.linear(h1, W1, b1), approximate="tanh")
        return F.layer_norm(F.linear(inter, W2, b2) + h1, (N,), g2, be2, 1e-6)

    layer = torch.nn.TransformerEncoderLayer(N, H, Fd, dropout=0.0, activation="gelu", batch_first=True,
                                             layer_norm_eps=1e-6, device="cuda", dtype=dt).eval()
    padded = avg <= 0 or avg >= S

    def fused(x):
        return layer(x) if padded else layer(x, src_key_padding_mask=pad)

    make = lambda: (torch.randn(B, S, N, device="cuda", dtype=dt),)
    return ("eager BERT layer (linear/matmul/softmax/layer_norm)", make, eager,
            ("nn.TransformerEncoderLayer fast path" + ("" if padded else " with key padding mask"), fused))


def packed_attention(variant, shape, dt):
    """What a PyTorch encoder does for the same work: the [B, S, 3N] projection (padded),
    bias, view/permute to heads, SDPA with the key padding mask (or is_causal), back to
    [B, S, N]. Our kernel reads only the valid rows, packed."""
    B, H, S, D, avg = (shape[k] for k in ("B", "H", "S", "D", "avg"))
    N = H * D
    causal = variant.split()[0] == "causal"
    keep = ~key_mask(bench_lengths(B, S, avg), S)
    mask = None if causal or avg >= S else keep[:, None, None, :]
    bias = w(3 * N, dt=dt, scale=0.1)

    def fn(qkv):
        q, k, v = (qkv if causal else qkv + bias).view(B, S, 3, H, D).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        return o.transpose(1, 2).reshape(B, S, N)
    desc = "SDPA on padded [B,H,S,D]" + (" is_causal" if causal else " with key padding mask" if mask is not None else "")
    return (desc + " (+bias, permutes)", lambda: (torch.randn(B, S, 3 * N, device="cuda", dtype=dt),), fn)


def decoder_layer(variant, shape, dt):
    """One eager decoder step with a [B, H, L+1, D] cache (SDPA for both attentions)."""
    B, N, H, Fd, L, Lm = (shape[k] for k in ("B", "N", "H", "F", "L", "Lmem"))
    D = N // H
    Wqkv, bqkv = w(3 * N, N, dt=dt, scale=N ** -0.5), w(3 * N, dt=dt, scale=0.1)
    Wo, bo, Wcq, bcq, Wco, bco = (w(N, N, dt=dt, scale=N ** -0.5) if i % 2 == 0 else w(N, dt=dt, scale=0.1)
                                  for i in range(6))
    W1, b1 = w(Fd, N, dt=dt, scale=N ** -0.5), w(Fd, dt=dt, scale=0.1)
    W2, b2 = w(N, Fd, dt=dt, scale=Fd ** -0.5), w(N, dt=dt, scale=0.1)
    g1, be1, g2, be2, g3, be3 = (w(N, dt=dt) for _ in range(6))
    kc, vc = w(B, H, L + 1, D, dt=dt), w(B, H, L + 1, D, dt=dt)
    km, vm = w(B, H, Lm, D, dt=dt), w(B, H, Lm, D, dt=dt)

    def step(x):
        q, k, v = F.linear(F.layer_norm(x, (N,), g1, be1, 1e-6), Wqkv, bqkv).split(N, dim=-1)
        kc[:, :, L] = k.view(B, H, D)
        vc[:, :, L] = v.view(B, H, D)
        a = F.scaled_dot_product_attention(q.view(B, H, 1, D), kc, vc).view(B, N)
        s1 = F.linear(a, Wo, bo) + x
        qc = F.linear(F.layer_norm(s1, (N,), g2, be2, 1e-6), Wcq, bcq).view(B, H, 1, D)
        c = F.scaled_dot_product_attention(qc, km, vm).view(B, N)
        s2 = F.linear(c, Wco, bco) + s1
        inner = F.relu(F.linear(F.layer_norm(s2, (N,), g3, be3, 1e-6), W1, b1))
        return F.linear(inner, W2, b2) + s2

    return ("eager decoder step (layer_norm/linear/SDPA)", lambda: (torch.randn(B, N, device="cuda", dtype=dt),), step)


def decoding(kernel, variant, shape, dt):
    """The decoding kernels' usual PyTorch forms on N(0,1) logits (ftbench's data)."""
    B, V = shape["B"], shape["V"]
    k = shape.get("k", 1)
    p = float(variant.split("=")[1].split()[0]) if variant.startswith("p=") else 1.0
    def logits(rows):
        return lambda: (torch.randn(rows, V, device="cuda", dtype=dt),)

    def top_p_sample(probs_sorted, ids_sorted):
        """keep the fewest best whose mass reaches p, then multinomial over them"""
        cut = probs_sorted.cumsum(-1) - probs_sorted >= p
        return ids_sorted.gather(-1, torch.multinomial(probs_sorted.masked_fill(cut, 0.0), 1))

    if kernel == "topk":
        return ("torch.topk(x, k)", logits(B), lambda x: torch.topk(x, k, dim=-1))
    if kernel == "beam_topk":
        W = shape["W"]
        return ("(lp.view(B,W,V) + cum[..., None]).view(B, W*V).topk(k)",
                lambda: (torch.randn(B * W, V, device="cuda", dtype=dt), torch.zeros(B, W, device="cuda", dtype=dt)),
                lambda lp, cum: (lp.view(B, W, V) + cum[..., None]).view(B, W * V).topk(k, dim=-1))
    if kernel == "topk_sampling":
        def fn(x):
            v, i = torch.topk(x, k, dim=-1)
            probs = F.softmax(v.float(), dim=-1)
            return i.gather(-1, torch.multinomial(probs, 1)) if p >= 1.0 else top_p_sample(probs, i)
        return ("topk + softmax + multinomial" + ("" if p >= 1.0 else " (top-p inside the k)"), logits(B), fn)
    if kernel in ("topp_sampling", "topp_sampling_sorted"):
        def fn(x):
            probs, ids = F.softmax(x.float(), dim=-1).sort(dim=-1, descending=True)
            return top_p_sample(probs, ids)
        return ("softmax + sort + cumsum + multinomial", logits(B), fn)
    if kernel == "update_logits":
        forms = {"log_softmax": ("F.log_softmax(x.float())", lambda x: F.log_softmax(x.float(), dim=-1)),
                 "softmax": ("F.softmax(x.float())", lambda x: F.softmax(x.float(), dim=-1)),
                 "raw": ("x.float()", lambda x: x.float())}
        desc, fn = forms[variant.split()[0]]  # "log_softmax stream": the form does not change PyTorch's side
        return (desc, logits(B), fn)
    if kernel == "logits_copy":  # the floor under update_logits: read the logits, write fp32
        return ("torch.empty(x.shape, float32).copy_(x)", logits(B),
                lambda x: torch.empty(x.shape, device="cuda", dtype=torch.float32).copy_(x))
    raise NoForm(kernel)


def quantise(y):
    """per-row int8 as the int8 path quantises: scale absmax / 127, round to nearest"""
    scale = y.abs().amax(-1, keepdim=True) / 127.0
    return torch.round(y / scale).to(torch.int8), scale


def rope_rotation(D, first, S):
    """Meta LLaMA's rotary embedding for positions first .. first + S - 1 (freqs_cis, base
    10000): returns rot(t), t [B, S, h, D] fp32 rotated in interleaved pairs."""
    inv = 10000.0 ** (-torch.arange(0, D, 2, device="cuda", dtype=torch.float32) / D)
    pos = torch.arange(first, first + S, device="cuda", dtype=torch.float32)
    freqs = torch.polar(torch.ones(S, D // 2, device="cuda"), pos[:, None] * inv)

    def rot(t):
        c = torch.view_as_complex(t.reshape(*t.shape[:-1], D // 2, 2))
        return torch.view_as_real(c * freqs[None, :, None, :]).flatten(-2)
    return rot


def llama(kernel, variant, shape, dt):
    """The LLaMA int8 path's kernels as PyTorch eager code (FasterLLaMA's reference forms)."""
    i32 = torch.int32
    if kernel in ("rmsnorm_quant", "dequant_residual_rmsnorm_quant", "dequant_residual", "dequant_silu_mul_quant"):
        m, n = shape["m"], shape["n"]

        def acc():
            return torch.randint(-100000, 100001, (m, n), device="cuda", dtype=i32)

        def scales(k):
            return torch.rand(k, device="cuda") * 1e-3 + 0.5e-3

        def x():
            return torch.randn(m, n, device="cuda", dtype=dt)

        g = torch.randn(n, device="cuda", dtype=dt) + 1.0
        if kernel == "rmsnorm_quant":
            return ("int8 of F.rms_norm(x).float() (amax / 127, round)", lambda: (x(),),
                    lambda a: quantise(F.rms_norm(a, (n,), g, 1e-6).float()))
        if kernel == "dequant_residual_rmsnorm_quant":
            def fn(c, rs, cs, r):
                h = (c.float() * rs[:, None] * cs + r.float()).to(dt)
                return h, quantise(F.rms_norm(h, (n,), g, 1e-6).float())
            return ("h = (acc * rs * cs + r).to(dt); int8 of F.rms_norm(h)", lambda: (acc(), scales(m), scales(n), x()),
                    fn)
        if kernel == "dequant_residual":
            return ("(acc * rs * cs + r).to(dt)", lambda: (acc(), scales(m), scales(n), x()),
                    lambda c, rs, cs, r: (c.float() * rs[:, None] * cs + r.float()).to(dt))
        return ("int8 of F.silu(w1 * rs * s1) * (w3 * rs * s3)",
                lambda: (acc(), acc(), scales(m), scales(n), scales(n)),
                lambda a, b, rs, s1, s3: quantise(F.silu(a.float() * rs[:, None] * s1) * (b.float() * rs[:, None] * s3)))
    if kernel == "qkv_dequant_rope":
        B, S, H, Hkv, D, L = (shape[k] for k in ("B", "S", "H", "Hkv", "D", "L"))
        W = (H + 2 * Hkv) * D
        cs = torch.rand(W, device="cuda") * 1e-3 + 0.5e-3
        cache = "cache" in variant
        rot = rope_rotation(D, L - S if cache else 0, S)

        def make():
            t = (torch.randint(-100000, 100001, (B * S, W), device="cuda", dtype=i32),
                 torch.rand(B * S, device="cuda") * 1e-3 + 0.5e-3)
            if cache:
                t += (torch.empty(B, Hkv, L, D, device="cuda", dtype=dt), torch.empty(B, Hkv, L, D, device="cuda", dtype=dt))
            return t

        def fn(acc, rs, *caches):
            x = (acc.float() * rs[:, None] * cs).view(B, S, H + 2 * Hkv, D)
            q, k, v = x.split([H, Hkv, Hkv], dim=2)
            q = rot(q).transpose(1, 2).to(dt)
            k, v = rot(k).transpose(1, 2).to(dt), v.transpose(1, 2).to(dt)
            if caches:
                caches[0][:, :, L - S:] = k
                caches[1][:, :, L - S:] = v
                return q
            return q, k, v
        return ("dequant, view_as_complex * freqs_cis, transpose" + (", cache[..., L-S:] = k, v" if cache else ""),
                make, fn)
    if kernel == "causal_softmax":
        B, H, S = (shape[k] for k in ("B", "H", "S"))
        causal = torch.ones(S, S, device="cuda", dtype=torch.bool).triu(1)
        return ("F.softmax((s * scale).masked_fill(causal, -inf))", lambda: (torch.randn(B, H, S, S, device="cuda", dtype=dt),),
                lambda t: F.softmax((t * 0.125).masked_fill(causal, float("-inf")), dim=-1))
    if kernel == "attn_quant_transpose":
        B, S, H, D = (shape[k] for k in ("B", "S", "H", "D"))
        return ("int8 of x.transpose(1, 2).reshape(B*S, H*D).float()", lambda: (torch.randn(B, H, S, D, device="cuda", dtype=dt),),
                lambda t: quantise(t.transpose(1, 2).reshape(B * S, H * D).float()))
    raise NoForm(kernel)


def llama_layer(variant, shape, dt):
    """examples/llama_layer.cuh in PyTorch eager: the same int8 layer (per-row int8
    activations, int8 weights with per-channel scales, torch._int_mm; rows padded to 32 where
    fewer than 17, _int_mm's least) with SDPA over the caches; second, the fp16/bf16 layer
    (F.linear on floating-point weights), what a PyTorch user without int8 kernels runs."""
    B, S, N, H, Hkv, Fd, L = (shape[k] for k in ("B", "S", "N", "H", "Hkv", "F", "L"))
    D, M, start = N // H, B * S, L - S
    Wd = (H + 2 * Hkv) * D

    def i8(*s):
        return torch.randint(-127, 128, s, device="cuda", dtype=torch.int8)

    def sc(k):
        return torch.rand(k, device="cuda") * 1e-3 + 0.5e-3

    Ws = [i8(Wd, N), i8(N, N), i8(Fd, N), i8(Fd, N), i8(N, Fd)]
    Wt = [t.t() for t in Ws]  # [in, out], column-major: _int_mm's second operand
    Sc = [sc(Wd), sc(N), sc(Fd), sc(Fd), sc(N)]
    g1, g2 = torch.randn(N, device="cuda", dtype=dt) + 1.0, torch.randn(N, device="cuda", dtype=dt) + 1.0
    kc, vc = w(B, Hkv, L, D, dt=dt), w(B, Hkv, L, D, dt=dt)
    rot = rope_rotation(D, start, S)
    # token s at position start + s sees keys 0 .. start + s: SDPA's is_causal (its mask
    # aligned top-left) where start is 0, else the mask itself; a decode step sees them all
    causal = S > 1 and start == 0
    mask = None if S == 1 or start == 0 else \
        torch.arange(L, device="cuda")[None, :] <= start + torch.arange(S, device="cuda")[:, None]

    def mm(a8, i):
        if M <= 16:
            return torch._int_mm(F.pad(a8, (0, 0, 0, 32 - M)), Wt[i])[:M]
        return torch._int_mm(a8, Wt[i])

    def attend(qkv):  # [M, Wd] fp32 -> [M, N] in dt, k and v appended to the caches
        q, k, v = qkv.view(B, S, H + 2 * Hkv, D).split([H, Hkv, Hkv], dim=2)
        kc[:, :, start:] = rot(k).transpose(1, 2).to(dt)
        vc[:, :, start:] = v.transpose(1, 2).to(dt)
        o = F.scaled_dot_product_attention(rot(q).transpose(1, 2).to(dt), kc, vc, attn_mask=mask, is_causal=causal,
                                           enable_gqa=Hkv < H)
        return o.transpose(1, 2).reshape(M, N)

    def int8_layer(x):
        a8, s1 = quantise(F.rms_norm(x, (N,), g1, 1e-6).float())
        a8, s2 = quantise(attend(mm(a8, 0).float() * s1 * Sc[0]).float())
        h = (mm(a8, 1).float() * s2 * Sc[1] + x.float()).to(dt)
        h8, s3 = quantise(F.rms_norm(h, (N,), g2, 1e-6).float())
        f8, s4 = quantise(F.silu(mm(h8, 2).float() * s3 * Sc[2]) * (mm(h8, 3).float() * s3 * Sc[3]))
        return (mm(f8, 4).float() * s4 * Sc[4] + h.float()).to(dt)

    Wf = [(t.float() * c[:, None]).to(dt) for t, c in zip(Ws, Sc)]

    def float_layer(x):
        h = F.linear(attend(F.linear(F.rms_norm(x, (N,), g1, 1e-6), Wf[0]).float()), Wf[1]) + x
        u = F.rms_norm(h, (N,), g2, 1e-6)
        return F.linear(F.silu(F.linear(u, Wf[2])) * F.linear(u, Wf[3]), Wf[4]) + h

    return ("int8 layer: rms_norm, per-row int8, torch._int_mm, view_as_complex rotary, SDPA over the caches",
            lambda: (torch.randn(M, N, device="cuda", dtype=dt),), int8_layer,
            (f"{str(dt).split('.')[-1]} layer (F.linear, SDPA)", float_layer))


def batching(kernel, variant, shape, dt):
    """The continuous-batching pieces as PyTorch eager code over the same layouts (kt
    [B, E, L], v [B, L, E]; every slot at L steps, so no mask is needed)."""
    if kernel == "greedy_step":
        B, V, N = shape["B"], shape["V"], shape["N"]
        table = torch.randn(V, N, device="cuda", dtype=dt)
        return ("tok = logits.argmax(-1); x_next = table[tok]", lambda: (torch.randn(B, V, device="cuda", dtype=dt),),
                lambda lg: table.index_select(0, lg.argmax(-1)))
    B, H, D, L = (shape[k] for k in ("B", "H", "D", "L"))
    if kernel == "inferencer_step":
        N, V, E = shape["N"], shape["V"], H * D
        emb = torch.randn(V, N, device="cuda", dtype=dt)
        wqkv = torch.randn(N, 3 * E, device="cuda", dtype=dt) * N ** -0.5
        wo = torch.randn(E, N, device="cuda", dtype=dt) * E ** -0.5

        def step(x, kt, vc):
            q, k, v = (x @ wqkv).split(E, dim=1)
            kt[:, :, L - 1] = k
            vc[:, L - 1] = v
            s = (q.view(B, H, 1, D) @ kt.view(B, H, D, L)).float() * D ** -0.5
            p = torch.softmax(s, dim=-1).to(dt)
            a = (p @ vc.view(B, L, H, D).transpose(1, 2)).reshape(B, E)
            tok = ((a @ wo) @ emb.t()).argmax(-1)
            return tok, emb.index_select(0, tok)
        return ("x @ W_qkv; caches at L-1; softmax(q kt) @ v; @ W_o; @ emb.T; argmax; emb[tok]",
                lambda: (torch.randn(B, N, device="cuda", dtype=dt), torch.randn(B, E, L, device="cuda", dtype=dt),
                         torch.randn(B, L, E, device="cuda", dtype=dt)), step)
    if kernel == "qkt":
        return ("(q.view(B,H,1,D) @ kt.view(B,H,D,L)).float() * scale",
                lambda: (torch.randn(B, H * D, device="cuda", dtype=dt), torch.randn(B, H * D, L, device="cuda", dtype=dt)),
                lambda q, kt: torch.matmul(q.view(B, H, 1, D), kt.view(B, H, D, L)).float() * D ** -0.5)
    if kernel == "softmax_lengths":
        return ("torch.softmax(scores, -1) in fp32", lambda: (torch.rand(B, H, L, device="cuda"),),
                lambda t: torch.softmax(t, dim=-1))
    if kernel == "softmax_v":
        return ("p.view(B,H,1,L).to(dt) @ v.view(B,L,H,D).transpose(1,2)",
                lambda: (torch.rand(B, H, L, device="cuda"), torch.randn(B, L, H * D, device="cuda", dtype=dt)),
                lambda p, v: torch.matmul(p.view(B, H, 1, L).to(dt), v.view(B, L, H, D).transpose(1, 2)))
    raise NoForm(kernel)


def expression(kernel, variant, shape, dt):
    """(description, make_inputs, fn[, (description, fn) of a second PyTorch form]) for
    the PyTorch eager form of one kernel."""
    if kernel in ("self_attention", "cross_attention"):
        return attention(kernel, variant, shape, dt)
    if kernel in ("rmsnorm_quant", "dequant_residual_rmsnorm_quant", "dequant_residual", "dequant_silu_mul_quant",
                  "qkv_dequant_rope", "causal_softmax", "attn_quant_transpose"):
        return llama(kernel, variant, shape, dt)
    if kernel in ("qkt", "softmax_lengths", "softmax_v", "greedy_step", "inferencer_step"):
        return batching(kernel, variant, shape, dt)
    if kernel == "kv_reorder":
        B, Hkv, D, L = (shape[k] for k in ("B", "Hkv", "D", "L"))
        W = int(variant.split("beam=")[1].split()[0])

        def make_reorder():
            return (torch.randn(B, Hkv, L, D, device="cuda", dtype=dt), torch.randn(B, Hkv, L, D, device="cuda", dtype=dt),
                    parent_rows(B, W))
        return ("k.index_select(0, parent), v.index_select(0, parent)", make_reorder,
                lambda k, v, idx: (k.index_select(0, idx), v.index_select(0, idx)))
    if kernel in ("topk", "beam_topk", "topk_sampling", "topp_sampling", "topp_sampling_sorted", "update_logits",
                  "logits_copy"):
        return decoding(kernel, variant, shape, dt)
    if kernel == "masked_softmax":
        return masked_softmax(variant, shape, dt)
    if kernel == "bert_layer":
        return bert_layer(variant, shape, dt)
    if kernel == "packed_attention":
        return packed_attention(variant, shape, dt)
    if kernel == "decoder_layer":
        return decoder_layer(variant, shape, dt)
    if kernel == "llama_layer":
        return llama_layer(variant, shape, dt)
    if kernel == "add_qkv_bias_transpose":
        B, H, S, D = (shape[k] for k in ("B", "H", "S", "D"))
        return ("(qkv + b).view(B,S,3,H,D).permute(2,0,3,1,4).contiguous()",
                lambda: (torch.randn(B, S, 3 * H * D, device="cuda", dtype=dt),
                         torch.randn(3 * H * D, device="cuda", dtype=dt)),
                lambda qkv, b: (qkv + b).view(B, S, 3, H, D).permute(2, 0, 3, 1, 4).contiguous())
    if kernel == "transpose_heads":
        B, H, S, D = (shape[k] for k in ("B", "H", "S", "D"))
        return ("x.permute(0,2,1,3).contiguous()", lambda: (torch.randn(B, H, S, D, device="cuda", dtype=dt),),
                lambda x: x.permute(0, 2, 1, 3).contiguous())
    if "m" not in shape or "n" not in shape:  # ftbench's floors kv_read, kv_stream, launch_empty
        raise NoForm(kernel)
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
    raise NoForm(kernel)


def time_us(make, fn, set_bytes, iters=100, warmup=10):
    """Microseconds, (per call, device), measured as ftbench measures: per call the median
    with the host launching as the GPU runs; device the mean of the same calls queued
    behind torch.cuda._sleep, so the GPU runs them back to back (lengthened until the host
    finished queueing before it ended), one event pair around the queue."""
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

    def run(spin_s):
        spun = None
        if spin_s:
            torch.cuda._sleep(int(spin_s * 2e9))  # cycles; ~2 GHz
            spun = torch.cuda.Event()
            spun.record()
        if spun is not None:  # queued: one event pair around the queue, as ftbench
            starts[0].record()
            for i in range(iters):
                fn(*sets[(warmup + i) % nsets])
            ends[0].record()
            behind = not spun.query()
            torch.cuda.synchronize()
            return starts[0].elapsed_time(ends[0]) * 1000.0 / iters, behind
        for i in range(iters):
            args = sets[(warmup + i) % nsets]
            starts[i].record()
            fn(*args)
            ends[i].record()
        torch.cuda.synchronize()
        t = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
        return t[iters // 2] * 1000.0, False

    per_call, _ = run(0)
    spin = 2e-3 + 60e-6 * iters
    for _ in range(5):
        t0 = time.perf_counter()
        device, behind = run(spin)
        if behind:
            break
        spin = 2 * max(spin, time.perf_counter() - t0)
    return per_call, device


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    out = csv.writer(sys.stdout)
    out.writerow(["kernel", "variant", "dtype", "shape", "torch_us", "torch_dev_us", "torch_expr"])
    with torch.inference_mode():
        for r in rows:
            shape = {k: int(v) for k, v in (kv.split("=") for kv in r["shape"].split())}
            dt = DT[r["dtype"]]
            try:
                desc, make, fn, *second = expression(r["kernel"], r["variant"], shape, dt)
            except NoForm:
                print(f"torch_bench: no PyTorch form for {r['kernel']} ({r['shape']}); row skipped", file=sys.stderr)
                continue
            sample = make()
            set_bytes = sum(t.numel() * t.element_size() for t in sample)
            del sample
            us, dev = time_us(make, fn, set_bytes)
            if second:  # a second PyTorch form, reported beside the first in its description
                desc2, fn2 = second[0]
                us2, dev2 = time_us(make, fn2, set_bytes)
                desc += f"; {desc2}: {us2:.1f} us per call, {dev2:.1f} us device"
            out.writerow([r["kernel"], r["variant"], r["dtype"], r["shape"], f"{us:.2f}", f"{dev:.2f}", desc])
            sys.stdout.flush()
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
