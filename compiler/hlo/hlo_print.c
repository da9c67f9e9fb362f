/* hlo_print.c — writes an IrModule as HLO text: the last stage of the HLO flow (`save`,
 * `show hlo`), and the text every instruction is shown as elsewhere.
 *
 * The form is canonical, so printing is a fixed point of parse+print:
 *
 *   HloModule NAME<header attributes, verbatim>
 *                                    (blank line, then the prologue verbatim, when there is one)
 *   [ENTRY ]%comp [(p: shape, ...) -> shape ]{
 *     [ROOT ]%name = shape opcode(%a, %b), key=value, ...
 *   }<trailing, verbatim>
 *                                    (blank line between computations; the epilogue sections last)
 *
 * Attribute values are printed as they were read (or built); attributes naming computations
 * print as %name or {%a, %b}. */
#include <string.h>

#include "hlo.h"

typedef struct {
  char *buf;
  size_t len, cap;
  bool failed;
} Str;

static void put(Str *s, const char *t, size_t n) {
  if (s->failed) return;
  if (s->len + n + 1 > s->cap) {
    size_t nc = s->cap ? s->cap : 4096;
    while (nc < s->len + n + 1) nc *= 2;
    char *nb = fx_realloc(s->buf, nc);
    if (!nb) {
      s->failed = true;
      return;
    }
    s->buf = nb;
    s->cap = nc;
  }
  memcpy(s->buf + s->len, t, n);
  s->len += n;
  s->buf[s->len] = 0;
}

static void puts_(Str *s, const char *t) { put(s, t, strlen(t)); }

static void put_shape(Str *s, const IrShape *sh) {
  char small[256];
  int n = ir_shape_format(sh, true, small, sizeof small);
  if (n < (int)sizeof small) {
    put(s, small, (size_t)n);
    return;
  }
  char *big = fx_malloc((size_t)n + 1);
  if (!big) {
    s->failed = true;
    return;
  }
  ir_shape_format(sh, true, big, (size_t)n + 1);
  put(s, big, (size_t)n);
  fx_free(big);
}

static void put_name(Str *s, const char *name) {
  puts_(s, "%");
  puts_(s, name ? name : "?");
}

static void instr_line(Str *s, const IrInstr *i) {
  put_name(s, i->name);
  puts_(s, " = ");
  put_shape(s, &i->shape);
  puts_(s, " ");
  puts_(s, i->op_text ? i->op_text : ir_op_name(i->op));
  puts_(s, "(");
  if (i->op == IR_OP_PARAMETER) {
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)i->param_number);
    puts_(s, b);
  } else if (i->op == IR_OP_CONSTANT && i->literal) {
    puts_(s, i->literal->text ? i->literal->text : "{...}");
  } else {
    for (int k = 0; k < i->noperands; k++) {
      if (k) puts_(s, ", ");
      put_name(s, i->operands[k] ? i->operands[k]->name : NULL);
    }
  }
  puts_(s, ")");
  for (int k = 0; k < i->nattrs; k++) {
    const IrAttr *a = &i->attrs[k];
    if (i->op_text && a->kind == IR_ATTR_COMP && strcmp(a->key, "calls") == 0) {
      /* async sugar: the wrapper is not printed, the wrapped instruction's own calls= is */
      const IrComputation *w = a->ncomps == 1 ? a->comps[0] : NULL;
      a = w && w->async_wrapped && w->root ? ir_attr_get(w->root, "calls") : NULL;
      if (!a || a->kind != IR_ATTR_COMP) continue;
    }
    puts_(s, ", ");
    puts_(s, a->key);
    puts_(s, "=");
    if (a->kind == IR_ATTR_TEXT) {
      puts_(s, a->text ? a->text : "");
    } else {
      bool braced = a->comps_braced || a->ncomps != 1;
      if (braced) puts_(s, "{");
      for (int j = 0; j < a->ncomps; j++) {
        if (j) puts_(s, ", ");
        put_name(s, a->comps[j] ? a->comps[j]->name : NULL);
      }
      if (braced) puts_(s, "}");
    }
  }
}

int hlo_format_instr(const IrInstr *i, char *buf, size_t n) {
  Str s = {0};
  instr_line(&s, i);
  if (s.failed) {
    fx_free(s.buf);
    if (buf && n) buf[0] = 0;
    return -1;
  }
  if (buf && n) {
    size_t k = s.len < n ? s.len : n - 1;
    memcpy(buf, s.buf, k);
    buf[k] = 0;
  }
  int len = (int)s.len;
  fx_free(s.buf);
  return len;
}

static void computation(Str *s, const IrComputation *c) {
  if (c->is_entry) puts_(s, "ENTRY ");
  put_name(s, c->name);
  puts_(s, " ");
  if (c->has_signature) {
    puts_(s, "(");
    for (int k = 0; k < c->nparams; k++) {
      if (k) puts_(s, ", ");
      const IrInstr *p = c->params[k];
      /* XLA's style is a bare name; one that does not start like a name (a parameter named `2`)
       * keeps its % so that the text parses back */
      const char *pn = p ? p->name : "?";
      bool bare = (*pn >= 'a' && *pn <= 'z') || (*pn >= 'A' && *pn <= 'Z') || *pn == '_';
      puts_(s, bare ? "" : "%");
      puts_(s, pn);
      puts_(s, ": ");
      if (p) put_shape(s, &p->shape);
    }
    puts_(s, ") -> ");
    if (c->root) put_shape(s, &c->root->shape);
    puts_(s, " ");
  }
  puts_(s, "{\n");
  for (int k = 0; k < c->ninstrs; k++) {
    const IrInstr *i = c->instrs[k];
    puts_(s, i == c->root ? "  ROOT " : "  ");
    instr_line(s, i);
    puts_(s, "\n");
  }
  puts_(s, "}");
  if (c->trailing) puts_(s, c->trailing);
  puts_(s, "\n");
}

static bool module_text(Str *s, const IrModule *m) {
  puts_(s, "HloModule ");
  puts_(s, m->name);
  if (m->header_attrs) puts_(s, m->header_attrs);
  puts_(s, "\n");
  if (m->prologue) {
    puts_(s, "\n");
    puts_(s, m->prologue);
    puts_(s, "\n");
  }
  for (int k = 0; k < m->ncomps; k++) {
    if (m->comps[k]->async_wrapped) continue; /* XLA prints OP-start, not its wrapper */
    puts_(s, "\n");
    computation(s, m->comps[k]);
  }
  if (m->epilogue) {
    puts_(s, "\n");
    puts_(s, m->epilogue);
    puts_(s, "\n");
  }
  return !s->failed;
}

char *hlo_print_string(const IrModule *m) {
  Str s = {0};
  if (!module_text(&s, m)) {
    fx_free(s.buf);
    return NULL;
  }
  if (!s.buf) return fx_strdup("");
  return s.buf;
}

bool hlo_print(FILE *f, const IrModule *m, FxError *err) {
  Str s = {0};
  if (!module_text(&s, m)) {
    fx_free(s.buf);
    return fx_error_set(err, NULL, 0, 0, "out of memory printing module '%s'", m->name);
  }
  bool ok = fwrite(s.buf, 1, s.len, f) == s.len && fflush(f) == 0;
  fx_free(s.buf);
  if (!ok) return fx_error_set(err, NULL, 0, 0, "cannot write module '%s'", m->name);
  return true;
}
