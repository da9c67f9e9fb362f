/* fx_lex.c — the .fx lexer, and the two questions the shell asks about a line of text
 * (is it a statement? is it unfinished?).
 *
 * Flow: fx_feed copies the text into a chunk, fx_lex turns it into tokens, fx_parse builds the
 * syntax tree. Newlines inside ( ) and [ ] are dropped so long calls may span lines; newlines
 * elsewhere (and ';') end a statement. A bracket that never closes, or closes the wrong opener,
 * is reported here, at the bracket. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fx_internal.h"

bool fx_err_at(FxError *err, FxPos pos, const char *fmt, ...) {
  if (!err || err->set) return false;
  char msg[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const FxChunk *ch = pos.chunk;
  fx_error_set(err, ch ? ch->filename : NULL, pos.line, pos.col, "%s", msg);
  if (ch && pos.line >= ch->first_line) fx_error_set_source(err, ch->text, pos.line - ch->first_line + 1);
  return false;
}

const char *fx_tok_name(FxTok t) {
  switch (t) {
  case T_EOF: return "end of input";
  case T_NEWLINE: return "end of line";
  case T_NAME: return "a name";
  case T_INT: return "an integer";
  case T_FLOAT: return "a number";
  case T_STRING: return "a string";
  case T_PLUS: return "'+'";
  case T_MINUS: return "'-'";
  case T_STAR: return "'*'";
  case T_SLASH: return "'/'";
  case T_PERCENT: return "'%'";
  case T_POW: return "'**'";
  case T_LT: return "'<'";
  case T_LE: return "'<='";
  case T_GT: return "'>'";
  case T_GE: return "'>='";
  case T_EQEQ: return "'=='";
  case T_NE: return "'!='";
  case T_AMP: return "'&'";
  case T_BAR: return "'|'";
  case T_TILDE: return "'~'";
  case T_ASSIGN: return "'='";
  case T_COMMA: return "','";
  case T_COLON: return "':'";
  case T_LPAREN: return "'('";
  case T_RPAREN: return "')'";
  case T_LBRACK: return "'['";
  case T_RBRACK: return "']'";
  case T_LBRACE: return "'{'";
  case T_RBRACE: return "'}'";
  }
  return "?";
}

static const char *keywords[] = {"let", "param", "const", "def", "loop", "carry", "as", "out", "return", "true", "false"};

bool fx_is_keyword(const char *s, int len) {
  for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
    if ((int)strlen(keywords[i]) == len && memcmp(keywords[i], s, (size_t)len) == 0) return true;
  return false;
}

/* Tokens one statement may have: past this a line is refused before it is held in memory (the
 * parser refuses more than 200,000 operations a statement anyway). */
#define MAX_STATEMENT_TOKENS 1000000

static bool push(FxChunk *ch, int *cap, FxToken t, FxError *err, long *run) {
  if (t.kind == T_NEWLINE) *run = 0;
  else if (++*run > MAX_STATEMENT_TOKENS)
    return fx_err_at(err, t.pos, "this statement is too long (more than %d tokens): split it into several statements",
                     MAX_STATEMENT_TOKENS);
  if (arena_grow(&ch->arena, (void **)&ch->toks, cap, ch->ntoks + 1, sizeof(FxToken))) {
    FxPos p = t.pos;
    return fx_err_at(err, p, "out of memory");
  }
  ch->toks[ch->ntoks++] = t;
  return true;
}

#define MAX_DEPTH 64

