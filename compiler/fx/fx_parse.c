/* fx_parse.c — the .fx parser: tokens to a syntax tree (fx_internal.h), by recursive descent.
 *
 * Flow: fx_lex -> fx_parse -> fx_lower. The parser only checks the form of the text; names,
 * shapes and types are checked while lowering, where their values are known. Each function
 * carries its grammar rule. The first error stops the parse; the chunk's arena holds everything,
 * so nothing needs undoing.
 *
 *   program  = (stmt? NEWLINE)*
 *   stmt     = "let" NAME "=" expr
 *            | "param" NAME ":" type
 *            | "const" NAME (":" TYPENAME)? "=" expr
 *            | "def" NAME "(" (NAME ("," NAME)*)? ")" block
 *            | "loop" expr ("as" NAME)? "carry" "(" NAME "=" expr ("," NAME "=" expr)* ")" block
 *            | "out" expr ("," expr)*
 *            | "return" expr ("," expr)*
 *            | NAME ("," NAME)* "=" expr
 *   block    = "{" (stmt? NEWLINE)* stmt? "}"
 *   expr     = and ("|" and)*
 *   and      = cmp ("&" cmp)*
 *   cmp      = add (("<" | "<=" | ">" | ">=" | "==" | "!=") add)?
 *   add      = mul (("+" | "-") mul)*
 *   mul      = unary (("*" | "/" | "%") unary)*
 *   unary    = ("-" | "~") unary | power
 *   power    = postfix ("**" unary)?
 *   postfix  = primary ("[" item ("," item)* "]")*
 *   item     = expr | expr? ":" expr? (":" expr?)?
 *   primary  = INT | FLOAT | STRING | "true" | "false" | "(" expr ")" | "[" (expr ("," expr)*)? "]"
 *            | TYPENAME ("[" (expr ("," expr)*)? "]")?
 *            | NAME ("(" (arg ("," arg)*)? ")")?
 *   arg      = (NAME "=")? expr */
#include <string.h>

#include "fx_internal.h"

typedef struct {
  FxChunk *ch;
  int i;
  FxError *err;
  int depth; /* expression nesting, to bound recursion on hostile input */
  long nodes; /* expression nodes of this statement, to bound its memory */
} Parser;

#define MAX_EXPR_DEPTH 200
/* A statement of more operations than this is refused: a 40 MB line of `x + x + ...` would need
 * gigabytes of IR. Real programs split long expressions into statements. */
#define MAX_EXPR_NODES 500000

static FxToken *peek(Parser *p) { return &p->ch->toks[p->i]; }
static FxToken *peek2(Parser *p) { return &p->ch->toks[p->i + 1 < p->ch->ntoks ? p->i + 1 : p->i]; }
static FxToken *next(Parser *p) {
  FxToken *t = &p->ch->toks[p->i];
  if (t->kind != T_EOF) p->i++;
  return t;
}
static bool at(Parser *p, FxTok k) { return peek(p)->kind == k; }
static bool accept(Parser *p, FxTok k) {
  if (!at(p, k)) return false;
  next(p);
  return true;
}
static bool is_word(const FxToken *t, const char *w) {
  return t->kind == T_NAME && t->len == (int)strlen(w) && memcmp(t->start, w, (size_t)t->len) == 0;
}

static bool unexpected(Parser *p, const char *wanted) {
  FxToken *t = peek(p);
  if (t->kind == T_NAME || t->kind == T_INT || t->kind == T_FLOAT)
    return fx_err_at(p->err, t->pos, "expected %s, found '%.*s'", wanted, t->len, t->start);
  return fx_err_at(p->err, t->pos, "expected %s, found %s", wanted, fx_tok_name(t->kind));
}

static bool expect(Parser *p, FxTok k, const char *wanted) {
  if (accept(p, k)) return true;
  return unexpected(p, wanted);
}

static void *alloc(Parser *p, size_t n) {
  void *v = arena_alloc(&p->ch->arena, n);
  if (!v) fx_err_at(p->err, peek(p)->pos, "out of memory");
  return v;
}

static const char *tok_str(Parser *p, const FxToken *t) {
  char *s = arena_strndup(&p->ch->arena, t->start, (size_t)t->len);
  if (!s) fx_err_at(p->err, t->pos, "out of memory");
  return s;
}

