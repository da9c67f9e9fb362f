/* hlo_corpus.c — every real XLA dump in the corpus loads, verifies, and prints to a fixed point:
 * load -> save -> load -> save gives byte-identical text.
 *
 * Usage: hlo_corpus [DIR]   (default: $FXPLAIN_HLO_CORPUS, else tests/data/hlo-corpus relative to
 * the repository root).  Fails when the folder is missing. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../compiler/hlo/hlo.h"
#include "../../compiler/ir/ir.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void first_diff(const char *a, const char *b) {
  int line = 1;
  const char *la = a, *lb = b;
  while (*a && *a == *b) {
    if (*a == '\n') {
      line++;
      la = a + 1;
      lb = b + 1;
    }
    a++;
    b++;
  }
  fprintf(stderr, "  first difference at printed line %d:\n  1st: %.*s\n  2nd: %.*s\n", line, (int)strcspn(la, "\n"), la,
          (int)strcspn(lb, "\n"), lb);
}

/* Every fusion calls a fused computation of the module that names it as its fusion instruction,
 * and each fused computation takes exactly the fusion's operands. */
static bool fusions_intact(const IrModule *m, const char *name) {
  for (int c = 0; c < m->ncomps; c++)
    for (int j = 0; j < m->comps[c]->ninstrs; j++) {
      const IrInstr *i = m->comps[c]->instrs[j];
      if (i->op != IR_OP_FUSION) continue;
      const IrComputation *fc = ir_fused_computation(i);
      if (!fc || !fc->fusion_instr || fc->fusion_instr->op != IR_OP_FUSION || ir_fused_computation(fc->fusion_instr) != fc ||
          fc->nparams != i->noperands || !ir_fusion_kind(i)) {
        fprintf(stderr, "FAIL %s: fusion %%%s is not intact\n", name, i->name);
        return false;
      }
    }
  return true;
}

static int count_fusions(const IrModule *m) {
  int n = 0;
  for (int c = 0; c < m->ncomps; c++)
    for (int j = 0; j < m->comps[c]->ninstrs; j++) n += m->comps[c]->instrs[j]->op == IR_OP_FUSION;
  return n;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : getenv("FXPLAIN_HLO_CORPUS");
  if (!dir || !*dir) dir = "tests/data/hlo-corpus";
  DIR *d = opendir(dir);
  if (!d) {
    printf("FAIL: no corpus at %s\n", dir);
    return 1;
  }
  char *names[512];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) && n < 512) {
    size_t l = strlen(e->d_name);
    if (l > 4 && strcmp(e->d_name + l - 4, ".hlo") == 0) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  int failed = 0, instrs = 0, fusions = 0;
  for (int k = 0; k < n; k++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, names[k]);
    FxError err;
    fx_error_clear(&err);
    clock_t t0 = clock();
    IrModule *m = hlo_load_file(path, &err);
    double ms = (double)(clock() - t0) * 1000.0 / CLOCKS_PER_SEC;
    if (!m) {
      fx_error_print(stderr, &err);
      fprintf(stderr, "FAIL %s: does not load\n", names[k]);
      failed++;
      free(names[k]);
      continue;
    }
    instrs += ir_module_instr_count(m);
    char *s1 = hlo_print_string(m);
    fx_error_clear(&err);
    IrModule *m2 = s1 ? hlo_parse(s1, strlen(s1), "<printed>", &err) : NULL;
    char *s2 = m2 ? hlo_print_string(m2) : NULL;
    if (!s1 || !m2 || !s2) {
      if (m2 == NULL && s1) fx_error_print(stderr, &err);
      fprintf(stderr, "FAIL %s: printed text does not load back\n", names[k]);
      failed++;
    } else if (strcmp(s1, s2) != 0) {
      fprintf(stderr, "FAIL %s: load->save->load->save is not byte-identical\n", names[k]);
      first_diff(s1, s2);
      failed++;
    } else if (ir_module_instr_count(m) != ir_module_instr_count(m2) || m->ncomps != m2->ncomps) {
      fprintf(stderr, "FAIL %s: reloaded module differs in size\n", names[k]);
      failed++;
    } else if (!fusions_intact(m, names[k]) || !fusions_intact(m2, names[k])) {
      failed++;
    } else {
      printf("ok %s (%d instructions, %d computations, %d fusions, loaded in %.0f ms)\n", names[k], ir_module_instr_count(m), m->ncomps,
             count_fusions(m), ms);
      fusions += count_fusions(m);
    }
    fx_free(s1);
    fx_free(s2);
    ir_module_free(m);
    ir_module_free(m2);
    free(names[k]);
  }
  printf("%d files, %d instructions, %d fusions, %d failed\n", n, instrs, fusions, failed);
  /* The already-fused dumps (xnn.*.optimized.hlo) must arrive with their fusions. */
  if (fusions == 0) {
    fprintf(stderr, "FAIL: no fusion instruction in the whole corpus\n");
    failed++;
  }
  return failed || n == 0 ? 1 : 0;
}
