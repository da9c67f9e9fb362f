#!/usr/bin/env python3
"""types_xla.py — ctest interp.types_vs_xla: the interpreter's complex numbers, f8 types,
select-and-scatter, variadic reduce-window, dot and convolution layouts (groups, dilations,
padding, batch dims), batch-grouped convolution, fft, triangular-solve,
cholesky and the batch-norm ops against XLA itself.

Each case is a small JAX function: jax lowers it to HLO text (what XLA:CPU compiles), XLA:CPU
runs it, and `fxplain run --backend interp` runs the same HLO on the same inputs (.npy files).
Where jax on the CPU would call LAPACK (triangular-solve, cholesky) or has no such op (batch-norm),
the HLO op is written out here and XLA:CPU computes the expected values with jax's own functions.
Every output must agree: exactly for f8, integers, pred, and outputs that XLA and the interpreter
compute with the same correctly rounded operations; within 2e-6 (c64/f32) or 1e-12 (c128/f64)
relative to the largest magnitude where library functions (exp, log, sin, ...) may differ in the
last bits. f8 values cannot travel in .npy files, so the f8 cases convert f32 inputs to f8 inside
the program and convert their results back. Each program also runs on the CPU backend with
--check (agreement with the interpreter). Needs jax; without it, exits 77 (skipped).
Usage: types_xla.py FXPLAIN WORKDIR
"""
import os
import subprocess
import sys

try:
    import numpy as np
    import jax
    import jax.numpy as jnp
    from jax import lax
except Exception as e:  # jax or numpy missing
    print(f"skipped: jax is not installed ({e})")
    sys.exit(77)

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_platforms", "cpu")

fxplain, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(2026)


def cplx(n, dt):
    return (rng.standard_normal(n) * 2 + 1j * rng.standard_normal(n) * 2).astype(dt)


# f8 edge values: ties, the largest finite values, overflow, subnormals, zeros, inf and NaN
F8_EDGES = np.array([0, -0.0, 1, 1.0625, 1.1875, -2.5, 0.3, 448, 464, 465, 480, 500, 57344, 61439, 61440, 1e6,
                     2.0**-9, 2.0**-10, 2.0**-16, 2.0**-17, 3 * 2.0**-10, np.inf, -np.inf, np.nan], dtype=np.float32)


def f8_roundtrip(dt):
    return lambda x: x.astype(dt).astype(jnp.float32)


def f8_arith(dt):
    def f(x, y):
        a, b = x.astype(dt), y.astype(dt)
        return ((a + b).astype(jnp.float32), (a * b).astype(jnp.float32), (a - b).astype(jnp.float32),
                (a / b).astype(jnp.float32), jnp.maximum(a, b).astype(jnp.float32), (a < b))
    return f


def maxpool_grad(x):
    return jax.grad(lambda v: (lax.reduce_window(v, -jnp.inf, lax.max, (2, 3), (2, 1), "SAME") ** 2).sum())(x)


def argmax_window(x, i):
    def red(a, b):
        take = b[0] > a[0]
        return (jnp.where(take, b[0], a[0]), jnp.where(take, b[1], a[1]))
    return lax.reduce_window((x, i), (jnp.float32(-jnp.inf), jnp.int32(-1)), red, (3,), (1,), "VALID")


def conv_bgc(x, k):
    return lax.conv_general_dilated(x, k, (1,), "VALID", dimension_numbers=("NWC", "WIO", "NWC"), batch_group_count=2)


