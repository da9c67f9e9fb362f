# cartpole_separate.fx — CartPole with the four state values carried separately (§V-C, Fig. 7).
#
# The same dynamics and resets as cartpole_pre_rng.fx (random numbers precomputed and passed in),
# but x, x_dot, theta and theta_dot travel through the loop as four f32[2048] arrays instead of
# one concatenated f32[2048, 4]. Without the concatenate (a producer with several users that XLA
# will not duplicate) the whole simulation step fuses into one kernel; the paper measured 3.41x.

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

param x0: f32[n]
param x_dot0: f32[n]
param theta0: f32[n]
param theta_dot0: f32[n]
param actions: f32[pool, n]        # uniform in [0, 1): < 0.5 pushes right
param fresh_x: f32[pool, n]        # uniform in [-0.05, 0.05): start states after a reset,
param fresh_x_dot: f32[pool, n]    #   one pool per state value
param fresh_theta: f32[pool, n]
param fresh_theta_dot: f32[pool, n]

loop steps as i carry (x = x0, x_dot = x_dot0, theta = theta0, theta_dot = theta_dot0) {
  j = i % pool
  action = actions[j] < 0.5

  # dynamics(state, action), Fig. 2
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

  # step(action): done environments are reset, value by value
  done = abs(x) > x_threshold | abs(theta) > theta_threshold
  x = select(done, fresh_x[j], x)
  x_dot = select(done, fresh_x_dot[j], x_dot)
  theta = select(done, fresh_theta[j], theta)
  theta_dot = select(done, fresh_theta_dot[j], theta_dot)
}

out x, x_dot, theta, theta_dot
