/* fx_internal.h — private to the .fx front end: tokens, the syntax tree, and the pieces the
 * lexer (fx_lex.c), parser (fx_parse.c) and lowering (fx_lower.c, fx_ops.c) share.
 *
 * A chunk is one piece of text given to fx_feed. It owns an arena holding its copy of the text,
 * its tokens and its syntax tree; every node points back to its chunk so errors found while
 * lowering can quote the right source line. */
#ifndef FXPLAIN_FX_INTERNAL_H
#define FXPLAIN_FX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "../ir/ir.h"
#include "fx.h"

typedef struct FxChunk FxChunk;

typedef struct {
  const FxChunk *chunk;
  int line, col; /* absolute line (first_line based), 1-based column */
} FxPos;

/* ---------- tokens ---------- */

typedef enum {
  T_EOF,
  T_NEWLINE, /* statement separator (also ';') */
  T_NAME,
  T_INT,
  T_FLOAT,
  T_STRING,
  T_PLUS, T_MINUS, T_STAR, T_SLASH, T_PERCENT, T_POW,
  T_LT, T_LE, T_GT, T_GE, T_EQEQ, T_NE,
  T_AMP, T_BAR, T_TILDE,
  T_ASSIGN, T_COMMA, T_COLON,
  T_LPAREN, T_RPAREN, T_LBRACK, T_RBRACK, T_LBRACE, T_RBRACE,
} FxTok;

typedef struct {
  FxTok kind;
  const char *start; /* into the chunk's text copy */
  int len;
  FxPos pos;
  int64_t ival;
  double fval;
} FxToken;

struct FxChunk {
  Arena arena;
  char *text;
  char *filename;
  int first_line;
  FxToken *toks;
  int ntoks;
  struct FxStmt **stmts;
  int nstmts;
};

/* Tokenizes chunk->text into chunk->toks. Newlines inside ( ) and [ ] are dropped (implicit line
 * continuation); inside { } they separate statements. */
bool fx_lex(FxChunk *ch, FxError *err);
const char *fx_tok_name(FxTok t);

/* Fills err at pos, quoting the source line. Returns false. */
bool fx_err_at(FxError *err, FxPos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---------- syntax tree ---------- */

typedef enum {
  E_INT, E_FLOAT, E_BOOL, E_STRING, E_NAME,
  E_UNARY,  /* op: T_MINUS, T_TILDE */
  E_BINARY, /* op: the operator token */
  E_CALL,   /* name(args), args may be keyword args */
  E_INDEX,  /* base[items] */
  E_LIST,   /* [a, b, ...] */
  E_TYPE,   /* f32[n, 4] or f32 */
} FxExprKind;

typedef struct FxExpr FxExpr;

typedef struct {
  FxPos pos;
  bool is_slice;
  FxExpr *index;              /* !is_slice */
  FxExpr *start, *stop, *step; /* is_slice: each may be NULL */
} FxIndexItem;

struct FxExpr {
  FxExprKind kind;
  FxPos pos;
  int op;
  int64_t ival;
  double fval;
  const char *name; /* E_NAME, E_CALL (the function), E_STRING (the text) */
  FxExpr *lhs, *rhs;
  FxExpr **args; /* E_CALL, E_LIST */
  const char **argnames; /* E_CALL: keyword or NULL */
  int nargs;
  FxIndexItem *items; /* E_INDEX */
  int nitems;
  IrType type;     /* E_TYPE */
  bool has_dims;   /* E_TYPE: "f32[...]" rather than "f32" */
};

typedef enum { S_LET, S_PARAM, S_CONST, S_DEF, S_LOOP, S_OUT, S_ASSIGN, S_RETURN } FxStmtKind;

typedef struct FxStmt FxStmt;
struct FxStmt {
  FxStmtKind kind;
  FxPos pos;
  const char **names; /* assign targets; let/param/const/def name (1); loop carry names */
  FxPos *name_pos;
  int nnames;
  FxExpr *value;  /* let, const, assign: the value; loop: the trip count */
  FxExpr *type;   /* param, const (optional): an E_TYPE */
  FxExpr **values; /* out, return: the list; loop: carry initial values (nnames of them) */
  int nvalues;
  FxStmt **body; /* def, loop */
  int nbody;
  const char *index_name; /* loop: `as i`, or NULL */
  FxPos index_pos;
  const char **params; /* def */
  FxPos *param_pos;
  int nparams;
};

/* Parses the chunk's tokens into chunk->stmts. */
bool fx_parse(FxChunk *ch, FxError *err);

/* True for the reserved words of the language. */
bool fx_is_keyword(const char *s, int len);

/* An element type as NumPy, JAX, PyTorch or C names it ("int32", "i32", "float", "bool"): its .fx
 * (and XLA) name ("s32", "f32", "pred"); NULL for any other word. */
const char *fx_foreign_type(const char *name, size_t len);

#endif