bool fx_lex(FxChunk *ch, FxError *err) {
  const char *p = ch->text;
  int line = ch->first_line;
  const char *line_start = p;
  int cap = 0;
  long run = 0; /* tokens of the current statement */
  /* Open brackets, innermost last: what they are and where. */
  char open[MAX_DEPTH];
  FxPos open_pos[MAX_DEPTH];
  int depth = 0;
  ch->ntoks = 0;
  while (*p) {
    FxToken t;
    memset(&t, 0, sizeof t);
    t.start = p;
    t.pos.chunk = ch;
    t.pos.line = line;
    t.pos.col = (int)(p - line_start) + 1;
    char c = *p;
    if (c == '\n') {
      p++;
      /* Inside ( or [ a newline is a continuation; inside { or at top level it ends a statement. */
      if (depth == 0 || open[depth - 1] == '{') {
        t.kind = T_NEWLINE;
        t.len = 1;
        if (!push(ch, &cap, t, err, &run)) return false;
      }
      line++;
      line_start = p;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      p++;
      continue;
    }
    if (c == '#') {
      while (*p && *p != '\n') p++;
      continue;
    }
    if (c == '\\' && p[1] == '\n') { /* explicit continuation */
      p += 2;
      line++;
      line_start = p;
      continue;
    }
    if (isalpha((unsigned char)c) || c == '_') {
      while (isalnum((unsigned char)*p) || *p == '_') p++;
      t.kind = T_NAME;
      t.len = (int)(p - t.start);
      if (t.len > 200) return fx_err_at(err, t.pos, "name too long (%d characters; the limit is 200)", t.len);
      if (!push(ch, &cap, t, err, &run)) return false;
      continue;
    }
    if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)p[1]))) {
      const char *q = p;
      bool is_float = false;
      while (isdigit((unsigned char)*q)) q++;
      if (*q == '.' && q[1] != '.') {
        is_float = true;
        q++;
        while (isdigit((unsigned char)*q)) q++;
      }
      if ((*q == 'e' || *q == 'E') && (isdigit((unsigned char)q[1]) || ((q[1] == '-' || q[1] == '+') && isdigit((unsigned char)q[2])))) {
        is_float = true;
        q += 2;
        while (isdigit((unsigned char)*q)) q++;
      }
      if (isalpha((unsigned char)*q) || *q == '_') {
        while (isalnum((unsigned char)*q) || *q == '_' || *q == '.') q++;
        return fx_err_at(err, t.pos, "malformed number '%.*s'", (int)(q - p), p);
      }
      errno = 0;
      if (is_float) {
        t.kind = T_FLOAT;
        t.fval = strtod(p, NULL);
        if (errno == ERANGE && (t.fval > 1 || t.fval < -1))
          return fx_err_at(err, t.pos, "number '%.*s' is out of range", (int)(q - p), p);
      } else {
        t.kind = T_INT;
        long long v = strtoll(p, NULL, 10);
        if (errno == ERANGE)
          return fx_err_at(err, t.pos, "integer literal '%.*s' does not fit in 64 bits", (int)(q - p), p);
        t.ival = v;
        t.fval = (double)v;
      }
      p = q;
      t.len = (int)(p - t.start);
      if (!push(ch, &cap, t, err, &run)) return false;
      continue;
    }
    if (c == '"') {
      const char *q = p + 1;
      while (*q && *q != '"' && *q != '\n') {
        /* strings reach the terminal: raw control characters (a terminal escape's ESC) are refused */
        unsigned char b = (unsigned char)*q;
        if ((b < 0x20 && b != '\t') || b == 0x7f) {
          FxPos at = t.pos;
          at.col += (int)(q - p);
          return fx_err_at(err, at, "control character 0x%02x in a string", b);
        }
        q++;
      }
      if (*q != '"') return fx_err_at(err, t.pos, "unterminated string");
      t.kind = T_STRING;
      p = q + 1;
      t.len = (int)(p - t.start);
      if (!push(ch, &cap, t, err, &run)) return false;
      continue;
    }
    int len = 1;
    switch (c) {
    case '+': t.kind = T_PLUS; break;
    case '-': t.kind = T_MINUS; break;
    case '*':
      if (p[1] == '*') {
        t.kind = T_POW;
        len = 2;
      } else {
        t.kind = T_STAR;
      }
      break;
    case '/': t.kind = T_SLASH; break;
    case '%': t.kind = T_PERCENT; break;
    case '<':
      if (p[1] == '=') {
        t.kind = T_LE;
        len = 2;
      } else {
        t.kind = T_LT;
      }
      break;
    case '>':
      if (p[1] == '=') {
        t.kind = T_GE;
        len = 2;
      } else {
        t.kind = T_GT;
      }
      break;
    case '=':
      if (p[1] == '=') {
        t.kind = T_EQEQ;
        len = 2;
      } else {
        t.kind = T_ASSIGN;
      }
      break;
    case '!':
      if (p[1] == '=') {
        t.kind = T_NE;
        len = 2;
      } else {
        return fx_err_at(err, t.pos, "unexpected '!' (use '~' for not, '!=' for not equal)");
      }
      break;
    case '&': t.kind = T_AMP; break;
    case '|': t.kind = T_BAR; break;
    case '~': t.kind = T_TILDE; break;
    case ',': t.kind = T_COMMA; break;
    case ':': t.kind = T_COLON; break;
    case ';': t.kind = T_NEWLINE; break;
    case '(': case '[': case '{':
      t.kind = c == '(' ? T_LPAREN : c == '[' ? T_LBRACK : T_LBRACE;
      if (depth == MAX_DEPTH) return fx_err_at(err, t.pos, "brackets nested too deeply (the limit is %d)", MAX_DEPTH);
      open[depth] = c;
      open_pos[depth] = t.pos;
      depth++;
      break;
    case ')': case ']': case '}': {
      char want = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (depth == 0) return fx_err_at(err, t.pos, "unmatched '%c'", c);
      if (open[depth - 1] != want) {
        char close = open[depth - 1] == '(' ? ')' : open[depth - 1] == '[' ? ']' : '}';
        return fx_err_at(err, t.pos, "'%c' closes '%c' opened at line %d, column %d (expected '%c')", c, open[depth - 1],
                         open_pos[depth - 1].line, open_pos[depth - 1].col, close);
      }
      depth--;
      t.kind = c == ')' ? T_RPAREN : c == ']' ? T_RBRACK : T_RBRACE;
      break;
    }
    default:
      if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f)
        return fx_err_at(err, t.pos, "unexpected character (byte 0x%02x)", (unsigned char)c);
      return fx_err_at(err, t.pos, "unexpected character '%c'", c);
    }
    p += len;
    t.len = len;
    if (!push(ch, &cap, t, err, &run)) return false;
  }
  if (depth > 0)
    return fx_err_at(err, open_pos[depth - 1], "unclosed '%c'", open[depth - 1]);
  FxToken e;
  memset(&e, 0, sizeof e);
  e.kind = T_NEWLINE;
  e.start = p;
  e.pos.chunk = ch;
  e.pos.line = line;
  e.pos.col = (int)(p - line_start) + 1;
  if (!push(ch, &cap, e, err, &run)) return false;
  e.kind = T_EOF;
  return push(ch, &cap, e, err, &run);
}

