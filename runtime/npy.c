/* npy.c — NumPy .npy files in and out: `run --input NAME=FILE.npy` and `run --save NAME=FILE.npy`.
 *
 * Format (numpy.lib.format): the magic "\x93NUMPY", a version (1.0: 2-byte header length; 2.0 and
 * 3.0: 4-byte), then a Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces to a multiple of 64 bytes and ending in '\n', then the raw data. We read
 * little-endian or byte-order-free descriptors in C order, and write version 1.0. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "runtime.h"

static const struct {
  const char *descr;
  IrType type;
} descrs[] = {
    {"<f2", IR_F16}, {"<f4", IR_F32}, {"<f8", IR_F64}, {"|b1", IR_PRED}, {"|i1", IR_S8}, {"|u1", IR_U8},
    {"<i2", IR_S16}, {"<u2", IR_U16}, {"<i4", IR_S32}, {"<u4", IR_U32}, {"<i8", IR_S64}, {"<u8", IR_U64},
    {"<i1", IR_S8},  {"<u1", IR_U8},  {"<b1", IR_PRED}, {"<c8", IR_C64}, {"<c16", IR_C128},
};

static bool file_error(FxError *err, const char *path, const char *msg) {
  return fx_error_set(err, path, 0, 0, "%s", msg);
}

RtTensor *rt_npy_read(const char *path, FxError *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fx_error_set(err, path, 0, 0, "cannot open: %s", strerror(errno));
    return NULL;
  }
  unsigned char head[10];
  RtTensor *t = NULL;
  char *hdr = NULL;
  if (fread(head, 1, 8, f) != 8 || memcmp(head, "\x93NUMPY", 6) != 0) {
    file_error(err, path, "not a .npy file (the magic \\x93NUMPY is missing)");
    goto done;
  }
  size_t hlen;
  if (head[6] == 1) {
    if (fread(head + 8, 1, 2, f) != 2) goto trunc;
    hlen = head[8] | (size_t)head[9] << 8;
  } else if (head[6] == 2 || head[6] == 3) {
    unsigned char l[4];
    if (fread(l, 1, 4, f) != 4) goto trunc;
    hlen = l[0] | (size_t)l[1] << 8 | (size_t)l[2] << 16 | (size_t)l[3] << 24;
  } else {
    file_error(err, path, "unsupported .npy version");
    goto done;
  }
  if (hlen > 1 << 20) {
    file_error(err, path, ".npy header is implausibly long");
    goto done;
  }
  hdr = fx_malloc(hlen + 1);
  if (!hdr) {
    file_error(err, path, "out of memory");
    goto done;
  }
  if (fread(hdr, 1, hlen, f) != hlen) goto trunc;
  hdr[hlen] = 0;
  /* descr */
  const char *d = strstr(hdr, "'descr'");
  const char *fo = strstr(hdr, "'fortran_order'");
  const char *sh = strstr(hdr, "'shape'");
  if (!d || !fo || !sh) {
    file_error(err, path, ".npy header lacks descr, fortran_order or shape");
    goto done;
  }
  d = strchr(d + 7, '\'');
  if (!d) goto bad;
  char descr[16];
  size_t dl = 0;
  for (d++; *d && *d != '\'' && dl < sizeof descr - 1; d++) descr[dl++] = *d;
  descr[dl] = 0;
  if (descr[0] == '=') descr[0] = '<';
  IrType type = IR_INVALID;
  for (size_t k = 0; k < sizeof descrs / sizeof descrs[0]; k++)
    if (strcmp(descrs[k].descr, descr) == 0) type = descrs[k].type;
  if (type == IR_INVALID) {
    char msg[128];
    snprintf(msg, sizeof msg, "unsupported .npy dtype '%s' (little-endian ints, floats, complex and bool are read)", descr);
    file_error(err, path, msg);
    goto done;
  }
  const char *fv = strchr(fo + 15, ':');
  while (fv && (*fv == ':' || *fv == ' ')) fv++;
  if (fv && strncmp(fv, "True", 4) == 0) {
    file_error(err, path, "Fortran-order .npy arrays are not supported; save with np.ascontiguousarray");
    goto done;
  }
  const char *p = strchr(sh, '(');
  if (!p) goto bad;
  p++;
  int64_t dims[IR_MAX_RANK];
  int rank = 0;
  for (;;) {
    while (*p == ' ' || *p == ',') p++;
    if (*p == ')') break;
    if (!isdigit((unsigned char)*p)) goto bad;
    if (rank == IR_MAX_RANK) {
      file_error(err, path, ".npy array has too many dimensions");
      goto done;
    }
    errno = 0;
    char *e;
    long long v = strtoll(p, &e, 10);
    if (errno || v < 0) goto bad;
    dims[rank++] = v;
    p = e;
  }
  /* The header's claim is checked against the data the file really has before anything is
     allocated: a header saying (9999999999, 99999999) was allocated first. */
  {
    uint64_t count = 1;
    for (int k = 0; k < rank; k++)
      if (dims[k] && count > UINT64_MAX / (uint64_t)dims[k]) {
        file_error(err, path, ".npy shape has too many elements");
        goto done;
      } else {
        count *= (uint64_t)dims[k];
      }
    uint64_t eb = (uint64_t)ir_type_bytes(type);
    long here = ftell(f);
    struct stat st;
    if (here < 0 || fstat(fileno(f), &st) != 0) goto trunc;
    uint64_t have = st.st_size > here ? (uint64_t)(st.st_size - here) : 0;
    if (eb && count > have / eb) {
      char msg[200];
      snprintf(msg, sizeof msg, ".npy file is truncated: its header claims %llu elements of %llu bytes, the file has %llu bytes of data",
               (unsigned long long)count, (unsigned long long)eb, (unsigned long long)have);
      file_error(err, path, msg);
      goto done;
    }
  }
  t = rt_tensor_new(type, rank, dims, err);
  if (!t) goto done;
  if (t->bytes && fread(t->data, 1, t->bytes, f) != t->bytes) {
    rt_tensor_unref(t);
    t = NULL;
    goto trunc;
  }
  if (type == IR_PRED)
    for (int64_t k = 0; k < t->count; k++) ((uint8_t *)t->data)[k] = ((uint8_t *)t->data)[k] != 0;
  goto done;
