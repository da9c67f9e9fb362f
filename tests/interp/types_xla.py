#!/usr/bin/env python3
"""types_xla.py — ctest interp.types_vs_xla: the interpreter's complex numbers, f8 types,
select-and-scatter, variadic reduce-window and batch-grouped convolution against XLA itself.

Each case is a small JAX function: jax lowers it to HLO text (what XLA:CPU compiles), XLA:CPU
runs it, and `fxplain run --backend interp` runs the same HLO on the same inputs (.npy files).
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
    ("f8e4m3fn arithmetic", f8_arith(jnp.float8_e4m3fn),
     [(rng.standard_normal(64) * 8).astype(np.float32), (rng.standard_normal(64) * 8).astype(np.float32)], 0),
    ("f8e5m2 arithmetic", f8_arith(jnp.float8_e5m2),
     [(rng.standard_normal(64) * 8).astype(np.float32), (rng.standard_normal(64) * 8).astype(np.float32)], 0),
    ("select-and-scatter (max-pool gradient)", maxpool_grad, [rng.standard_normal((6, 7)).astype(np.float32)], 0),
    ("variadic reduce-window (windowed argmax)", argmax_window,
     [rng.standard_normal(9).astype(np.float32), np.arange(9, dtype=np.int32)], 0),
    ("convolution with batch_group_count=2", conv_bgc,
     [rng.standard_normal((4, 7, 3)).astype(np.float32), rng.standard_normal((3, 3, 6)).astype(np.float32)], 2e-6),
]


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
for c, (name, fn, args, tol) in enumerate(CASES):
    hlo = jax.jit(fn).lower(*args).as_text(dialect="hlo")
    want = jax.jit(fn)(*args)
    want = [np.asarray(w) for w in (want if isinstance(want, tuple) else (want,))]
    path = os.path.join(work, f"case{c}.hlo")
    with open(path, "w") as f:
        f.write(hlo)
    cmd = "run --backend interp"
    for k, a in enumerate(args):
        np.save(os.path.join(work, f"in{c}_{k}.npy"), a)
        cmd += f" --input {k}={work}/in{c}_{k}.npy"
    outs = [f"out.{k}" for k in range(len(want))] if len(want) > 1 or "->(" in hlo.split("\n")[0] else ["out"]
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
