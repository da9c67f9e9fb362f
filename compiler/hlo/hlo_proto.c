/* hlo_proto.c — XLA's own instruction ids, read from its proto dump of the same module.
 *
 * XLA breaks ties by unique id where it orders instructions (priority-fusion's queue is keyed by
 * (priority, unique_id)). A module parsed from text gets ids in the order the text lists its
 * instructions, which is what XLA itself does when it parses text (HloModule's
 * AddComputationInternal); but a module XLA dumps in the middle of its pipeline carries the ids of
 * its history (an instruction made by a late pass has a late id), and its text does not print
 * them. With XLA_FLAGS=--xla_dump_hlo_as_proto XLA also writes each dumped module as an HloProto
 * (STEM.hlo.pb beside STEM.txt), which does: each HloInstructionProto's `id` is
 * (computation unique id << 32) | local id (HloInstruction::unique_id), unique within its
 * computation in its low 32 bits. Read with protobuf-c, from the part of XLA's schema fxplain uses
 * (xla_hlo_ids.proto). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hlo.h"
#include "xla_hlo_ids.pb-c.h"

static void *pb_alloc(void *data, size_t size) {
  (void)data;
  return fx_malloc(size ? size : 1);
}

static void pb_free(void *data, void *p) {
  (void)data;
  fx_free(p);
}

static ProtobufCAllocator pb_allocator = {pb_alloc, pb_free, NULL};

bool hlo_proto_sibling(const char *text_path, char *buf, size_t n) {
  size_t len = strlen(text_path);
  size_t stem = len;
  if (len > 4 && (strcmp(text_path + len - 4, ".txt") == 0 || strcmp(text_path + len - 4, ".hlo") == 0)) stem = len - 4;
  if (stem + 8 >= n) return false;
  memcpy(buf, text_path, stem);
  memcpy(buf + stem, ".hlo.pb", 8);
  struct stat st;
  return stat(buf, &st) == 0 && S_ISREG(st.st_mode);
}

/* The module in an HloProto (what --xla_dump_hlo_as_proto writes), or a bare HloModuleProto. */
static Xla__HloModuleProto *unpack_module(const uint8_t *data, size_t len, Xla__HloProto **wrapper) {
  *wrapper = xla__hlo_proto__unpack(&pb_allocator, len, data);
  if (*wrapper && (*wrapper)->hlo_module && (*wrapper)->hlo_module->n_computations > 0) return (*wrapper)->hlo_module;
  if (*wrapper) xla__hlo_proto__free_unpacked(*wrapper, &pb_allocator);
  *wrapper = NULL;
  Xla__HloModuleProto *mp = xla__hlo_module_proto__unpack(&pb_allocator, len, data);
  if (mp && mp->n_computations == 0) {
    xla__hlo_module_proto__free_unpacked(mp, &pb_allocator);
    mp = NULL;
  }
  return mp;
}

bool hlo_proto_apply_ids(IrModule *m, const char *pb_path, HloProtoIds *info, FxError *err) {
  memset(info, 0, sizeof *info);
  snprintf(info->path, sizeof info->path, "%s", pb_path);
  size_t len = 0;
  char *data = fx_read_file(pb_path, &len, err);
  if (!data) return false;
  Xla__HloProto *wrapper = NULL;
  Xla__HloModuleProto *mp = unpack_module((const uint8_t *)data, len, &wrapper);
  fx_free(data);
  if (!mp) return fx_error_set(err, pb_path, 0, 0, "not an XLA HloProto or HloModuleProto (as --xla_dump_hlo_as_proto writes)");
  size_t n = (size_t)m->next_id + 1;
  int64_t *key = fx_calloc(n, sizeof *key);
  bool *has = fx_calloc(n, sizeof *has);
  bool ok = key && has;
  if (!ok) fx_error_set(err, pb_path, 0, 0, "out of memory");
  for (size_t c = 0; ok && c < mp->n_computations; c++) {
    const Xla__HloComputationProto *cp = mp->computations[c];
    const IrComputation *comp = ir_module_find_computation(m, cp->name);
    for (size_t k = 0; k < cp->n_instructions; k++) {
      const Xla__HloInstructionProto *ip = cp->instructions[k];
      info->in_proto++;
      IrInstr *i = comp ? ir_computation_find_instr(comp, ip->name) : NULL;
      if (!i || i->id < 0 || (size_t)i->id >= n || has[i->id]) continue;
      key[i->id] = (int64_t)((uint64_t)ip->id & 0xFFFFFFFFu); /* the local id: the queue is per computation */
      has[i->id] = true;
      info->matched++;
    }
  }
  for (int c = 0; ok && c < m->ncomps; c++)
    for (int k = 0; k < m->comps[c]->ninstrs; k++) {
      const IrInstr *i = m->comps[c]->instrs[k];
      info->in_module++;
      if (!has[i->id] && !info->first_missing[0])
        snprintf(info->first_missing, sizeof info->first_missing, "%s", i->name);
    }
  if (wrapper) xla__hlo_proto__free_unpacked(wrapper, &pb_allocator);
  else xla__hlo_module_proto__free_unpacked(mp, &pb_allocator);
  /* Ids of another module would order it arbitrarily: all or none. */
  if (ok && info->matched == info->in_module && info->matched == info->in_proto) {
    ok = ir_module_renumber(m, key, has);
    if (!ok) fx_error_set(err, pb_path, 0, 0, "out of memory");
    info->applied = ok;
  }
  fx_free(key);
  fx_free(has);
  return ok;
}

/* The ids of the proto dump beside text_path, when there is one (info->path empty otherwise). */
static bool apply_sibling_ids(IrModule *m, const char *text_path, HloProtoIds *info, FxError *err) {
  memset(info, 0, sizeof *info);
  char path[sizeof info->path];
  if (!hlo_proto_sibling(text_path, path, sizeof path)) return true;
  return hlo_proto_apply_ids(m, path, info, err);
}

IrModule *hlo_parse_with_ids(const char *text, size_t len, const char *path, HloProtoIds *info, FxError *err) {
  IrModule *m = hlo_parse(text, len, path, err);
  if (m && !apply_sibling_ids(m, path, info, err)) {
    ir_module_free(m);
    return NULL;
  }
  return m;
}

IrModule *hlo_load_file_with_ids(const char *path, HloProtoIds *info, FxError *err) {
  size_t len = 0;
  char *text = fx_read_file(path, &len, err);
  if (!text) return NULL;
  IrModule *m = hlo_parse_with_ids(text, len, path, info, err);
  fx_free(text);
  return m;
}
