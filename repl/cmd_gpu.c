/* cmd_gpu.c — the gpu commands of the shell: `devices`, `set gpu_arch`, `show gpu_arch`,
 * `set ptxas on|off`, and the kernel views `kernels --source` / `kernels --resources` (hidden
 * commands kernels-source / kernels-resources, which `kernels` dispatches to: the runtime reports
 * the kernels, runtime/cuda/cuda_report.c, and explain/format_kernels.c prints them).
 *
 * `devices` asks the driver (runtime/cuda/cuda_driver.c) for the GPUs and prints their properties, or
 * says plainly why there is none: no driver (the dlopen error), cuInit's error, or no device. It
 * also says what NVRTC can do on this machine, since kernels compile without a GPU.
 * `set gpu_arch sm_XX` picks the architecture NVRTC compiles kernels for (`auto`: the live
 * device's, else sm_75, the paper's RTX 2080 Ti). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../compiler/fusion/fusion.h"
#include "../explain/format.h"
#include "../runtime/cuda/cuda.h"
#include "args.h"
#include "session.h"

#define MAX_GPUS 16

static void print_device_text(FILE *f, const CudaDeviceInfo *d) {
  fprintf(f, "GPU %d: %s\n", d->ordinal, d->name);
  fprintf(f, "  compute capability  %d.%d (sm_%d%d)\n", d->cc_major, d->cc_minor, d->cc_major, d->cc_minor);
  fprintf(f, "  SMs                 %d\n", d->sm_count);
  fprintf(f, "  memory              %.1f GiB\n", (double)d->total_mem / (1024.0 * 1024.0 * 1024.0));
  fprintf(f, "  shared memory       %d KiB per block, %d KiB per SM\n", d->shared_per_block / 1024,
          d->shared_per_sm / 1024);
  fprintf(f, "  registers           %d per block, %d per SM\n", d->regs_per_block, d->regs_per_sm);
  fprintf(f, "  threads             %d per block, %d per SM\n", d->max_threads_per_block, d->max_threads_per_sm);
  fprintf(f, "  clocks              %d MHz core, %d MHz memory, %d-bit bus\n", d->clock_khz / 1000,
          d->mem_clock_khz / 1000, d->bus_width_bits);
}

static void nvrtc_line(FILE *f) {
  if (cuda_nvrtc_built_in())
    fprintf(f, "NVRTC %s compiles kernels for %s (set gpu_arch to change)\n", cuda_nvrtc_version(),
            cuda_nvrtc_default_arch());
  else
    fprintf(f, "NVRTC: not available (fxplain was built without the CUDA toolkit)\n");
}

/* devices --use N: the session's device profile becomes GPU N's own figures. */
static bool use_device(Session *s, const char *arg, FxError *err) {
  char *end;
  long k = strtol(arg, &end, 10);
  if (end == arg || *end || k < 0 || k >= MAX_GPUS) return fx_error_set(err, NULL, 0, 0, "usage: devices --use N");
  CudaDeviceInfo devs[MAX_GPUS];
  FxError why;
  fx_error_clear(&why);
  int n = cuda_device_list(devs, MAX_GPUS, &why);
  if (n < 0) return fx_error_set(err, NULL, 0, 0, "no GPU to take the profile from: %s", why.msg);
  if (k >= n) return fx_error_set(err, NULL, 0, 0, "there is no GPU %ld (%d found)", k, n);
  cuda_device_profile(&devs[k], &s->eng.device);
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_str(&w, "device", s->eng.device.name);
    json_kv_str(&w, "arch", s->eng.device.arch);
    json_object_end(&w);
  } else {
    fprintf(s->out, "device profile = %s (GPU %ld: %s, %d SMs, %.0f GB/s, %.1f TFLOP/s f32)\n", s->eng.device.name, k,
            s->eng.device.arch, s->eng.device.sm_count, s->eng.device.dram_gbps, s->eng.device.peak_gflops / 1000);
  }
  return true;
}

