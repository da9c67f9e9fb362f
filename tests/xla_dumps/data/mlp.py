import sys, jax, jax.numpy as jnp
from jax.experimental import topologies
from jax.sharding import SingleDeviceSharding
topo = topologies.get_topology_desc(platform="cuda", target_config=open(sys.argv[1]).read(), topology="1x1x1")
sh = SingleDeviceSharding(topo.devices[0])
S = lambda *d: jax.ShapeDtypeStruct(d, jnp.float32, sharding=sh)

def f(x, w, b):
    with jax.named_scope("layer"):
        h = jnp.tanh(x @ w + b)          # LINE:dense
    return jax.nn.softmax(h * 2.0, axis=-1)
args = [S(64, 32), S(32, 32), S(32)]
jax.jit(f).lower(*args).compile()
