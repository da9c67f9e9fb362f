"""cartpole_scan_gpu.py -- the paper's CartPole with jax.lax.scan(..., unroll=10), compiled by real
XLA:GPU (deviceless, for scripts/xla/h100.txtpb), and the module XLA's priority-fusion received.

The program is the one of /work/shared/xla-oracle/cartpole_paper.py (Snider & Liang, Fig. 2: 2048
environments, the state in one f32[2048,4], jax.random actions and resets), with the fori_loop
written as a scan unrolled 10 times: the issue 16 case that took priority-fusion minutes.

Usage: python3 bench/cartpole_scan_gpu.py OUT.hlo [TXTPB]
Writes OUT.hlo (XLA's priority-fusion input, from its pass dump) and prints XLA's whole compile
time in seconds (dumps included, so a little more than a plain compile). With OUT.hlo "-" nothing
is dumped or written: a plain compile, timed (run it with TF_CPP_VMODULE=hlo_pass_pipeline=1 and
read XLA's own pass times from its log with `bench/xla_pass_times.py --log`). Needs jax with the jax-cuda plugin (no GPU). Exits 1 when that is missing.
"""
import glob
import math
import os
import shutil
import sys
import tempfile
import time

out = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
txtpb = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "scripts", "xla", "h100.txtpb")
dump = tempfile.mkdtemp(prefix="cartpole_scan_")
if out != "-":
    os.environ["XLA_FLAGS"] = (f"--xla_dump_to={dump} --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=.* "
                               "--xla_dump_hlo_pipeline_re=^fusion$")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
try:
    import jax
    import jax.numpy as jnp
    from jax.experimental import topologies
except ImportError:
    sys.exit(1)

N_ENVS, N_STEPS, UNROLL = 2048, 10_000, 10
GRAVITY, MASSPOLE, TOTAL_MASS, LENGTH = 9.8, 0.1, 1.1, 0.5
POLEMASS_LENGTH, FORCE_MAG, TAU = 0.05, 10.0, 0.02
THETA_THRESHOLD, X_THRESHOLD = 12 * 2 * math.pi / 360, 2.4


def dynamics(state, action):
    x, x_dot, theta, theta_dot = state[:, 0], state[:, 1], state[:, 2], state[:, 3]
    force = jnp.where(action == 1, FORCE_MAG, -FORCE_MAG)
    costheta, sintheta = jnp.cos(theta), jnp.sin(theta)
    temp = (force + POLEMASS_LENGTH * theta_dot**2 * sintheta) / TOTAL_MASS
    thetaacc = (GRAVITY * sintheta - costheta * temp) / (
        LENGTH * (4.0 / 3.0 - MASSPOLE * costheta**2 / TOTAL_MASS))
    xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
    x, x_dot = x + TAU * x_dot, x_dot + TAU * xacc
    theta, theta_dot = theta + TAU * theta_dot, theta_dot + TAU * thetaacc
    return jnp.stack([x, x_dot, theta, theta_dot], axis=1)


def body(carry, _):
    key, state = carry
    key, k_action, k_reset = jax.random.split(key, 3)
    action = jax.random.randint(k_action, (state.shape[0],), 0, 2)
    state = dynamics(state, action)
    x, theta = state[:, 0], state[:, 2]
    done = (x < -X_THRESHOLD) | (x > X_THRESHOLD) | (theta < -THETA_THRESHOLD) | (theta > THETA_THRESHOLD)
    fresh = jax.random.uniform(k_reset, state.shape, jnp.float32, minval=-0.05, maxval=0.05)
    return (key, jnp.where(done[:, None], fresh, state)), None


def rollout(key, state):
    return jax.lax.scan(body, (key, state), None, length=N_STEPS, unroll=UNROLL)[0]


topo = topologies.get_topology_desc(platform="cuda", target_config=open(txtpb).read(), topology="1x1x1")
sh = jax.sharding.SingleDeviceSharding(topo.devices[0])
args = (jax.ShapeDtypeStruct((2,), jnp.uint32, sharding=sh),
        jax.ShapeDtypeStruct((N_ENVS, 4), jnp.float32, sharding=sh))
t0 = time.perf_counter()
jax.jit(rollout).lower(*args).compile()
seconds = time.perf_counter() - t0
if out == "-":
    shutil.rmtree(dump, ignore_errors=True)
    print(f"{seconds:.2f}")
    sys.exit(0)
# the fusion pipeline's snapshots: the last one before priority-fusion ran (passes that changed
# nothing write none, so that is the pipeline's start when variadic-op-splitter kept the module)
snaps = sorted(glob.glob(os.path.join(dump, "*.fusion.after_*.txt")))
pre = []
for s in snaps:
    if ".after_priority-fusion." in s:
        break
    pre.append(s)
if not pre:
    sys.exit(f"no priority-fusion input in {dump}")
shutil.copyfile(pre[-1], out)
shutil.rmtree(dump, ignore_errors=True)
print(f"{seconds:.2f}")