static bool cmd_devices(Session *s, int argc, char **argv, FxError *err) {
  if (argc == 3 && strcmp(argv[1], "--use") == 0) return use_device(s, argv[2], err);
  if (argc != 1) return fx_error_set(err, NULL, 0, 0, "usage: devices [--use N]");
  CudaDeviceInfo devs[MAX_GPUS];
  FxError why;
  fx_error_clear(&why);
  int n = cuda_device_list(devs, MAX_GPUS, &why);
  if (n == 0) fx_error_set(&why, NULL, 0, 0, "the NVIDIA driver found no CUDA device");
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_key(&w, "gpus");
    json_array_begin(&w);
    for (int i = 0; i < n; i++) {
      const CudaDeviceInfo *d = &devs[i];
      char arch[16];
      snprintf(arch, sizeof arch, "sm_%d%d", d->cc_major, d->cc_minor);
      json_object_begin(&w);
      json_kv_int(&w, "ordinal", d->ordinal);
      json_kv_str(&w, "name", d->name);
      json_kv_str(&w, "arch", arch);
      json_kv_int(&w, "sms", d->sm_count);
      json_kv_int(&w, "memory_bytes", (long long)d->total_mem);
      json_kv_int(&w, "shared_memory_per_block", d->shared_per_block);
      json_kv_int(&w, "shared_memory_per_sm", d->shared_per_sm);
      json_kv_int(&w, "registers_per_block", d->regs_per_block);
      json_kv_int(&w, "registers_per_sm", d->regs_per_sm);
      json_kv_int(&w, "max_threads_per_block", d->max_threads_per_block);
      json_object_end(&w);
    }
    json_array_end(&w);
    if (n <= 0) json_kv_str(&w, "reason", why.msg);
    json_kv_str(&w, "driver", n >= 0 ? "loaded" : "unavailable");
    json_kv_int(&w, "driver_version", cuda_driver_version());
    json_kv_str(&w, "nvrtc", cuda_nvrtc_built_in() ? cuda_nvrtc_version() : NULL);
    json_kv_str(&w, "gpu_arch", cuda_nvrtc_default_arch());
    json_object_end(&w);
    return true;
  }
  if (n <= 0) {
    fprintf(s->out, "no GPU found: %s\n", why.msg);
    fprintf(s->out, "fxplain runs on the CPU here; ");
    nvrtc_line(s->out);
    return true;
  }
  int v = cuda_driver_version();
  fprintf(s->out, "CUDA driver %d.%d, %d GPU%s\n", v / 1000, (v % 1000) / 10, n, n == 1 ? "" : "s");
  for (int i = 0; i < n; i++) print_device_text(s->out, &devs[i]);
  nvrtc_line(s->out);
  return true;
}

static bool cmd_set_gpu_arch(Session *s, int argc, char **argv, FxError *err) {
  if (argc != 2) return fx_error_set(err, NULL, 0, 0, "usage: set gpu_arch sm_XX|auto");
  if (!cuda_nvrtc_set_arch(argv[1], err)) return false;
  if (!s->json) fprintf(s->out, "gpu_arch = %s\n", cuda_nvrtc_default_arch());
  else json_print_kv_str(s->out, "gpu_arch", cuda_nvrtc_default_arch());
  return true;
}

static bool cmd_show_gpu_arch(Session *s, int argc, char **argv, FxError *err) {
  (void)argv;
  if (argc != 1) return fx_error_set(err, NULL, 0, 0, "usage: show gpu_arch");
  char list[1024];
  cuda_nvrtc_supported_archs(list, sizeof list);
  if (s->json) {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_str(&w, "gpu_arch", cuda_nvrtc_default_arch());
    json_kv_str(&w, "supported", list);
    json_object_end(&w);
    return true;
  }
  fprintf(s->out, "gpu_arch = %s\n", cuda_nvrtc_default_arch());
  if (list[0]) fprintf(s->out, "NVRTC %s supports: %s\n", cuda_nvrtc_version(), list);
  return true;
}

/* ---------- kernel views ---------- */


