/* cmd_gpu.c — the gpu commands of the shell: `devices`, `set gpu_arch`, `show gpu_arch`,
 * `set ptxas on|off`, and the kernel views `kernels --source` / `kernels --resources` (hidden
 * commands kernels-source / kernels-resources, which `kernels` dispatches to).
 *
 * `devices` asks the driver (runtime/cuda_driver.c) for the GPUs and prints their properties, or
 * says plainly why there is none: no driver (the dlopen error), cuInit's error, or no device. It
 * also says what NVRTC can do on this machine, since kernels compile without a GPU.
 * `set gpu_arch sm_XX` picks the architecture NVRTC compiles kernels for (`auto`: the live
 * device's, else sm_75, the paper's RTX 2080 Ti). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../explain/json.h"
#include "../compiler/fusion_rules.h"
#include "session.h"
#include "../runtime/backend.h"
#include "../runtime/cuda_backend.h"
#include "../runtime/cuda_driver.h"
#include "../runtime/cuda_kernels.h"
#include "../runtime/cuda_libs.h"
#include "../runtime/cuda_nvrtc.h"

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
  if (argc != 2) return fx_error_set(err, NULL, 0, 0, "usage: set gpu_arch sm_XX | auto");
  if (!cuda_nvrtc_set_arch(argv[1], err)) return false;
  if (!s->json) fprintf(s->out, "gpu_arch = %s\n", cuda_nvrtc_default_arch());
  else {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_str(&w, "gpu_arch", cuda_nvrtc_default_arch());
    json_object_end(&w);
  }
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

static const IrModule *current_module(Session *s, FxError *err) {
  if (s->eng.nstages <= 0 || !s->eng.stages[s->eng.cur].module) {
    fx_error_set(err, NULL, 0, 0, "nothing is loaded: load a .fx or .hlo file first");
    return NULL;
  }
  return s->eng.stages[s->eng.cur].module;
}

/* An rng kernel: cuRAND's device API, compiled on its own (launched as fx_rng). */
static void print_rng_source(FILE *out, const IrInstr *i) {
  const char *dist = ir_attr_text(i, "distribution");
  const char *src = cuda_rng_source(i->shape.type, dist ? dist : "rng_uniform");
  char san[120];
  emit_sanitize(i->name, san, sizeof san);
  fprintf(out, "// kernel %s: rng -> cuRAND (its own unit, launched as fx_rng over %lld threads)\n%s", san,
          (long long)((ir_shape_elements(&i->shape) + cuda_rng_per_thread(i->shape.type) - 1) /
                      cuda_rng_per_thread(i->shape.type)),
          src ? src : "");
}

static bool cmd_kernels_source(Session *s, int argc, char **argv, FxError *err) {
  const char *only = argc > 1 ? argv[1] : NULL;
  if (argc > 2) return fx_error_set(err, NULL, 0, 0, "usage: kernels --source [INSTRUCTION]");
  const IrModule *m = current_module(s, err);
  if (!m) return false;
  CudaUnit u;
  if (!cuda_unit_build(&u, &m, 1, err)) return false;
  bool found = !only;
  if (!only) {
    if (s->json) {
      JsonWriter w;
      json_init(&w, s->out);
      json_object_begin(&w);
      json_kv_int(&w, "stage", s->eng.cur);
      json_kv_str(&w, "source", u.source.s);
      json_key(&w, "rng_kernels"); /* each rng's cuRAND kernel, its own unit */
      json_array_begin(&w);
      for (int q = 0; q < u.n; q++) {
        if (u.k[q].how != CUDA_K_RNG) continue;
        const char *dist = ir_attr_text(u.k[q].instr, "distribution");
        const char *src = cuda_rng_source(u.k[q].instr->shape.type, dist ? dist : "rng_uniform");
        json_object_begin(&w);
        json_kv_str(&w, "kernel", u.k[q].instr->name);
        json_kv_str(&w, "source", src ? src : "");
        json_object_end(&w);
      }
      json_array_end(&w);
      json_object_end(&w);
    } else {
      fputs(u.source.s, s->out);
      for (int q = 0; q < u.n; q++)
        if (u.k[q].how == CUDA_K_RNG) print_rng_source(s->out, u.k[q].instr);
      /* kernels with no source say so, rather than missing silently (a chain nested too deeply) */
      for (int q = 0; q < u.n; q++)
        if (u.k[q].how != CUDA_K_RNG && u.k[q].how != CUDA_K_GENERATED)
          fprintf(s->out, "// kernel %s: not generated, runs on %s%s%s\n", u.k[q].instr->name, cuda_kernel_how_name(u.k[q].how),
                  u.k[q].why[0] ? ": " : "", u.k[q].why);
    }
  } else {
    /* One kernel: its part of the unit, from its "// kernel NAME" line to the next one. */
    const IrInstr *i = ir_module_find_instr(m, only);
    const CudaKernelInfo *k = i ? cuda_unit_find(&u, i) : NULL;
    if (k && k->how == CUDA_K_RNG && !s->json) {
      print_rng_source(s->out, i);
      found = true;
    } else if (k && k->how != CUDA_K_GENERATED) {
      fprintf(s->out, "%s runs on %s%s%s\n", only, cuda_kernel_how_name(k->how), k->why[0] ? ": " : "", k->why);
      found = true;
    } else if (k) {
      const char *p = strstr(u.source.s, k->sym);
      while (p && p > u.source.s && strncmp(p, "// kernel ", 10) != 0) p--;
      const char *e = p ? strstr(p + 10, "// kernel ") : NULL;
      if (p) fprintf(s->out, "%.*s", e ? (int)(e - p) : (int)strlen(p), p);
      found = p != NULL;
    }
  }
  cuda_unit_free(&u);
  if (!found) return fx_error_set(err, NULL, 0, 0, "'%s' is not a kernel of stage %d", only, s->eng.cur);
  return true;
}

