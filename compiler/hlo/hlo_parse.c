/* hlo_parse.c — reads XLA's HLO text format into an IrModule.
 *
 * First stage of the HLO flow: text -> hlo_parse -> IrModule -> ir_verify -> passes.
 *
 * The parser works directly on the characters with a cursor that knows its line and column, so
 * every error names the offending token's place.  It is a recursive-descent reader of this
 * grammar (whitespace, `// ...` and `/ * ... * /` comments allowed between any two tokens):
 *
 *   module      = ["HloModule" NAME [":"] header-rest NEWLINE] { section | computation }
 *                 (without the header, as XLA's parser takes it, the module is named "_")
 *   section     = ("FileNames" | "FunctionNames" | "FileLocations" | "StackFrames")
 *                 { NUMBER (STRING | "{...}") }            -- kept verbatim
 *   computation = ["ENTRY"] NAME [signature] "{" { instruction } "}" [", " trailing]
 *   signature   = "(" [NAME ":" shape {"," NAME ":" shape}] ")" "->" shape
 *   instruction = ["ROOT"] NAME "=" [shape] OPCODE "(" operands ")" { "," KEY "=" value }
 *   operands    = [operand {"," operand}]  |  literal (constant)  |  NUMBER (parameter)
 *   operand     = [shape] NAME  |  [shape] OPCODE "(" operands ")"   (an instruction of its own)
 *   shape       = TYPE "[" [dim {"," dim}] "]" [layout] | "(" [shape {"," shape}] ")" | "token[]"
 *                 | "b(" shape ")"                                   (a buffer of an array)
 *   dim         = ["<="] NUMBER;    layout = "{" [NUMBER {"," NUMBER}] [":" extra] "}" (no space
 *                 before "{": `-> f32[] {` opens a body, `f32[]{}` is a layout)
 *
 * Attribute values are kept as their verbatim text (IR_ATTR_TEXT), except the ones that name
 * computations (to_apply, calls, condition, body, branch_computations, ...), which become
 * IR_ATTR_COMP pointers resolved once the whole module is read, so a computation may be used
 * before it is defined.  Such a value may also be a computation written in place, its instructions
 * in braces (`to_apply={ ... }`, as XLA's parser takes it); it becomes a computation of the module
 * named "_" (then "_.1", ...), placed before its caller.  Within a computation an operand may also
 * be used before its definition: instructions are created in a topological order (the text's order
 * where it already is one), and a cycle is an error.
 *
 * A shape may be left out where XLA's parser infers it (`ROOT add = add(lhs, rhs)`): for ops whose
 * result follows from their operands and attributes; it is inferred (ir_infer_shape) once the
 * called computations are resolved.
 *
 * Names: XLA's names are unique in a module.  Some hand-written dumps repeat a name in different
 * computations (each fused computation with its own %a); such a name is renamed consistently
 * ("a" -> "a.12") because operands are resolved inside their computation.  A name repeated within
 * one computation is an error.
 *
 * Everything temporary lives in a scratch arena freed at the end; the module owns the rest. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "hlo.h"
#include "../ir/ir.h"
#include "../ir/verify.h"

/* ---------- parser state ---------- */

typedef struct {
  const char *name; /* without '%' (points into the source) */
  size_t len;
  int line, col;
} Ref;

typedef struct {
  IrComputation **slot; /* where the resolved pointer goes */
  Ref ref;
} CompFixup;

typedef struct {
  const char *key;
  size_t keylen;
  IrAttrKind kind;
  const char *text; /* module-arena copy */
  Ref *comps;
  int ncomps;
  bool braced;
  int line, col;
} AttrRec;

typedef struct InstrRec InstrRec;
struct InstrList {
  InstrRec *v;
  int n, cap;
};

struct InstrRec {
  Ref name;
  bool is_root;
  IrOpcode op;
  int op_line, op_col;
  IrShape shape;
  Ref *ops;
  int nops;
  int *opidx;
  AttrRec *attrs;
  int nattrs;
  const char *literal; /* constant: verbatim text (module arena) */
  int lit_line, lit_col;
  int64_t param_number;
  const char *op_text; /* async syntax sugar (OP-start): as printed */
  bool no_shape;       /* written without a shape: inferred after the module is read */
  IrInstr *made;
};

/* A signature's result to check against its computation's root once that root's shape, left out,
 * is inferred. */
typedef struct {
  IrComputation *comp;
  IrShape result; /* scratch */
  int line, col;
} SigCheck;

typedef struct {
  const char *src; /* NUL-terminated copy of the input */
  size_t len, pos;
  int line, col;
  const char *file; /* module-arena copy of the file name */
  FxError *err;
  IrModule *m;
  Arena scratch;
  CompFixup *fixups;
  int nfixups, fixups_cap;
  IrInstr **unshaped; /* instructions written without a shape, in the order they were made */
  int nunshaped, unshaped_cap;
  SigCheck *sigchecks; /* signatures whose root has no shape yet */
  int nsigchecks, sigchecks_cap;
  struct InstrList *recs; /* the computation being read: where nested operand instructions go */
  int nested;             /* how many nested instructions were named so far */
  bool failed;
  int nested_depth; /* nested computations (to_apply={...}) being read */
  /* A module attribute's strings may span lines: XLA prints origin_recovery_table's modules
   * (HloModule::ToString) as strings with their newlines. Anywhere else a newline ends an
   * unterminated string, so that it is reported at its quote. */
  bool strings_span_lines;
} P;

/* Replaces bytes that are not valid UTF-8 in the error's source line by '?' (one for one, so the
 * caret stays under the column), so a bad file never puts raw bytes on the user's terminal. */
static void sanitize_source(FxError *e) {
  if (!e) return;
  unsigned char *s = (unsigned char *)e->source;
  for (size_t i = 0; s[i];) {
    size_t n = fx_utf8_len(s + i, 4); /* the terminating NUL ends a sequence early */
    if (n == 0) s[i++] = '?';
    else i += n;
  }
}

