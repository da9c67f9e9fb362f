/* fusion.h — the front door of the fusion passes: the rules every fusion pass asks (what may fuse
 * and why not: fusion_rules.h), building and growing fusion instructions (fusion_build.h), and
 * XLA's GPU cost model and emitter analysis that priority fusion ranks producers by
 * (fusion_analysis.h), and today's gpu_fusible predicates (gpu_fusible.h). The passes themselves
 * are registered in ../passes/passes.h. */
#ifndef FXPLAIN_FUSION_H
#define FXPLAIN_FUSION_H

#include "fusion_analysis.h"
#include "fusion_build.h"
#include "fusion_rules.h"
#include "gpu_fusible.h"

#endif