/* ptxas' figures for an rng instruction's cuRAND kernel (compiled alone, cached like the rest).
 * False without filling err when the instruction is not an rng kernel. */
static bool rng_resources(const IrInstr *i, const char *arch, CudaResources *r, FxError *err) {
  const char *dist = ir_attr_text(i, "distribution");
  const char *src = cuda_rng_source(i->shape.type, dist ? dist : "rng_uniform");
  if (!src) return false;
  CudaCompileOptions opt = {.arch = arch};
  CudaCubin c;
  if (!cuda_nvrtc_compile(src, "rng.cu", "fx_rng", &opt, &c, err)) return false;
  *r = c.res;
  cuda_cubin_free(&c);
  return true;
}

static bool cmd_kernels_resources(Session *s, int argc, char **argv, FxError *err) {
  (void)argv;
  if (argc != 1) return fx_error_set(err, NULL, 0, 0, "usage: kernels --resources");
  const IrModule *m = current_module(s, err);
  if (!m) return false;
  if (!cuda_nvrtc_built_in())
    return fx_error_set(err, NULL, 0, 0, "kernel resources come from NVRTC, and this fxplain was built without the CUDA toolkit");
  CudaUnit u;
  if (!cuda_unit_build(&u, &m, 1, err)) return false;
  /* `set gpu_arch` wins; else the device profile's architecture (rtx2080ti: sm_75). */
  const char *arch = !cuda_nvrtc_arch_is_set() && s->eng.device.arch[0] ? s->eng.device.arch : cuda_nvrtc_default_arch();
  if (u.ngenerated > 0 && !cuda_unit_compile(&u, arch, NULL, err)) {
    cuda_unit_free(&u);
    return false;
  }
  const DeviceProfile *d = &s->eng.device;
  JsonWriter w;
  if (s->json) {
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_int(&w, "stage", s->eng.cur);
    json_kv_str(&w, "arch", arch);
    json_kv_str(&w, "device", d->name);
    json_key(&w, "kernels");
    json_array_begin(&w);
  } else {
    fprintf(s->out, "stage %d: %d kernel%s compiled for %s by NVRTC %s; occupancy on %s\n", s->eng.cur, u.n,
            u.n == 1 ? "" : "s", arch, cuda_nvrtc_version(), d->name);
    fprintf(s->out, "  %-28s %-9s %5s %6s %11s %6s %6s %5s  %s\n", "kernel", "runs as", "parts", "regs", "spill st/ld",
            "smem", "stack", "block", "occupancy");
  }
  for (int q = 0; q < u.n; q++) {
    const CudaKernelInfo *k = &u.k[q];
    CudaResources rr;
    if (k->how == CUDA_K_RNG && rng_resources(k->instr, arch, &rr, err)) {
      /* The cuRAND kernel, compiled on its own for the same architecture. */
      int64_t threads = (ir_shape_elements(&k->instr->shape) + cuda_rng_per_thread(k->instr->shape.type) - 1) /
                        cuda_rng_per_thread(k->instr->shape.type);
      CudaDeviceInfo di = {.warp_size = 32, .max_threads_per_block = d->max_threads_per_block, .regs_per_block = 65536};
      int block = cuda_block_size(rr.registers, &di, threads);
      const char *limit = "";
      double occ = cuda_occupancy(&rr, block, d, &limit);
      if (s->json) {
        json_object_begin(&w);
        json_kv_str(&w, "kernel", k->instr->name);
        json_kv_int(&w, "part", 0);
        json_kv_str(&w, "runs_as", "rng");
        json_kv_str(&w, "symbol", "fx_rng");
        json_kv_int(&w, "registers", rr.registers);
        json_kv_int(&w, "spill_stores", rr.spill_stores);
        json_kv_int(&w, "spill_loads", rr.spill_loads);
        json_kv_int(&w, "shared_bytes", rr.shared_bytes);
        json_kv_int(&w, "stack_bytes", rr.stack_bytes);
        json_kv_int(&w, "block", block);
        json_kv_double(&w, "occupancy", occ);
        json_kv_str(&w, "occupancy_limit", limit);
        json_object_end(&w);
      } else {
        char spill[32];
        snprintf(spill, sizeof spill, "%d/%d", rr.spill_stores, rr.spill_loads);
        fprintf(s->out, "  %-28s %-9s %5d %6d %11s %6d %6d %5d  %3.0f%% (%s) cuRAND Philox4_32_10\n", k->instr->name,
                "rng", 1, rr.registers, spill, rr.shared_bytes, rr.stack_bytes, block, occ * 100, limit);
      }
      continue;
    }
    if (err->set) {
      cuda_unit_free(&u);
      return false;
    }
    if (k->how != CUDA_K_GENERATED) {
      if (s->json) {
        json_object_begin(&w);
        json_kv_str(&w, "kernel", k->instr->name);
        json_kv_str(&w, "runs_as", cuda_kernel_how_name(k->how));
        if (k->why[0]) json_kv_str(&w, "why", k->why);
        json_object_end(&w);
      } else {
        fprintf(s->out, "  %-28s %-9s %5s %6s %11s %6s %6s %5s  %s\n", k->instr->name, cuda_kernel_how_name(k->how), "-",
                "-", "-", "-", "-", "-", k->how == CUDA_K_HOST ? "(not generated)" : "(library)");
      }
      continue;
    }
    for (int p = 0; p < k->nparts; p++) {
      const CudaResources *r = &k->res[p];
      CudaDeviceInfo di = {.warp_size = 32, .max_threads_per_block = d->max_threads_per_block, .regs_per_block = 65536};
      int block = cuda_block_size(r->registers, &di, k->count[p]);
      const char *limit = "";
      double occ = cuda_occupancy(r, block, d, &limit);
      char name[64];
      if (k->nparts > 1) snprintf(name, sizeof name, "%s/%d", k->instr->name, p);
      else snprintf(name, sizeof name, "%s", k->instr->name);
      if (s->json) {
        json_object_begin(&w);
        json_kv_str(&w, "kernel", k->instr->name);
        json_kv_int(&w, "part", p);
        json_kv_str(&w, "runs_as", "generated");
        json_kv_str(&w, "symbol", k->sym);
        json_kv_int(&w, "registers", r->registers);
        json_kv_int(&w, "spill_stores", r->spill_stores);
        json_kv_int(&w, "spill_loads", r->spill_loads);
        json_kv_int(&w, "shared_bytes", r->shared_bytes);
        json_kv_int(&w, "stack_bytes", r->stack_bytes);
        json_kv_int(&w, "block", block);
        json_kv_double(&w, "occupancy", occ);
        json_kv_str(&w, "occupancy_limit", limit);
        json_object_end(&w);
      } else {
        char spill[32];
        snprintf(spill, sizeof spill, "%d/%d", r->spill_stores, r->spill_loads);
        fprintf(s->out, "  %-28s %-9s %5d %6d %11s %6d %6d %5d  %3.0f%% (%s)\n", name, "generated", k->nparts,
                r->registers, spill, r->shared_bytes, r->stack_bytes, block, occ * 100, limit);
      }
    }
  }
  if (s->json) {
    json_array_end(&w);
    json_object_end(&w);
  }
  cuda_unit_free(&u);
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
  else {
    JsonWriter w;
    json_init(&w, s->out);
    json_object_begin(&w);
    json_kv_bool(&w, "ptxas", on);
    json_object_end(&w);
  }
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
    {"set-gpu_arch", "set gpu_arch sm_XX | auto", NULL,
     "set gpu_arch sm_XX | auto\n"
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
