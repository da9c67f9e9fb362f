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
