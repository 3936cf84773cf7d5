#!/usr/bin/env python3
"""ftgen: render ftkernels' Jinja2 templates into self-contained CUDA headers.

    python3 gen/ftgen.py                 regenerate generated/ from gen/variants.toml
    python3 gen/ftgen.py --check         fail, listing the files, if generated/ is stale
    python3 gen/ftgen.py --list          print the variant ids of the manifest
    python3 gen/ftgen.py --family norm --dtype bf16 --out build/gen
                                         generate variants on demand into any folder
                                         (comma lists take the cross product:
                                         --dtype fp16,bf16 --width 8,16)
    python3 gen/ftgen.py --family attention --head-size 72 --dtype bf16 --out build/gen
    python3 gen/ftgen.py --family topk --k 40,128 --dtype fp32 --out build/gen
    python3 gen/ftgen.py --family norm --dtype bf16 --print-outputs
                                         print the header paths that would be written

An impossible combination is rejected with one line on stderr, exit status 2, and
nothing written. Output is deterministic: stable order, no timestamps, and files are
only rewritten when their content changes. Needs Python 3.11+ and Jinja2.
"""

import argparse
import difflib
import itertools
import os
import re
import sys
import tomllib

try:
    import jinja2
except ImportError:  # pragma: no cover - exercised on machines without jinja2
    sys.exit("ftgen: Jinja2 is required (python3 -m pip install jinja2)")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATES = os.path.join(ROOT, "templates")
MANIFEST = os.path.join(ROOT, "gen", "variants.toml")
GENERATED = os.path.join(ROOT, "generated")

# Activation / storage types: C type, bytes, the ft_dtype enumerator, and the names of
# the conversion helpers in include/ft/common.cuh.
DTYPES = {
    "fp32": {"T": "float", "esize": 4, "enum": "FT_FP32"},
    "fp16": {"T": "__half", "esize": 2, "enum": "FT_FP16"},
    "bf16": {"T": "__nv_bfloat16", "esize": 2, "enum": "FT_BF16"},
    "int8": {"T": "int8_t", "esize": 1, "enum": "FT_INT8"},
}
WIDTHS = (4, 8, 16)  # vector copy widths in bytes


class VariantError(ValueError):
    """An impossible variant; the message is one line for the user."""


# ---------------------------------------------------------------- families
#
# A family names its template, the dimensions a variant has (in the order they appear
# in names), the values each may take, and how to turn one variant into the template's
# context. `validate` is the one place where combination rules live.

class Family:
    name = ""
    template = ""
    dispatch_template = ""
    dims = ()  # dimension names, in naming order; "dtype" last
    allowed = {}  # dimension -> allowed values
    manifest_keys = {}  # manifest list key -> dimension

    def defaults(self, params):
        """Fill dimensions the user may leave out (e.g. the copy width)."""
        return dict(params)

    def name_parts(self, params):
        """Name pieces before the dtype, e.g. ["h64"]; non-default choices only."""
        return []

    def is_default(self, params):
        """Whether the dispatch headers cover this variant (no non-default choice)."""
        return True

    def listing_args(self, v):
        """Extra X-macro arguments after (suffix, dtype enum) in ft/variants.h."""
        return []

    def dispatch_files(self, env, variants, command):
        """{path: text} of the runtime-dispatch headers over the default variants."""
        header = f"ft/{self.name}.cuh"
        return {header: env.get_template(self.dispatch_template).render(
            variants=variants, guard=f"FT_{self.name.upper()}_CUH",
            banner=banner(self.dispatch_template, command, f"{self.name} dispatch"))}

    def validate(self, params):
        for dim in self.dims:
            if dim not in params:
                raise VariantError(f"{self.name}: missing dimension '{dim}'")
            if params[dim] not in self.allowed[dim]:
                choices = ", ".join(str(v) for v in self.allowed[dim])
                raise VariantError(f"{self.name}: {dim} {params[dim]} is not supported (choose from {choices})")
        extra = set(params) - set(self.dims)
        if extra:
            raise VariantError(f"{self.name}: no dimension named {', '.join(sorted(extra))}"
                               f" (dimensions: {', '.join(self.dims)})")

    def context(self, params):
        raise NotImplementedError


def width_plan(dtype, width):
    """The copy widths a kernel is emitted for: the chosen one, then the element-wise
    fallback (the same when width == element size). `cache` is how many vectors each
    thread keeps in registers: 32 elements for vector paths, 16 for the scalar one."""
    esize = DTYPES[dtype]["esize"]
    plan = []
    for nbytes in sorted({width, esize}, reverse=True):
        vec = nbytes // esize
        plan.append({
            "bytes": nbytes,
            "vec": vec,
            "cache": 16 if vec == 1 else 32 // vec,
            "load": f"ft_load_{dtype}x{vec}",
            "store": f"ft_store_{dtype}x{vec}",
            "load_cs": f"ft_load_cs_{dtype}x{vec}",
            "store_cs": f"ft_store_cs_{dtype}x{vec}",
            "pack": f"ft_pack_{dtype}x{vec}",
            "unpack": f"ft_unpack_{dtype}x{vec}",
            "word": f"ft_word_{dtype}x{vec}",
        })
    return plan


class NormFamily(Family):
    name = "norm"
    template = "norm.cuh.j2"
    dispatch_template = "norm_dispatch.cuh.j2"
    dims = ("width", "dtype")
    allowed = {"dtype": ("fp32", "fp16", "bf16"), "width": WIDTHS}
    manifest_keys = {"dtypes": "dtype", "width": "width"}
    default_width = 16

    def defaults(self, params):
        p = dict(params)
        p.setdefault("width", self.default_width)
        return p

    def validate(self, params):
        super().validate(params)
        if params["width"] < DTYPES[params["dtype"]]["esize"]:
            raise VariantError(f"{self.name}: width {params['width']} is narrower than one {params['dtype']} element")

    def name_parts(self, params):
        return [] if self.is_default(params) else [f"w{params['width']}"]

    def is_default(self, params):
        return params["width"] == self.default_width

    def context(self, params):
        dt = params["dtype"]
        names = variant_names(self, params)
        widths = width_plan(dt, params["width"])
        for w in widths:
            w["macro"] = f"FT_NORM_{names['suffix'].upper()}_W{w['bytes']}"
        return {
            "dtype": dt,
            "T": DTYPES[dt]["T"],
            "esize": DTYPES[dt]["esize"],
            "widths": widths,
        }


