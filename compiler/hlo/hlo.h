/* hlo.h — XLA HLO text in and out.
 *
 * hlo_parse reads the text format as XLA dumps write it (header and its attributes, the
 * FileNames/FunctionNames/FileLocations/StackFrames sections, computations with or without
 * signatures, every instruction attribute, layouts with tiles, comments) into an IrModule, then
 * verifies it (verify.h).  hlo_print writes the canonical form back: `%name = shape op(%a, %b),
 * attr=...`, two-space indent, computations in module order.  The printed text is a fixed point:
 * parsing it and printing again gives the identical bytes.
 *
 * Errors are located: FILE:LINE:COL of the offending token, with the source line filled in. */
#ifndef FXPLAIN_HLO_H
#define FXPLAIN_HLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "../ir/ir.h"
#include "../ir/verify.h"

/* Parses `len` bytes of HLO text (need not be NUL-terminated) and verifies the result.
 * `filename` names the text in errors and becomes IrInstr.loc.file and IrModule.source_file.
 * Returns a module the caller frees with ir_module_free, or NULL with *err filled. */
IrModule *hlo_parse(const char *text, size_t len, const char *filename, FxError *err);
/* hlo_parse with the verifier's options (NULL: as hlo_parse). */
IrModule *hlo_parse_with(const char *text, size_t len, const char *filename, const IrVerifyOptions *opts,
                         FxError *err);
/* Reads the file at `path`, then hlo_parse.  Returns NULL with *err filled on failure. */
IrModule *hlo_load_file(const char *path, FxError *err);

/* XLA's own instruction ids (hlo_proto.c): XLA orders ties by them, and a module it dumps in the
 * middle of its pipeline carries ids its text does not print. With
 * XLA_FLAGS=--xla_dump_hlo_as_proto, XLA writes STEM.hlo.pb beside STEM.txt.
 * hlo_proto_sibling: the proto dump beside a text file (STEM.txt or STEM.hlo -> STEM.hlo.pb) into
 * buf when that file exists. hlo_proto_apply_ids: reads an HloProto (or HloModuleProto) and,
 * when it names exactly the module's instructions, renumbers the module in XLA's order
 * (ir_module_renumber); info says how many matched and whether it was applied (a proto of another
 * module is not: false only for an unreadable file or no memory, with *err filled).
 * hlo_parse_with_ids / hlo_load_file_with_ids: hlo_parse / hlo_load_file, then the ids of the
 * proto dump beside `path` when there is one (info->path is empty when there is none); NULL with
 * *err filled when the text does not parse or that proto cannot be read. */
typedef struct {
  char path[1024];
  int in_proto, in_module, matched;
  bool applied;
  char first_missing[128]; /* an instruction of the module the proto does not name */
} HloProtoIds;
bool hlo_proto_sibling(const char *text_path, char *buf, size_t n);
bool hlo_proto_apply_ids(IrModule *m, const char *pb_path, HloProtoIds *info, FxError *err);
IrModule *hlo_parse_with_ids(const char *text, size_t len, const char *path, HloProtoIds *info, FxError *err);
IrModule *hlo_load_file_with_ids(const char *path, HloProtoIds *info, FxError *err);

/* Prints the module as HLO text.  Returns false (with *err filled) when writing fails. */
bool hlo_print(FILE *f, const IrModule *m, FxError *err);
/* The module as HLO text, fx_malloc'd (the caller fx_frees it); NULL on allocation failure. */
char *hlo_print_string(const IrModule *m);
/* One instruction's line without indent or ROOT, e.g.
 * "%add.3 = f32[2048]{0} add(%a, %b), metadata={...}".  snprintf-like: returns the full length,
 * writes at most n bytes (NUL included) into buf (which may be NULL when n is 0). */
int hlo_format_instr(const IrInstr *i, char *buf, size_t n);

/* Parsing limits: nesting of brackets in attribute values and of tuple shapes. */
#define HLO_MAX_NESTING 64

#endif