def contractions(x3, y3, z4, img, ker, img_nchw, ker_oihw):
    """dot_general and conv_general_dilated in the layouts and window settings the interpreter's
    packed dot and convolution must handle: batch dims, two contracting dims, stride, padding,
    both dilations, feature groups (depthwise too), and the NCHW/OIHW layout."""
    dn = ("NHWC", "HWIO", "NHWC")
    return (lax.dot_general(x3, y3, (((2,), (1,)), ((0,), (0,)))),
            lax.dot_general(x3, z4, (((1, 2), (2, 0)), ((), ()))),
            lax.conv_general_dilated(img, ker, (2, 1), ((1, 1), (0, 2)), lhs_dilation=(1, 2), rhs_dilation=(2, 1),
                                     dimension_numbers=dn, feature_group_count=2),
            lax.conv_general_dilated(img, ker[:, :, :1, :6], (1, 1), "SAME",
                                     dimension_numbers=dn, feature_group_count=6),
            lax.conv_general_dilated(img_nchw, ker_oihw, (1, 2), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW")))


CASES = [
    ("c64 arithmetic", lambda a, b: (a + b, a - b, a * b, a / b, a == b, a != b, lax.complex(a.real, b.imag)),
     [cplx(16, np.complex64), cplx(16, np.complex64)], 2e-6),
    ("c64 functions", lambda a: (jnp.abs(a), a.real, a.imag, -a, jnp.exp(a), jnp.log(a), jnp.sqrt(a), jnp.sign(a),
                                 lax.rsqrt(a), jnp.tanh(a), a ** 2.5),
     [cplx(16, np.complex64)], 2e-6),
    ("c128 arithmetic and functions", lambda a, b: (a * b, a / b, jnp.exp(a), jnp.log(b), jnp.sqrt(a), jnp.abs(b),
                                                    jnp.sin(a), jnp.cos(b)),
     [cplx(16, np.complex128), cplx(16, np.complex128)], 1e-12),
    ("complex convert, dot and reduce", lambda x, a, m: (x.astype(jnp.complex64), a.astype(jnp.complex128),
                                                         jnp.dot(a, a), m @ a, jnp.sum(m, axis=1), jnp.prod(a)),
     [rng.standard_normal(6).astype(np.float32), cplx(6, np.complex64),
      (rng.standard_normal((3, 6)) + 1j * rng.standard_normal((3, 6))).astype(np.complex64)], 2e-6),
    ("f8e4m3fn conversion", f8_roundtrip(jnp.float8_e4m3fn), [F8_EDGES], 0),
    ("f8e5m2 conversion", f8_roundtrip(jnp.float8_e5m2), [F8_EDGES], 0),
    ("f8e4m3fn conversion of random values", f8_roundtrip(jnp.float8_e4m3fn),
     [(rng.standard_normal(256) * 64).astype(np.float32)], 0),
    ("f8e5m2 conversion of random values", f8_roundtrip(jnp.float8_e5m2),
     [(rng.standard_normal(256) * 4096).astype(np.float32)], 0),
    *[(f"{name} conversion and arithmetic", (lambda dt: lambda x, y: (f8_roundtrip(dt)(x), *f8_arith(dt)(y, x[:64])))(dt),
       [np.concatenate([F8_EDGES, F8_EDGES / 64, (rng.standard_normal(64) * 16).astype(np.float32)]),
        (rng.standard_normal(64) * 4).astype(np.float32)], 0)
      for name, dt in (("f8e4m3fnuz", jnp.float8_e4m3fnuz), ("f8e5m2fnuz", jnp.float8_e5m2fnuz),
                       ("f8e4m3b11fnuz", jnp.float8_e4m3b11fnuz), ("f8e4m3", jnp.float8_e4m3),
                       ("f8e3m4", jnp.float8_e3m4))],
    ("f8e4m3fn arithmetic", f8_arith(jnp.float8_e4m3fn),
     [(rng.standard_normal(64) * 8).astype(np.float32), (rng.standard_normal(64) * 8).astype(np.float32)], 0),
    ("f8e5m2 arithmetic", f8_arith(jnp.float8_e5m2),
     [(rng.standard_normal(64) * 8).astype(np.float32), (rng.standard_normal(64) * 8).astype(np.float32)], 0),
    ("select-and-scatter (max-pool gradient)", maxpool_grad, [rng.standard_normal((6, 7)).astype(np.float32)], 0),
    ("variadic reduce-window (windowed argmax)", argmax_window,
     [rng.standard_normal(9).astype(np.float32), np.arange(9, dtype=np.int32)], 0),
    ("fft: FFT, IFFT, RFFT, IRFFT in 1 and 2 dimensions",
     lambda a, r: (jnp.fft.fft(a), jnp.fft.ifft(a), jnp.fft.rfft(r), jnp.fft.irfft(jnp.fft.rfft(r), n=8),
                   jnp.fft.fft2(a.reshape(2, 8)[:, :4]), jnp.fft.rfft2(r.reshape(2, 4)), jnp.fft.irfft(a[:5], n=8),
                   jnp.fft.irfftn(a.reshape(2, 8)[:, :3], s=(2, 5))),
     [cplx(16, np.complex64), rng.standard_normal(8).astype(np.float32)], 2e-6),
    ("fft in c128", lambda a: (jnp.fft.fft(a), jnp.fft.ifft(a), jnp.fft.irfft(a, n=30)), [cplx(16, np.complex128)], 1e-12),
    ("dot and convolution: batch dims, two contracting dims, strides, padding, dilations, groups, NCHW",
     contractions,
     [rng.standard_normal((3, 5, 7)).astype(np.float32), rng.standard_normal((3, 7, 6)).astype(np.float32),
      rng.standard_normal((7, 4, 5)).astype(np.float32), rng.standard_normal((2, 7, 8, 6)).astype(np.float32),
      rng.standard_normal((3, 3, 3, 8)).astype(np.float32), rng.standard_normal((2, 4, 9, 10)).astype(np.float32),
      rng.standard_normal((5, 4, 3, 2)).astype(np.float32)], 1e-5),
    ("convolution with batch_group_count=2", conv_bgc,
     [rng.standard_normal((4, 7, 3)).astype(np.float32), rng.standard_normal((3, 3, 6)).astype(np.float32)], 2e-6),
]


def tri_solve_hlo(ty, ashape, bshape, variants):
    """HLO text with one triangular-solve per (left, lower, transpose_a, unit) in variants (on the
    CPU, jax calls LAPACK through a custom call instead, so the HLO op is written here)."""
    dims = lambda s: ",".join(map(str, s))
    lines = [f"HloModule tri\nENTRY main {{\n  a = {ty}[{dims(ashape)}] parameter(0)\n  b = {ty}[{dims(bshape)}] parameter(1)\n"
             f"  c = {ty}[{dims(bshape[:-2] + bshape[-1:] + bshape[-2:-1])}] parameter(2)"]
    names, shapes = [], []
    for k, (left, lower, tr, unit) in enumerate(variants):
        rhs, shp = ("b", bshape) if left else ("c", bshape[:-2] + bshape[-1:] + bshape[-2:-1])
        lines.append(f"  t{k} = {ty}[{dims(shp)}] triangular-solve(a, {rhs}), left_side={str(left).lower()}, "
                     f"lower={str(lower).lower()}, unit_diagonal={str(unit).lower()}, transpose_a={tr}")
        names.append(f"t{k}")
        shapes.append(f"{ty}[{dims(shp)}]")
    lines.append(f"  ROOT r = ({', '.join(shapes)}) tuple({', '.join(names)})\n}}\n")
    return "\n".join(lines)


TRI = [(left, lower, tr, unit) for left in (True, False) for lower in (True, False)
       for tr in ("NO_TRANSPOSE", "TRANSPOSE") for unit in (False, True)]
TRI_C = [(True, True, "ADJOINT", False), (False, False, "ADJOINT", True), (True, False, "TRANSPOSE", False)]


def tri_solve_jax(variants):
    def f(a, b, c):
        return tuple(lax.linalg.triangular_solve(a, b if left else c, left_side=left, lower=lower,
                                                 transpose_a=tr != "NO_TRANSPOSE", conjugate_a=tr == "ADJOINT",
                                                 unit_diagonal=unit) for left, lower, tr, unit in variants)
    return f


CASES += [
    ("triangular-solve: both sides, both triangles, transposed, unit diagonal", tri_solve_jax(TRI),
     [(rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)).astype(np.float32), rng.standard_normal((2, 4, 3)).astype(np.float32),
      rng.standard_normal((2, 3, 4)).astype(np.float32)], 2e-5, tri_solve_hlo("f32", (2, 4, 4), (2, 4, 3), TRI)),
    ("triangular-solve in c64 with the adjoint", tri_solve_jax(TRI_C),
     [(cplx(16, np.complex64).reshape(4, 4) + 4 * np.eye(4)).astype(np.complex64), cplx(8, np.complex64).reshape(4, 2),
      cplx(8, np.complex64).reshape(2, 4)], 2e-5, tri_solve_hlo("c64", (4, 4), (4, 2), TRI_C)),
    ("cholesky, lower and upper, f64 and c128",
     lambda a, h: (jnp.tril(lax.linalg.cholesky(a)), jnp.swapaxes(jnp.tril(lax.linalg.cholesky(a)), -1, -2),
                   jnp.tril(lax.linalg.cholesky(h))),
     [(lambda m: m @ np.swapaxes(m, -1, -2) + 5 * np.eye(5))(rng.standard_normal((2, 5, 5))), None], 1e-12,
     "HloModule chol\nENTRY main {\n  a = f64[2,5,5] parameter(0)\n  h = c128[4,4] parameter(1)\n"
     "  l = f64[2,5,5] cholesky(a), lower=true\n  u = f64[2,5,5] cholesky(a), lower=false\n"
     "  lh = c128[4,4] cholesky(h), lower=true\n  ROOT r = (f64[2,5,5], f64[2,5,5], c128[4,4]) tuple(l, u, lh)\n}\n"),
]


def batch_norm_jax(x, scale, offset, dy):
    """XLA's batch-norm ops written out in jnp (feature dimension 1, epsilon 0.001); the gradient
    is jax's own differentiation of the training-mode normalization."""
    eps = np.float32(0.001)
    axes = (0, 2)
    bc = lambda v: v[None, :, None]

    def train(x, scale, offset):
        mean, var = x.mean(axes), x.var(axes)
        return (x - bc(mean)) / jnp.sqrt(bc(var) + eps) * bc(scale) + bc(offset)

    mean, var = x.mean(axes), x.var(axes)
    _, vjp = jax.vjp(train, x, scale, offset)
    gx, gs, go = vjp(dy)
    infer = (x - bc(mean) * 0.5) / jnp.sqrt(bc(var) * 2 + eps) * bc(scale) + bc(offset)
    return train(x, scale, offset), mean, var, infer, gx, gs, go


CASES.append(
    ("batch-norm training, inference and grad", batch_norm_jax,
     [rng.standard_normal((4, 3, 5)).astype(np.float32), rng.standard_normal(3).astype(np.float32),
      rng.standard_normal(3).astype(np.float32), rng.standard_normal((4, 3, 5)).astype(np.float32)], 2e-5,
     "HloModule bn\nENTRY main {\n  x = f32[4,3,5] parameter(0)\n  s = f32[3] parameter(1)\n  o = f32[3] parameter(2)\n"
     "  dy = f32[4,3,5] parameter(3)\n"
     "  t = (f32[4,3,5], f32[3], f32[3]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1\n"
     "  y = f32[4,3,5] get-tuple-element(t), index=0\n  m = f32[3] get-tuple-element(t), index=1\n"
     "  v = f32[3] get-tuple-element(t), index=2\n  half = f32[3] constant({0.5, 0.5, 0.5})\n"
     "  two = f32[3] constant({2, 2, 2})\n  mh = f32[3] multiply(m, half)\n  v2 = f32[3] multiply(v, two)\n"
     "  i = f32[4,3,5] batch-norm-inference(x, s, o, mh, v2), epsilon=0.001, feature_index=1\n"
     "  g = (f32[4,3,5], f32[3], f32[3]) batch-norm-grad(x, s, m, v, dy), epsilon=0.001, feature_index=1\n"
     "  gx = f32[4,3,5] get-tuple-element(g), index=0\n  gs = f32[3] get-tuple-element(g), index=1\n"
     "  go = f32[3] get-tuple-element(g), index=2\n"
     "  ROOT r = (f32[4,3,5], f32[3], f32[3], f32[4,3,5], f32[4,3,5], f32[3], f32[3]) tuple(y, m, v, i, gx, gs, go)\n}\n"))
_h = cplx(16, np.complex128).reshape(4, 4)
CASES[-2][2][1] = (_h @ _h.conj().T + 5 * np.eye(4)).astype(np.complex128)


def agree(got, want, tol):
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{got.dtype}{list(got.shape)} differs from XLA's {want.dtype}{list(want.shape)}"
    if tol == 0 or want.dtype.kind in "biu":
        same = (got == want) | ((got != got) & (want != want))
        if not np.all(same):
            k = int(np.argmin(same.ravel()))
            return f"element {k} is {got.ravel()[k]!r}, XLA has {want.ravel()[k]!r}"
        return None
    scale = max(1.0, float(np.max(np.abs(want[np.isfinite(want)]), initial=0)))
    err = np.where(np.isnan(want) & np.isnan(got), 0, np.abs(got - want) / scale)
    if not np.all(err <= tol):
        k = int(np.nanargmax(np.where(np.isnan(err), np.inf, err).ravel()))
        return f"element {k} is {got.ravel()[k]!r}, XLA has {want.ravel()[k]!r} (error {err.ravel()[k]:.3g} > {tol})"
    return None


failures = 0
for c, (name, fn, args, tol, *given) in enumerate(CASES):
    hlo = given[0] if given else jax.jit(fn).lower(*args).as_text(dialect="hlo")
    want = jax.jit(fn)(*args)
    want = [np.asarray(w) for w in (want if isinstance(want, tuple) else (want,))]
    path = os.path.join(work, f"case{c}.hlo")
    with open(path, "w") as f:
        f.write(hlo)
    cmd = "run --backend interp"
    for k, a in enumerate(args):
        np.save(os.path.join(work, f"in{c}_{k}.npy"), a)
        cmd += f" --input {k}={work}/in{c}_{k}.npy"
    outs = [f"out.{k}" for k in range(len(want))] if len(want) > 1 or "->(" in hlo.split("\n")[0] or given else ["out"]
    for k, o in enumerate(outs):
        cmd += f" --save {o}={work}/out{c}_{k}.npy"
    # then the CPU backend on the same inputs, checked against the interpreter (what it does not
    # generate runs on the interpreter's implementation; the rest must agree within tolerance)
    cmd += "; " + cmd.replace("--backend interp", "--backend cpu --check").split(" --save")[0]
    p = subprocess.run([fxplain, path, "-e", cmd], capture_output=True, text=True)
    if p.returncode != 0:
        print(f"FAIL {name}: fxplain failed:\n{p.stdout}{p.stderr}")
        failures += 1
        continue
    bad = []
    for k, w in enumerate(want):
        why = agree(np.load(os.path.join(work, f"out{c}_{k}.npy")), w, tol)
        if why:
            bad.append(f"  output {k}: {why}")
    if bad:
        failures += 1
        print(f"FAIL {name}:\n" + "\n".join(bad))
    else:
        print(f"ok   {name} ({len(want)} output{'s' if len(want) > 1 else ''})")

print(f"interpreter vs XLA (jax {jax.__version__}): {len(CASES)} cases, {failures} differ")
sys.exit(1 if failures else 0)