class EncoderFamily(NormFamily):
    """BERT-encoder attention pieces per dtype and copy width (templates/encoder.cuh.j2)."""
    name = "encoder"
    template = "encoder.cuh.j2"
    dispatch_template = "encoder_dispatch.cuh.j2"

    def context(self, params):
        ctx = super().context(params)
        dt = params["dtype"]
        for w in ctx["widths"]:
            # masked softmax: register buckets of vectors per lane for rows held by one
            # group of lanes (up to 64 floats per lane on the vector path, 32 element-wise)
            per_lane = 64 if w["vec"] > 1 else 32
            w["buckets"] = [b for b in (1, 2, 4, 8, 16, 32) if b * w["vec"] <= per_lane]
            w["max_cols"] = 32 * w["buckets"][-1] * w["vec"]
            # rows off the grid of the first (vector) width: its words from the grid point below
            # each row (the block kernel past one warp; in one warp where that beat element-wise
            # accesses on the H200). Kernels (nvl, G): nvl words a lane in groups of G lanes,
            # "ragged" (memory words from the grid point below the row) or "shifted" (the row
            # shifted into row order by shuffles). These kernels are issue-bound, so a row takes
            # few lanes of several words, which share its setup and shuffles among more
            # positions. Up to rg_small row words (ceil(S / vec)): one word a lane in the fewest
            # lanes, shifted where the memory words need the next bucket up; then rg_rule, (most
            # row words, nvl, G, form) in order, as measured fastest; rows past its last bound
            # go element by element, but (2-byte types) rows of 512-1024 columns: rg_top words
            # a lane in 32 lanes.
            #   2-byte types (bench/RESULTS.md, sixty-sixth session; fp16 with a mask, ~150 MB,
            # us against one word a lane or element-wise): S33 207 / 685, S47 206 / 237, S63
            # 165 / 224, S77 170 / 299, S90 159 / 256, S127 130 / 192, S129 185 / 254, S170
            # 147 / 202, S255 125 / 149, S300 165 / 182 (not past 50 row words: S450 145 / 136);
            # up to 4 row words one word a lane (S25 134 / 481, S3 16.7 / 30.8 shifted); past 512
            # columns 4 words in 32 lanes (S513 552 / 763, S1009 371 / 467, S1023 949 / 1256).
            #   fp32 (sixty-seventh session; with a mask, ~150 MB, us against element-wise):
            # S2 112 / 177 and S3 83 / 236 shifted in one lane of one word (S1 element-wise);
            # 2-3 row words shifted in one lane of 4 (S5 86 / 283, S9 70 / 314); 4 in 2 lanes
            # of 2 (S13 69 / 218); 5-7 in 2 lanes of 4 (S18 70 / 314, S25 64 / 226); 8 in 4 lanes
            # of 2 (S30 61 / 189); 9-16 in 4 lanes of 4 (S41 62 / 138, S63 50 / 91); 17-20 as
            # memory words in 8 lanes of 4 (S77 66 / 75, 60 / 75 with lengths); 21-32 shifted in
            # 8 lanes of 4 (S101 55 / 59, S125 47 / 49); 33-40 shifted in 8 lanes of 5 (S129 55 /
            # 68, S159 49 / 56); not past 40 (S170 54 / 54 in 8 lanes of 6, S197 56 / 50 in 16 of 4).
            esize = DTYPES[dt]["esize"]
            w["ragged"] = w is ctx["widths"][0] and w["vec"] > 1
            # rows on the grid of the first width in one warp, up to 60 row words (56 for fp32):
            # few lanes of several words, which share the row's setup and shuffles among more
            # positions, rather than one word a lane in the fewest lanes (issue-bound too). grid_rule,
            # (most row words, nvl, G) in order, as measured fastest on the H200 (bench/RESULTS.md,
            # sixty-seventh session; with a mask, ~150 MB, us against one word a lane): fp16 S24
            # 46 / 60 in 2 lanes of 2, S40 46 / 72 in 2 of 4, S56 42 / 53 in 4 of 2, S72 46 / 81
            # and S96 40 / 62 in 4 of 4, S112 42 / 54 and S128 38 / 46 in 8 of 2, S136 49 / 91
            # and S192 40 / 66 in 8 of 4, S256 38 / 47 in 16 of 2; fp32 S12 43 / 60, S20 42 / 71,
            # S36 42 / 79 in 4 of 4, S40 42 / 71 and S64 38 / 45 in 8 of 2, S68 42 / 84 and S96 38
            # / 60 in 8 of 4, S100 40 / 58 and S128 37 / 45 in 16 of 2 (bf16 takes fp16's rule).
            # Rows of one or two words keep one word a lane. Past 32 words (against 32 lanes of 2):
            # fp16 S264 43 / 68 and S320 40 / 59 in 8 lanes of 5, S352 41 / 54 and S384 38 / 50 in
            # 16 of 3, S416 42 / 48 and S480 41 / 45 in 16 of 4 (S512 40 / 38); fp32 S132 41 / 54
            # and S192 38 / 41 in 16 of 3, S208 39 / 40 and S224 39 / 39 in 16 of 4 (S240 40 / 38).
            w["rg_small"], w["rg_top"], w["rg_rule"], w["grid_rule"] = (0, 0, [], [])
            if w["ragged"] and esize == 2:
                w["rg_small"], w["rg_top"] = 4, 32 // w["vec"]
                w["rg_rule"] = [(5, 4, 2, "shifted"), (8, 2, 4, "shifted"), (11, 4, 4, "ragged"), (16, 4, 4, "shifted"),
                                (25, 4, 8, "ragged"), (32, 4, 8, "shifted"), (50, 4, 16, "ragged")]
                w["grid_rule"] = [(4, 2, 2), (6, 4, 2), (8, 2, 4), (12, 4, 4), (16, 2, 8), (31, 4, 8), (32, 2, 16),
                                  (40, 5, 8), (48, 3, 16), (60, 4, 16)]
            elif w["ragged"] and esize == 4:
                w["rg_small"] = 1
                w["rg_rule"] = [(3, 4, 1, "shifted"), (4, 2, 2, "shifted"), (7, 4, 2, "shifted"), (8, 2, 4, "shifted"),
                                (16, 4, 4, "shifted"), (20, 4, 8, "ragged"), (32, 4, 8, "shifted"), (40, 5, 8, "shifted")]
                w["grid_rule"] = [(4, 2, 2), (8, 2, 4), (9, 4, 4), (16, 2, 8), (24, 4, 8), (32, 2, 16), (48, 3, 16),
                                  (56, 4, 16)]
            assert not w["grid_rule"] or (len(w["grid_rule"]) > 1 and w["grid_rule"][0][0] > 2)
            w["one_g"] = [1, 2] if w["grid_rule"] else [1, 2, 4, 8, 16, 32]  # one word a lane: G lanes
            # the warp kernels on the grid, (nvl, G): one word a lane in one_g lanes, each bucket
            # past one word in 32 lanes, and the grid rule's
            w["warp_kernels"] = sorted({(1, g) for g in w["one_g"]} | {(n, 32) for n in w["buckets"] if n > 1} |
                                       {(n, g) for _, n, g in w["grid_rule"]})
            top = [(w["rg_top"], 32)] if w["rg_top"] else []
            w["rg_kernels"] = ([(1, G) for G in (2, 4) if G <= w["rg_small"]] +
                               [(n, g) for _, n, g, f in w["rg_rule"] if f == "ragged"] + top)
            w["sh_kernels"] = ([(1, G) for G in (1, 2, 4) if G <= w["rg_small"]] +
                               [(n, g) for _, n, g, f in w["rg_rule"] if f == "shifted"] + top)
            # the streaming kernel (rows past the block kernels): words of each row a thread has
            # in flight. 8 elements: one 16-byte word of a 2-byte type (32 registers, four
            # blocks of 512 an SM) against two (64, two blocks): H200, B1 H8 S16384 fp16 with
            # a mask 2539 us against 3105, S12000 2176 against 2916, S12001 2597 against 3703;
            # fp32 2703 with two against 3352 with one. Element-wise: two, as measured first.
            w["stream_words"] = 1 if w["vec"] >= 8 else 2
            if w is not ctx["widths"][0]:
                continue  # past one warp, rows off the first width's grid take its ragged kernel
            # past one warp: one block per row, up to 8192 columns (longer rows stream).
            # vector path: 64 bytes per thread (4 vectors of 16), or 128 where they fill
            # whole warps exactly;
            # element-wise: 16 elements per thread (the fastest of 1..32 per thread on the
            # H200, bench/RESULTS.md, sixty-first session). Each kernel's block is capped at
            # what 8192 columns need (at most 512 threads).
            w["block_cols"] = 8192
            nvls = (64 // w["bytes"], 128 // w["bytes"]) if w["vec"] > 1 else (16,)
            w["block_buckets"] = [{"nvl": b, "threads": min(512, w["block_cols"] // (b * w["vec"]))} for b in nvls]
            for bb in w["block_buckets"]:
                assert bb["threads"] * bb["nvl"] * w["vec"] == w["block_cols"]
        ctx["to_float"] = f"ft_to_float_{dt}"
        ctx["from_float"] = f"ft_from_float_{dt}"
        return ctx


def largest_pow2_divisor(n, cap):
    p = 1
    while n % (p * 2) == 0 and p * 2 <= cap:
        p *= 2
    return p


class AttentionFamily(Family):
    """Decoder attention per head size, dtype and cache copy width (templates/attention.cuh.j2)."""
    name = "attention"
    template = "attention.cuh.j2"
    dims = ("head_size", "width", "dtype")
    allowed = {"dtype": ("fp32", "fp16", "bf16"), "width": WIDTHS, "head_size": range(8, 513, 2)}
    manifest_keys = {"head_sizes": "head_size", "dtypes": "dtype", "widths": "width"}
    threads = 256

    def default_width(self, params):
        """The widest copy that divides a cache row."""
        row = params["head_size"] * DTYPES[params["dtype"]]["esize"]
        return next(w for w in sorted(WIDTHS, reverse=True) if row % w == 0) if row % 4 == 0 else None

    def defaults(self, params):
        p = dict(params)
        if "width" not in p and "head_size" in p and p.get("dtype") in DTYPES:
            p["width"] = self.default_width(p) or 4
        return p

    def validate(self, params):
        if params.get("head_size") not in self.allowed["head_size"]:
            raise VariantError(f"attention: head size {params.get('head_size')} is not supported "
                               f"(even sizes from 8 to 512)")
        super().validate(params)
        row = params["head_size"] * DTYPES[params["dtype"]]["esize"]
        if row % params["width"] != 0:
            raise VariantError(f"attention: a head of {params['head_size']} {params['dtype']} ({row} bytes) is not a "
                               f"multiple of the {params['width']}-byte copy width")
        if row // params["width"] > self.threads:
            raise VariantError(f"attention: {row // params['width']} copies of {params['width']} bytes per head row "
                               f"exceed the {self.threads} threads of a block; choose a wider copy")

    def is_default(self, params):
        return params["width"] == self.default_width(params)

    def name_parts(self, params):
        parts = [f"h{params['head_size']}"]
        if not self.is_default(params):
            parts.append(f"w{params['width']}")
        return parts

    def listing_args(self, v):
        return [str(v["params"]["head_size"])]

    @staticmethod
    def has_packed(params):
        """Packed (padding-free) self-attention: tensor-core mma over 16-bit elements, head
        sizes in whole k-steps of 16, accumulators within a thread's registers."""
        return params["dtype"] in ("fp16", "bf16") and params["head_size"] % 16 == 0 and params["head_size"] <= 128

    def context(self, params):
        dt, D, W = params["dtype"], params["head_size"], params["width"]
        es = DTYPES[dt]["esize"]
        vec = W // es
        nv = D * es // W
        tpk = largest_pow2_divisor(nv, 32)
        cpt = nv // tpk
        q_floats = cpt * vec  # per query head held in registers for QK^T
        names = variant_names(self, params)
        # FTGEN_ATTN_TUNE="KU=8,VU=8,MINB=3" overrides the plan below for tuning runs
        # (bench/attn_tune.sh); shipped headers are generated without it.
        tune = {k: int(v) for k, v in (kv.split("=") for kv in os.environ.get("FTGEN_ATTN_TUNE", "").split(",") if kv)}
        gq_list = [1] + ([4] if 4 * q_floats <= 64 else [2] if 2 * q_floats <= 64 else [])
        # AGQ sets the head group's size for tuning runs. Groups of 8 at D256 (fp16, H100,
        # ftbench per call / device us, thirty-sixth session) spill at two blocks an SM (1056
        # bytes); at one an SM (AGQMINB=1) they do not, but gain only where rows are long and
        # few: B8 H32 Hkv4 L4096 75.9 / 71.8 against 83.0 / 79.5 in two passes of 4. Where
        # blocks are many they lose (B128 H8 Hkv1 L1024 72.6 / 68.6 against 71.3 / 67.7; B64
        # H16 Hkv8 L1024, pairs, 261.6 / 257.3 against 187.8 / 183.1); 3 consumer warps
        # (AGQNW=3) lost 2x. Those groups are bound by the CUDA cores' arithmetic (B128 Hkv1
        # L1024: H4 50.8, H8 67.7 device against 45.2 to read the cache once).
        if tune.get("AGQ", 0) > 1:
            gq_list = [1, tune["AGQ"]]
        # The sm_90 form (async=True) streams the cache through shared memory with bulk
        # asynchronous copies: one producer warp fills NS stages of TK keys (K and V rows,
        # about 32 KB a stage), NW consumer warps each take TK/NW of a stage's keys with
        # their own running softmax; needs rows of whole 16-byte vectors (the default width).
        row = D * es
        # shared-memory reads: the widest of 16, 8, 4 bytes that leaves a lane at most 16
        # floats of a head (q slice, accumulator), so odd rows do not spill (D80 fp16 at 16
        # bytes would hold 40)
        for a_w in (16, 8, 4):
            a_vec = a_w // es
            if a_vec == 0 or row % a_w:
                continue
            a_tpk = largest_pow2_divisor(row // a_w, 32)
            a_cpt = row // a_w // a_tpk
            if a_cpt * a_vec <= 16:
                break
        kpi = 32 // a_tpk  # keys a warp covers per instruction (ATPK lanes per key)
        aplan = {}
        for gq in gq_list:
            # one head per block: 8 consumer warps, two blocks per SM. A group of heads (the
            # head groups that do not run on tensor cores: fp32, D48 and D96 pairs, D32 groups of
            # up to 4, and strided caches below the rule MGS) does GQ times the arithmetic per
            # byte and takes 7 (+1 producer: 256 threads), two blocks per SM, so that one
            # block's start and end overlap the other's stream (H100, ftbench device us, 7 warps two an SM / 15 warps one an SM:
            # fp16 B256 H8 Hkv4 D32 L512 38.9 / 57.5, D48 40.3 / 52.8, D96 67.7 / 76.0, fp16
            # B64 H16 Hkv8 D256 L1024 183.8 / 191.7, fp32 B256 H32 Hkv8 D48 L256 74.4 / 132.5,
            # fp16 B1 H32 Hkv8 D256 L4096 21.9 / 24.9; few blocks of long rows are as fast:
            # fp16 B8 H32 Hkv8 D256 L4096 96.8 / 96.9, B8 H32 Hkv16 D32 L4096 26.8 / 27.0). The
            # launcher's split plan and FT_ATTN_SOLO_SMEM keep a launch of one wave at one an SM.
            nw = tune.get("ANW" if gq == 1 else "AGQNW", 8 if gq == 1 else 7)
            tk = nw * kpi * max(1, (16384 // row) // (nw * kpi))
            if 2 * tk * row > 32 * 1024:  # wide lane groups and odd rows: a warp's keys fill part of its slots
                tk = nw * max(1, (16384 // row) // nw)
            tk = tune.get("ATK", tk)
            ns = max(2, min(4, (96 * 1024) // (2 * tk * row)))
            ns = tune.get("ANS", ns) if gq == 1 else tune.get("AGQNS", tune.get("ANS", ns))
            if (nw + 1) * gq * D * 4 > ns * 2 * tk * row:  # the merge buffers reuse the stages
                raise VariantError(f"attention: the merge buffer of {nw} warps x {gq} heads does not fit the stages")
            if tk > 256:  # a tensor-map box (strided caches) holds at most 256 rows
                raise VariantError(f"attention: {tk} steps a stage exceed the 256 rows of a tensor-map box (ATK)")
            # strided caches (FT_KV_LBHD, FT_KV_BLHD) fill a stage with tensor-map boxes of D
            # columns and BOX steps (dense rows, as the contiguous copies land), as many as the
            # tile's steps need: the most steps up to 32 that divide the stage and keep each box
            # 128-byte aligned; 0 where none does (those caches stay on the register kernel)
            abox = max([n for n in range(1, 33) if tk % n == 0 and (n * row) % 128 == 0], default=0)
            minb = tune.get("AMINB", 2) if gq == 1 else tune.get("AGQMINB", 2)
            aplan[gq] = {"NW": nw, "NT": (nw + 1) * 32, "TK": tk, "NS": ns, "IT": (tk // nw + kpi - 1) // kpi,
                         "SMEM": ns * 2 * tk * row, "BOX": abox, "MINB": minb}
            # Forms of the kernel (the launcher's `wide`): 0 bulk copies, 1 tensor-map boxes
            # (strided caches, where a box fits), and for one head a block the short-row forms 2
            # and 3 of the same: ASNS (2) stages, ASMINB (3) blocks an SM. The launcher takes
            # them unsplit, past one wave of the long form, for rows that the long form's stages
            # hold at once (NS x TK steps; ASROWS overrides): there a block has nothing of its
            # own to overlap its start and end with, and a third block on the SM does (H100,
            # fp16, ftbench per call / device us, short / long: B256 H8 D64 L64 26.9 / 23.5
            # against 33.4 / 29.6, L128 31.9 / 29.2 against 37.3 / 33.8, L256 51.6 / 47.9 against
            # 52.8 / 48.7, L384 72.7 / 68.0 against 73.6 / 69.8; B256 H32 D128 L128 187.9 /
            # 184.5 against 198.9 / 196.4; B16 H32 D128 L128 18.6 / 15.2 against 19.7 / 15.6;
            # cross-attention B256 H8 D64 L128 `[B,L,Hkv*D]` 28.0 / 25.1 against 31.9 / 27.8).
            # Longer rows are mixed or lose: B256 H8 D64 L512 94.2 / 90.4 against 94.7 / 89.8,
            # B128 H32 D128 L256 183.8 / 180.3 against 184.2 / 179.4, B64 H12 D64 L1024 69.3 /
            # 65.3 against 68.7 / 64.6. ASHORT=0 leaves them out.
            forms = [{"wide": 0, "tm": 0, "NS": ns, "MINB": minb, "SMEM": ns * 2 * tk * row, "sfx": "", "persist": 0,
                      "deep": 0}]
            if abox:
                forms.append(dict(forms[0], wide=1, tm=1, sfx="_tm"))
            sns, sminb = tune.get("ASNS", 2), tune.get("ASMINB", 3)
            if gq == 1 and tune.get("ASHORT", 1) and sminb > minb and sns * 2 * tk * row * sminb <= 192 * 1024:
                if (nw + 1) * gq * D * 4 > sns * 2 * tk * row:
                    raise VariantError(f"attention: the merge buffer of {nw} warps does not fit {sns} short stages")
                short = {"NS": sns, "MINB": sminb, "SMEM": sns * 2 * tk * row}
                forms += [dict(f, wide=f["wide"] + 2, sfx=f["sfx"] + "_s", **short) for f in forms[:2]]
                aplan[gq]["SROWS"] = tune.get("ASROWS", ns * tk)
            # Form 4, one head a block: ap, the bulk-copy kernel as a persistent grid, each block
            # taking APR (2) rows one after the other, its stages streaming the next row while it
            # finishes one (templates/attention.cuh.j2 has how). The launcher takes it for unsplit
            # contiguous rows past the short forms where the long form's blocks would take more
            # than APWMIN (4) and at most APWMAX (8) waves. H100, ftbench per call / device us,
            # ap / the long form, thirty-first session, same call:
            #   taken: fp16 B256 H8 D64 L512 93.3 / 89.4 against 94.7 / 89.7 (bf16 93.7 / 89.8
            #   against 94.8 / 89.9), B128 H12 D64 L512 70.6 / 66.8 against 72.0 / 66.9, B256 H8
            #   D32 L1024 92.6 / 88.8 against 94.3 / 89.5, B128 H16 D32 L2048 177.9 / 174.2
            #   against 179.2 / 175.3, B256 H8 D80 L512 115.1 / 111.6 against 116.4 / 112.6, bf16
            #   B128 H12 D80 L1024 168.1 / 164.7 against 169.5 / 165.9, B256 H8 D128 L1024 352.2
            #   / 349.3 against 353.0 / 349.8; cross-attention B256 H8 D64 L512 `[B,Hkv,L,D]`
            #   90.8 / 86.5 against 91.7 / 87.0, D128 176.0 / 172.8 against 177.8 / 173.8;
            #   left out: more waves, where a block's rows cost more than the launches they save
            #   (4 rows a block, B256 H16 D64 L1024 354.1 / 350.8 against 352.2 / 348.5; B128
            #   H32 D128 L512 357.3 / 353.8 against 354.7 / 351.2, 357.0 / 354.3 in 2 rows a
            #   block; B256 H32 D128 L256 in 8, 363.1 / 359.2 against 358.7 / 354.2), and fewer,
            #   where blocks of 2 rows leave the last wave part empty (B64 H12 D64 L1024, 384
            #   blocks, 70.6 / 67.6 against 69.0 / 64.7). A grid of as many blocks as fit, rows
            #   dealt round, lost back to back at every shape but L256 (B256 H8 D64 L512 93.3-93.7
            #   / 90.6-90.8, B64 H12 D64 L1024 70.1-70.3 / 66.7-66.8, B256 H32 D128 L256 364.4-365.3
            #   / 362.7-363.1; in place of the short form, B256 H8 D64 L256 50.0-50.2 / 46.3-46.4
            #   against 51.6-52.2 / 48.0-48.3, L128 35.5-36.3 / 31.3-31.4 against 32.0-32.5 /
            #   29.4-29.6). APERSIST=0 leaves ap out.
            if gq == 1 and tune.get("APERSIST", 1):
                forms.append(dict(forms[0], wide=4, sfx="_p", persist=1))
                aplan[gq]["PROWS"] = tune.get("APR", 2)
                aplan[gq]["PWMIN"] = tune.get("APWMIN", 4)
                aplan[gq]["PWMAX"] = tune.get("APWMAX", 8)
            # Form 5, one head a block: ad, the long form in ADNS (4) stages, one block an SM. The
            # launcher takes it for unsplit rows of at least ADROWS (2048) steps in more than
            # ADWAVES (3) waves of the long form (two blocks an SM), ahead of ap: each SM streams
            # one row at a time, four stages deep, instead of two rows three stages deep each.
            # fp16, ftbench per call / device us, ad / the shipped plan before it (ap at B64 H32
            # L2048 and D64 B64 H32 L2048, the long form elsewhere):
            #   H100 (forty-sixth session, same call): D128 B64 H32 L2048 688.86-688.99 /
            #   684.91-685.01 against 697.31-697.57 / 693.84-693.91 (PyTorch SDPA 697.38 / 695.57
            #   on the same machine), B32 H32 L4096 694.24 / 690.79 against 697.28 / 693.44; D64
            #   B64 H32 L2048 348.74 / 345.02 against 351.23 / 348.01; five stages lost (D128 B64
            #   H32 L2048 692.64 / 688.70).
            #   H200 (forty-seventh session, two runs each, in the order ad, plan, plan, ad): D128
            #   B32 H32 L4096 466.37 / 462.18 against 470.08-470.56 / 466.69-467.24; B64 H32 L2048
            #   473.15-473.18 / 469.25-469.44 against 473.25-473.70 / 470.01-470.69.
            # Rows of 1024 steps are left to the other forms: ad gained on the H100 (B128 H32 D128
            # L1024 692.35 / 688.47 against 699.10 / 694.76, B256 H8 D128 L1024 349.95 / 346.28
            # against 352.45 / 349.28) but lost on the H200 (B128 H32 476.61-476.90 / 473.47-
            # 473.59 against 474.34-474.40 / 470.90-470.99, B256 H8 244.26 / 240.38-240.45
            # against 239.90-240.58 / 236.88-237.23). So are fewer waves (B8 H32 D128 L4096, one
            # wave, H100 178.24 / 174.04 against 178.18 / 175.28; D64 B64 H12 L1024, 2.9 waves,
            # 68.83 / 64.83 against 69.09 / 64.33) and shorter rows (the twenty-third session:
            # four stages one an SM, B256 H8 D64 L512 96.5-96.6 against 94.6-94.7 per call).
            # ADEEP=0 leaves ad out.
            dns, dminb = tune.get("ADNS", 4), tune.get("ADMINB", 1)
            if gq == 1 and tune.get("ADEEP", 1) and dminb < minb and dns * 2 * tk * row <= 200 * 1024:
                forms.append(dict(forms[0], wide=5, sfx="_d", NS=dns, MINB=dminb, SMEM=dns * 2 * tk * row, deep=1))
                aplan[gq]["DROWS"] = tune.get("ADROWS", 2048)
                aplan[gq]["DWAVES"] = tune.get("ADWAVES", 3)
            aplan[gq]["forms"] = forms
        # The tensor-core head-group kernel (sm_90, 16-bit types, head sizes of whole k-steps
        # of 16 up to 128): 16 query heads of one key/value head a block as the rows of
        # mma.sync m16n8k16. Shared memory holds each stage's rows in copies of MR rows padded
        # by 16 bytes, so that rows of different copies hit different banks. MNW consumer
        # warps take 32 steps of a stage each; stages as deep as 96 KB allow with two blocks
        # per SM, or as 200 KB allow with one.
        # Past D128 (D160, D192, D256) the kernel takes MGQ = 8 heads a block as the mma's n
        # dimension (S^T = K Q^T, O^T += V^T P^T; templates/attention.cuh.j2 has how): a warp
        # holds D / 4 accumulators, and a step costs half the mma of 16 heads as the rows.
        # Groups of four or more heads there were bound by the CUDA cores' arithmetic
        # (gq_list above). H100, fp16, ftbench device us (thirty-seventh session, second call),
        # heads as n / rows 0-7 of 16-row fragments with rows 8-15 dropped / CUDA cores:
        #   D256 B128 H8 Hkv1 L1024 50.8 / 51.8 / 67.2, B8 H32 Hkv4 L4096 54.4 / 56.0 / 78.8,
        #   B8 H32 Hkv1 L4096 37.4 / 38.9 / 77.5, B1 H8 Hkv1 L8192 15.0 / 16.4 / 19.3, pairs
        #   B64 H16 Hkv8 L1024 179.3 / 182.5 / 183.1; D192 B128 H8 Hkv1 L1024 43.4 / 44.5 /
        #   58.3, B8 H32 Hkv4 L4096 41.5 / 42.4 / 61.7; D160 B8 H32 Hkv4 L4096 36.3 / 37.1 /
        #   75.5 (bench/RESULTS.md, thirty-seventh session, has SDPA beside the shipped plans).
        # Consumer warps MNW: 2 at D256 (stages of 64 steps, three of them in one block an SM),
        # 3 at D160 and D192 (same call, MNW 3 / 2: D192 B128 H8 Hkv1 L1024 38.5 / 43.4, B8 H32
        # Hkv4 L4096 40.2 / 41.5; D160 B64 H16 Hkv8 L1024 119.1 / 127.8, but B8 H32 Hkv4 37.7 /
        # 36.3; at D256 three lost on pairs, B64 H16 Hkv8 L1024 186.9 / 179.3, B1 20.0 / 17.8,
        # and gained 1-3% on larger groups).
        # MGQ=8 at D64 and D128 (tuning runs; heads as n in every form) was level where groups
        # are at most 8 heads and lost past them (H100, fp16, ftbench device us, thirty-seventh
        # session, fifth call, two runs each, MGQ=8 MNW=4 / shipped: D128 H32 Hkv8 B8 L4096
        # 47.36-47.41 / 47.13-47.57, B1 11.23-11.34 / 11.40-11.43, B256 L1024 354.29-354.36 /
        # 354.35-354.63, D64 H12 Hkv4 B64 L1024 23.38-23.39 / 23.39-23.43; B128 H64 Hkv8 L1024
        # 185.98-186.05 / 178.20-178.42 and MQA B8 H32 Hkv1 L4096 24.88-25.12 / 16.51 lost):
        # those forms stream at the copy floor, and the rows' arithmetic is not what bounds them.
        mgq = tune.get("MGQ", 16 if D <= 128 else 8)
        if mgq not in (8, 16):
            raise VariantError(f"attention: the tensor-core head group takes 8 or 16 heads a block, got {mgq}")
        mplans = []
        if dt in ("fp16", "bf16") and D % 16 == 0 and (D <= 128 or tune.get("MGQ8", 1)) and W == 16:
            # rows per copy: 4 (conflict-free), and 8 for the wide form, taken unsplit where the
            # kernel runs one block per SM and a row block would be split at most in two
            # (larger copies feed a block faster, at two-way bank conflicts); FTGEN_ATTN_TUNE's
            # MR / MRW override them
            mnw = tune.get("MNW", 4 if mgq == 16 else 2 if D == 256 else 3)
            mkw = 32  # steps of a warp in a stage: 4 key n-tiles

            def static_smem(nw, gq=mgq):
                """Static shared memory of a block of `nw` consumer warps and `gq` heads (q, the
                new k and v, the warps' maxima and sums, the barriers)."""
                return gq * D * 4 + 2 * D * 4 + 2 * row + gq * (nw + 1) * 8 + 256

            def stage_plan(stage, align, nw=mnw):
                """Stages, blocks per SM and dynamic shared memory of a form whose stages are
                `stage` bytes, `align` more to start them on a boundary, `nw` consumer warps."""
                static = static_smem(nw)
                mns = max(2, min(4, (96 * 1024) // stage))
                mminb = 2 if 2 * (mns * stage + align + static + 1024) <= 228 * 1024 else 1
                if mminb == 1:
                    mns = max(2, min(4, (200 * 1024) // stage))
                mns, mminb = tune.get("MNS", mns), tune.get("MMINB", mminb)
                if (nw + 1) * mgq * D * 4 > mns * stage:
                    raise VariantError(f"attention: the merge buffer of {nw} warps x {mgq} heads does not fit the stages")
                # shared memory asked for so that no more than MINB blocks share an SM: where the
                # registers and stages would let a third in (D32, D64), the blocks of a
                # dependent launch crowd onto the SMs that free up first (B64 H12 Hkv4 D64
                # L1024 fp16 on the H100: 29.2 us, 23.9 held to two; MOCC=0 for tuning runs)
                smem = mns * stage + align
                if smem + static > 232448:  # 227 KB: the most shared memory a block of sm_90 may have
                    raise VariantError(f"attention: {mns} stages of {stage} bytes and {static} bytes of "
                                       f"static shared memory exceed the 227 KB of a block (fewer warps, MNW, or "
                                       f"stages, MNS)")
                if tune.get("MOCC", 1):
                    smem = max(smem, 233472 // (mminb + 1) - 1024 + 16)
                return mns, mminb, smem

            for name, mr in (("r4", tune.get("MR", 4)), ("r8", tune.get("MRW", 8))):
                if mr not in (4, 8, 16, 32):
                    raise VariantError(f"attention: rows per copy must be 4, 8, 16 or 32, got {mr}")
                cs = mr * row + 16  # bytes of one padded copy
                stage = 2 * (mnw * mkw // mr) * cs
                mns, mminb, smem = stage_plan(stage, 0)
                mplans.append({"name": name, "NW": mnw, "NT": (mnw + 1) * 32, "R": mr, "KW": mkw, "TK": mnw * mkw,
                               "NS": mns, "CS": cs, "HALF": stage // 2, "STAGE": stage, "SMEM": smem,
                               "MINB": mminb, "TM": 0, "PERSIST": 0, "STAGEQ": 0})
            # rows of whole 128-byte pieces (D64, D128): a third form for the unsplit case whose
            # stages are filled by tensor-map copies (cp.async.bulk.tensor) of MTB-row boxes of 64
            # columns of K and of V, in the 128-byte swizzle that keeps ldmatrix free of bank
            # conflicts without padding. Boxes of 32 rows (4 KB), issued by one lane: on the
            # H100, B8 H32 Hkv8 D128 L4096 fp16 took 47.0 us a call so, 50.1 with boxes of 64
            # rows, 66.0 with 16 (50.0 issued by the 32 lanes), 48.2 with 32 issued by the 32
            # lanes, 49.1 for the r8 form (bench/attn_stamps). FTGEN_ATTN_TUNE's MTM=0 leaves the
            # form out, MTB sets the rows.
            # Split, it also takes r4's place where rows are at most 256 bytes (D128, D64, D32;
            # MTS=1 or 0 for every head size or none): ftbench device us on the H100, fp16, tm / r4:
            # B8 H32 Hkv1 D64 L4096 14.53 / 16.19, B64 H12 Hkv4 D64 L1024 23.74 / 24.05. At D128 a
            # stage is 64 bulk copies of 1 KB in r4, 16 boxes in tm: B1 H32 Hkv8 L4096 back to back
            # (bench/attn_stamps, us from the start, max over the blocks), r4's producer had its
            # first stage asked at 2.27 and its last tile landed at 5.76, tm's at 1.70 and 4.80.
            # Faster at every split row of the fortieth session (two runs each, r4 / tm): B1 H32
            # Hkv8 L1024 8.94 / 6.56, L2048 9.12 / 7.42, L8192 16.46 / 15.38, L32768 51.65 / 48.03,
            # B4 L8192 50.38 / 46.78, B1 H16 Hkv2 L4096 10.34 / 7.87, MQA B8 H32 Hkv1 L4096 16.64 /
            # 13.71, B1 H128 Hkv8 L4096 12.84 / 12.00; unsplit rows (B8-B32) level. At D192 and D256
            # (MTS=1 on them) it was mixed: D256 B1 H32 Hkv8 L1024 10.15 / 9.42 but B4 H8 Hkv1 L4096
            # 12.63 / 12.91, D192 B1 H32 Hkv8 L4096 13.43 / 14.04.
            # Rows of 64 bytes (D32) take the same forms in the 64-byte swizzle: boxes of 32
            # columns, the piece p of row r at p ^ ((r / 2) % 4), again conflict-free. There the
            # forms below (t3, tp, tq) take the many-block head groups that ran on CUDA cores
            # (thirty-eighth session, H100, fp16, ftbench device us, tm forms / before, SDPA):
            # H32 Hkv8 B256 L512 51.8 / 68.2 (53.5), B64 L2048 46.7 / 51.0 (52.5), H16 Hkv4 B256
            # L256 15.9 / 28.8 (18.8), L128 11.4 / 20.2 (15.6), H64 Hkv8 B128 L1024 47.5 / 85.5
            # (53.1), pairs H8 Hkv4 B256 L512 24.0 / 38.7 (30.1); few blocks gain too, B8 H32
            # Hkv8 L4096 15.9 / 17.0, B1 6.6 / 8.7, MQA B8 H32 Hkv1 L4096 8.4 / 10.7. Without MTS
            # (split rows in r4) they lost: 91.7 at B256 H32 Hkv8 L512, 23.6 at B8 L4096.
            persist = tune.get("MPERSIST", 1)  # tp below (0: not, for tuning runs)
            if (row % 128 == 0 or row == 64) and tune.get("MTM", 1):
                tk, box = mnw * mkw, tune.get("MTB", 32)
                if box not in (8, 16, 32, 64, 128) or tk % box:
                    raise VariantError(f"attention: box rows (MTB) must be 8, 16, 32, 64 or 128 and divide {tk}")
                stage = 2 * tk * row
                mns, mminb, smem = stage_plan(stage, 1024)  # the swizzle wants 1024-byte aligned stages
                mplans.append({"name": "tm", "NW": mnw, "NT": (mnw + 1) * 32, "R": tk, "KW": mkw, "TK": tk,
                               "NS": mns, "CS": 0, "HALF": stage // 2, "STAGE": stage, "SMEM": smem,
                               "MINB": mminb, "TM": 1, "BOX": box, "PERSIST": 0, "STAGEQ": 0})
                # Short rows (D128: one tm block per SM): a fourth form, ts, the tm kernel with MSNW
                # (2) consumer warps and stages of 32 steps a warp, so that two blocks share an SM.
                # Where a row's steps fit in the tm form's stages at once, a block has nothing of
                # its own to overlap its start and its end with; a second block on the SM does.
                # The launcher takes it unsplit, with more row blocks than SMs, for rows of at most
                # NS x TK steps of the tm form (H100, fp16, ftbench device us, ts / tm, H32 Hkv8
                # D128: B256 L256 100.9 / 150.2, B64 L256 30.2 / 34.8, B128 H64 L256 66.1 / 75.3,
                # B256 L384 142.2 / 168.1, cross-attention B256 L256 94.5 / 100.8; longer rows
                # lose: B256 L512 190.8 / 196.8 but B128 L512 96.4 / 94.7, B256 L768 284.1 / 272.2;
                # so do grids of one wave: B8 L256 9.2 / 7.4). MSHORT=0 leaves it out.
                snw = tune.get("MSNW", 2)
                if mminb == 1 and tune.get("MSHORT", 1) and (snw * mkw) % box == 0:
                    stk = snw * mkw
                    sstage = 2 * stk * row
                    sns, sminb, ssmem = stage_plan(sstage, 1024, snw)
                    if sminb > 1:
                        mplans.append({"name": "ts", "NW": snw, "NT": (snw + 1) * 32, "R": stk, "KW": mkw, "TK": stk,
                                       "NS": sns, "CS": 0, "HALF": sstage // 2, "STAGE": sstage, "SMEM": ssmem,
                                       "MINB": sminb, "TM": 1, "BOX": box, "ROWS": mns * tk, "PERSIST": 0, "STAGEQ": 0})
                        # A fifth form, t3: ts with two stages, three blocks an SM (at D128 they
                        # fill the 228 KB of an SM's shared memory to the byte), taken in place of
                        # ts past the row blocks that ts's two an SM hold (H100, fp16, ftbench per call /
                        # device us, t3 / ts, H32 Hkv8 D128: B256 L256 100.1-100.4 / 96.7 against
                        # 105.7-106.6 / 100.4-100.9, B256 L128 68.7 / 65.3 against 78.0-78.3 /
                        # 75.5-75.8, B128 H64 L256 60.0-60.3 / 55.7-55.8 against 69.9-70.7 /
                        # 65.9-66.3, B64 L256 32.3-32.5 / 30.2-30.3 against 34.4-34.6 / 30.1-30.2; L384
                        # the same, 145.8 / 142.2; within ts's one wave it left SMs idle: B32 L256
                        # 19.7-19.8 / 17.6 against 19.4-19.5 / 15.0). MSHORT3=0 leaves it out.
                        if tune.get("MSHORT3", 1) and sns > 2:
                            mplans.append(dict(mplans[-1], name="t3", NS=2, SMEM=2 * sstage + 1024, MINB=3))
                # Where the tm form itself runs two blocks an SM (D64), t3 is the tm form in two
                # stages, three blocks an SM, taken unsplit for rows of at most tm's NS x TK steps
                # where its blocks take fewer waves than tm's (H100, fp16, ftbench device us, t3 /
                # tm: H16 Hkv4 B256 L256 30.7 / 32.9, L128 21.0 / 22.7, L384 37.1 / 39.7, B96 L256
                # 11.5 / 15.2; H32 Hkv8 B256 L256 51.4 / 56.6; pairs, H16 Hkv8 B256 L256 49.1 /
                # 50.3; in as many waves it lost, B128 H16 Hkv4 L256 18.6 / 17.2). MSHORT3=0 leaves
                # it out.
                elif mminb == 2 and mns > 2 and tune.get("MSHORT3", 1):
                    if 3 * (2 * stage + 1024 + static_smem(mnw) + 1024) <= 228 * 1024:
                        mplans.append(dict(mplans[-1], name="t3", NS=2, SMEM=2 * stage + 1024, MINB=3, ROWS=mns * tk))
            # tp: t3 as a persistent grid (templates/attention.cuh.j2 has how), each block taking
            # rows one after the other, so that its stages stream the next row while it finishes
            # one. The launcher takes it for rows that t3's two stages hold at once, at least three
            # row blocks to each block the device holds, groups of at most 16 / MNW heads. H100,
            # fp16, ftbench per call / device us, tp / t3 (thirtieth session, reduced builds in one call):
            #   taken: H32 Hkv8 D128 B256 L128 57.6 / 56.0 against 63.4 / 60.5, B512 L128
            #   103.5 / 99.6 against 129.8 / 126.9; D64 H16 Hkv4 B256 L256 29.9 / 27.0 against
            #   33.0 / 30.7, L128 22.1 / 18.6 against 24.9 / 21.0, B512 L128 36.3 / 31.8 against
            #   38.2 / 33.7; H32 Hkv8 B256 L256 52.0 / 51.1 against 55.2 / 51.5; cross-attention
            #   B256 H16 Hkv4 L256 `[B,L,Hkv*D]` 28.6 / 26.0 against 31.3 / 27.9;
            #   left to t3: longer rows, faster a call but slower back to back (D128 B256 L256 96.5
            #   / 97.0 against 99.3 / 95.9, L384 142.6 / 145.3 against 143.9 / 140.9, cross-attention
            #   L256 94.9 / 95.2 against 96.1 / 92.9), two rows a block (B64 L256 31.1 / 31.3
            #   against 30.8 / 28.1); groups of 8 at D128 (B128 H64 L256 56.5 / 53.6 against 56.9
            #   / 52.1). A grid of as many blocks as fit, rows dealt round, was slower where rows
            #   do not divide evenly (B256 L128 59.9 / 57.4). MPERSIST=0 leaves it out; MPQ=0
            #   leaves out its L2 prefetch of the next row's q, k and v (tuning runs).
            if mplans and mplans[-1]["name"] == "t3" and persist:
                # STAGEQ: the producer warp loads a row's q and new k, v as it requests the row's
                # tiles and hands them over (q_s, kv_new) once the consumers end the row before,
                # so that no L2 round trip stands between the consumers' rows. Taken at D64
                # (H100, fp16, ftbench per call / device us, with / without: H16 Hkv4 B256 L128
                # 18.6 / 15.1 against 22.3 / 18.6, L256 29.5 / 26.0 against 30.0 / 27.0, H32
                # Hkv8 L256 52.9 / 51.2 against 52.3-52.8 / 51.2, cross-attention `[B,L,Hkv*D]`
                # B256 H16 Hkv4 L256 29.5-29.7 / 25.7-25.8 against 28.4-28.7 / 26.1). At D128
                # the kernel, at its 168 registers, then spilled 84 bytes (16 without) and lost:
                # H32 Hkv8 B256 L128 67.7-69.2 / 63.1-63.4 against 58.5-59.0 / 56.1-56.3, B512
                # 118.7 / 114.3 against 102.8-104.3 / 99.7-100.1. Held in 16-byte words (the
                # thirty-fourth session) it still spilled 72 bytes there and lost: B512 107.7-108.4
                # / 107.5-108.3 against 102.8-102.9 / 99.7-100.2. MSTQ=0 or 1 forces it.
                tp = dict(mplans[-1], name="tp", PERSIST=1, STAGEQ=tune.get("MSTQ", 1 if row <= 128 else 0))
                mplans.append(tp)
                # tq: tp in three stages, two blocks an SM, taken for rows of more than one tile
                # (TK steps). Each block keeps as many bytes in flight as tp's three do, in fewer,
                # deeper pipelines, and its registers are not capped at 168, so that the hand-over
                # (STAGEQ) fits at D128 too. H100, fp16, ftbench per call / device us, tq / tp
                # (thirty-fourth session, reduced builds in one call): D128 H32 Hkv8 B256 L128
                # 54.3-55.5 / 50.2-50.4 against 57.6-57.7 / 56.1, B128 H64 Hkv8 L128 33.0-33.3 /
                # 28.6 against 36.6-36.8 / 32.4-32.5, B512 L128 102.2 / 100.1 against 104.0 /
                # 100.1; D64 H16 Hkv4 B256 L256 28.7-29.0 / 24.3-24.4 against 28.5-28.7 /
                # 26.2, H32 Hkv8 B256 L256 51.8 / 47.7-47.8 against 51.8-52.3 / 51.1,
                # cross-attention `[B,L,Hkv*D]` H16 Hkv4 B256 L256 28.7 / 25.0-25.1 against 28.7-29.0
                # / 25.4-25.5. Rows of one tile stay with tp (D64 H16 Hkv4 B256 L128: 19.3 / 15.6-15.7
                # so against 18.2 / 14.9; B512 L128 31.6-32.1 / 27.7 against 29.4 / 26.7). The same
                # stages without the hand-over at D128 lost (B256 L128 60.4-61.0 / 55.8). It also
                # takes from t3 the rows of three to six tiles that t3's stages hold (MQT tiles at
                # most: D128 L384, D64 L384, t3's bound; tq / t3: D128 H32 Hkv8 B256 L256 96.1-96.4 / 93.1-93.3
                # against 99.2-99.5 / 95.9, L192 74.2-74.3 / 71.4 against 78.9-79.1 / 74.5-74.8,
                # B512 L256 189.3-189.4 / 185.6-185.7 against 193.5-193.6 / 189.9-190.0, B128 H64
                # Hkv8 L256 53.5-53.8 / 49.6 against 57.1 / 52.1, cross-attention `[B,L,Hkv*D]` B256
                # L256 94.9-95.2 / 91.1 against 97.8-97.9 / 94.8; D64 H16 Hkv4 B256 L384 38.4-38.5 /
                # 35.6-35.7 against 39.8 / 37.0; rows of five and six tiles at D128, thirty-fourth
                # session: H32 Hkv8 B256 L384 140.1-140.4 / 137.3 against 143.9-144.2 / 140.9, L320
                # 119.0-119.1 / 116.3 against 121.7-121.9 / 118.7-118.8, B128 H64 Hkv8 L384 73.3 /
                # 69.6-69.7 against 76.7-77.1 / 73.7-73.9, cross-attention `[B,L,Hkv*D]` B256 L384
                # 138.6-138.8 / 134.8-134.9 against 141.6-141.8 / 138.6-138.8). MTQ=0 leaves it
                # out; MQSTQ=0 leaves out its hand-over; MQT=4 keeps rows of five and six tiles in t3.
                # Past t3's bound the launcher takes it too, for unsplit rows of at most MQL steps
                # in more than two row blocks for each block it fills the device with, in place
                # of the tm form (thirty-fifth session, tq / tm: D128 H32 Hkv8 B256 L512 183.6-184.3 /
                # 179.8-180.2 against 198.3-198.9 / 193.9-194.2, L448 162.2-162.6 / 158.3 against
                # 196.9-197.3 / 191.9-192.2, B128 H64 Hkv8 L512 94.7-94.8 / 91.6 against 103.9-104.1
                # / 99.9-100.0, cross-attention `[B,L,Hkv*D]` B256 L512 182.4-182.5 / 178.0-178.3
                # against 182.9 / 179.5, D64 H16 Hkv4 B256 L512 48.5-49.1 / 45.7-45.8 against
                # 50.9-51.2 / 47.8-47.9; longer rows gained less or lost: D128 B256
                # L1024 355.0-356.1 / 353.0 against 359.0-359.6 / 354.7-354.8, B128 L2048 352.2 /
                # 350.0 against 353.8 / 350.5-350.8, cross-attention `[B,L,Hkv*D]` B256 L1024
                # 353.4 / 352.6 against 354.4-354.6 / 350.9, D64 H16 Hkv4 B256 L1024 91.9-92.1 /
                # 89.5-89.7 against 91.4-91.5 / 88.3-88.4, H32 Hkv8 L1024 180.1-180.3 / 177.3-177.5
                # against 181.1 / 178.3-178.4; groups of 8 gained at L1024, B128 H64 Hkv8 182.1-182.3
                # / 178.8-179.0 against 189.3-189.4 / 186.1). Groups of more than 4 heads (D128) gain
                # at every length measured, and take it for rows of up to MQL8 steps (B128 H64 Hkv8
                # L768 135.9-136.0 / 132.9-133.0 against 145.9-146.6 / 141.9-142.0, L1024 178.1-178.3 /
                # 174.8-174.9 against 186.9-187.0 / 183.6-183.8, L2048 345.0 / 342.5 against
                # 353.4-353.8 / 349.8-350.0, B256 L1024 350.9-351.0 / 347.3-347.6 against
                # 367.2-368.3 / 363.0-363.1, B256 H32 Hkv4 L1024 177.7-177.9 / 174.8-174.9 against
                # 187.0-187.1 / 183.9-184.0, cross-attention `[B,L,Hkv*D]` B128 H64 Hkv8 L1024
                # 178.1-178.4 / 174.9-175.0 against 181.2-181.3 / 176.1-176.2).
                qns, qminb = 3, 2
                tq = dict(tp, name="tq", NS=qns, MINB=qminb, SMEM=qns * tp["STAGE"] + 1024, STAGEQ=tune.get("MQSTQ", 1),
                          QROWS=min(tune.get("MQT", 6) * tp["TK"], tp["ROWS"]),  # the longest short rows it takes
                          LROWS=tune.get("MQL", 512),  # and the longest past t3's bound
                          LROWS8=tune.get("MQL8", 2048))  # the same for groups of more than 4 heads
                if tune.get("MTQ", 1) and qminb * (tq["SMEM"] + static_smem(tq["NW"]) + 1024) <= 228 * 1024:
                    mplans.append(tq)
            # hw: heads across warps, for groups of more than MGQ = 8 heads (D160-D256). Each of
            # MHWNW (4) consumer warps takes 8 heads of a block of 8 x MHWNW, as the n dimension,
            # over every step of each stage (a stage is one warp's 32 steps, in r4's copies), so
            # that a group of up to 32 heads reads the cache once, not once per 8 heads (the
            # later passes from the L2), and every SM sub-partition has a warp. The launcher
            # takes it for groups of more than 8 heads in contiguous caches, where the passes of 8
            # would not run unsplit in one wave, in at least MHWMIN (4) row blocks of 32 heads.
            # H100, fp16, ftbench device us, thirty-eighth session, hw / passes of 8 (MHW=0):
            #   taken: D256 B8 H32 Hkv1 L4096 29.3 / 37.3 (SDPA 32.8), B16 H16 Hkv1 L2048 21.9 /
            #   26.6, B8 H24 Hkv1 L4096 26.6 / 33.0, B8 H32 Hkv2 L4096 33.7 / 40.4, B64 H32 Hkv2
            #   L1024 54.7 / 67.4, B128 H16 Hkv1 L1024 54.7 / 67.4; D192 B8 H32 Hkv1 L4096 25.6 /
            #   27.6; D160 22.3 / 26.3, B64 H32 Hkv2 L1024 39.5 / 50.6; B4 H32 Hkv1 L4096 level
            #   (23.2 / 23.3);
            #   left to the passes: one unsplit wave of them (B32 H32 Hkv1 L1024 27.7 / 26.2,
            #   D192 25.4 / 19.5; split 4 ways there hw is at its best), fewer row blocks (B1 H32
            #   Hkv1 L8192 23.3 / 21.2, B1 H32 Hkv2 L4096 16.2 / 15.6, B2 H32 Hkv1 L4096 21.4 /
            #   18.6, D192 18.6 / 13.6; but B2 H16 Hkv1 L8192 19.8 / 21.7), strided caches, whose
            #   rows it would copy one by one (B8 H32 Hkv1 L4096 `[L,B,Hkv*D]` 32.2 / 29.9 in tm
            #   boxes). B4 H16 Hkv1 L2048 lost (16.0 / 15.2). MHW=0 leaves it out.
            # Thirty-ninth session, with the step's inputs loaded as 16-byte words (the prologue
            # had taken 16 L2 round trips for 32 heads of D256), hw / passes of 8 / hw at any
            # row-block count (MHWMIN=1), device us: the rule holds (B8 H32 Hkv1 L4096 23.8 /
            # 33.0, B128 H16 Hkv1 L1024 51.7 / 57.1; B1 H32 Hkv1 L8192 17.7 in passes, 19.1 in
            # hw; B2 H32 Hkv1 L4096 15.3 / 17.4) but for B4 H16 Hkv1 L2048 (13.5 / 11.2) and
            # B2 H16 Hkv1 L8192 (18.4 in passes / 16.1): groups of 16, whose hw blocks leave two
            # of four warps idle (giving warps w and w + 2 the same heads, each half of a stage's
            # steps, lost at every row, blocks of 32 heads too: 23.7 -> 28.0 at B8 H32 Hkv1
            # L4096; bench/RESULTS.md). MHWNS=2 (two blocks an SM) lost at B8 H32 Hkv1 L4096 (25.0).
            if mgq == 8 and tune.get("MHW", 1):
                hnw = tune.get("MHWNW", 4)
                hgq = 8 * hnw
                cs = 4 * row + 16
                stage = 2 * (mkw // 4) * cs
                hstatic = static_smem(hnw, hgq)
                hns = tune.get("MHWNS", min(8, (232448 - hstatic - 2048) // stage))
                if 2 * hgq * D * 4 > hns * stage:  # one partial a head, and the cluster merge's copy
                    raise VariantError(f"attention: the merge buffer of {hgq} heads does not fit {hns} stages (MHWNS)")
                if hns < 2 or hns * stage + hstatic > 232448:
                    raise VariantError(f"attention: {hns} stages of {stage} bytes and {hstatic} bytes of static "
                                       f"shared memory do not fit the 227 KB of a block (MHWNS, MHWNW)")
                mplans.append({"name": "hw", "NW": hnw, "NT": (hnw + 1) * 32, "R": 4, "KW": mkw, "TK": mkw,
                               "NS": hns, "CS": cs, "HALF": stage // 2, "STAGE": stage, "SMEM": hns * stage,
                               "MINB": 1, "TM": 0, "PERSIST": 0, "STAGEQ": 0, "HW": 1, "GQ": hgq,
                               "HWMIN": tune.get("MHWMIN", 4)})
        for mp in mplans:
            mp.setdefault("HW", 0)
            mp.setdefault("GQ", mgq)
            # HN: heads as the mma's n dimension, for blocks of at most 8 heads: MGQ = 8, and the
            # persistent forms, whose groups the launcher holds to 16 / NW heads (there in place
            # of 16-row fragments with rows 8-15 empty; H100, fp16, ftbench per call / device us,
            # thirty-seventh session, two runs each, heads as n / as rows: D128 H32 Hkv8 B256
            # L128 53.6-54.5 / 50.1 against 54.2-54.3 / 50.4-50.5, L256 95.7-95.8 / 92.6-92.7
            # against 96.7-96.8 / 93.3, L512 183.0-183.2 / 179.1-179.4 against 183.6-183.8 /
            # 180.0-180.1, B128 H64 Hkv8 L1024 181.2-181.4 / 178.3-178.6 against 182.1 /
            # 178.8-179.3; D64 level, B256 H16 Hkv4 L256 28.6-29.0 / 24.4 against 28.6-29.0 /
            # 24.1-24.2; tp at D128 no longer spills).
            mp["HN"] = 1 if mgq == 8 or mp["PERSIST"] else 0
        # sm_90 kernels, launched as programmatic dependents: a split's first tile prefetched
        # into the L2 while the kernel before them ends (APF=0: not, for tuning runs)
        apf = tune.get("APF", 1)
        # the smallest head group taken on tensor cores: pairs too where the tm form exists
        # (H100, fp16, ftbench per call / device us, tensor cores against four heads a block
        # on CUDA cores, H32 Hkv16 D128 L4096: B1 19.5 / 16.2 against 22.3 / 18.7, B8 93.0 /
        # 89.3 against 96.2 / 92.2; D64 B256 H8 Hkv4 L512 50.9 / 46.7 against 75.6 / 70.8,
        # B64 H16 Hkv8 L1024 48.7 / 44.8 against 60.6 / 55.7; D32, thirty-eighth session,
        # device, MG=3 builds for CUDA-core pairs: B256 H8 Hkv4 L512 24.0 against 38.7, B64 H16
        # Hkv8 L1024 25.1 against 29.9, B8 H32 Hkv16 L4096 25.8 against 26.8). Without it
        # (D80, D96), pairs stay on CUDA cores: B8 H32 Hkv16 L4096 D96 77.6 against 72.8. One head stays there at every size (B256 H8 D64 L512 94.9 against 94.6, B1
        # H32 D128 L4096 29.8 against 29.5). MG overrides it for tuning runs.
        # Without the tm form, contiguous caches (`[B,Hkv,L,D]`) take their own threshold
        # (thirty-sixth session, MG knob builds, H100, fp16, ftbench device us):
        # - where CUDA cores have no group kernel (D80, D112: a pair is two passes of one
        #   head), pairs go to tensor cores: D80 H8 Hkv4 L512 B64 15.4 against 21.7, B256
        #   59.7 against 70.1 (SDPA 64.0), B1 H32 Hkv16 L4096 12.3 against 13.7, H16 Hkv8
        #   B64 L1024 59.4 against 66.2; D112 B256 85.1 against 92.2, B8 H32 Hkv16 L4096 82.8
        #   against 86.1, B1 14.9 against 16.7 (D80 B8 H32 Hkv16 L4096 lost: 71.4 against
        #   69.3). D96's pairs on CUDA cores stay: tensor cores lost (B256 72.5 against 67.7,
        #   B8 L4096 76.7 against 67.6).
        # - at D32 without the tm form (MTM=0), groups of up to 4 heads (one block on CUDA
        #   cores) stay on CUDA cores: B256 H32 Hkv8 L512 68.3 against 91.5 in the r4 form
        #   (SDPA 53.4), B8 L4096 17.0 against 23.6 (SDPA 19.7), B1 L4096 8.6 against 9.3;
        #   pairs on tensor cores lost there (B256 H8 Hkv4 L512 46.3 against 39.0). With the
        #   tm form's persistent grids, all of them run on tensor cores (the tm comment above).
        # Strided caches keep MGS, the rule before (their pairs and groups on CUDA cores
        # read through tensor-map boxes, the tensor-core kernel has none without the tm form).
        has_tm = any(mp["TM"] for mp in mplans)
        mgs = tune.get("MG", 2 if has_tm else 3)
        mg = tune.get("MG", 2 if has_tm or gq_list[-1] == 1 else gq_list[-1] + 1 if row <= 64 else 3)
        # head-group launches of one wave ask for shared memory that holds each block alone on
        # its SM (GQPAD=0: not, for tuning runs)
        gqpad = tune.get("GQPAD", 1)
        return {
            "MPQ": tune.get("MPQ", 1),
            # the sm_90 kernels' forms per head count (the launcher's index of a kernel): one past
            # the highest form generated for CUDA-core blocks (4 ap where it exists)
            "AF": 1 + max(f["wide"] for plan in aplan.values() for f in plan["forms"]),
            "packed": self.has_packed(params),
            # the sm_90a warpgroup form of packed attention: K, Q and V rows in 128-byte
            # swizzled panels of 64 elements, whole panels only
            "packed_wg": self.has_packed(params) and D in (64, 128), "mplans": mplans, "APF": apf, "GQPAD": gqpad, "STAMP": tune.get("STAMP", 0),
            "MTS": tune.get("MTS", 1 if row <= 256 else 0),
            # the tm forms' swizzle span: bytes of a box row (128, or 64 where rows are 64 bytes)
            "TMW": min(row, 128), "HAS_TM": has_tm,
            "MG": mg, "MGS": tune.get("MGS", mgs), "MGQ": mgq,
            "async": W == 16, "AVEC": a_vec, "ATPK": a_tpk, "ACPT": a_cpt, "aword": f"ft_word_{dt}x{a_vec}",
            "aunpack": f"ft_unpack_{dt}x{a_vec}", "KPI": kpi, "aplan": aplan,
            "dtype": dt, "T": DTYPES[dt]["T"], "esize": es, "D": D, "W": W,
            "NT": self.threads, "VEC": vec, "NV": nv, "TPK": tpk, "CPT": cpt,
            # up to 8 cache vectors in flight per thread in each phase (bench/attn_tune.sh on
            # the H100: 8 beat 4 by 4-9% at every benchmark shape, 2 lost 10-25%)
            "KU": tune.get("KU", max(1, 8 // cpt)), "PL": self.threads // nv, "VU": tune.get("VU", 8),
            "gq_list": gq_list,
            "sub": {gq: 4096 // gq for gq in gq_list},
            # one head per block stays under 128 registers (two blocks per SM); larger
            # groups hold GQ heads' q slices and accumulators and may use up to 255
            "min_blocks": {gq: tune.get("MINB", 2) if gq == 1 else tune.get("GQMINB", 1) for gq in gq_list},
            "P": f"FT_ATTN_{names['suffix'].upper()}",
            "word": f"ft_word_{dt}x{vec}", "unpack": f"ft_unpack_{dt}x{vec}",
            "load": f"ft_load_{dt}x{vec}", "store": f"ft_store_{dt}x{vec}",
            "to_float": f"ft_to_float_{dt}", "from_float": f"ft_from_float_{dt}",
        }

    def dispatch_files(self, env, variants, command):
        files = {}
        by_dtype = {}
        for v in variants:
            by_dtype.setdefault(v["dtype"], []).append(dict(v, packed=self.has_packed(v["params"])))
        for dt, vs in by_dtype.items():
            files[f"ft/attention_{dt}.cuh"] = env.get_template("attention_dtype_dispatch.cuh.j2").render(
                dtype=dt, variants=vs, guard=f"FT_ATTENTION_{dt.upper()}_CUH",
                banner=banner("attention_dtype_dispatch.cuh.j2", command, f"attention dispatch for {dt}"))
        files["ft/attention.cuh"] = env.get_template("attention_dispatch.cuh.j2").render(
            dtypes=[{"dtype": dt, "enum": DTYPES[dt]["enum"]} for dt in by_dtype], guard="FT_ATTENTION_CUH",
            banner=banner("attention_dispatch.cuh.j2", command, "attention dispatch"))
        return files


class TopkFamily(Family):
    """Top-K selection, beam candidates and top-k sampling per K and dtype (templates/topk.cuh.j2)."""
    name = "topk"
    template = "topk.cuh.j2"
    dispatch_template = "topk_dispatch.cuh.j2"
    dims = ("k", "dtype")
    allowed = {"dtype": ("fp32", "fp16", "bf16"), "k": range(1, 1025)}
    manifest_keys = {"ks": "k", "dtypes": "dtype"}

    def validate(self, params):
        if params.get("k") not in self.allowed["k"]:
            raise VariantError(f"topk: K {params.get('k')} is not supported (1 to 1024)")
        super().validate(params)

    def name_parts(self, params):
        return [f"k{params['k']}"]

    def listing_args(self, v):
        return [str(v["params"]["k"])]

    def context(self, params):
        dt, K = params["dtype"], params["k"]
        es = DTYPES[dt]["esize"]
        vec = 16 // es
        names = variant_names(self, params)
        r = -(-K // 256)  # K <= 1024: C = ceil(K / (8 R)) <= 32 lanes
        return {
            "dtype": dt, "T": DTYPES[dt]["T"], "esize": es, "K": K,
            "M": (K + 31) // 32, "TS": (K - 1) // 32, "TL": (K - 1) % 32,
            "VEC": vec, "U": 4 if es == 4 else 2,  # 16 elements per lane per round
            # newcomers in one round above which a warp sort + merge beats one-by-one inserts
            "BATCH": 4,
            # the first round's floor: each lane's R best, the C-th largest R-th best per
            # warp, the least of the 8 warps' (8*C*R >= K elements at or above it)
            "R": r, "C": -(-K // (8 * r)),
            # fewest elements per first-pass block (more blocks only add lists to merge)
            "MIN_CHUNK": max(8192, 16 * K),
            "SUFFIX": names["suffix"].upper(),
            "load": f"ft_load_cs_{dt}x{vec}", "to_float": f"ft_to_float_{dt}",  # rows are read once: streaming loads
            "unpack": f"ft_unpack_{dt}x{vec}",
            # the row form (1024-thread blocks, a floor from the threads' maxima) for
            # K <= 64: each of its 32 warps offers its RC largest lane maxima, the floor is
            # the K-th of the 32*RC (on N(0,1) rows of 32000: about K+4 candidates for
            # K <= 32 with RC = 2, 69 for K = 64 with RC = 4, 200 with RC = 2); a thread
            # has UR 16-byte loads in flight (4 for 16-bit types: 8 spill at 64 registers)
            "ROW": K <= 64, "RC": 2 if K <= 32 else 4, "UR": 8 if es == 4 else 4,
        }

    def dispatch_files(self, env, variants, command):
        by_dtype = {}
        for v in variants:
            by_dtype.setdefault(v["dtype"], []).append(v)
        for vs in by_dtype.values():
            vs.sort(key=lambda v: v["params"]["k"])
        return {"ft/topk.cuh": env.get_template(self.dispatch_template).render(
            by_dtype=sorted(by_dtype.items(), key=lambda kv: list(DTYPES).index(kv[0])),
            guard="FT_TOPK_CUH", banner=banner(self.dispatch_template, command, "topk dispatch"))}


class DecodingFamily(NormFamily):
    """Embeddings, logits and top-p sampling per dtype (templates/decoding.cuh.j2)."""
    name = "decoding"
    template = "decoding.cuh.j2"
    dispatch_template = "decoding_dispatch.cuh.j2"

    def context(self, params):
        ctx = super().context(params)
        dt = params["dtype"]
        ctx["to_float"] = f"ft_to_float_{dt}"
        ctx["from_float"] = f"ft_from_float_{dt}"
        ctx["SUFFIX"] = variant_names(self, params)["suffix"].upper()
        return ctx


class LlamaFamily(Family):
    """The LLaMA int8 path per activation dtype (templates/llama.cuh.j2): quantising norms,
    dequantising residuals, q/k/v dequant with rotary, KV-cache append, causal softmax."""
    name = "llama"
    template = "llama.cuh.j2"
    dispatch_template = "llama_dispatch.cuh.j2"
    dims = ("dtype",)
    allowed = {"dtype": ("fp32", "fp16", "bf16")}
    manifest_keys = {"dtypes": "dtype"}

    def context(self, params):
        dt = params["dtype"]
        return {
            "dtype": dt,
            "T": DTYPES[dt]["T"],
            "esize": DTYPES[dt]["esize"],
            "to_float": f"ft_to_float_{dt}",
            "from_float": f"ft_from_float_{dt}",
        }


class BatchingFamily(LlamaFamily):
    """The continuous-batching inferencer's kernels per dtype (templates/batching.cuh.j2):
    slot insertion, new items into the K^T/V caches, q.K^T, softmax with lengths, p.V and
    the greedy decoder step over per-slot lengths."""
    name = "batching"
    template = "batching.cuh.j2"
    dispatch_template = "batching_dispatch.cuh.j2"


FAMILIES = {f.name: f for f in (NormFamily(), EncoderFamily(), AttentionFamily(), TopkFamily(), DecodingFamily(),
                                LlamaFamily(), BatchingFamily())}


# ---------------------------------------------------------------- naming

def variant_names(family, params):
    """The one naming function: header path, launcher suffix, and id (used by tests,
    bench and CMake) all derive from the same parameters.
    norm, dtype fp16          -> id norm_fp16, header ft/norm_fp16.cuh, suffix fp16
    norm, dtype fp16, width 8 -> id norm_w8_fp16, suffix w8_fp16"""
    suffix = "_".join(family.name_parts(params) + [params["dtype"]])
    vid = f"{family.name}_{suffix}"
    return {"id": vid, "suffix": suffix, "header": f"ft/{vid}.cuh",
            "guard": f"FT_{vid.upper()}_CUH"}


def make_variant(family, params):
    params = family.defaults(params)
    family.validate(params)
    names = variant_names(family, params)
    return {"family": family, "params": params, **names, "dtype": params["dtype"],
            "T": DTYPES[params["dtype"]]["T"], "enum": DTYPES[params["dtype"]]["enum"]}


def expand(family, lists):
    """Cross product of dimension -> list of values, in a stable order."""
    dims = [d for d in family.dims if d in lists]
    combos = itertools.product(*(lists[d] for d in dims))
    return [make_variant(family, dict(zip(dims, c))) for c in combos]


def load_manifest(path):
    with open(path, "rb") as f:
        data = tomllib.load(f)
    variants = []
    for fname, section in data.items():
        family = FAMILIES.get(fname)
        if family is None:
            raise VariantError(f"{path}: unknown family [{fname}] (known: {', '.join(FAMILIES)})")
        lists = {}
        for key, value in section.items():
            if key not in family.manifest_keys:
                raise VariantError(f"{path}: [{fname}] has no key '{key}'")
            lists[family.manifest_keys[key]] = value if isinstance(value, list) else [value]
        variants.extend(expand(family, lists))
    ids = [v["id"] for v in variants]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise VariantError(f"{path}: variant listed twice: {', '.join(dup)}")
    return variants


# ---------------------------------------------------------------- rendering

def environment():
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,  # a misspelt name fails instead of rendering ""
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def banner(template, command, describe):
    return ("/* Generated by gen/ftgen.py from templates/" + template + " -- do not edit by hand.\n"
            " * Regenerate: " + command + "\n"
            " * Variant: " + describe + " */")


def describe(v):
    return f"{v['family'].name} " + " ".join(f"{k}={v['params'][k]}" for k in v["family"].dims)


def render_variant(env, v, command):
    family = v["family"]
    ctx = family.context(v["params"])
    ctx.update(suffix=v["suffix"], guard=v["guard"],
               banner=banner(family.template, command, describe(v)))
    # macros indented by `indent` indent their pragmas too: the directives go back to column 0
    return re.sub(r"^[ \t]+#pragma", "#pragma", env.get_template(family.template).render(**ctx), flags=re.M)


def render_manifest(env, variants, command):
    """Every file the default tree holds: variants, per-family dispatch, listings."""
    files = {}
    for v in variants:
        files[v["header"]] = render_variant(env, v, command)
    by_family = {}
    for v in variants:
        by_family.setdefault(v["family"].name, []).append(v)
    for fname, vs in by_family.items():
        family = FAMILIES[fname]
        # the dispatch headers cover the variants at the family's default choices
        files.update(family.dispatch_files(env, [v for v in vs if family.is_default(v["params"])], command))
    for v in variants:
        v["xargs"] = ", ".join([v["suffix"], v["enum"]] + v["family"].listing_args(v))
    files["ft/variants.h"] = env.get_template("variants.h.j2").render(
        families=sorted(by_family.items()), banner=banner("variants.h.j2", command, "listing"))
    files["variants.cmake"] = env.get_template("variants.cmake.j2").render(
        variants=variants, families=sorted(by_family), command=command)
    return files


def write_if_different(out_dir, files):
    written = []
    for rel, text in sorted(files.items()):
        path = os.path.join(out_dir, rel)
        try:
            with open(path, encoding="utf-8") as f:
                if f.read() == text:
                    continue
        except FileNotFoundError:
            pass
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
        written.append(rel)
    return written


def existing_files(out_dir):
    found = set()
    for base, _, names in os.walk(out_dir):
        for n in names:
            found.add(os.path.relpath(os.path.join(base, n), out_dir).replace(os.sep, "/"))
    return found


def check(out_dir, files):
    """Differences between what the manifest renders and what out_dir holds."""
    problems = []
    for rel, text in sorted(files.items()):
        path = os.path.join(out_dir, rel)
        if not os.path.exists(path):
            problems.append(f"missing: {rel}")
            continue
        with open(path, encoding="utf-8") as f:
            old = f.read()
        if old != text:
            diff = list(difflib.unified_diff(old.splitlines(), text.splitlines(), lineterm="", n=0))
            first = next((d for d in diff[2:] if not d.startswith("@@")), "")
            problems.append(f"stale: {rel} ({len(diff) - 2} diff lines; first: {first[:100]})")
    for rel in sorted(existing_files(out_dir) - set(files)):
        problems.append(f"extra (not in the manifest): {rel}")
    return problems


# ---------------------------------------------------------------- command line

def parse_list(text, conv=str):
    return [conv(x.strip()) for x in text.split(",") if x.strip()]


def on_demand_variants(args):
    family = FAMILIES.get(args.family)
    if family is None:
        raise VariantError(f"unknown family '{args.family}' (known: {', '.join(FAMILIES)})")
    lists = {}
    for dim, text, conv in (("dtype", args.dtype, str), ("width", args.width, int),
                            ("head_size", args.head_size, int), ("k", args.k, int)):
        if text is None:
            continue
        try:
            lists[dim] = parse_list(text, conv)
        except ValueError:
            raise VariantError(f"--{dim}: cannot read '{text}'") from None
        if dim not in family.dims:
            raise VariantError(f"{family.name}: no dimension '{dim}' (dimensions: {', '.join(family.dims)})")
    if "dtype" not in lists:
        raise VariantError(f"{family.name}: --dtype is required")
    return expand(family, lists)


def on_demand_command(args):
    cmd = ["python3", "gen/ftgen.py", "--family", args.family]
    for opt, val in (("--head-size", args.head_size), ("--k", args.k), ("--width", args.width),
                     ("--dtype", args.dtype)):
        if val is not None:
            cmd += [opt, val]
    return " ".join(cmd)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="ftgen.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--manifest", default=MANIFEST, help="variant manifest (default gen/variants.toml)")
    ap.add_argument("--out", help="output folder (default generated/ for the manifest)")
    ap.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 if stale")
    ap.add_argument("--list", action="store_true", help="print the manifest's variant ids")
    ap.add_argument("--prune", action="store_true", help="delete files in the output that the manifest no longer makes")
    ap.add_argument("--family", help="generate on demand: family name (e.g. norm)")
    ap.add_argument("--dtype", help="on demand: dtype list, e.g. fp16,bf16")
    ap.add_argument("--width", help="on demand: vector copy width list in bytes (4, 8, 16)")
    ap.add_argument("--head-size", help="on demand (attention): head size list, e.g. 80,96")
    ap.add_argument("--k", help="on demand (topk): K list, e.g. 40,128")
    ap.add_argument("--print-outputs", action="store_true", help="on demand: print header paths, write nothing")
    args = ap.parse_args(argv)

    env = environment()
    try:
        if args.family:
            variants = on_demand_variants(args)
            if args.print_outputs:
                print("\n".join(v["header"] for v in variants))
                return 0
            if not args.out:
                raise VariantError("--out is required with --family (generated/ holds the manifest's variants)")
            command = on_demand_command(args)
            files = {v["header"]: render_variant(env, v, command) for v in variants}
            for rel in write_if_different(args.out, files):
                print(f"ftgen: wrote {os.path.join(args.out, rel)}")
            return 0
        if args.dtype or args.width or args.head_size or args.k or args.print_outputs:
            raise VariantError("--dtype/--width/--head-size/--k/--print-outputs need --family")
        variants = load_manifest(args.manifest)
    except VariantError as e:
        print(f"ftgen: {e}", file=sys.stderr)
        return 2

    if args.list:
        print("\n".join(v["id"] for v in variants))
        return 0
    command = "python3 gen/ftgen.py"
    if os.path.abspath(args.manifest) != MANIFEST:
        command += f" --manifest {os.path.basename(args.manifest)}"
    files = render_manifest(env, variants, command)
    out_dir = args.out or GENERATED

    if args.check:
        problems = check(out_dir, files)
        if problems:
            print(f"ftgen: {out_dir} is stale; run `python3 gen/ftgen.py` and commit the result:", file=sys.stderr)
            for p in problems:
                print("  " + p, file=sys.stderr)
            return 1
        print(f"ftgen: {len(files)} generated files up to date")
        return 0

    for rel in write_if_different(out_dir, files):
        print(f"ftgen: wrote {rel}")
    extra = sorted(existing_files(out_dir) - set(files)) if os.path.isdir(out_dir) else []
    for rel in extra:
        if args.prune:
            os.remove(os.path.join(out_dir, rel))
            print(f"ftgen: removed {rel}")
        else:
            print(f"ftgen: warning: {rel} is not made by the manifest (--prune removes it)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
