/* loop_kernels.h — the CUDA source of a small host-driven while loop, shared by the unit test
 * (run against a fake driver) and the GPU test (run on a real device):
 *     i = 0; acc = 0; while (i < limit) { acc += i; i += 1; }
 * fx_cond writes the pred the host reads back each iteration; fx_body is the loop body. */
#ifndef FXPLAIN_TEST_LOOP_KERNELS_H
#define FXPLAIN_TEST_LOOP_KERNELS_H

static const char loop_kernels_src[] =
    "extern \"C\" __global__ void fx_cond(const int *i, const int *limit, unsigned char *pred, long long n) {\n"
    "  if (blockIdx.x * blockDim.x + threadIdx.x == 0) *pred = *i < *limit;\n"
    "}\n"
    "extern \"C\" __global__ void fx_body(int *i, float *acc, long long n) {\n"
    "  if (blockIdx.x * blockDim.x + threadIdx.x == 0) { *acc += (float)*i; *i += 1; }\n"
    "}\n";

/* A kernel over many elements: out[j] = in[j] * 2 + 1. */
static const char axpb_src[] =
    "extern \"C\" __global__ void fx_axpb(const float *in, float *out, long long n) {\n"
    "  long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  if (j < n) out[j] = in[j] * 2.0f + 1.0f;\n"
    "}\n";

#endif
