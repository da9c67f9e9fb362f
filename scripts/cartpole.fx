# cartpole.fx — the paper's CartPole baseline (Fig. 2, §IV–V of "Operator Fusion in XLA").
#
# 2048 cart-pole environments stepped 10,000 times in one loop, as the JAX program does with
# lax.fori_loop. The state of all environments is one f32[2048, 4] array whose columns are
# x, x_dot, theta, theta_dot. Each step draws random numbers from a threefry RNG call keyed by
# a carried key (as jax.random does on a GPU), takes a random action (force +10 or -10), moves
# every cart by one Euler step of the dynamics, concatenates the four new columns back into one
# array (the concatenate with several users that XLA refuses to fuse), and resets the
# environments that fell over (|x| > 2.4 or |theta| > 12 degrees) to a fresh random state in
# [-0.05, 0.05].
#
# Variants with the same math: cartpole_pre_rng.fx (random numbers precomputed and passed in)
# and cartpole_separate.fx (the four state values carried separately, no concatenate).

let n = 2048                       # environments
let steps = 10000                  # simulation steps

const gravity = 9.8
const masscart = 1.0
const masspole = 0.1
const total_mass = masspole + masscart
const length = 0.5                 # half the pole's length
const polemass_length = masspole * length
const force_mag = 10.0
const tau = 0.02                   # seconds between state updates
const theta_threshold = 12 * 2 * pi / 360
const x_threshold = 2.4

param state0: f32[n, 4]            # x, x_dot, theta, theta_dot for every environment
param key0: u32[2]                 # the RNG key

loop steps carry (state = state0, key = key0) {
  # One draw per step: column 0 picks the action, columns 1..4 are a fresh start state.
  r = rand(f32[n, 5], key=key)
  key = key + 1
  action = r[:, 0] < 0.5
  fresh = r[:, 1:5] * 0.1 - 0.05

  # dynamics(state, action), Fig. 2
  x = state[:, 0]
  x_dot = state[:, 1]
  theta = state[:, 2]
  theta_dot = state[:, 3]
  force = select(action, force_mag, -force_mag)
  costheta = cos(theta)
  sintheta = sin(theta)
  temp = (force + polemass_length * theta_dot ** 2 * sintheta) / total_mass
  thetaacc = (gravity * sintheta - costheta * temp) / ((4.0 / 3.0 - masspole * costheta ** 2 / total_mass) * length)
  xacc = temp - polemass_length * thetaacc * costheta / total_mass
  x = x + tau * x_dot
  x_dot = x_dot + tau * xacc
  theta = theta + tau * theta_dot
  theta_dot = theta_dot + tau * thetaacc
  new_state = stack([x, x_dot, theta, theta_dot], axis=1)

  # step(action): done environments are reset
  cols = transpose(new_state, [1, 0])
  done = abs(cols[0]) > x_threshold | abs(cols[2]) > theta_threshold
  state = select(reshape(done, [n, 1]), fresh, new_state)
}

out state, key