static FxExpr *new_expr(Parser *p, FxExprKind k, FxPos pos) {
  if (++p->nodes > MAX_EXPR_NODES) {
    if (!p->err->set)
      fx_err_at(p->err, pos, "this statement has more than %d operations (the limit is %d): split it into several "
                "statements", MAX_EXPR_NODES, MAX_EXPR_NODES);
    return NULL;
  }
  FxExpr *e = alloc(p, sizeof *e);
  if (e) {
    e->kind = k;
    e->pos = pos;
  }
  return e;
}

/* Growable pointer list in the chunk arena. */
static bool grow(Parser *p, void **arr, int *cap, int n, size_t elem) {
  if (arena_grow(&p->ch->arena, arr, cap, n + 1, elem)) return fx_err_at(p->err, peek(p)->pos, "out of memory");
  return true;
}

static FxExpr *expr(Parser *p);

static bool is_type_name(const FxToken *t) {
  IrType ty;
  return t->kind == T_NAME && ir_type_lookup(t->start, (size_t)t->len, &ty) && ty != IR_TUPLE && ty != IR_TOKEN;
}

/* Element types as NumPy, JAX, PyTorch and C spell them, and as XLA (and .fx) does. */
static const struct {
  const char *theirs, *ours;
} foreign_types[] = {
    {"i8", "s8"},         {"i16", "s16"},     {"i32", "s32"},        {"i64", "s64"},      {"int8", "s8"},
    {"int16", "s16"},     {"int32", "s32"},   {"int64", "s64"},      {"int", "s32"},      {"uint8", "u8"},
    {"uint16", "u16"},    {"uint32", "u32"},  {"uint64", "u64"},     {"float16", "f16"},  {"half", "f16"},
    {"float32", "f32"},   {"float", "f32"},   {"float64", "f64"},    {"double", "f64"},   {"bfloat16", "bf16"},
    {"bool", "pred"},     {"complex64", "c64"}, {"complex128", "c128"},
};

const char *fx_foreign_type(const char *name, size_t len) {
  for (size_t k = 0; k < sizeof foreign_types / sizeof *foreign_types; k++)
    if (len == strlen(foreign_types[k].theirs) && strncmp(name, foreign_types[k].theirs, len) == 0) return foreign_types[k].ours;
  return NULL;
}

/* type = TYPENAME ("[" (expr ("," expr)*)? "]")? */
static FxExpr *type_expr(Parser *p, bool dims_allowed) {
  FxToken *t = peek(p);
  if (!is_type_name(t)) {
    const char *ours = t->kind == T_NAME ? fx_foreign_type(t->start, (size_t)t->len) : NULL;
    if (ours) {
      fx_err_at(p->err, t->pos, "expected an element type, found '%.*s': XLA (and .fx) spell it '%s'", t->len, t->start, ours);
      return NULL;
    }
    unexpected(p, "an element type (f32, s32, pred, ...)");
    return NULL;
  }
  next(p);
  FxExpr *e = new_expr(p, E_TYPE, t->pos);
  if (!e) return NULL;
  ir_type_lookup(t->start, (size_t)t->len, &e->type);
  if (dims_allowed && accept(p, T_LBRACK)) {
    e->has_dims = true;
    int cap = 0;
    if (!at(p, T_RBRACK)) {
      do {
        FxExpr *d = expr(p);
        if (!d || !grow(p, (void **)&e->args, &cap, e->nargs, sizeof(FxExpr *))) return NULL;
        e->args[e->nargs++] = d;
      } while (accept(p, T_COMMA));
    }
    if (!expect(p, T_RBRACK, "',' or ']' in the shape")) return NULL;
  }
  return e;
}

