#!/usr/bin/env python3
"""Writes the programs of tests/xla/programs as JAX lowers them (HLO text before XLA's passes).

    JAX_PLATFORMS=cpu python3 tests/xla/programs/make_programs.py tests/xla/programs

Each is a small JAX program a user writes, for the passes the HLO corpus does not reach: sorts
(jnp.sort, jnp.argsort, lax.sort_key_val, lax.sort of three operands) at sizes on both sides of
XLA:GPU's choice between its own sort kernel and CUB's radix sort (SortRewriter's per-GPU
thresholds), vmapped indexing (batched gathers and scatters), values read by a hundred kernels
(sibling multi-output fusion judges every pair of their readers), normalized residual layers
(a Triton normalization feeding a dot through a bitcast), cumulative sums, products, maxima and
log-sum-exps (XLA:GPU's ReduceWindowRewriter), the gradients of a layer norm and an average
pool (algsimp's rules for reduces of broadcasts and pads under reduce-windows), a masked attention
(DotDimensionMerger), a bf16 cumsum, a masked mean, and top-k XLA's top-k kernel does not take
(TopkDecomposer). XLA's references for them come
from scripts/xla_reference.py (see SOURCE.md here)."""
import os
import sys

import jax
import jax.numpy as jnp
from jax import lax

f32, bf16, s32 = jnp.float32, jnp.bfloat16, jnp.int32


def spec(shape, dtype):
    return jax.ShapeDtypeStruct(shape, dtype)


def residual_mlp(x, w):
    for _ in range(4):
        x = x + jnp.tanh(x @ w) * 0.5
        x = x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)
    return x


def layer_norm_loss(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return ((x - m) * lax.rsqrt(v + 1e-5) * g + b).sum()


def avg_pool_loss(x):
    return ((lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4) ** 2).sum()


def masked_attention(q, k, v, m):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / 8.0
    s = jnp.where(m[:, None, None, :], s, -1e9)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, -1), v)