static bool perr(P *p, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static bool perr(P *p, int line, int col, const char *fmt, ...) {
  if (p->failed) return false;
  p->failed = true;
  char msg[700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fx_error_set(p->err, p->file, line, col, "%s", msg);
  fx_error_set_source(p->err, p->src, line);
  sanitize_source(p->err);
  return false;
}

static bool oom(P *p) { return perr(p, p->line, p->col, "out of memory"); }

static char peek(const P *p) { return p->pos < p->len ? p->src[p->pos] : 0; }
static char peek_at(const P *p, size_t k) { return p->pos + k < p->len ? p->src[p->pos + k] : 0; }

static void adv(P *p) {
  if (p->pos >= p->len) return;
  if (p->src[p->pos] == '\n') {
    p->line++;
    p->col = 1;
  } else {
    p->col++;
  }
  p->pos++;
}

static void advn(P *p, size_t n) {
  while (n--) adv(p);
}

/* Skips spaces and comments, and newlines unless a line ends the construct (ws_line); line
 * comments only where newlines go too. Returns false on an unterminated block comment. */
static bool skip_blanks(P *p, bool newlines) {
  for (;;) {
    char c = peek(p);
    if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
      adv(p);
    } else if (newlines && c == '/' && peek_at(p, 1) == '/') {
      while (p->pos < p->len && peek(p) != '\n') adv(p);
    } else if (c == '/' && peek_at(p, 1) == '*') {
      int l = p->line, cl = p->col;
      advn(p, 2);
      while (p->pos < p->len && !(peek(p) == '*' && peek_at(p, 1) == '/')) adv(p);
      if (p->pos >= p->len) return perr(p, l, cl, "unterminated comment");
      advn(p, 2);
    } else {
      return true;
    }
  }
}

static bool ws(P *p) { return skip_blanks(p, true); }
static bool ws_line(P *p) { return skip_blanks(p, false); }

static bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9') || c == '.' || c == '-'; }

/* A short, printable description of the token at the cursor, for "expected X, found Y". */
static const char *describe(P *p, char *buf, size_t n) {
  if (p->pos >= p->len) return "end of file";
  size_t k = 0;
  char c = peek(p);
  if (is_name_char(c) || c == '%') {
    while (p->pos + k < p->len && k < 40 && (is_name_char(p->src[p->pos + k]) || (k == 0 && c == '%'))) k++;
  } else {
    k = 1;
  }
  if (c == ' ' || c == '\t') return "a space";
  if (c == '\n' || c == '\r') return "the end of the line";
  if ((unsigned char)c < 0x20) {
    snprintf(buf, n, "byte 0x%02x", (unsigned char)c);
    return buf;
  }
  snprintf(buf, n, "'%.*s'", (int)k, p->src + p->pos);
  return buf;
}

static bool expect_char(P *p, char c, const char *what) {
  if (!ws(p)) return false;
  if (peek(p) == c) {
    adv(p);
    return true;
  }
  char b[64];
  if (p->pos >= p->len) return perr(p, p->line, p->col, "unexpected end of file: expected %s", what);
  return perr(p, p->line, p->col, "expected %s, found %s", what, describe(p, b, sizeof b));
}

/* After an element of a list: a ',' announces another one (eaten); anything else ends the list. */
static bool eat_comma(P *p) {
  if (peek(p) != ',') return false;
  adv(p);
  return true;
}

/* NAME = ['%'] name-start {name-char}.  Fills r (without the '%'). */
static bool parse_name(P *p, Ref *r, const char *what) {
  if (!ws(p)) return false;
  r->line = p->line;
  r->col = p->col;
  bool pct = peek(p) == '%';
  if (pct) adv(p);
  if (!is_name_start(peek(p)) && !(pct && is_name_char(peek(p)))) {
    char b[64];
    if (p->pos >= p->len) return perr(p, p->line, p->col, "unexpected end of file: expected %s", what);
    return perr(p, r->line, r->col, "expected %s, found %s", what, describe(p, b, sizeof b));
  }
  size_t s = p->pos;
  while (is_name_char(peek(p))) adv(p);
  r->name = p->src + s;
  r->len = p->pos - s;
  return true;
}

static bool ref_is(const Ref *r, const char *s) { return strlen(s) == r->len && memcmp(r->name, s, r->len) == 0; }

/* A decimal integer (optionally negative when allow_neg); overflow is an error. */
static bool parse_int(P *p, int64_t *out, bool allow_neg, const char *what) {
  if (!ws(p)) return false;
  int l = p->line, c = p->col;
  bool neg = false;
  if (allow_neg && peek(p) == '-') {
    neg = true;
    adv(p);
  }
  if (!(peek(p) >= '0' && peek(p) <= '9')) {
    char b[64];
    if (p->pos >= p->len) return perr(p, l, c, "unexpected end of file: expected %s", what);
    return perr(p, l, c, "expected %s, found %s", what, describe(p, b, sizeof b));
  }
  uint64_t v = 0;
  while (peek(p) >= '0' && peek(p) <= '9') {
    unsigned d = (unsigned)(peek(p) - '0');
    if (v > (UINT64_C(0x7fffffffffffffff) - d) / 10) return perr(p, l, c, "%s is too large", what);
    v = v * 10 + d;
    adv(p);
  }
  *out = neg ? -(int64_t)v : (int64_t)v;
  return true;
}

/* ---------- balanced raw text (attribute values, literals, layouts' tails) ---------- */

/* Scans a value: brackets balanced, strings with escapes, until a ',' / whitespace / closer at
 * depth 0 (or, when stop_close is ')', until the unmatched ')').  Sets [*s, *e). */
static bool scan_raw(P *p, bool stop_at_space, char stop_close, size_t *s, size_t *e) {
  char stack[HLO_MAX_NESTING];
  int sl[HLO_MAX_NESTING], sc[HLO_MAX_NESTING];
  int depth = 0;
  *s = p->pos;
  for (;;) {
    char c = peek(p);
    if (p->pos >= p->len) {
      if (depth > 0)
        return perr(p, sl[depth - 1], sc[depth - 1], "unbalanced '%c': no matching '%c' before the end of file",
                    stack[depth - 1] == '}' ? '{' : stack[depth - 1] == ']' ? '[' : '(', stack[depth - 1]);
      break;
    }
    if (depth == 0) {
      if (c == ',' || c == stop_close || c == '}' || c == ')' || c == ']') break;
      if (stop_at_space && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) break;
    }
    if (c == '"') {
      int l = p->line, cl = p->col;
      adv(p);
      while (p->pos < p->len && peek(p) != '"' && (peek(p) != '\n' || p->strings_span_lines)) {
        if (peek(p) == '\\') adv(p);
        /* strings reach the terminal (errors, show hlo): raw control characters, such as the
           ESC of a terminal escape sequence, are refused; HLO text writes them as escapes */
        unsigned char b = (unsigned char)peek(p);
        if ((b < 0x20 && b != '\t' && !(p->strings_span_lines && (b == '\n' || b == '\r'))) || b == 0x7f)
          return perr(p, p->line, p->col, "control character 0x%02x in a string (write it as the escape \\x%02x)", b, b);
        adv(p);
      }
      if (peek(p) != '"') return perr(p, l, cl, "unterminated string");
      adv(p);
      continue;
    }
    if (c == '/' && peek_at(p, 1) == '*') {
      if (depth == 0 && stop_at_space) break; /* a comment ends a value like a space does */
      if (!ws_line(p)) return false;
      continue;
    }
    if (c == '{' || c == '(' || c == '[') {
      if (depth >= HLO_MAX_NESTING) return perr(p, p->line, p->col, "nesting deeper than %d levels", HLO_MAX_NESTING);
      stack[depth] = c == '{' ? '}' : c == '(' ? ')' : ']';
      sl[depth] = p->line;
      sc[depth] = p->col;
      depth++;
    } else if (c == '}' || c == ')' || c == ']') {
      if (stack[depth - 1] != c)
        return perr(p, p->line, p->col, "unbalanced '%c': expected '%c' to close the '%c' at %d:%d", c,
                    stack[depth - 1], stack[depth - 1] == '}' ? '{' : stack[depth - 1] == ']' ? '[' : '(',
                    sl[depth - 1], sc[depth - 1]);
      depth--;
    }
    adv(p);
  }
  *e = p->pos;
  while (*e > *s && (p->src[*e - 1] == ' ' || p->src[*e - 1] == '\t' || p->src[*e - 1] == '\n' || p->src[*e - 1] == '\r'))
    (*e)--;
  return true;
}

/* ---------- shapes ---------- */

static bool parse_shape(P *p, Arena *a, IrShape *out, int depth);

/* At the cursor stands `b(`, which opens a buffer shape: no opcode is named `b`. */
static bool buffer_shape_ahead(const P *p) {
  return peek(p) == 'b' && peek_at(p, 1) == '(';
}

static bool parse_layout(P *p, Arena *a, IrShape *s) {
  int l = p->line, c = p->col;
  adv(p); /* '{' */
  int m2m[IR_MAX_RANK];
  int n = 0;
  if (!ws(p)) return false;
  while (peek(p) >= '0' && peek(p) <= '9') {
    int64_t v;
    int vl = p->line, vc = p->col;
    if (!parse_int(p, &v, false, "a layout dimension")) return false;
    if (n >= IR_MAX_RANK || v >= s->rank) return perr(p, vl, vc, "layout names dimension %" PRId64 " of a rank-%d shape", v, s->rank);
    m2m[n++] = (int)v;
    if (!ws(p)) return false;
    if (peek(p) == ',') {
      adv(p);
      if (!ws(p)) return false;
    }
  }
  if (n != s->rank && !(n == 0 && s->rank == 0))
    return perr(p, l, c, "layout has %d dimension%s for a rank-%d shape", n, n == 1 ? "" : "s", s->rank);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      if (m2m[i] == m2m[j]) return perr(p, l, c, "layout lists dimension %d twice", m2m[i]);
  if (peek(p) == ':') {
    adv(p);
    size_t st, en;
    if (!scan_raw(p, true, '}', &st, &en)) return false;
    s->layout_extra = arena_strndup(a, p->src + st, en - st);
    if (!s->layout_extra) return oom(p);
  }
  if (!ws(p)) return false;
  if (peek(p) != '}') {
    char b[64];
    if (p->pos >= p->len) return perr(p, p->line, p->col, "unexpected end of file: expected '}' to close the layout");
    return perr(p, p->line, p->col, "expected '}' to close the layout, found %s", describe(p, b, sizeof b));
  }
  adv(p);
  s->has_layout = true;
  if (n > 0) {
    s->minor_to_major = arena_alloc(a, sizeof(int) * (size_t)n);
    if (!s->minor_to_major) return oom(p);
    memcpy(s->minor_to_major, m2m, sizeof(int) * (size_t)n);
  }
  return true;
}

static bool parse_shape(P *p, Arena *a, IrShape *out, int depth) {
  memset(out, 0, sizeof *out);
  if (!ws(p)) return false;
  int l = p->line, c = p->col;
  if (depth > HLO_MAX_NESTING) return perr(p, l, c, "tuple shapes nested deeper than %d levels", HLO_MAX_NESTING);
  if (peek(p) == '(') {
    adv(p);
    out->type = IR_TUPLE;
    IrShape elems[8], *v = elems;
    int n = 0, cap = 8;
    if (!ws(p)) return false;
    if (peek(p) != ')') {
      for (;;) {
        if (n == cap) {
          IrShape *nv = arena_alloc(&p->scratch, sizeof(IrShape) * (size_t)cap * 2);
          if (!nv) return oom(p);
          memcpy(nv, v, sizeof(IrShape) * (size_t)n);
          v = nv;
          cap *= 2;
        }
        if (!parse_shape(p, a, &v[n++], depth + 1)) return false;
        if (!ws(p)) return false;
        if (!eat_comma(p)) break;
      }
    }
    if (!expect_char(p, ')', "',' or ')' in a tuple shape")) return false;
    out->ntuple = n;
    if (n > 0) {
      out->tuple = arena_alloc(a, sizeof(IrShape) * (size_t)n);
      if (!out->tuple) return oom(p);
      memcpy(out->tuple, v, sizeof(IrShape) * (size_t)n);
    }
    return true;
  }
  if (buffer_shape_ahead(p)) { /* b(T[dims]): XLA's buffer shape (HloParserImpl::ParseShape) */
    advn(p, 2);
    if (!parse_shape(p, a, out, depth + 1)) return false;
    if (!ir_shape_is_array(out) || out->buffer) return perr(p, l, c, "a buffer shape b(...) holds an array");
    if (!ws(p) || !expect_char(p, ')', "')' after the buffer shape's array")) return false;
    out->buffer = true;
    return true;
  }
  size_t s = p->pos;
  if (peek(p) >= 'a' && peek(p) <= 'z')
    while ((peek(p) >= 'a' && peek(p) <= 'z') || (peek(p) >= '0' && peek(p) <= '9')) adv(p);
  size_t tl = p->pos - s;
  char b[64];
  if (tl == 0) {
    if (p->pos >= p->len) return perr(p, l, c, "unexpected end of file: expected a shape");
    return perr(p, l, c, "expected a shape, found %s", describe(p, b, sizeof b));
  }
  if (tl == 5 && memcmp(p->src + s, "token", 5) == 0) {
    out->type = IR_TOKEN;
    if (peek(p) != '[' || peek_at(p, 1) != ']') return perr(p, p->line, p->col, "expected '[]' after 'token'");
    advn(p, 2);
    return true;
  }
  if (!ir_type_lookup(p->src + s, tl, &out->type) || out->type == IR_TUPLE || out->type == IR_TOKEN)
    return perr(p, l, c, "unknown element type '%.*s'", (int)(tl > 40 ? 40 : tl), p->src + s);
  /* The type and its '[' are two tokens to XLA's lexer: `s32 [5696,10,4]` is a shape too. */
  while (peek(p) == ' ' || peek(p) == '\t') adv(p);
  if (peek(p) != '[') {
    if (p->pos >= p->len) return perr(p, p->line, p->col, "unexpected end of file: expected '[' after the element type");
    return perr(p, p->line, p->col, "expected '[' after the element type, found %s", describe(p, b, sizeof b));
  }
  adv(p);
  int64_t dims[IR_MAX_RANK];
  bool dyn[IR_MAX_RANK], anydyn = false;
  int rank = 0;
  int64_t elems = 1;
  if (!ws(p)) return false;
  if (peek(p) != ']') {
    for (;;) {
      if (!ws(p)) return false;
      int dl = p->line, dc = p->col;
      bool d = false;
      if (peek(p) == '<' && peek_at(p, 1) == '=') {
        advn(p, 2);
        d = anydyn = true;
      } else if (peek(p) == '?') {
        return perr(p, dl, dc, "unbounded dynamic dimensions ('?') are not supported");
      }
      int64_t v;
      if (!parse_int(p, &v, false, "a dimension size")) return false;
      if (rank >= IR_MAX_RANK) return perr(p, dl, dc, "shape has more than %d dimensions", IR_MAX_RANK);
      if (v != 0 && elems > INT64_MAX / v) return perr(p, dl, dc, "shape has too many elements (more than 2^63)");
      elems *= v;
      dims[rank] = v;
      dyn[rank] = d;
      rank++;
      if (!ws(p)) return false;
      if (!eat_comma(p)) break;
    }
  }
  if (peek(p) != ']') {
    if (p->pos >= p->len) return perr(p, p->line, p->col, "unexpected end of file: expected ']' to close the dimensions");
    return perr(p, p->line, p->col, "expected ',' or ']' in the dimensions, found %s", describe(p, b, sizeof b));
  }
  adv(p);
  if (elems > INT64_MAX / 16) return perr(p, l, c, "shape is too large: its size in bytes overflows");
  out->rank = rank;
  if (rank > 0) {
    out->dims = arena_alloc(a, sizeof(int64_t) * (size_t)rank);
    if (!out->dims) return oom(p);
    memcpy(out->dims, dims, sizeof(int64_t) * (size_t)rank);
    if (anydyn) {
      out->dynamic = arena_alloc(a, sizeof(bool) * (size_t)rank);
      if (!out->dynamic) return oom(p);
      memcpy(out->dynamic, dyn, sizeof(bool) * (size_t)rank);
    }
  }
  /* A layout follows the ']' directly; "-> f32[] {" opens a computation body instead. */
  if (peek(p) == '{') return parse_layout(p, a, out);
  return true;
}

/* ---------- literals ---------- */

/* Decodes a constant's text into values: numbers, true/false, inf/nan, with any nesting of braces
 * (the count must match the shape).  Tuple and complex literals keep only their text. */
static bool decode_literal(P *p, InstrRec *r, IrLiteral *lit, Arena *a) {
  const char *t = lit->text;
  const IrShape *s = &r->shape;
  if (strcmp(t, "{...}") == 0) {
    lit->elided = true;
    return true;
  }
  if (!ir_shape_is_array(s) || ir_type_is_complex(s->type)) return true;
  int64_t want = ir_shape_elements(s);
  /* XLA prints one unbraced value for an array whose elements are all equal (constant(0) of shape
   * f32[4,3]): it stands for every element. */
  bool splat = want > 1 && t[0] != '{';
  /* Two rounds: count, then store. */
  for (int round = 0; round < 2; round++) {
    int64_t n = 0;
    const char *q = t;
    while (*q) {
      char ch = *q;
      if (ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r' || ch == ',') {
        q++;
        continue;
      }
      if (ch == '{' || ch == '}') {
        q++;
        continue;
      }
      if (ch == '/' && q[1] == '*') { /* XLA writes index comments inside array literals */
        const char *z = strstr(q + 2, "*/");
        q = z ? z + 2 : q + strlen(q);
        continue;
      }
      double v;
      char *end = (char *)q;
      if (strncmp(q, "true", 4) == 0) {
        v = 1;
        end = (char *)q + 4;
      } else if (strncmp(q, "false", 5) == 0) {
        v = 0;
        end = (char *)q + 5;
      } else {
        v = strtod(q, &end);
      }
      if (end == q || (*end && !strchr(" \n\t\r,}", *end))) {
        /* Point at the bad token inside the literal. */
        int line = r->lit_line, col = r->lit_col;
        for (const char *z = t; z < q; z++) {
          if (*z == '\n') {
            line++;
            col = 1;
          } else {
            col++;
          }
        }
        size_t bl = strcspn(q, " \n\t\r,}");
        return perr(p, line, col, "malformed constant value '%.*s'", (int)(bl > 40 ? 40 : bl), q);
      }
      if (round == 1) lit->values[n] = v;
      n++;
      q = end;
    }
    if (round == 0) {
      if (splat && n == 1) {
        lit->count = want;
        lit->values = arena_alloc(a, sizeof(double) * (size_t)want);
        if (!lit->values)
          return perr(p, r->lit_line, r->lit_col,
                      "constant value stands for every one of its shape's %" PRId64 " elements: too many to hold", want);
        continue;
      }
      splat = false;
      if (n != want)
        return perr(p, r->lit_line, r->lit_col, "constant has %" PRId64 " value%s but its shape has %" PRId64 " element%s", n,
                    n == 1 ? "" : "s", want, want == 1 ? "" : "s");
      lit->count = n;
      lit->values = arena_alloc(a, sizeof(double) * (size_t)(n ? n : 1));
      if (!lit->values) return oom(p);
    }
  }
  for (int64_t k = 1; splat && k < want; k++) lit->values[k] = lit->values[0];
  return true;
}

/* ---------- instructions ---------- */

static const char *const comp_attrs[] = {"to_apply", "calls", "condition", "body", "branch_computations",
                                         "true_computation", "false_computation", "select", "scatter",
                                         "called_computations", NULL};

static bool is_comp_attr(const char *k, size_t n) {
  for (int i = 0; comp_attrs[i]; i++)
    if (strlen(comp_attrs[i]) == n && memcmp(comp_attrs[i], k, n) == 0) return true;
  return false;
}

static bool push_ref(P *p, Ref **v, int *n, int *cap, const Ref *r) {
  if (arena_grow(&p->scratch, (void **)v, cap, *n + 1, sizeof(Ref))) return oom(p);
  (*v)[(*n)++] = *r;
  return true;
}

static bool parse_computation(P *p, bool is_entry, int entry_line, int entry_col, Ref *nested);

/* Whether a computation's instruction list stands at the cursor, just after a '{' (XLA's parser
 * takes a computation attribute's value as either a name or an instruction list in braces:
 * HloParserImpl::ParseHloComputation): an instruction name and its '=', or ROOT. */
static bool nested_body_ahead(const P *p) {
  size_t k = p->pos;
  if (k < p->len && p->src[k] == '%') k++;
  size_t s = k;
  while (k < p->len && is_name_char(p->src[k])) k++;
  if (k == s) return false;
  if (k - s == 4 && memcmp(p->src + s, "ROOT", 4) == 0 && p->src[s - 1] != '%') return true;
  while (k < p->len && (p->src[k] == ' ' || p->src[k] == '\t')) k++;
  return k < p->len && p->src[k] == '=';
}

static bool parse_nested_computation(P *p, int line, int col, Ref *cr) {
  p->nested_depth++;
  bool ok = parse_computation(p, false, line, col, cr);
  p->nested_depth--;
  return ok;
}

/* One computation named by an attribute: its name, or a nested computation in braces, which is
 * read here and named as XLA's parser names it ("_", then "_.1", ... where that is taken). */
static bool parse_comp_ref(P *p, Ref *cr) {
  if (!ws(p)) return false;
  if (peek(p) == '{') {
    int l = p->line, c = p->col;
    adv(p);
    if (!ws(p)) return false;
    return parse_nested_computation(p, l, c, cr);
  }
  return parse_name(p, cr, "a computation name");
}

static bool parse_attrs(P *p, InstrRec *r) {
  int cap = 0;
  for (;;) {
    if (!ws(p)) return false;
    if (peek(p) != ',') return true;
    adv(p);
    if (!ws(p)) return false;
    int kl = p->line, kc = p->col;
    size_t ks = p->pos;
    while (is_name_char(peek(p))) adv(p);
    if (p->pos == ks) {
      char b[64];
      if (p->pos >= p->len) return perr(p, kl, kc, "unexpected end of file: expected an attribute name");
      return perr(p, kl, kc, "expected an attribute name, found %s", describe(p, b, sizeof b));
    }
    size_t kn = p->pos - ks;
    for (int k = 0; k < r->nattrs; k++)
      if (r->attrs[k].keylen == kn && memcmp(r->attrs[k].key, p->src + ks, kn) == 0)
        return perr(p, kl, kc, "duplicate attribute '%.*s'", (int)kn, p->src + ks);
    if (!expect_char(p, '=', "'=' after the attribute name")) return false;
    if (!ws(p)) return false;
    if (arena_grow(&p->scratch, (void **)&r->attrs, &cap, r->nattrs + 1, sizeof(AttrRec))) return oom(p);
    AttrRec *at = &r->attrs[r->nattrs++];
    memset(at, 0, sizeof *at);
    at->key = p->src + ks;
    at->keylen = kn;
    at->line = kl;
    at->col = kc;
    if (is_comp_attr(at->key, kn)) {
      at->kind = IR_ATTR_COMP;
      int ccap = 0;
      Ref cr;
      size_t brace = p->pos;
      int bl = p->line, bc = p->col;
      if (peek(p) == '{') {
        adv(p);
        if (!ws(p)) return false;
      }
      if (p->pos != brace && nested_body_ahead(p)) {
        /* to_apply={ p0 = f32[] parameter(0) ... }: one nested computation */
        if (!parse_nested_computation(p, bl, bc, &cr)) return false;
        if (!push_ref(p, &at->comps, &at->ncomps, &ccap, &cr)) return false;
      } else if (p->pos != brace) {
        at->braced = true;
        if (peek(p) != '}') {
          for (;;) {
            if (!parse_comp_ref(p, &cr)) return false;
            if (!push_ref(p, &at->comps, &at->ncomps, &ccap, &cr)) return false;
            if (!ws(p)) return false;
            if (!eat_comma(p)) break;
          }
        }
        if (!expect_char(p, '}', "',' or '}' in the computation list")) return false;
      } else {
        if (!parse_comp_ref(p, &cr)) return false;
        if (!push_ref(p, &at->comps, &at->ncomps, &ccap, &cr)) return false;
      }
    } else {
      at->kind = IR_ATTR_TEXT;
      size_t s, e;
      if (!scan_raw(p, true, 0, &s, &e)) return false;
      /* A custom-call's literal is printed as its shape, a space and its value
       * (HloCustomCallInstruction::PrintExtraAttributesImpl: `literal=s32[2]{0} {1, 2}`, `literal=f32[]
       * 0.1`); a tuple literal comes whole in parentheses. */
      if (kn == 7 && memcmp(at->key, "literal", 7) == 0 && e > s && p->src[s] != '(' && peek(p) == ' ') {
        adv(p);
        size_t s2;
        if (!scan_raw(p, true, 0, &s2, &e)) return false;
      }
      /* Replica groups over a mesh's axes are printed as the mesh, a space and the axes
       * (MeshAxesReplicaGroupList::ToString: `mesh['x'=2,'y'=2] {'y'}`); a mesh with its own
       * device order writes it after a comma (Mesh::ToString: `mesh['a'=4], device_ids=(...)`). */
      if (kn == 14 && memcmp(at->key, "replica_groups", 14) == 0 &&
          ((e - s > 5 && memcmp(p->src + s, "mesh[", 5) == 0) || (e - s > 13 && memcmp(p->src + s, "maximal_mesh[", 13) == 0))) {
        size_t s2;
        if (p->len - p->pos > 13 && memcmp(p->src + p->pos, ", device_ids=", 13) == 0) {
          advn(p, 13);
          if (!scan_raw(p, true, 0, &s2, &e)) return false;
        }
        if (peek(p) == ' ' && peek_at(p, 1) == '{') {
          adv(p);
          if (!scan_raw(p, true, 0, &s2, &e)) return false;
        }
      }
      if (e == s) {
        char b[64];
        if (p->pos >= p->len) return perr(p, p->line, p->col, "unexpected end of file: expected a value for '%.*s'", (int)kn, at->key);
        return perr(p, p->line, p->col, "expected a value for '%.*s', found %s", (int)kn, at->key, describe(p, b, sizeof b));
      }
      at->text = arena_strndup(&p->m->arena, p->src + s, e - s);
      if (!at->text) return oom(p);
    }
  }
}

/* XLA's async syntax sugar: async-start/-update/-done wrapping one instruction OP are printed as
 * OP-start/-update/-done (negate-start(%p0)), OP's attributes inline. Kept as the async op with
 * the printed spelling. */
static bool async_sugar(P *p, size_t s, InstrRec *r) {
  static const struct {
    const char *suffix;
    IrOpcode op;
  } forms[] = {{"-start", IR_OP_ASYNC_START}, {"-update", IR_OP_ASYNC_UPDATE}, {"-done", IR_OP_ASYNC_DONE}};
  size_t n = p->pos - s;
  IrOpcode wrapped;
  for (size_t k = 0; k < sizeof forms / sizeof forms[0]; k++) {
    size_t sl = strlen(forms[k].suffix);
    if (n > sl && memcmp(p->src + s + n - sl, forms[k].suffix, sl) == 0 && ir_op_lookup(p->src + s, n - sl, &wrapped)) {
      r->op = forms[k].op;
      r->op_text = arena_strndup(&p->m->arena, p->src + s, n);
      return r->op_text != NULL;
    }
  }
  return false;
}

/* Whether the instruction's shape was left out: at the cursor stands an opcode and its '(' (a
 * shape is a type and '[', a '(' of a tuple, or `token[]`). */
static bool shape_left_out(const P *p) {
  if (buffer_shape_ahead(p)) return false;
  size_t k = p->pos;
  while (k < p->len && is_name_char(p->src[k]) && p->src[k] != '.') k++;
  return k > p->pos && k < p->len && p->src[k] == '(';
}

/* The ops whose shape XLA's parser infers (CanInferShape in hlo_parser.cc, then ShapeInference)
 * and fxplain's shape rules derive from the operands, attributes and called computations alone:
 * not a parameter, constant, iota, broadcast, reshape, convert, gather or library call, whose
 * result is only known from the written shape. */
static bool shape_inferable(IrOpcode op) {
  switch (op) {
  case IR_OP_CONVERT:
  case IR_OP_BITCAST_CONVERT: return false;
  case IR_OP_CONVOLUTION:
  case IR_OP_WHILE:
  case IR_OP_CALL:
  case IR_OP_CONDITIONAL:
  case IR_OP_MAP:
  case IR_OP_SORT:
  case IR_OP_SCATTER:
  case IR_OP_SELECT_AND_SCATTER:
  case IR_OP_AFTER_ALL:
  case IR_OP_TRANSPOSE:
  case IR_OP_SLICE:
  case IR_OP_DYNAMIC_SLICE:
  case IR_OP_DYNAMIC_UPDATE_SLICE:
  case IR_OP_CONCATENATE:
  case IR_OP_PAD:
  case IR_OP_REVERSE:
  case IR_OP_REDUCE:
  case IR_OP_REDUCE_WINDOW:
  case IR_OP_DOT:
  case IR_OP_TUPLE:
  case IR_OP_GET_TUPLE_ELEMENT: return true;
  default: return ir_op_is_elementwise(op);
  }
}

static bool parse_rhs(P *p, InstrRec *r, bool attributes);

static bool parse_instr(P *p, InstrRec *r) {
  memset(r, 0, sizeof *r);
  r->param_number = -1;
  if (!parse_name(p, &r->name, "an instruction name or '}'")) return false;
  if (ref_is(&r->name, "ROOT") && r->name.name[-1] != '%') {
    r->is_root = true;
    if (!parse_name(p, &r->name, "an instruction name after ROOT")) return false;
  }
  if (!expect_char(p, '=', "'=' after the instruction name")) return false;
  if (!ws(p)) return false;
  if (shape_left_out(p)) {
    r->no_shape = true;
    r->shape = ir_shape_scalar(IR_TOKEN); /* a placeholder until it is inferred */
  } else if (!parse_shape(p, &p->scratch, &r->shape, 0)) {
    return false;
  }
  return parse_rhs(p, r, true);
}

/* An operand written as an instruction, `negate(f32[2] parameter(0))` or, its shape left out,
 * `add(multiply(a, b), c)` (XLA's parser takes both, without attributes: HloParserImpl::
 * ParseOperands tries a name first, then ParseInstructionRhs): read into a record of its own,
 * named OPCODE.N, before the instruction that reads it. Its shape (NULL where it was left out, to
 * be inferred as a top-level instruction's is) and opcode name are read already; `o` gets its
 * name. */
static bool parse_nested_instr(P *p, const IrShape *shape, Ref *o) {
  InstrRec nr;
  memset(&nr, 0, sizeof nr);
  nr.param_number = -1;
  if (shape) {
    nr.shape = *shape;
  } else {
    nr.no_shape = true;
    nr.shape = ir_shape_scalar(IR_TOKEN); /* a placeholder until it is inferred */
  }
  p->pos = (size_t)(o->name - p->src); /* back to the opcode */
  p->line = o->line;
  p->col = o->col;
  char *nm = NULL;
  for (;;) { /* a name no instruction of the text has */
    char buf[96];
    int n = snprintf(buf, sizeof buf, "%.*s.%d", (int)(o->len > 60 ? 60 : o->len), o->name, ++p->nested);
    bool used = false;
    for (const char *q = strstr(p->src, buf); q && !used; q = strstr(q + 1, buf))
      used = !is_name_char(q[n]) && (q == p->src || !is_name_char(q[-1]));
    if (used) continue;
    nm = arena_strndup(&p->scratch, buf, (size_t)n);
    if (!nm) return oom(p);
    nr.name.name = nm;
    nr.name.len = (size_t)n;
    nr.name.line = p->line;
    nr.name.col = p->col;
    break;
  }
  if (!parse_rhs(p, &nr, false)) return false;
  struct InstrList *l = p->recs;
  if (!l) return perr(p, nr.op_line, nr.op_col, "an operand written as an instruction outside a computation");
  if (arena_grow(&p->scratch, (void **)&l->v, &l->cap, l->n + 1, sizeof(InstrRec))) return oom(p);
  l->v[l->n++] = nr;
  *o = nr.name;
  return true;
}

/* The rest of an instruction after its shape: opcode, operands, attributes. */
static bool parse_rhs(P *p, InstrRec *r, bool attributes) {
  if (!ws(p)) return false;
  r->op_line = p->line;
  r->op_col = p->col;
  size_t s = p->pos;
  while (is_name_char(peek(p)) && peek(p) != '.') adv(p);
  if (p->pos == s) {
    char b[64];
    if (p->pos >= p->len) return perr(p, r->op_line, r->op_col, "unexpected end of file: expected an opcode");
    return perr(p, r->op_line, r->op_col, "expected an opcode, found %s", describe(p, b, sizeof b));
  }
  if (!ir_op_lookup(p->src + s, p->pos - s, &r->op) && !async_sugar(p, s, r))
    return perr(p, r->op_line, r->op_col, "unknown opcode '%.*s'", (int)(p->pos - s > 60 ? 60 : p->pos - s), p->src + s);
  if (r->no_shape && !shape_inferable(r->op))
    return perr(p, r->op_line, r->op_col,
                "'%%%.*s' has no shape: write it (the shape of a %s does not follow from its operands)", (int)r->name.len,
                r->name.name, ir_op_name(r->op));
  if (!expect_char(p, '(', "'(' after the opcode")) return false;
  if (!ws(p)) return false;
  if (r->op == IR_OP_CONSTANT) {
    r->lit_line = p->line;
    r->lit_col = p->col;
    size_t ls, le;
    if (!scan_raw(p, false, ')', &ls, &le)) return false;
    /* scan_raw stops at a depth-0 ','; a tuple or array literal is always bracketed. */
    if (peek(p) != ')') {
      char b[64];
      if (p->pos >= p->len) return perr(p, p->line, p->col, "unexpected end of file: expected ')' after the constant");
      return perr(p, p->line, p->col, "expected ')' after the constant, found %s", describe(p, b, sizeof b));
    }
    if (le == ls) return perr(p, p->line, p->col, "constant has no value");
    adv(p);
    r->literal = arena_strndup(&p->m->arena, p->src + ls, le - ls);
    if (!r->literal) return oom(p);
  } else if (r->op == IR_OP_PARAMETER) {
    if (!parse_int(p, &r->param_number, false, "a parameter number")) return false;
    if (!expect_char(p, ')', "')' after the parameter number")) return false;
  } else {
    int cap = 0;
    if (peek(p) != ')') {
      for (;;) {
        if (!ws(p)) return false;
        /* An operand may carry its shape: "f32[2]{0} %a" or "(f32[], s32[]) %t". */
        char c = peek(p);
        bool shaped = c == '(' || buffer_shape_ahead(p);
        if (!shaped && is_name_start(c)) {
          /* Names never contain '[': "xyz[" can only be a shape (perhaps with a bad type). */
          size_t k = p->pos;
          while (k < p->len && is_name_char(p->src[k])) k++;
          while (k < p->len && (p->src[k] == ' ' || p->src[k] == '\t')) k++;
          shaped = k < p->len && p->src[k] == '[';
        }
        IrShape oshape;
        if (shaped && !parse_shape(p, &p->scratch, &oshape, 0)) return false;
        Ref o;
        if (!parse_name(p, &o, "an operand name")) return false;
        if (peek(p) == '(' && o.name[-1] != '%' && !parse_nested_instr(p, shaped ? &oshape : NULL, &o)) return false;
        if (!push_ref(p, &r->ops, &r->nops, &cap, &o)) return false;
        if (!ws(p)) return false;
        if (!eat_comma(p)) break;
      }
    }
    if (!expect_char(p, ')', "',' or ')' after an operand")) return false;
  }
  return attributes ? parse_attrs(p, r) : true;
}

/* ---------- computations ---------- */

typedef struct {
  const char *name;
  size_t len;
  int idx;
} Slot;

static uint64_t hash_bytes(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static int lookup(const Slot *t, size_t cap, const char *s, size_t n) {
  size_t i = hash_bytes(s, n) & (cap - 1);
  while (t[i].name) {
    if (t[i].len == n && memcmp(t[i].name, s, n) == 0) return t[i].idx;
    i = (i + 1) & (cap - 1);
  }
  return -1;
}

/* Orders recs so every operand comes before its user, keeping the text order where it already is
 * one (iterative depth-first search; a cycle is reported at the operand that closes it). */
static bool topo_order(P *p, InstrRec *recs, int n, int *order) {
  bool sorted = true;
  for (int k = 0; k < n && sorted; k++)
    for (int j = 0; j < recs[k].nops; j++)
      if (recs[k].opidx[j] >= k) sorted = false;
  if (sorted) {
    for (int k = 0; k < n; k++) order[k] = k;
    return true;
  }
  char *state = arena_alloc(&p->scratch, (size_t)n);
  int *stk = arena_alloc(&p->scratch, sizeof(int) * (size_t)n);
  int *nxt = arena_alloc(&p->scratch, sizeof(int) * (size_t)n);
  if (!state || !stk || !nxt) return oom(p);
  int out = 0;
  for (int k = 0; k < n; k++) {
    if (state[k]) continue;
    int sp = 0;
    stk[sp++] = k;
    state[k] = 1;
    nxt[k] = 0;
    while (sp > 0) {
      int v = stk[sp - 1];
      if (nxt[v] < recs[v].nops) {
        int j = nxt[v]++;
        int u = recs[v].opidx[j];
        if (state[u] == 1) {
          const Ref *o = &recs[v].ops[j];
          return perr(p, o->line, o->col, "cycle: '%%%.*s' depends on itself through operand '%%%.*s' of '%%%.*s'",
                      (int)o->len, o->name, (int)o->len, o->name, (int)recs[v].name.len, recs[v].name.name);
        }
        if (state[u] == 0) {
          state[u] = 1;
          nxt[u] = 0;
          stk[sp++] = u;
        }
      } else {
        state[v] = 2;
        order[out++] = v;
        sp--;
      }
    }
  }
  return true;
}

static bool add_fixup(P *p, IrComputation **slot, const Ref *r) {
  if (arena_grow(&p->scratch, (void **)&p->fixups, &p->fixups_cap, p->nfixups + 1, sizeof(CompFixup))) return oom(p);
  p->fixups[p->nfixups].slot = slot;
  p->fixups[p->nfixups].ref = *r;
  p->nfixups++;
  return true;
}

typedef struct {
  Ref name;
  IrShape shape;
} SigParam;

/* A signature's result and its computation's root have the same shape (XLA's ParseComputation
 * checks ShapeUtil::Compatible of the two). */
static bool sig_result_agrees(P *p, const IrComputation *c, const IrShape *result, int line, int col) {
  if (ir_shape_equal(result, &c->root->shape)) return true;
  char b1[160], b2[160];
  ir_shape_format(result, false, b1, sizeof b1);
  ir_shape_format(&c->root->shape, false, b2, sizeof b2);
  return perr(p, line, col, "signature of '%%%s' returns %s but its root '%%%s' is %s", c->name, b1, c->root->name, b2);
}

/* Reads one computation.  With `nested`, the cursor stands in a computation attribute's braces,
 * past the '{' (at entry_line:entry_col): the computation has no name or signature in the text, gets
 * the first free name of "_", "_.1", ... (XLA's parser names it "_" and its module makes the name
 * unique), its closing '}' ends the attribute value, and *nested is set to its name. */
static bool parse_computation(P *p, bool is_entry, int entry_line, int entry_col, Ref *nested) {
  Ref cname;
  char *name;
  if (nested) {
    if (p->nested_depth > HLO_MAX_NESTING)
      return perr(p, entry_line, entry_col, "computations nested deeper than %d levels", HLO_MAX_NESTING);
    char nb[32] = "_";
    for (int k = 1; ir_module_find_computation(p->m, nb); k++) snprintf(nb, sizeof nb, "_.%d", k);
    name = arena_strndup(&p->m->arena, nb, strlen(nb));
    if (!name) return oom(p);
    cname.name = name;
    cname.len = strlen(name);
    cname.line = entry_line;
    cname.col = entry_col;
    *nested = cname;
  } else {
    if (!parse_name(p, &cname, "a computation name")) return false;
    name = arena_strndup(&p->m->arena, cname.name, cname.len);
    if (!name) return oom(p);
  }
  if (ir_module_find_computation(p->m, name)) return perr(p, cname.line, cname.col, "duplicate computation name '%%%s'", name);
  IrComputation *c = ir_computation_new(p->m, name);
  if (!c) return oom(p);
  int index = p->m->ncomps - 1;
  c->loc.file = p->file;
  c->loc.line = is_entry || nested ? entry_line : cname.line;
  c->loc.col = is_entry || nested ? entry_col : cname.col;
  c->is_entry = is_entry;
  /* Signature. */
  SigParam *sig = NULL;
  int nsig = 0, sigcap = 0, sig_line = 0, sig_col = 0;
  IrShape sig_result;
  if (!ws(p)) return false;
  if (peek(p) == '(' && !nested) {
    c->has_signature = true;
    sig_line = p->line;
    sig_col = p->col;
    adv(p);
    if (!ws(p)) return false;
    if (peek(p) != ')') {
      for (;;) {
        if (arena_grow(&p->scratch, (void **)&sig, &sigcap, nsig + 1, sizeof(SigParam))) return oom(p);
        SigParam *sp = &sig[nsig++];
        if (!parse_name(p, &sp->name, "a parameter name")) return false;
        /* XLA's lexer makes `a:` one name token and its parser reads a name then a shape
         * (HloParserImpl::ParseParamListToShape): the ':' may be left out, `(a f32[])`. */
        if (!ws(p)) return false;
        if (peek(p) == ':') adv(p);
        if (!parse_shape(p, &p->scratch, &sp->shape, 0)) return false;
        if (!ws(p)) return false;
        if (!eat_comma(p)) break;
      }
    }
    if (!expect_char(p, ')', "',' or ')' in the signature")) return false;
    if (!ws(p)) return false;
    if (!(peek(p) == '-' && peek_at(p, 1) == '>')) {
      char b[64];
      if (p->pos >= p->len) return perr(p, p->line, p->col, "unexpected end of file: expected '->' after the signature");
      return perr(p, p->line, p->col, "expected '->' after the signature, found %s", describe(p, b, sizeof b));
    }
    advn(p, 2);
    if (!parse_shape(p, &p->scratch, &sig_result, 0)) return false;
  }
  if (!ws(p)) return false;
  int body_line = p->line, body_col = p->col;
  if (nested) {
    body_line = entry_line;
    body_col = entry_col;
  } else if (!expect_char(p, '{', "'{' to open the computation body")) {
    return false;
  }
  /* Instructions (an operand written as an instruction goes in before its reader). A nested
   * computation (to_apply={...}) is read inside its caller's instruction: the caller's list is
   * put back when it ends. */
  struct InstrList list = {NULL, 0, 0};
  struct InstrList *outer_recs = p->recs;
  p->recs = &list;
  for (;;) {
    if (!ws(p)) return false;
    if (p->pos >= p->len)
      return perr(p, p->line, p->col, "unexpected end of file: computation '%%%s' (opened at %d:%d) is not closed", name, body_line,
                  body_col);
    if (peek(p) == '}') break;
    InstrRec r;
    if (!parse_instr(p, &r)) return false;
    if (arena_grow(&p->scratch, (void **)&list.v, &list.cap, list.n + 1, sizeof(InstrRec))) return oom(p);
    list.v[list.n++] = r;
  }
  p->recs = outer_recs;
  InstrRec *recs = list.v;
  int n = list.n;
  adv(p); /* '}' */
  if (n == 0) return perr(p, cname.line, cname.col, "computation '%%%s' has no instructions", name);
  /* Trailing attributes on the closing line ("}, execution_thread=..."); after a nested
   * computation the line goes on with the instruction's attributes. */
  if (!ws_line(p)) return false;
  if (peek(p) == ',' && !nested) {
    size_t s = p->pos;
    while (p->pos < p->len && peek(p) != '\n') adv(p);
    size_t e = p->pos;
    while (e > s && (p->src[e - 1] == ' ' || p->src[e - 1] == '\t' || p->src[e - 1] == '\r')) e--;
    c->trailing = arena_strndup(&p->m->arena, p->src + s, e - s);
    if (!c->trailing) return oom(p);
  }
  /* Names: unique within the computation. */
  size_t tcap = 16;
  while (tcap < (size_t)n * 2) tcap *= 2;
  Slot *table = arena_alloc(&p->scratch, sizeof(Slot) * tcap);
  if (!table) return oom(p);
  int root = -1;
  for (int k = 0; k < n; k++) {
    InstrRec *r = &recs[k];
    int prev = lookup(table, tcap, r->name.name, r->name.len);
    if (prev >= 0)
      return perr(p, r->name.line, r->name.col, "duplicate instruction name '%%%.*s' (first defined at %d:%d)", (int)r->name.len,
                  r->name.name, recs[prev].name.line, recs[prev].name.col);
    size_t i = hash_bytes(r->name.name, r->name.len) & (tcap - 1);
    while (table[i].name) i = (i + 1) & (tcap - 1);
    table[i].name = r->name.name;
    table[i].len = r->name.len;
    table[i].idx = k;
    if (r->is_root) {
      if (root >= 0)
        return perr(p, r->name.line, r->name.col, "second ROOT in computation '%%%s' (the first is '%%%.*s')", name,
                    (int)recs[root].name.len, recs[root].name.name);
      root = k;
    }
  }
  if (root < 0) root = n - 1; /* XLA's rule: the last instruction */
  /* Operands. */
  for (int k = 0; k < n; k++) {
    InstrRec *r = &recs[k];
    if (r->nops) {
      r->opidx = arena_alloc(&p->scratch, sizeof(int) * (size_t)r->nops);
      if (!r->opidx) return oom(p);
    }
    for (int j = 0; j < r->nops; j++) {
      int idx = lookup(table, tcap, r->ops[j].name, r->ops[j].len);
      if (idx < 0)
        return perr(p, r->ops[j].line, r->ops[j].col, "undefined operand '%%%.*s' in computation '%%%s'", (int)r->ops[j].len,
                    r->ops[j].name, name);
      if (idx == k) return perr(p, r->ops[j].line, r->ops[j].col, "'%%%.*s' uses itself as an operand", (int)r->ops[j].len, r->ops[j].name);
      r->opidx[j] = idx;
    }
  }
  int *order = arena_alloc(&p->scratch, sizeof(int) * (size_t)n);
  if (!order) return oom(p);
  if (!topo_order(p, recs, n, order)) return false;
  /* Create the instructions. */
  IrInstr *opbuf[64];
  int64_t maxparam = -1;
  for (int q = 0; q < n; q++) {
    InstrRec *r = &recs[order[q]];
    IrInstr **ops = opbuf;
    if (r->nops > 64) {
      ops = arena_alloc(&p->scratch, sizeof(IrInstr *) * (size_t)r->nops);
      if (!ops) return oom(p);
    }
    for (int j = 0; j < r->nops; j++) ops[j] = recs[r->opidx[j]].made;
    char nb[512];
    if (r->name.len >= sizeof nb) return perr(p, r->name.line, r->name.col, "instruction name is longer than %d bytes", (int)sizeof nb - 1);
    memcpy(nb, r->name.name, r->name.len);
    nb[r->name.len] = 0;
    IrInstr *in = ir_instr_new(c, r->op, &r->shape, ops, r->nops, nb);
    if (!in) return oom(p);
    r->made = in;
    if (r->no_shape) {
      if (arena_grow(&p->scratch, (void **)&p->unshaped, &p->unshaped_cap, p->nunshaped + 1, sizeof(IrInstr *)))
        return oom(p);
      p->unshaped[p->nunshaped++] = in;
    }
    in->loc.file = p->file;
    in->loc.line = r->name.line;
    in->loc.col = r->name.col;
    in->param_number = r->param_number;
    in->op_text = r->op_text;
    if (r->op == IR_OP_PARAMETER && r->param_number > maxparam) maxparam = r->param_number;
    if (r->literal) {
      in->literal = arena_alloc(&p->m->arena, sizeof(IrLiteral));
      if (!in->literal) return oom(p);
      in->literal->text = r->literal;
      if (!decode_literal(p, r, in->literal, &p->m->arena)) return false;
    }
    if (r->nattrs) {
      in->attrs = arena_alloc(&p->m->arena, sizeof(IrAttr) * (size_t)r->nattrs);
      if (!in->attrs) return oom(p);
      in->nattrs = in->attrs_cap = r->nattrs;
      for (int k = 0; k < r->nattrs; k++) {
        AttrRec *ar = &r->attrs[k];
        IrAttr *at = &in->attrs[k];
        at->key = arena_strndup(&p->m->arena, ar->key, ar->keylen);
        at->kind = ar->kind;
        at->text = ar->text;
        if (!at->key) return oom(p);
        if (ar->kind == IR_ATTR_COMP) {
          at->ncomps = ar->ncomps;
          at->comps_braced = ar->braced;
          at->comps = arena_alloc(&p->m->arena, sizeof(IrComputation *) * (size_t)(ar->ncomps ? ar->ncomps : 1));
          if (!at->comps) return oom(p);
          for (int j = 0; j < ar->ncomps; j++)
            if (!add_fixup(p, &at->comps[j], &ar->comps[j])) return false;
        }
      }
    }
  }
  ir_set_root(c, recs[root].made);
  /* Parameters: numbered 0..N-1, each once. */
  if (maxparam >= 0) {
    if (maxparam >= n) {
      int count = 0;
      for (int k = 0; k < n; k++) count += recs[k].op == IR_OP_PARAMETER;
      for (int k = 0; k < n; k++)
        if (recs[k].param_number == maxparam)
          return perr(p, recs[k].name.line, recs[k].name.col, "parameter(%" PRId64 ") but '%%%s' has only %d parameter%s", maxparam, name,
                      count, count == 1 ? "" : "s");
    }
    c->nparams = (int)maxparam + 1;
    c->params = arena_alloc(&p->m->arena, sizeof(IrInstr *) * (size_t)c->nparams);
    if (!c->params) return oom(p);
    for (int k = 0; k < n; k++) {
      InstrRec *r = &recs[k];
      if (r->op != IR_OP_PARAMETER) continue;
      if (c->params[r->param_number]) {
        const IrInstr *f = c->params[r->param_number];
        return perr(p, r->name.line, r->name.col, "parameter number %" PRId64 " is used twice (also by '%%%s' at %d:%d)", r->param_number,
                    f->name, f->loc.line, f->loc.col);
      }
      c->params[r->param_number] = r->made;
    }
    for (int k = 0; k < c->nparams; k++)
      if (!c->params[k]) {
        for (int j = 0; j < n; j++)
          if (recs[j].op == IR_OP_PARAMETER && recs[j].param_number > k)
            return perr(p, recs[j].name.line, recs[j].name.col, "parameter(%" PRId64 ") but there is no parameter(%d) in '%%%s'",
                        recs[j].param_number, k, name);
      }
  }
  /* The signature's result must be its root's shape. Its parameters are read and ignored, as
   * XLA's parser does (HloParserImpl::ParseComputation checks only the result against the root;
   * the parameters are the body's parameter instructions, and the signature is printed from them). */
  if (c->has_signature) {
    if (recs[root].no_shape) { /* checked once the root's shape is inferred */
      if (arena_grow(&p->scratch, (void **)&p->sigchecks, &p->sigchecks_cap, p->nsigchecks + 1, sizeof(SigCheck))) return oom(p);
      p->sigchecks[p->nsigchecks++] = (SigCheck){c, sig_result, sig_line, sig_col};
    } else if (!sig_result_agrees(p, c, &sig_result, sig_line, sig_col)) {
      return false;
    }
  }
  /* The nested computations read inside it were added after it; it goes after them, so the
   * module keeps callees before callers (XLA prints and reads them in that order). */
  IrModule *m = p->m;
  if (m->ncomps - 1 > index) {
    memmove(&m->comps[index], &m->comps[index + 1], sizeof(IrComputation *) * (size_t)(m->ncomps - 1 - index));
    m->comps[m->ncomps - 1] = c;
  }
  return true;
}

/* ---------- sections and the module ---------- */

static bool is_section(const Ref *r) {
  return ref_is(r, "FileNames") || ref_is(r, "FunctionNames") || ref_is(r, "FileLocations") || ref_is(r, "StackFrames");
}

/* A section: its name line, then lines "N <value>".  Returns the verbatim [s, e). */
static bool parse_section(P *p, size_t *s, size_t *e) {
  *s = p->pos;
  *e = p->pos;
  Ref r;
  if (!parse_name(p, &r, "a section name")) return false;
  *e = p->pos;
  for (;;) {
    if (!ws(p)) return false;
    if (!(peek(p) >= '0' && peek(p) <= '9')) break;
    int64_t id = 0;
    if (!parse_int(p, &id, false, "an entry number")) return false;
    if (!ws_line(p)) return false;
    size_t vs, ve;
    if (!scan_raw(p, true, 0, &vs, &ve)) return false;
    /* A FileLocations entry holds spaces inside its braces; scan_raw stops at spaces only at depth 0. */
    if (ve == vs) return perr(p, p->line, p->col, "expected a value for entry %" PRId64 " of section '%.*s'", id, (int)r.len, r.name);
    *e = p->pos;
    if (!ws_line(p)) return false;
    if (p->pos < p->len && peek(p) != '\n') {
      char b[64];
      return perr(p, p->line, p->col, "unexpected %s after entry %" PRId64 " of section '%.*s'", describe(p, b, sizeof b), id, (int)r.len,
                  r.name);
    }
  }
  return true;
}

static char *trimmed_copy(Arena *a, const char *s, size_t n) {
  while (n && (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')) s++, n--;
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
  return n ? arena_strndup(a, s, n) : NULL;
}

/* Checks the whole text is valid UTF-8 without NUL bytes; reports the first bad byte. */
static bool check_utf8(P *p) {
  const unsigned char *s = (const unsigned char *)p->src;
  int line = 1, col = 1;
  for (size_t i = 0; i < p->len;) {
    unsigned c = s[i];
    size_t n = fx_utf8_len(s + i, p->len - i);
    bool ok = n > 0 && c != 0;
    if (!ok) {
      if (c == 0) return perr(p, line, col, "NUL byte in the text");
      return perr(p, line, col, "invalid UTF-8 byte 0x%02x", c);
    }
    if (c == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
    i += n;
  }
  return true;
}

static bool parse_computations(P *p, size_t header_end);

static bool parse_module(P *p) {
  if (!check_utf8(p)) return false;
  if (!ws(p)) return false;
  Ref kw;
  if (p->pos >= p->len) return perr(p, p->line, p->col, "empty input: expected 'HloModule' or a computation");
  int kl = p->line, kc = p->col;
  if (!is_name_start(peek(p)) && peek(p) != '%') {
    char b[64];
    return perr(p, kl, kc, "expected 'HloModule' or a computation, found %s", describe(p, b, sizeof b));
  }
  size_t save = p->pos;
  bool sigil = peek(p) == '%'; /* %HloModule names a computation */
  if (!parse_name(p, &kw, "'HloModule' or a computation")) return false;
  IrModule *m = p->m;
  if (!ref_is(&kw, "HloModule") || sigil) {
    /* XLA's parser takes a module without its header: computations from the first line (the one
     * marked ENTRY, else the last, is the entry); the module is then named "_". */
    p->pos = save;
    p->line = kl;
    p->col = kc;
    m->name = arena_strndup(&m->arena, "_", 1);
    if (!m->name) return oom(p);
    return parse_computations(p, p->pos);
  }
  if (!ws_line(p)) return false;
  Ref mname;
  if (peek(p) == '\n' || p->pos >= p->len) return perr(p, p->line, p->col, "expected the module name after 'HloModule'");
  if (!parse_name(p, &mname, "the module name")) return false;
  /* XLA's lexer reads `NAME:` as a name token too (kName), and its parser takes either after
   * HloModule (HloParserImpl::ParseName): `HloModule no_entry:` names the module no_entry. */
  if (peek(p) == ':') adv(p);
  m->name = arena_strndup(&m->arena, mname.name, mname.len);
  if (!m->name) return oom(p);
  /* Header attributes: the rest of the line (brackets may continue it onto later lines). */
  if (!ws_line(p)) return false;
  if (peek(p) == ',') {
    size_t hs = p->pos;
    while (peek(p) == ',') {
      adv(p);
      /* after a comma the header may go on on the next line (XLA's lexer takes a newline as
       * any other space: `HloModule t,` NEWLINE `entry_computation_layout=...`) */
      if (!ws(p)) return false;
      int al = p->line, ac = p->col;
      size_t ks = p->pos;
      while (is_name_char(peek(p))) adv(p);
      if (p->pos == ks) {
        char b[64];
        return perr(p, al, ac, "expected a module attribute, found %s", describe(p, b, sizeof b));
      }
      size_t ke = p->pos;
      if (!ws_line(p)) return false; /* XLA's lexer takes spaces around the '=' (`input_output_alias= { ... }`) */
      if (peek(p) != '=') {
        char b[64];
        return perr(p, p->line, p->col, "expected '=' after the module attribute '%.*s', found %s", (int)(ke - ks), p->src + ks,
                    describe(p, b, sizeof b));
      }
      adv(p);
      if (!ws_line(p)) return false;
      size_t vs, ve;
      p->strings_span_lines = true;
      bool scanned = scan_raw(p, true, 0, &vs, &ve);
      p->strings_span_lines = false;
      if (!scanned) return false;
      if (ve == vs) {
        char b[64];
        return perr(p, p->line, p->col, "expected a value for the module attribute '%.*s', found %s", (int)(ke - ks), p->src + ks,
                    describe(p, b, sizeof b));
      }
      if (!ws_line(p)) return false;
    }
    size_t he = p->pos;
    while (he > hs && (p->src[he - 1] == ' ' || p->src[he - 1] == '\t' || p->src[he - 1] == '\r')) he--;
    m->header_attrs = arena_strndup(&m->arena, p->src + hs, he - hs);
    if (!m->header_attrs) return oom(p);
  }
  if (p->pos < p->len && peek(p) != '\n' && !(peek(p) == '/' && peek_at(p, 1) == '/')) {
    char b[64];
    return perr(p, p->line, p->col, "unexpected %s after the module header", describe(p, b, sizeof b));
  }
  return parse_computations(p, p->pos);
}

/* The module's sections, comments and computations after its header (which ends at header_end),
 * then what ties them together: the entry, called computations, shapes left out. */
static bool parse_computations(P *p, size_t header_end) {
  IrModule *m = p->m;
  /* Sections, comments and computations. */
  bool seen_comp = false;
  size_t first_comp = 0;
  char *epi = NULL;
  size_t epilen = 0;
  IrComputation *entry = NULL;
  int entry_line = 0, entry_col = 0;
  for (;;) {
    if (!ws(p)) return false;
    if (p->pos >= p->len) break;
    size_t start = p->pos;
    int sl = p->line, sc = p->col;
    Ref r;
    bool named = false;
    if (is_name_start(peek(p))) {
      size_t save = p->pos;
      int l0 = p->line, c0 = p->col;
      if (!parse_name(p, &r, "a computation")) return false;
      named = true;
      p->pos = save;
      p->line = l0;
      p->col = c0;
    }
    if (named && is_section(&r)) {
      size_t s, e;
      if (!parse_section(p, &s, &e)) return false;
      if (seen_comp) {
        size_t add = e - s;
        char *ne = arena_alloc(&p->scratch, epilen + add + 3);
        if (!ne) return oom(p);
        if (epilen) {
          memcpy(ne, epi, epilen);
          memcpy(ne + epilen, "\n\n", 2);
          epilen += 2;
        }
        memcpy(ne + epilen, p->src + s, add);
        epilen += add;
        ne[epilen] = 0;
        epi = ne;
      }
      continue;
    }
    if (!seen_comp) {
      seen_comp = true;
      first_comp = start;
    }
    bool is_entry = false;
    if (named && ref_is(&r, "ENTRY")) {
      is_entry = true;
      Ref dummy;
      if (!parse_name(p, &dummy, "ENTRY")) return false;
    }
    if (!parse_computation(p, is_entry, sl, sc, NULL)) return false;
    if (is_entry) {
      IrComputation *c = m->comps[m->ncomps - 1];
      if (entry)
        return perr(p, sl, sc, "second ENTRY computation '%%%s' (the first is '%%%s' at %d:%d)", c->name, entry->name, entry_line, entry_col);
      entry = c;
      entry_line = sl;
      entry_col = sc;
    }
  }
  if (m->ncomps == 0) return perr(p, p->line, p->col, "unexpected end of file: the module has no computations");
  if (!entry) { /* XLA's rule: the last computation is the entry */
    entry = m->comps[m->ncomps - 1];
    entry->is_entry = true;
  }
  m->entry = entry;
  m->prologue = trimmed_copy(&m->arena, p->src + header_end, first_comp - header_end);
  if (epilen) {
    m->epilogue = arena_strndup(&m->arena, epi, epilen);
    if (!m->epilogue) return oom(p);
  }
  /* Resolve the computations named by attributes. */
  for (int k = 0; k < p->nfixups; k++) {
    CompFixup *f = &p->fixups[k];
    char nb[512];
    size_t n = f->ref.len < sizeof nb ? f->ref.len : sizeof nb - 1;
    memcpy(nb, f->ref.name, n);
    nb[n] = 0;
    IrComputation *c = ir_module_find_computation(m, nb);
    if (!c) return perr(p, f->ref.line, f->ref.col, "undefined computation '%%%s'", nb);
    if (c == m->entry) return perr(p, f->ref.line, f->ref.col, "the entry computation '%%%s' cannot be called", nb);
    *f->slot = c;
  }
  /* The shapes left out, from the operands (made before their users) and attributes. */
  for (int k = 0; k < p->nunshaped; k++) {
    IrInstr *i = p->unshaped[k];
    /* A called computation written after its caller, whose root has no shape yet. */
    for (int a = 0; a < i->nattrs; a++)
      for (int j = 0; i->attrs[a].kind == IR_ATTR_COMP && j < i->attrs[a].ncomps; j++)
        for (int q = k + 1; q < p->nunshaped; q++)
          if (i->attrs[a].comps[j] && p->unshaped[q] == i->attrs[a].comps[j]->root)
            return perr(p, i->loc.line, i->loc.col,
                        "the shape of '%%%s' cannot be inferred: the root of '%%%s', written after it, has no shape",
                        i->name, i->attrs[a].comps[j]->name);
    IrShape s;
    FxError e;
    fx_error_clear(&e);
    if (!ir_infer_shape(i, &s, &m->arena, &e))
      return perr(p, i->loc.line, i->loc.col, "%s (its shape, left out, cannot be inferred)", e.msg);
    i->shape = s;
  }
  for (int k = 0; k < p->nsigchecks; k++) {
    const SigCheck *sc = &p->sigchecks[k];
    if (!sig_result_agrees(p, sc->comp, &sc->result, sc->line, sc->col)) return false;
  }
  /* Fused computations know their fusion instruction. A broadcast of a scalar written without
   * `dimensions=` gets dimensions={}, as XLA's parser gives it. */
  for (int k = 0; k < m->ncomps; k++)
    for (int j = 0; j < m->comps[k]->ninstrs; j++) {
      IrInstr *i = m->comps[k]->instrs[j];
      IrComputation *fc = ir_fused_computation(i);
      if (fc && !fc->fusion_instr) fc->fusion_instr = i;
      if (i->op == IR_OP_BROADCAST && i->noperands == 1 && ir_shape_is_scalar(&i->operands[0]->shape) &&
          !ir_attr_text(i, "dimensions"))
        ir_attr_set_dims(i, "dimensions", NULL, 0);
    }
  return true;
}

/* The computation XLA wraps an async OP-start's instruction in (it prints only OP-start): parameters
 * for the start's operands, and OP with the start's attributes as its root, whose shape is the
 * start's element 1. Added as the start's calls= and marked async_wrapped (not printed). */
static bool build_async_wrappers(P *p) {
  IrModule *m = p->m;
  int ncomps = m->ncomps;
  for (int c = 0; c < ncomps; c++) {
    IrComputation *comp = m->comps[c];
    for (int k = 0; k < comp->ninstrs; k++) {
      IrInstr *i = comp->instrs[k];
      /* In the short form a calls= is the wrapped instruction's (`fusion-start(p0), kind=kLoop,
       * calls=op1` wraps a fusion of op1), as XLA's parser reads it; it moves to the root. */
      if (i->op != IR_OP_ASYNC_START || !i->op_text) continue;
      IrOpcode op;
      size_t n = strlen(i->op_text) - strlen("-start");
      if (!ir_op_lookup(i->op_text, n, &op)) continue;
      if (i->shape.type != IR_TUPLE || i->shape.ntuple < 2)
        return perr(p, i->loc.line, i->loc.col, "%s: its shape must be a tuple (operands, result, ...)", i->op_text);
      IrComputation *w = ir_computation_new(m, ir_module_series_name(m, "async_wrapped", true));
      if (!w) return oom(p);
      w->async_wrapped = true;
      w->has_signature = true;
      w->params = arena_alloc(&m->arena, sizeof(IrInstr *) * (size_t)(i->noperands ? i->noperands : 1));
      IrInstr **ops = arena_alloc(&m->arena, sizeof(IrInstr *) * (size_t)(i->noperands ? i->noperands : 1));
      if (!w->params || !ops) return oom(p);
      for (int j = 0; j < i->noperands; j++) {
        char pn[32];
        snprintf(pn, sizeof pn, "param_%d", j);
        IrInstr *pi = ir_instr_new(w, IR_OP_PARAMETER, &i->operands[j]->shape, NULL, 0,
                                   ir_module_unique_name(m, pn));
        if (!pi) return oom(p);
        pi->param_number = j;
        w->params[w->nparams++] = ops[j] = pi;
      }
      IrInstr *root = ir_instr_new(w, op, &i->shape.tuple[1], ops, i->noperands,
                                   ir_module_unique_name(m, ir_op_name(op)));
      if (!root) return oom(p);
      root->loc = i->loc; /* what the verifier finds in it is at the start's line */
      for (int j = 0; j < i->noperands; j++) w->params[j]->loc = i->loc;
      w->loc = i->loc;
      for (int a = 0; a < i->nattrs; a++) {
        const IrAttr *at = &i->attrs[a];
        if (at->kind == IR_ATTR_TEXT) ir_attr_set_text(root, at->key, at->text);
        else ir_attr_set_comps(root, at->key, at->comps, at->ncomps, at->comps_braced);
      }
      ir_set_root(w, root);
      ir_attr_set_comp(i, "calls", w);
      /* Callees print (and are found) before their callers: move the wrapper before comp. */
      for (int q = m->ncomps - 1; q > c; q--) {
        IrComputation *t = m->comps[q];
        m->comps[q] = m->comps[q - 1];
        m->comps[q - 1] = t;
      }
      c++;
      ncomps++;
    }
  }
  return true;
}

IrModule *hlo_parse(const char *text, size_t len, const char *filename, FxError *err) {
  return hlo_parse_with(text, len, filename, NULL, err);
}

IrModule *hlo_parse_with(const char *text, size_t len, const char *filename, const IrVerifyOptions *opts,
                         FxError *err) {
  P p;
  memset(&p, 0, sizeof p);
  p.err = err;
  p.line = p.col = 1;
  p.len = len;
  char *copy = fx_malloc(len + 1);
  p.m = ir_module_new("module");
  if (!copy || !p.m) {
    fx_free(copy);
    ir_module_free(p.m);
    fx_error_set(err, filename, 0, 0, "out of memory");
    return NULL;
  }
  if (len) memcpy(copy, text, len);
  copy[len] = 0;
  p.src = copy;
  arena_init(&p.scratch);
  p.file = arena_strdup(&p.m->arena, filename ? filename : "<input>");
  p.m->source_file = p.file;
  bool ok = p.file && parse_module(&p) && build_async_wrappers(&p);
  if (!p.file) fx_error_set(err, filename, 0, 0, "out of memory");
  if (ok) {
    FxError verr;
    fx_error_clear(&verr);
    if (!ir_verify_with(p.m, opts, &verr)) {
      ok = false;
      if (err && !err->set) {
        *err = verr;
        if (err->line > 0 && err->file[0] && strcmp(err->file, p.file) == 0) fx_error_set_source(err, p.src, err->line);
      }
    }
  }
  arena_free(&p.scratch);
  fx_free(copy);
  if (!ok) {
    ir_module_free(p.m);
    return NULL;
  }
  return p.m;
}

IrModule *hlo_load_file(const char *path, FxError *err) {
  size_t len = 0;
  char *text = fx_read_file(path, &len, err);
  if (!text) return NULL;
  IrModule *m = hlo_parse(text, len, path, err);
  fx_free(text);
  return m;
}