/* primary, see the grammar at the top */
static FxExpr *primary(Parser *p) {
  FxToken *t = peek(p);
  FxExpr *e;
  switch (t->kind) {
  case T_INT:
    next(p);
    e = new_expr(p, E_INT, t->pos);
    if (e) e->ival = t->ival, e->fval = t->fval;
    return e;
  case T_FLOAT:
    next(p);
    e = new_expr(p, E_FLOAT, t->pos);
    if (e) e->fval = t->fval;
    return e;
  case T_STRING:
    next(p);
    e = new_expr(p, E_STRING, t->pos);
    if (e) e->name = arena_strndup(&p->ch->arena, t->start + 1, (size_t)t->len - 2);
    return e;
  case T_LPAREN:
    next(p);
    e = expr(p);
    if (!e || !expect(p, T_RPAREN, "')'")) return NULL;
    return e;
  case T_LBRACK: {
    next(p);
    e = new_expr(p, E_LIST, t->pos);
    if (!e) return NULL;
    int cap = 0;
    if (!at(p, T_RBRACK)) {
      do {
        if (at(p, T_RBRACK)) break; /* trailing comma */
        FxExpr *a = expr(p);
        if (!a || !grow(p, (void **)&e->args, &cap, e->nargs, sizeof(FxExpr *))) return NULL;
        e->args[e->nargs++] = a;
      } while (accept(p, T_COMMA));
    }
    if (!expect(p, T_RBRACK, "',' or ']'")) return NULL;
    return e;
  }
  case T_NAME:
    break;
  default:
    unexpected(p, "an expression");
    return NULL;
  }
  if (is_word(t, "true") || is_word(t, "false")) {
    next(p);
    e = new_expr(p, E_BOOL, t->pos);
    if (e) e->ival = is_word(t, "true");
    return e;
  }
  if (is_type_name(t)) return type_expr(p, true);
  if (fx_is_keyword(t->start, t->len)) {
    fx_err_at(p->err, t->pos, "'%.*s' is a keyword and cannot be used in an expression", t->len, t->start);
    return NULL;
  }
  next(p);
  if (!at(p, T_LPAREN)) {
    e = new_expr(p, E_NAME, t->pos);
    if (e && !(e->name = tok_str(p, t))) return NULL;
    return e;
  }
  FxToken *lp = next(p);
  e = new_expr(p, E_CALL, t->pos);
  if (!e || !(e->name = tok_str(p, t))) return NULL;
  int cap = 0, ncap = 0;
  if (!at(p, T_RPAREN)) {
    do {
      if (at(p, T_RPAREN)) break; /* trailing comma */
      const char *kw = NULL;
      if (peek(p)->kind == T_NAME && peek2(p)->kind == T_ASSIGN) {
        kw = tok_str(p, next(p));
        next(p);
        if (!kw) return NULL;
      } else if (e->nargs > 0 && e->argnames[e->nargs - 1]) {
        fx_err_at(p->err, peek(p)->pos, "positional argument after keyword argument '%s'", e->argnames[e->nargs - 1]);
        return NULL;
      }
      FxExpr *a = expr(p);
      if (!a) return NULL;
      if (!grow(p, (void **)&e->args, &cap, e->nargs, sizeof(FxExpr *))) return NULL;
      if (!grow(p, (void **)&e->argnames, &ncap, e->nargs, sizeof(char *))) return NULL;
      e->args[e->nargs] = a;
      e->argnames[e->nargs] = kw;
      e->nargs++;
    } while (accept(p, T_COMMA));
  }
  (void)lp;
  if (!expect(p, T_RPAREN, "',' or ')' after the arguments")) return NULL;
  return e;
}

/* item = expr | expr? ":" expr? (":" expr?)? */
static bool index_item(Parser *p, FxIndexItem *it) {
  memset(it, 0, sizeof *it);
  it->pos = peek(p)->pos;
  if (!at(p, T_COLON)) {
    it->start = expr(p);
    if (!it->start) return false;
    if (!at(p, T_COLON)) {
      it->index = it->start;
      it->start = NULL;
      return true;
    }
  }
  it->is_slice = true;
  next(p); /* ':' */
  if (!at(p, T_COLON) && !at(p, T_COMMA) && !at(p, T_RBRACK)) {
    if (!(it->stop = expr(p))) return false;
  }
  if (accept(p, T_COLON)) {
    if (!at(p, T_COMMA) && !at(p, T_RBRACK)) {
      if (!(it->step = expr(p))) return false;
    }
  }
  return true;
}

/* postfix = primary ("[" item ("," item)* "]")* */
static FxExpr *postfix(Parser *p) {
  FxExpr *e = primary(p);
  while (e && at(p, T_LBRACK)) {
    FxToken *lb = next(p);
    FxExpr *ix = new_expr(p, E_INDEX, lb->pos);
    if (!ix) return NULL;
    ix->lhs = e;
    int cap = 0;
    do {
      if (!grow(p, (void **)&ix->items, &cap, ix->nitems, sizeof(FxIndexItem))) return NULL;
      if (!index_item(p, &ix->items[ix->nitems])) return NULL;
      ix->nitems++;
    } while (accept(p, T_COMMA));
    if (!expect(p, T_RBRACK, "',' or ']' in the index")) return NULL;
    e = ix;
  }
  return e;
}

static FxExpr *unary(Parser *p);

