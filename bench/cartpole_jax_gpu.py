"""cartpole_jax_gpu.py -- the paper's CartPole compiled and run by real XLA:GPU (JAX), for the GPU
bench's comparison rows (bench/cartpole_gpu.md).

Three programs, 2048 environments x STEPS steps, each jitted once and then timed (median of
REPEAT runs, compilation excluded, jax.block_until_ready around each run):
  paper       the program of Snider & Liang's Fig. 2 as scripts/cartpole.fx writes it: the state
              in one f32[N,4] array, jax.random actions and resets drawn inside the loop;
  no concat   the state as four arrays, random numbers precomputed in a pool of 100 steps
              (scripts/cartpole_separate.fx, bench/cartpole_jax.py's program);
  unrolled    the same with lax.fori_loop(..., unroll=10).
Prints one line per program: name, median seconds, microseconds per step, and XLA's kernel count
per loop iteration (fusions and custom calls in the loop body of the compiled module).
Usage: python3 bench/cartpole_jax_gpu.py [STEPS] [REPEAT]. Exits 1 without jax, 77 without a GPU.
"""
import math
import re
import sys
import time

try:
    import jax
    import jax.numpy as jnp
except ImportError:
    sys.exit(1)

try:
    gpus = jax.devices("gpu")
except RuntimeError:
    gpus = []
if not gpus:
    print("no GPU for jax here")
    sys.exit(77)

N = 2048
STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
REPEAT = int(sys.argv[2]) if len(sys.argv) > 2 else 5
POOL = 100
GRAVITY, MASSPOLE, TOTAL_MASS, LENGTH = 9.8, 0.1, 1.1, 0.5
POLEMASS_LENGTH, FORCE_MAG, TAU = 0.05, 10.0, 0.02
THETA_T, X_T = 12 * 2 * math.pi / 360, 2.4


def accel(theta, theta_dot, force):
    costheta, sintheta = jnp.cos(theta), jnp.sin(theta)
    temp = (force + POLEMASS_LENGTH * theta_dot**2 * sintheta) / TOTAL_MASS
    thetaacc = (GRAVITY * sintheta - costheta * temp) / (
        LENGTH * (4.0 / 3.0 - MASSPOLE * costheta**2 / TOTAL_MASS))
    xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
    return xacc, thetaacc


def paper_body(i, carry):
    key, state = carry
    key, k_action, k_reset = jax.random.split(key, 3)
    action = jax.random.randint(k_action, (N,), 0, 2)
    x, x_dot, theta, theta_dot = state[:, 0], state[:, 1], state[:, 2], state[:, 3]
    xacc, thetaacc = accel(theta, theta_dot, jnp.where(action == 1, FORCE_MAG, -FORCE_MAG))
    state = jnp.stack([x + TAU * x_dot, x_dot + TAU * xacc, theta + TAU * theta_dot,
                       theta_dot + TAU * thetaacc], axis=1)
    done = (jnp.abs(state[:, 0]) > X_T) | (jnp.abs(state[:, 2]) > THETA_T)
    fresh = jax.random.uniform(k_reset, (N, 4), jnp.float32, -0.05, 0.05)
    return key, jnp.where(done[:, None], fresh, state)


def separate_body(i, carry):
    x, x_dot, theta, theta_dot, actions, fresh = carry
    j = i % POOL
    fr = fresh[j]
    xacc, thetaacc = accel(theta, theta_dot, jnp.where(actions[j] < 0.5, FORCE_MAG, -FORCE_MAG))
    x, x_dot = x + TAU * x_dot, x_dot + TAU * xacc
    theta, theta_dot = theta + TAU * theta_dot, theta_dot + TAU * thetaacc
    done = (jnp.abs(x) > X_T) | (jnp.abs(theta) > THETA_T)
    return (jnp.where(done, fr[:, 0], x), jnp.where(done, fr[:, 1], x_dot), jnp.where(done, fr[:, 2], theta),
            jnp.where(done, fr[:, 3], theta_dot), actions, fresh)


def paper(key, state):
    return jax.lax.fori_loop(0, STEPS, paper_body, (key, state))[1]


def separate(unroll):
    def run(x, x_dot, theta, theta_dot, actions, fresh):
        return jax.lax.fori_loop(0, STEPS, separate_body, (x, x_dot, theta, theta_dot, actions, fresh),
                                 unroll=unroll)[:4]
    return run


def loop_kernels(text):
    """Kernels XLA launches per iteration: fusions and custom calls in the while loop's body."""
    body = re.search(r"body=%?([\w.\-]+)", text)
    if not body:
        return "-"
    m = re.search(r"\n(?:ENTRY )?%?" + re.escape(body.group(1)) + r" [^\n]*\{\n(.*?)\n\}", text, re.S)
    if not m:
        return "-"
    return str(len(re.findall(r"= [^=\n]*\b(fusion|custom-call)\(", m.group(1))))


def time_it(name, fn, args, steps_per_run):
    comp = jax.jit(fn).lower(*args).compile()
    jax.block_until_ready(comp(*args))
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        jax.block_until_ready(comp(*args))
        times.append(time.perf_counter() - t0)
    times.sort()
    med = times[len(times) // 2]
    print(f"{name:<12} {med:10.4f} s {med / steps_per_run * 1e6:10.2f} us/step   kernels per iteration "
          f"{loop_kernels(comp.as_text())}", flush=True)


print(f"XLA:GPU (jax {jax.__version__}) on {gpus[0].device_kind}: {N} environments x {STEPS} steps, "
      f"median of {REPEAT}")
key = jax.random.PRNGKey(0)
ks = jax.random.split(key, 7)
time_it("paper", paper, (ks[0], jax.random.uniform(ks[1], (N, 4), jnp.float32, -0.05, 0.05)), STEPS)
state = [jax.random.uniform(ks[2 + q], (N,), jnp.float32, -0.05, 0.05) for q in range(4)]
pool = (jax.random.uniform(ks[6], (POOL, N), jnp.float32),
        jax.random.uniform(ks[5], (POOL, N, 4), jnp.float32, -0.05, 0.05))
time_it("no concat", separate(1), (*state, *pool), STEPS)
time_it("unrolled", separate(10), (*state, *pool), STEPS)
