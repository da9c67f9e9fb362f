"""cartpole_jax.py — CartPole in JAX on the CPU, for bench_cartpole's comparison row.

The same simulation as scripts/cartpole_separate.fx (four state arrays, random numbers precomputed
in a pool of 100 steps, reused cyclically), jitted with lax.fori_loop and run on the CPU backend
of XLA. Prints the median wall time in seconds of REPEAT runs (compilation excluded).
Usage: python3 cartpole_jax.py N STEPS REPEAT [--serve]. Exits 1 when jax is not installed.
With --serve it compiles, prints "ready", then runs once and prints the time for every line it
reads on stdin (bench_cartpole's back-to-back rounds), until stdin closes."""
import sys
import time

try:
    import jax
    import jax.numpy as jnp
except ImportError:
    sys.exit(1)

jax.config.update("jax_platforms", "cpu")

n, steps, repeat = (int(a) for a in sys.argv[1:4])
pool = 100
gravity, masspole, total_mass, length, polemass_length = 9.8, 0.1, 1.1, 0.5, 0.05
force_mag, tau = 10.0, 0.02
theta_threshold, x_threshold = 12 * 2 * 3.141592653589793 / 360, 2.4


def step(i, carry):
    x, x_dot, theta, theta_dot, actions, fresh = carry
    j = i % pool
    action = actions[j] < 0.5
    fr = fresh[j]
    force = jnp.where(action, force_mag, -force_mag)
    costheta, sintheta = jnp.cos(theta), jnp.sin(theta)
    temp = (force + polemass_length * theta_dot**2 * sintheta) / total_mass
    thetaacc = (gravity * sintheta - costheta * temp) / (
        (4.0 / 3.0 - masspole * costheta**2 / total_mass) * length)
    xacc = temp - polemass_length * thetaacc * costheta / total_mass
    x = x + tau * x_dot
    x_dot = x_dot + tau * xacc
    theta = theta + tau * theta_dot
    theta_dot = theta_dot + tau * thetaacc
    done = (jnp.abs(x) > x_threshold) | (jnp.abs(theta) > theta_threshold)
    x = jnp.where(done, fr[:, 0], x)
    x_dot = jnp.where(done, fr[:, 1], x_dot)
    theta = jnp.where(done, fr[:, 2], theta)
    theta_dot = jnp.where(done, fr[:, 3], theta_dot)
    return (x, x_dot, theta, theta_dot, actions, fresh)


@jax.jit
def run(x, x_dot, theta, theta_dot, actions, fresh):
    return jax.lax.fori_loop(0, steps, step, (x, x_dot, theta, theta_dot, actions, fresh))[:4]


key = jax.random.PRNGKey(0)
k = jax.random.split(key, 6)
state = [jax.random.uniform(k[q], (n,), jnp.float32, -0.05, 0.05) for q in range(4)]
actions = jax.random.uniform(k[4], (pool, n), jnp.float32)
fresh = jax.random.uniform(k[5], (pool, n, 4), jnp.float32, -0.05, 0.05)
jax.block_until_ready(run(*state, actions, fresh))  # compile
if "--serve" in sys.argv[4:]:
    print("ready", flush=True)
    for _ in sys.stdin:
        t0 = time.perf_counter()
        jax.block_until_ready(run(*state, actions, fresh))
        print(f"{time.perf_counter() - t0:.6f}", flush=True)
    sys.exit(0)
times = []
for _ in range(repeat):
    t0 = time.perf_counter()
    jax.block_until_ready(run(*state, actions, fresh))
    times.append(time.perf_counter() - t0)
times.sort()
print(f"{times[len(times) // 2]:.6f}")
