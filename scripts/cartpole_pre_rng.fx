# cartpole_pre_rng.fx — CartPole with precomputed random numbers (the paper's §V-A step).
#
# The same dynamics, resets and concatenated state as cartpole.fx, but the random numbers are
# drawn before the loop and passed in: a pool of actions and of fresh start states, indexed by the
# loop step (a dynamic-slice, as JAX's scan reads its xs). The threefry RNG call and the three
# small kernels that fed it disappear from the loop body; the paper measured 1.87x from this.
# The pool holds `pool` steps and is reused cyclically (set pool = steps for a fresh draw every
# step: 2048 x 10,000 x 5 floats, 410 MB).

let n = 2048                       # environments
let steps = 10000                  # simulation steps
let pool = 100                     # steps of random numbers passed in

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
param actions: f32[pool, n]        # uniform in [0, 1): < 0.5 pushes right
param fresh_states: f32[pool, n, 4] # uniform in [-0.05, 0.05): start states after a reset

loop steps as i carry (state = state0) {
  j = i % pool
  action = actions[j] < 0.5
  fresh = fresh_states[j]

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

out state
