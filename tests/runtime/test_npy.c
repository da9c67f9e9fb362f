/* test_npy.c — NumPy .npy round trips, the exact header we write, and clear errors for bad files. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../runtime/runtime.h"
#include "../check.h"

static char dir[64];

static const char *tmp(const char *name) {
  static char p[128];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return p;
}

TEST(round_trip_f32_and_header) {
  FxError e = {0};
  int64_t d[2] = {2, 3};
  RtTensor *t = rt_tensor_new(IR_F32, 2, d, &e);
  for (int k = 0; k < 6; k++) rt_set_f(t, k, k * 0.25);
  CHECK(rt_npy_write(tmp("a.npy"), t, &e));
  FILE *f = fopen(tmp("a.npy"), "rb");
  char buf[128] = {0};
  CHECK(f && fread(buf, 1, 128, f) == 128);
  if (f) fclose(f);
  CHECK(memcmp(buf, "\x93NUMPY\x01\x00\x76\x00", 10) == 0); /* header length 118: total 128 */
  CHECK_CONTAINS(buf + 10, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
  CHECK(buf[127] == '\n');
  RtTensor *r = rt_npy_read(tmp("a.npy"), &e);
  CHECK(r && r->type == IR_F32 && r->rank == 2 && r->dims[0] == 2 && r->dims[1] == 3);
  if (r) CHECK(memcmp(r->data, t->data, t->bytes) == 0);
  rt_tensor_unref(t);
  rt_tensor_unref(r);
}

TEST(round_trip_1d_int_and_scalar) {
  FxError e = {0};
  int64_t n = 4;
  RtTensor *t = rt_tensor_new(IR_S64, 1, &n, &e);
  for (int k = 0; k < 4; k++) rt_set_i(t, k, -k);
  CHECK(rt_npy_write(tmp("b.npy"), t, &e));
  RtTensor *r = rt_npy_read(tmp("b.npy"), &e);
  CHECK(r && r->type == IR_S64 && r->rank == 1 && r->dims[0] == 4 && rt_get_i(r, 3) == -3);
  RtTensor *s = rt_tensor_new(IR_PRED, 0, NULL, &e);
  rt_set_i(s, 0, 1);
  CHECK(rt_npy_write(tmp("c.npy"), s, &e));
  RtTensor *rs = rt_npy_read(tmp("c.npy"), &e);
  CHECK(rs && rs->type == IR_PRED && rs->rank == 0 && rt_get_i(rs, 0) == 1);
  rt_tensor_unref(t);
  rt_tensor_unref(r);
  rt_tensor_unref(s);
  rt_tensor_unref(rs);
}

TEST(bad_files) {
  FxError e = {0};
  FILE *f = fopen(tmp("bad.npy"), "wb");
  fputs("hello world, not numpy", f);
  fclose(f);
  CHECK(rt_npy_read(tmp("bad.npy"), &e) == NULL);
  CHECK_CONTAINS(e.msg, "not a .npy file");
  CHECK_CONTAINS(e.file, "bad.npy");
  fx_error_clear(&e);
  /* a valid header but missing data */
  f = fopen(tmp("trunc.npy"), "wb");
  const char *h = "{'descr': '<f8', 'fortran_order': False, 'shape': (100,), }";
  unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(strlen(h) + 1), 0};
  fwrite(head, 1, 10, f);
  fputs(h, f);
  fputc('\n', f);
  fclose(f);
  CHECK(rt_npy_read(tmp("trunc.npy"), &e) == NULL);
  CHECK_CONTAINS(e.msg, "truncated");
  fx_error_clear(&e);
  CHECK(rt_npy_read(tmp("missing.npy"), &e) == NULL);
  CHECK_CONTAINS(e.msg, "cannot open");
  fx_error_clear(&e);
  RtTensor *b = rt_tensor_new(IR_BF16, 0, NULL, &e);
  CHECK(!rt_npy_write(tmp("x.npy"), b, &e));
  CHECK_CONTAINS(e.msg, "bf16 has no NumPy dtype");
  rt_tensor_unref(b);
  CHECK(rt_live_bytes() == 0);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/fxnpyXXXXXX");
  if (!mkdtemp(dir)) return 1;
  RUN(round_trip_f32_and_header);
  RUN(round_trip_1d_int_and_scalar);
  RUN(bad_files);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 1;
  return check_summary();
}
