/* algsimp.h — inside the algebraic simplifier (pass_algsimp.c): its state and the two ways it
 * reports a rewrite, shared with today's rewrites (algsimp_current.c), which the priority
 * pipeline's algsimp runs besides the classic ones. Private to compiler/passes/. */
#ifndef FXPLAIN_ALGSIMP_H
#define FXPLAIN_ALGSIMP_H

#include "pass.h"

typedef struct {
  PassContext *cx;
  int rewrites;
  bool current; /* today's XLA (priority pipeline): also algsimp_current_rewrite */
  /* after layout assignment and normalization (XLA's layout-sensitive simplifier): only rewrites
     that keep every value's layout, none that makes a reshape or transpose */
  bool layout_sensitive;
} Simp;

/* Reports one rewrite (action "rewrite", "fold", ...) with its sentence, and counts it. */
void algsimp_report(Simp *s, const char *action, const IrInstr *producer, const IrInstr *consumer, const char *result,
                    const char *detail);
/* Forwards i's users to x (same shape), reports "replaced i(...) by x: why" and removes what
 * became unused. False (nothing done) when the shapes differ. */
bool algsimp_forward(Simp *s, IrInstr *i, IrInstr *x, const char *why);

/* Today's rewrites of XLA's AlgebraicSimplifier that the classic pass does not make, for i (one
 * at most). True when i was rewritten (it may then be gone). algsimp_current.c. */
bool algsimp_current_rewrite(Simp *s, IrInstr *i);

#endif