/* power = postfix ("**" unary)? */
static FxExpr *power(Parser *p) {
  FxExpr *e = postfix(p);
  if (e && at(p, T_POW)) {
    FxToken *op = next(p);
    FxExpr *b = new_expr(p, E_BINARY, op->pos);
    if (!b) return NULL;
    b->op = T_POW;
    b->lhs = e;
    if (!(b->rhs = unary(p))) return NULL;
    return b;
  }
  return e;
}

/* unary = ("-" | "~") unary | power */
static FxExpr *unary(Parser *p) {
  if (++p->depth > MAX_EXPR_DEPTH) {
    fx_err_at(p->err, peek(p)->pos, "expression nested too deeply (the limit is %d)", MAX_EXPR_DEPTH);
    return NULL;
  }
  FxExpr *r;
  if (at(p, T_MINUS) || at(p, T_TILDE) || at(p, T_PLUS)) {
    FxToken *op = next(p);
    FxExpr *a = unary(p);
    if (!a) return NULL;
    if (op->kind == T_PLUS) {
      r = a;
    } else {
      r = new_expr(p, E_UNARY, op->pos);
      if (r) {
        r->op = op->kind;
        r->lhs = a;
      }
    }
  } else {
    r = power(p);
  }
  p->depth--;
  return r;
}

static FxExpr *binary(Parser *p, FxExpr *l, FxToken *op, FxExpr *r) {
  if (!l || !r) return NULL;
  FxExpr *b = new_expr(p, E_BINARY, op->pos);
  if (!b) return NULL;
  b->op = op->kind;
  b->lhs = l;
  b->rhs = r;
  return b;
}

/* mul = unary (("*" | "/" | "%") unary)* */
static FxExpr *mul(Parser *p) {
  FxExpr *e = unary(p);
  while (e && (at(p, T_STAR) || at(p, T_SLASH) || at(p, T_PERCENT))) {
    FxToken *op = next(p);
    e = binary(p, e, op, unary(p));
  }
  return e;
}

/* add = mul (("+" | "-") mul)* */
static FxExpr *add(Parser *p) {
  FxExpr *e = mul(p);
  while (e && (at(p, T_PLUS) || at(p, T_MINUS))) {
    FxToken *op = next(p);
    e = binary(p, e, op, mul(p));
  }
  return e;
}

static bool is_cmp(FxTok k) { return k == T_LT || k == T_LE || k == T_GT || k == T_GE || k == T_EQEQ || k == T_NE; }

/* cmp = add (CMPOP add)? */
static FxExpr *cmp(Parser *p) {
  FxExpr *e = add(p);
  if (e && is_cmp(peek(p)->kind)) {
    FxToken *op = next(p);
    e = binary(p, e, op, add(p));
    if (e && is_cmp(peek(p)->kind)) {
      fx_err_at(p->err, peek(p)->pos, "comparisons cannot be chained; combine them with '&'");
      return NULL;
    }
  }
  return e;
}

/* and = cmp ("&" cmp)* */
static FxExpr *and_expr(Parser *p) {
  FxExpr *e = cmp(p);
  while (e && at(p, T_AMP)) {
    FxToken *op = next(p);
    e = binary(p, e, op, cmp(p));
  }
  return e;
}

/* expr = and ("|" and)* */
static FxExpr *expr(Parser *p) {
  FxExpr *e = and_expr(p);
  while (e && at(p, T_BAR)) {
    FxToken *op = next(p);
    e = binary(p, e, op, and_expr(p));
  }
  return e;
}

static FxStmt *new_stmt(Parser *p, FxStmtKind k, FxPos pos) {
  FxStmt *s = alloc(p, sizeof *s);
  if (s) {
    s->kind = k;
    s->pos = pos;
  }
  return s;
}

static bool add_name(Parser *p, FxStmt *s, int *cap, int *pcap, const FxToken *t) {
  if (!grow(p, (void **)&s->names, cap, s->nnames, sizeof(char *))) return false;
  if (!grow(p, (void **)&s->name_pos, pcap, s->nnames, sizeof(FxPos))) return false;
  if (!(s->names[s->nnames] = tok_str(p, t))) return false;
  s->name_pos[s->nnames++] = t->pos;
  return true;
}

/* A name being defined: not a keyword, not a type name. */
static FxToken *def_name(Parser *p, const char *what) {
  FxToken *t = peek(p);
  if (t->kind != T_NAME) {
    unexpected(p, what);
    return NULL;
  }
  if (fx_is_keyword(t->start, t->len)) {
    fx_err_at(p->err, t->pos, "'%.*s' is a keyword and cannot be used as a name", t->len, t->start);
    return NULL;
  }
  if (is_type_name(t)) {
    fx_err_at(p->err, t->pos, "'%.*s' is an element type and cannot be used as a name", t->len, t->start);
    return NULL;
  }
  return next(p);
}