static bool cmd_kernels_source(Session *s, int argc, char **argv, FxError *err) {
  const char *only = argc > 1 ? argv[1] : NULL;
  if (argc > 2) return fx_error_set(err, NULL, 0, 0, "usage: kernels --source [INSTRUCTION]");
  const IrModule *m = repl_computed_stage(s, -1, "no kernels", err);
  KernelReport r;
  if (!m || !cuda_report_source(m, s->eng.cur, only, &r, err)) return false;
  ExplainOut o = repl_out(s);
  explain_show_kernel_source(&o, &r, only != NULL);
  kernel_report_free(&r);
  return true;
}

static bool cmd_kernels_resources(Session *s, int argc, char **argv, FxError *err) {
  (void)argv;
  if (argc != 1) return fx_error_set(err, NULL, 0, 0, "usage: kernels --resources");
  const IrModule *m = repl_computed_stage(s, -1, "no kernels", err);
  KernelReport r;
  if (!m || !cuda_report_resources(m, s->eng.cur, &s->eng.device, &r, err)) return false;
  ExplainOut o = repl_out(s);
  explain_show_kernel_resources(&o, &r);
  kernel_report_free(&r);
  return true;
}

static bool cmd_set_ptxas(Session *s, int argc, char **argv, FxError *err) {
  if (argc != 2 || (strcmp(argv[1], "on") != 0 && strcmp(argv[1], "off") != 0))
    return fx_error_set(err, NULL, 0, 0, "usage: set ptxas on|off");
  bool on = strcmp(argv[1], "on") == 0;
  if (on && !cuda_nvrtc_built_in())
    return fx_error_set(err, NULL, 0, 0, "ptxas figures come from NVRTC, and this fxplain was built without the CUDA toolkit");
  cuda_registers_install(on, &s->eng.device);
  if (!s->json)
    fprintf(s->out, "ptxas = %s (%s; it applies to the fusion passes run from now on)\n", argv[1],
            fusion_registers_note());
  else json_print_kv_bool(s->out, "ptxas", on);
  return true;
}

const ReplCommand repl_cmds_gpu[] = {
    {"devices", "devices [--use N]", "list the NVIDIA GPUs (or say why there is none)",
     "devices [--use N]\n"
     "  Lists every GPU the CUDA driver reports: name, compute capability, SMs, memory, shared\n"
     "  memory and registers per block and per SM, threads. Without a GPU it says why: no driver\n"
     "  (libcuda.so.1 could not be loaded), cuInit's error, or no device. Kernels still compile\n"
     "  with NVRTC for the architecture `set gpu_arch` names.\n"
     "  --use N: the device profile the fusion rules and the cost model use becomes GPU N's own\n"
     "  (SMs, registers, shared memory, bandwidth and FLOP/s from its clocks and bus).",
     cmd_devices},
    {"set-gpu_arch", "set gpu_arch sm_XX|auto", NULL,
     "set gpu_arch sm_XX|auto\n"
     "  The architecture NVRTC compiles kernels for (sm_75, sm_80, sm_90, ...). auto: the GPU's own,\n"
     "  else sm_75 (the paper's RTX 2080 Ti).",
     cmd_set_gpu_arch},
    {"show-gpu_arch", "show gpu_arch", NULL, "show gpu_arch\n  The architecture kernels compile for, and NVRTC's list.",
     cmd_show_gpu_arch},
    {"set-ptxas", "set ptxas on|off", NULL,
     "set ptxas on|off\n"
     "  on: the fusion passes compile every candidate fused kernel with NVRTC for the device profile's\n"
     "  architecture and refuse a fusion whose kernel would spill or exceed the registers per thread\n"
     "  (reason `registers`, with ptxas' numbers). Off by default: it costs a compile per candidate.",
     cmd_set_ptxas},
    {"kernels-source", "kernels --source [INSTRUCTION]", NULL,
     "kernels --source [INSTRUCTION]\n"
     "  The CUDA C of the current stage's kernels (one NVRTC unit), or of one kernel.",
     cmd_kernels_source},
    {"kernels-resources", "kernels --resources", NULL,
     "kernels --resources\n"
     "  What ptxas reports for each kernel of the current stage, compiled with NVRTC for `gpu_arch`\n"
     "  (else the device profile's architecture): registers per thread, spill stores/loads, shared\n"
     "  memory, stack, the block size it would launch with, and the occupancy on the device profile.",
     cmd_kernels_resources},
    {0},
};
