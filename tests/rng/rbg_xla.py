#!/usr/bin/env python3
"""rbg_xla.py — ctest rng.bit_generator_vs_xla: fxplain's rng-bit-generator against XLA itself.

For random states, shapes and element types, runs `jax.lax.rng_bit_generator` (XLA:CPU; the
algorithms rng_philox, rng_three_fry and rng_default) and the same HLO instruction through
`fxplain run` (the interpreter, via .npy files), and requires the new state and every bit to be
equal. JAX hands XLA a u64[2] state (its u32[4] key bitcast), so that is the state size checked
here; u64[3] Philox states are covered by unit.test_rng. Needs jax; without it, exits 77
(skipped). Usage: rbg_xla.py FXPLAIN WORKDIR [CASES]
"""
import os
import random
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
cases = int(sys.argv[3]) if len(sys.argv) > 3 else 60
os.makedirs(work, exist_ok=True)
rnd = random.Random(2026)

ALGS = {"rng_philox": lax.RandomAlgorithm.RNG_PHILOX, "rng_three_fry": lax.RandomAlgorithm.RNG_THREE_FRY,
        "rng_default": lax.RandomAlgorithm.RNG_DEFAULT}
TYPES = {"u8": jnp.uint8, "u16": jnp.uint16, "u32": jnp.uint32, "u64": jnp.uint64}


def word():
    return rnd.choice([0, 2**64 - 1, 2**64 - 1 - rnd.randrange(8), 2**32 - 1, rnd.randrange(1000), rnd.getrandbits(64)])


def shape():
    rank = rnd.randrange(0, 4)
    return tuple(rnd.choice([1, 2, 3, 4, 5, 7, 8, 16]) for _ in range(rank))


failures = 0
for c in range(cases):
    alg = rnd.choice(list(ALGS))
    ty = rnd.choice(list(TYPES))
    shp = shape()
    state = [word(), word()]
    key = jnp.array([w for s in state for w in (s & 0xFFFFFFFF, s >> 32)], dtype=jnp.uint32)
    ns, bits = lax.rng_bit_generator(key, shp, dtype=TYPES[ty], algorithm=ALGS[alg])
    ns = np.asarray(ns)
    want_state = np.array([int(ns[2 * i]) | (int(ns[2 * i + 1]) << 32) for i in range(2)], dtype=np.uint64)
    want_bits = np.asarray(bits)

    dims = ",".join(str(d) for d in shp)
    hlo = os.path.join(work, f"c{c}.hlo")
    with open(hlo, "w") as f:
        f.write(f"HloModule c{c}\nENTRY main {{\n  s = u64[2] parameter(0)\n"
                f"  ROOT r = (u64[2], {ty}[{dims}]) rng-bit-generator(s), algorithm={alg}\n}}\n")
    np.save(os.path.join(work, f"s{c}.npy"), np.array(state, dtype=np.uint64))
    o0, o1 = os.path.join(work, f"o{c}.0.npy"), os.path.join(work, f"o{c}.1.npy")
    p = subprocess.run([fxplain, hlo, "-e",
                        f"run --backend interp --input s={work}/s{c}.npy --save out.0={o0} --save out.1={o1}"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(f"case {c}: fxplain failed:\n{p.stdout}{p.stderr}")
        failures += 1
        continue
    got_state, got_bits = np.load(o0), np.load(o1)
    ok = (got_state.dtype == np.uint64 and np.array_equal(got_state, want_state) and got_bits.shape == want_bits.shape
          and got_bits.dtype == want_bits.dtype and np.array_equal(got_bits, want_bits))
    if not ok:
        failures += 1
        print(f"case {c}: {alg} {ty}[{dims}] state {[hex(s) for s in state]} differs from XLA:\n"
              f"  state: got {[hex(int(x)) for x in got_state]} want {[hex(int(x)) for x in want_state]}\n"
              f"  bits:  got {got_bits.ravel()[:8]} want {want_bits.ravel()[:8]}")

print(f"rng-bit-generator: {cases} random cases against XLA (jax {jax.__version__}), {failures} differ")
sys.exit(1 if failures else 0)
