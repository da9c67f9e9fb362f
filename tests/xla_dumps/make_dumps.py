#!/usr/bin/env python3
"""make_dumps.py — real XLA:GPU dumps of small JAX programs (deviceless), for the dump tests.

  make_dumps.py OUTDIR TXTPB [PROGRAM ...] [--fusion-only]

PROGRAM is one of: mlp (the committed fixture's program), block (a transformer block: attention
and an MLP under jax.named_scope), train (an MLP training step with an Adam update), cartpole (the
paper's CartPole step: state update, reward, resets). Each is compiled for the GPU TXTPB describes
with XLA_FLAGS dumping every pass (--fusion-only: only the fusion pipeline's snapshots) into
OUTDIR/PROGRAM. Needs jax, jaxlib, jax-cuda13-plugin and jax-cuda13-pjrt (0.10.2); exits 77 when
they are missing. Prints each program's source file and the line numbers the tests look for.
"""
import os
import subprocess
import sys

PROGRAMS = {
    "mlp": '''
def f(x, w, b):
    with jax.named_scope("layer"):
        h = jnp.tanh(x @ w + b)          # LINE:dense
    return jax.nn.softmax(h * 2.0, axis=-1)
args = [S(64, 32), S(32, 32), S(32)]
''',
    "block": '''
def f(x, wq, wk, wv, wo, w1, w2):
    with jax.named_scope("attention"):
        q = x @ wq; k = x @ wk; v = x @ wv
        s = jax.nn.softmax(q @ k.T / 8.0, axis=-1)   # LINE:softmax
        a = s @ v @ wo
    x = x + a
    with jax.named_scope("mlp"):
        m = x - x.mean(-1, keepdims=True)
        h = m / jnp.sqrt((m * m).mean(-1, keepdims=True) + 1e-5)
        y = jax.nn.gelu(h @ w1) @ w2                   # LINE:gelu
    return x + y
args = [S(128, 64), S(64, 64), S(64, 64), S(64, 64), S(64, 64), S(64, 256), S(256, 64)]
''',
    "train": '''
def loss(w1, w2, x, y):
    h = jax.nn.relu(x @ w1)
    return ((h @ w2 - y) ** 2).mean()
def f(w1, w2, m1, m2, v1, v2, x, y):
    g1, g2 = jax.grad(loss, argnums=(0, 1))(w1, w2, x, y)
    with jax.named_scope("adam"):
        out = []
        for w, g, m, v in ((w1, g1, m1, v1), (w2, g2, m2, v2)):
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            w = w - 1e-3 * m / (jnp.sqrt(v) + 1e-8)    # LINE:adam
            out += [w, m, v]
    return out
args = [S(32, 64), S(64, 8), S(32, 64), S(64, 8), S(32, 64), S(64, 8), S(256, 32), S(256, 8)]
''',
    "cartpole": '''
def f(state, key):
    x, x_dot, theta, theta_dot = state[:, 0], state[:, 1], state[:, 2], state[:, 3]
    action = jax.random.bernoulli(key, 0.5, x.shape)
    force = jnp.where(action, 10.0, -10.0)
    costheta, sintheta = jnp.cos(theta), jnp.sin(theta)
    temp = (force + 0.05 * theta_dot ** 2 * sintheta) / 1.1
    thetaacc = (9.8 * sintheta - costheta * temp) / (0.5 * (4.0 / 3.0 - 0.1 * costheta ** 2 / 1.1))  # LINE:thetaacc
    xacc = temp - 0.05 * thetaacc * costheta / 1.1
    x = x + 0.02 * x_dot; x_dot = x_dot + 0.02 * xacc
    theta = theta + 0.02 * theta_dot; theta_dot = theta_dot + 0.02 * thetaacc
    done = (x < -2.4) | (x > 2.4) | (theta < -0.21) | (theta > 0.21)
    new = jnp.stack([x, x_dot, theta, theta_dot], axis=1)
    return jnp.where(done[:, None], 0.0, new), jnp.sum(1.0 - done)
args = [S(2048, 4), jax.ShapeDtypeStruct((2,), jnp.uint32, sharding=sh)]
''',
}

HEAD = '''import sys, jax, jax.numpy as jnp
from jax.experimental import topologies
from jax.sharding import SingleDeviceSharding
topo = topologies.get_topology_desc(platform="cuda", target_config=open(sys.argv[1]).read(), topology="1x1x1")
sh = SingleDeviceSharding(topo.devices[0])
S = lambda *d: jax.ShapeDtypeStruct(d, jnp.float32, sharding=sh)
'''


def main():
    argv = [a for a in sys.argv[1:] if not a.startswith("--")]
    fusion_only = "--fusion-only" in sys.argv
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out, txtpb, names = argv[0], argv[1], argv[2:] or list(PROGRAMS)
    try:
        import jax  # noqa: F401
        import jax_plugins.xla_cuda13  # noqa: F401
    except Exception as e:  # pragma: no cover - depends on the machine
        print(f"skipped: jax with its CUDA plugin is not installed ({e})")
        return 77
    os.makedirs(out, exist_ok=True)
    for name in names:
        src = os.path.join(out, f"{name}.py")
        body = PROGRAMS[name]
        with open(src, "w") as f:
            f.write(HEAD + body + "jax.jit(f).lower(*args).compile()\n")
        dump = os.path.join(out, name)
        flags = [f"--xla_dump_to={dump}", "--xla_dump_hlo_as_text", "--xla_dump_hlo_pass_re=.*"]
        if fusion_only:
            flags.append("--xla_dump_hlo_pipeline_re=^fusion$")
        env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=" ".join(flags))
        r = subprocess.run([sys.executable, src, txtpb], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr[-3000:], file=sys.stderr)
            return 1
        lines = {}
        with open(src) as f:
            for k, line in enumerate(f, 1):
                if "# LINE:" in line:
                    lines[line.split("# LINE:")[1].strip()] = k
        print(name, src, " ".join(f"{k}={v}" for k, v in lines.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
