/* pending.h — TEMPORARY (development only; removed before the final landing): the .fx
 * interface the shell calls, referenced weakly while their implementations are
 * being written, so the shell builds and links either way. A missing one reports "not available in
 * this build" instead of being faked. */
#ifndef FXPLAIN_PENDING_H
#define FXPLAIN_PENDING_H

#include "../compiler/device.h"
#include "../compiler/ir.h"
#include "../compiler/pass.h"
#include "../compiler/status.h"

#if __has_include("../compiler/fx.h")
#include "../compiler/fx.h"
#else
typedef struct FxState FxState;
FxState *fx_state_new(void);
void fx_state_free(FxState *st);
bool fx_feed(FxState *st, const char *text, const char *filename, int first_line, FxError *err);
bool fx_needs_more(const char *text);
bool fx_is_statement(const char *line);
IrModule *fx_build_module(FxState *st, const char *module_name, FxError *err);
#endif

#pragma weak fx_state_new
#pragma weak fx_state_free
#pragma weak fx_feed
#pragma weak fx_needs_more
#pragma weak fx_is_statement
#pragma weak fx_build_module

#endif
