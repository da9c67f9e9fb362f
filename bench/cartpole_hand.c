/* cartpole_hand.c — CartPole written by hand in C: the yardstick for the generated kernels.
 *
 * The same math as scripts/cartpole_separate.fx (the four-array variant with precomputed random
 * numbers, and the start states after a reset drawn from four pools, one per state value),
 * operation for operation in f32, so the results agree with the fused stage bit for bit;
 * compiled with -O3 -march=native -ffp-contract=off like the generated code. One loop over steps,
 * an inner loop over environments that the compiler vectorizes (sinf/cosf stay scalar calls, as
 * in the generated kernels). Returns the seconds taken. */
#include <math.h>
#include <stdint.h>
#include <time.h>

/* fresh[0..3]: the pools of start states for x, x_dot, theta and theta_dot, each f32[pool, n]. */
double cartpole_hand(int n, int steps, int pool, const float *actions, const float *const fresh[4], float *x,
                     float *x_dot, float *theta, float *theta_dot);

double cartpole_hand(int n, int steps, int pool, const float *actions, const float *const fresh[4], float *restrict x,
                     float *restrict x_dot, float *restrict theta, float *restrict theta_dot) {
  const float gravity = 9.8f, masspole = 0.1f, total_mass = 1.1f, length = 0.5f, polemass_length = 0.05f;
  const float force_mag = 10.0f, tau = 0.02f, four_thirds = (float)(4.0 / 3.0);
  const float theta_threshold = (float)(12 * 2 * 3.14159265358979323846 / 360), x_threshold = 2.4f;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < steps; i++) {
    int j = i % pool;
    const float *act = actions + (int64_t)j * n;
    const float *restrict fx = fresh[0] + (int64_t)j * n, *restrict fxd = fresh[1] + (int64_t)j * n;
    const float *restrict fth = fresh[2] + (int64_t)j * n, *restrict ftd = fresh[3] + (int64_t)j * n;
    for (int e = 0; e < n; e++) {
      float force = act[e] < 0.5f ? force_mag : -force_mag;
      float th = theta[e], td = theta_dot[e];
      float costheta = cosf(th), sintheta = sinf(th);
      float temp = (force + polemass_length * (td * td) * sintheta) / total_mass;
      float thetaacc = (gravity * sintheta - costheta * temp) /
                       ((four_thirds - masspole * (costheta * costheta) / total_mass) * length);
      float xacc = temp - polemass_length * thetaacc * costheta / total_mass;
      float nx = x[e] + tau * x_dot[e];
      float nxd = x_dot[e] + tau * xacc;
      float nth = th + tau * td;
      float ntd = td + tau * thetaacc;
      int done = (fabsf(nx) > x_threshold) | (fabsf(nth) > theta_threshold); /* the script's |: no branch */
      x[e] = done ? fx[e] : nx;
      x_dot[e] = done ? fxd[e] : nxd;
      theta[e] = done ? fth[e] : nth;
      theta_dot[e] = done ? ftd[e] : ntd;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
}