PROGRAMS = {
    # jnp.sort of f32 rows: NaN-last comparator, one operand
    "sort_rows_f32_64x32768": (lambda x: jnp.sort(x, axis=-1), [spec((64, 32768), f32)]),
    "sort_rows_f32_8x256": (lambda x: jnp.sort(x, axis=-1), [spec((8, 256), f32)]),
    # along a dimension that is not the minor one
    "sort_cols_f32_2048x64": (lambda x: jnp.sort(x, axis=0), [spec((2048, 64), f32)]),
    # argsort: keys and an iota of indices
    "argsort_f32_1x100000": (lambda x: jnp.argsort(x, axis=-1), [spec((1, 100000), f32)]),
    "argsort_bf16_1x65536": (lambda x: jnp.argsort(x, axis=-1), [spec((1, 65536), bf16)]),
    # integer keys: a plain less-than comparator
    "sort_s32_1x50000": (lambda x: lax.sort(x, dimension=1), [spec((1, 50000), s32)]),
    "sort_key_val_s32_f32_1x65536": (lambda k, v: lax.sort_key_val(k, v, dimension=1),
                                     [spec((1, 65536), s32), spec((1, 65536), f32)]),
    # three operands, one key
    "sort_three_f32_16x1024": (lambda k, a, b: lax.sort((k, a, b), dimension=1, num_keys=1),
                               [spec((16, 1024), f32), spec((16, 1024), f32), spec((16, 1024), s32)]),
    # vmapped indexing: gathers and scatters with batching dimensions
    "vmap_gather_f32_16x64": (jax.vmap(lambda x, i: x[i]), [spec((16, 64), f32), spec((16, 8), s32)]),
    "vmap_scatter_add_f32_8x128": (jax.vmap(lambda x, i, u: x.at[i].add(u)),
                                   [spec((8, 128), f32), spec((8, 4), s32), spec((8, 4), f32)]),
    # one value read by many kernels: multi_output_fusion judges every pair of its readers
    # (a hundred row sums of scaled copies of x; ninety maps of x and y)
    "fanout_reduce_f32_32x1024_100": (lambda x: [jnp.sum(x * (k + 1.0), axis=1) for k in range(100)],
                                      [spec((32, 1024), f32)]),
    "fanout_map_f32_64x256_90": (lambda x, y: [jnp.tanh(x + k * y) for k in range(90)],
                                 [spec((64, 256), f32), spec((64, 256), f32)]),
    # residual layers, each normalized (RMS): the normalization (a Triton fusion) feeds the next
    # layer's dot through a bitcast, whose fused time XLA takes from its regular model
    "residual_mlp_f32_64x256_4": (residual_mlp, [spec((64, 256), f32), spec((256, 256), f32)]),
    # cumulative reductions: a reduce-window over a whole dimension, which XLA:GPU's
    # ReduceWindowRewriter turns into a scan of blocks of 16 and a scan of their totals (again,
    # until each is at most 16 long), and reduce-windows of rank 1, which it makes rank 2
    "cumsum_f32_64x1024": (lambda x: jnp.cumsum(x, axis=1), [spec((64, 1024), f32)]),
    "cumsum_f32_4x5000": (lambda x: jnp.cumsum(x, axis=1), [spec((4, 5000), f32)]),
    "cumsum_f32_1000": (lambda x: jnp.cumsum(x), [spec((1000,), f32)]),
    "cumsum_rev_axis0_f32_100x32": (lambda x: lax.cumsum(x, axis=0, reverse=True), [spec((100, 32), f32)]),
    "cumprod_f32_8x300": (lambda x: jnp.cumprod(x, axis=1), [spec((8, 300), f32)]),
    "cummax_f32_16x40": (lambda x: lax.cummax(x, axis=1), [spec((16, 40), f32)]),
    "cumlogsumexp_f32_8x64": (lambda x: lax.cumlogsumexp(x, axis=1), [spec((8, 64), f32)]),
    "window_sum_1d_f32_200": (lambda x: lax.reduce_window(x, 0.0, lax.add, (5,), (1,), "VALID"),
                              [spec((200,), f32)]),
    # gradients whose simplification XLA's algsimp does: a layer norm's (its bias gradient sums a
    # broadcast 1.0: HandleReduce makes it a constant) and a 2x2 average pool's (the gradient padded
    # inside and out and summed in windows: HandleReduceWindow folds the pad into the window)
    "layernorm_grad_f32_64x512": (jax.grad(layer_norm_loss, argnums=(0, 1, 2)),
                                  [spec((64, 512), f32), spec((512,), f32), spec((512,), f32)]),
    "avgpool_grad_f32_4x32x32x16": (jax.grad(avg_pool_loss), [spec((4, 32, 32, 16), f32)]),
    # attention over [batch, heads] with a key mask: XLA merges the dots' two batch dimensions
    # (DotDimensionMerger), and the mask broadcast over the heads stays outside the GEMM
    "attention_mask_f32_2x4x64x32": (masked_attention, [spec((2, 4, 64, 32), f32)] * 3 + [spec((2, 64), jnp.bool_)]),
    # a bf16 cumsum: the pad value convert-mover leaves is folded to a bf16 constant at the end of
    # conv canonicalization; a mean over a mask written as x * mask.astype(x.dtype) (a select)
    "cumsum_bf16_32x300": (lambda x: jnp.cumsum(x.astype(f32), axis=-1).astype(bf16), [spec((32, 300), bf16)]),
    "masked_mean_f32_64x128": (lambda x, m: jnp.sum(x * m.astype(f32), -1) / jnp.sum(m.astype(f32), -1),
                               [spec((64, 128), f32), spec((64, 128), jnp.bool_)]),
    # top-k that XLA's own top-k kernel does not take (k > 16: sampling from a vocabulary; rows
    # shorter than 1,024): XLA's TopkDecomposer makes them a stable sort and slices
    "topk_k50_f32_4x32000": (lambda x: lax.top_k(x, 50), [spec((4, 32000), f32)]),
    "topk_softmax_f32_64x512": (lambda x: jax.nn.softmax(lax.top_k(x, 8)[0]), [spec((64, 512), f32)]),
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, (fn, args) in PROGRAMS.items():
        text = jax.jit(fn).lower(*args).as_text(dialect="hlo")
        with open(os.path.join(out, name + ".hlo"), "w") as f:
            f.write(text)
        print("wrote", name + ".hlo")


if __name__ == "__main__":
    main()
