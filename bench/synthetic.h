/* synthetic.h — the benches' synthetic module (bench/synthetic.c). */
#ifndef FXPLAIN_BENCH_SYNTHETIC_H
#define FXPLAIN_BENCH_SYNTHETIC_H

#include "../compiler/ir/ir.h"

/* A module of about `target` instructions (see synthetic.c); NULL when out of memory. */
IrModule *bench_synthetic_module(int target);

#endif