static bool stmt_list(Parser *p, FxStmt ***out, int *n, bool in_block);

/* block = "{" (stmt? NEWLINE)* stmt? "}" */
static bool block(Parser *p, FxStmt *s) {
  while (accept(p, T_NEWLINE)) {
  }
  if (!expect(p, T_LBRACE, "'{' to open the block")) return false;
  if (!stmt_list(p, &s->body, &s->nbody, true)) return false;
  return expect(p, T_RBRACE, "'}'");
}

static bool expr_list(Parser *p, FxStmt *s) {
  int cap = 0;
  do {
    FxExpr *e = expr(p);
    if (!e || !grow(p, (void **)&s->values, &cap, s->nvalues, sizeof(FxExpr *))) return false;
    s->values[s->nvalues++] = e;
  } while (accept(p, T_COMMA));
  return true;
}

static FxStmt *statement(Parser *p) {
  FxToken *t = peek(p);
  FxStmt *s;
  int cap = 0, pcap = 0;
  if (t->kind != T_NAME) {
    unexpected(p, "a statement");
    return NULL;
  }
  if (is_word(t, "let") || is_word(t, "param") || is_word(t, "const")) {
    FxStmtKind k = is_word(t, "let") ? S_LET : is_word(t, "param") ? S_PARAM : S_CONST;
    next(p);
    if (!(s = new_stmt(p, k, t->pos))) return NULL;
    FxToken *n = def_name(p, "a name");
    if (!n || !add_name(p, s, &cap, &pcap, n)) return NULL;
    if (k == S_PARAM) {
      if (!expect(p, T_COLON, "':' and a type (param x: f32[4])")) return NULL;
      if (!(s->type = type_expr(p, true))) return NULL;
      return s;
    }
    if (k == S_CONST && accept(p, T_COLON)) {
      if (!(s->type = type_expr(p, false))) return NULL;
      if (at(p, T_LBRACK)) {
        fx_err_at(p->err, peek(p)->pos, "a const is a scalar: give only its element type (const g: f64 = 9.8)");
        return NULL;
      }
    }
    if (!expect(p, T_ASSIGN, "'='")) return NULL;
    if (!(s->value = expr(p))) return NULL;
    return s;
  }
  if (is_word(t, "def")) {
    next(p);
    if (!(s = new_stmt(p, S_DEF, t->pos))) return NULL;
    FxToken *n = def_name(p, "a function name");
    if (!n || !add_name(p, s, &cap, &pcap, n)) return NULL;
    if (!expect(p, T_LPAREN, "'(' and the parameter names")) return NULL;
    int c2 = 0, pc2 = 0;
    if (!at(p, T_RPAREN)) {
      do {
        FxToken *a = def_name(p, "a parameter name");
        if (!a) return NULL;
        if (!grow(p, (void **)&s->params, &c2, s->nparams, sizeof(char *))) return NULL;
        if (!grow(p, (void **)&s->param_pos, &pc2, s->nparams, sizeof(FxPos))) return NULL;
        if (!(s->params[s->nparams] = tok_str(p, a))) return NULL;
        for (int k = 0; k < s->nparams; k++)
          if (strcmp(s->params[k], s->params[s->nparams]) == 0) {
            fx_err_at(p->err, a->pos, "parameter '%s' appears twice", s->params[k]);
            return NULL;
          }
        s->param_pos[s->nparams++] = a->pos;
      } while (accept(p, T_COMMA));
    }
    if (!expect(p, T_RPAREN, "',' or ')' after the parameters")) return NULL;
    if (!block(p, s)) return NULL;
    return s;
  }
  if (is_word(t, "loop")) {
    next(p);
    if (!(s = new_stmt(p, S_LOOP, t->pos))) return NULL;
    if (!(s->value = expr(p))) return NULL;
    if (is_word(peek(p), "as")) {
      next(p);
      FxToken *ix = def_name(p, "the name of the loop index");
      if (!ix || !(s->index_name = tok_str(p, ix))) return NULL;
      s->index_pos = ix->pos;
    }
    if (!is_word(peek(p), "carry")) {
      unexpected(p, "'carry' and the loop's state: loop N carry (s = s0) { ... }");
      return NULL;
    }
    next(p);
    if (!expect(p, T_LPAREN, "'(' after carry")) return NULL;
    int vcap = 0;
    do {
      FxToken *n = def_name(p, "a carried name");
      if (!n) return NULL;
      for (int k = 0; k < s->nnames; k++)
        if ((int)strlen(s->names[k]) == n->len && memcmp(s->names[k], n->start, (size_t)n->len) == 0) {
          fx_err_at(p->err, n->pos, "'%s' is carried twice", s->names[k]);
          return NULL;
        }
      if (!add_name(p, s, &cap, &pcap, n)) return NULL;
      if (!expect(p, T_ASSIGN, "'=' and the initial value")) return NULL;
      FxExpr *e = expr(p);
      if (!e || !grow(p, (void **)&s->values, &vcap, s->nvalues, sizeof(FxExpr *))) return NULL;
      s->values[s->nvalues++] = e;
    } while (accept(p, T_COMMA));
    if (!expect(p, T_RPAREN, "',' or ')' after the carried values")) return NULL;
    for (int k = 0; s->index_name && k < s->nnames; k++)
      if (strcmp(s->names[k], s->index_name) == 0) {
        fx_err_at(p->err, s->name_pos[k], "'%s' is both the loop index and carried", s->index_name);
        return NULL;
      }
    if (!block(p, s)) return NULL;
    return s;
  }
  if (is_word(t, "out") || is_word(t, "return")) {
    next(p);
    if (!(s = new_stmt(p, is_word(t, "out") ? S_OUT : S_RETURN, t->pos))) return NULL;
    if (!expr_list(p, s)) return NULL;
    return s;
  }
  if (fx_is_keyword(t->start, t->len) && !is_word(t, "true") && !is_word(t, "false")) {
    fx_err_at(p->err, t->pos, "'%.*s' cannot start a statement", t->len, t->start);
    return NULL;
  }
  /* NAME ("," NAME)* "=" expr */
  if (!(s = new_stmt(p, S_ASSIGN, t->pos))) return NULL;
  for (;;) {
    FxToken *n = peek(p);
    if (n->kind != T_NAME) {
      unexpected(p, "a name to assign to");
      return NULL;
    }
    if (!(peek2(p)->kind == T_ASSIGN || peek2(p)->kind == T_COMMA)) {
      /* Not an assignment: say what would have made it one. */
      next(p);
      if (peek(p)->kind == T_NEWLINE || peek(p)->kind == T_EOF || peek(p)->kind == T_RBRACE)
        fx_err_at(p->err, n->pos, "'%.*s' is not a statement (assign it: y = ..., or list it: out ...)", n->len, n->start);
      else
        unexpected(p, "'=' (statements are NAME = expression)");
      return NULL;
    }
    if (!def_name(p, "a name to assign to")) return NULL;
    for (int k = 0; k < s->nnames; k++)
      if ((int)strlen(s->names[k]) == n->len && memcmp(s->names[k], n->start, (size_t)n->len) == 0) {
        fx_err_at(p->err, n->pos, "'%s' is assigned twice in one statement", s->names[k]);
        return NULL;
      }
    if (!add_name(p, s, &cap, &pcap, n)) return NULL;
    if (accept(p, T_ASSIGN)) break;
    next(p); /* ',' */
  }
  if (!(s->value = expr(p))) return NULL;
  return s;
}

/* (stmt? NEWLINE)* up to EOF (top level) or '}' (block) */
static bool stmt_list(Parser *p, FxStmt ***out, int *n, bool in_block) {
  int cap = 0;
  for (;;) {
    while (accept(p, T_NEWLINE)) {
    }
    if (at(p, T_EOF)) {
      if (in_block) return unexpected(p, "'}'");
      return true;
    }
    if (at(p, T_RBRACE)) {
      if (!in_block) return fx_err_at(p->err, peek(p)->pos, "unmatched '}'");
      return true;
    }
    FxStmt *s = statement(p);
    if (!s) return false;
    if (!grow(p, (void **)out, &cap, *n, sizeof(FxStmt *))) return false;
    (*out)[(*n)++] = s;
    if (!at(p, T_NEWLINE) && !at(p, T_EOF) && !(in_block && at(p, T_RBRACE)))
      return unexpected(p, "the end of the statement");
  }
}

bool fx_parse(FxChunk *ch, FxError *err) {
  Parser p = {ch, 0, err, 0, 0};
  ch->stmts = NULL;
  ch->nstmts = 0;
  return stmt_list(&p, &ch->stmts, &ch->nstmts, false);
}