bool fx_needs_more(const char *text) {
  int depth = 0;
  for (const char *p = text; *p; p++) {
    if (*p == '#') {
      while (*p && *p != '\n') p++;
      if (!*p) break;
      continue;
    }
    if (*p == '"') {
      p++;
      while (*p && *p != '"' && *p != '\n') p++;
      if (!*p) break;
      continue;
    }
    if (*p == '(' || *p == '[' || *p == '{') depth++;
    else if (*p == ')' || *p == ']' || *p == '}') depth--;
    /* A stray closer can never be completed by more lines: let the parser report it. */
    if (depth < 0) return false;
  }
  if (depth > 0) return true;
  /* An explicit continuation: a line ending in a backslash. */
  size_t n = strlen(text);
  while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' ' || text[n - 1] == '\r')) n--;
  return n > 0 && text[n - 1] == '\\';
}

bool fx_is_statement(const char *line) {
  const char *p = line;
  while (*p == ' ' || *p == '\t') p++;
  if (!(isalpha((unsigned char)*p) || *p == '_')) return false;
  const char *w = p;
  while (isalnum((unsigned char)*p) || *p == '_') p++;
  int n = (int)(p - w);
  static const char *starts[] = {"let", "param", "const", "def", "loop", "out"};
  for (size_t i = 0; i < sizeof starts / sizeof *starts; i++)
    if ((int)strlen(starts[i]) == n && memcmp(starts[i], w, (size_t)n) == 0 && (*p == ' ' || *p == '\t' || !*p || *p == '\n'))
      return true;
  /* NAME = ... or NAME, NAME = ... (but not NAME == ...). */
  for (;;) {
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '=') return p[1] != '=';
    if (*p != ',') return false;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    if (!(isalpha((unsigned char)*p) || *p == '_')) return false;
    while (isalnum((unsigned char)*p) || *p == '_') p++;
  }
}