trunc:
  file_error(err, path, ".npy file is truncated");
  goto done;
bad:
  file_error(err, path, "malformed .npy header");
done:
  fx_free(hdr);
  fclose(f);
  return t;
}

bool rt_npy_write(const char *path, const RtTensor *t, FxError *err) {
  const char *descr = NULL;
  for (size_t k = 0; k < sizeof descrs / sizeof descrs[0]; k++)
    if (descrs[k].type == t->type) {
      descr = descrs[k].descr;
      break;
    }
  if (!descr) {
    if (t->type == IR_BF16)
      return fx_error_set(err, path, 0, 0, "bf16 has no NumPy dtype; convert to f32 before saving");
    if (ir_type_is_f8(t->type))
      return fx_error_set(err, path, 0, 0,
                          "%s has no NumPy dtype (ml_dtypes' float8_%s is not a .npy descriptor); convert to f32 "
                          "before saving",
                          ir_type_name(t->type), ir_type_name(t->type) + 2);
    return fx_error_set(err, path, 0, 0, "cannot save a %s value as .npy", ir_type_name(t->type));
  }
  char dict[512];
  size_t n = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int d = 0; d < t->rank; d++) n += (size_t)snprintf(dict + n, sizeof dict - n, "%lld%s", (long long)t->dims[d], t->rank == 1 ? "," : d + 1 < t->rank ? ", " : "");
  n += (size_t)snprintf(dict + n, sizeof dict - n, "), }");
  size_t total = 10 + n + 1;
  size_t pad = (64 - total % 64) % 64;
  FILE *f = fopen(path, "wb");
  if (!f) return fx_error_set(err, path, 0, 0, "cannot write: %s", strerror(errno));
  size_t hlen = n + pad + 1;
  unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
  bool ok = fwrite(head, 1, 10, f) == 10 && fwrite(dict, 1, n, f) == n;
  for (size_t k = 0; ok && k < pad; k++) ok = fputc(' ', f) != EOF;
  ok = ok && fputc('\n', f) != EOF;
  if (ok && t->bytes) ok = fwrite(t->data, 1, t->bytes, f) == t->bytes;
  if (fclose(f) != 0) ok = false;
  if (!ok) return fx_error_set(err, path, 0, 0, "write failed: %s", strerror(errno));
  return true;
}
