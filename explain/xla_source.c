/* xla_source.c — where an instruction came from in the user's program, as XLA records it.
 *
 * Two forms, both kept verbatim by the parser (the metadata attribute, and the module's tables in
 * its prologue or epilogue text):
 *   older dumps:  metadata={op_name="jit(f)/mul" source_file="/x/model.py" source_line=12}
 *   today's XLA:  metadata={op_name="jit(f)/mul" stack_frame_id=6} plus the tables
 *       FileNames      1 "/x/model.py"
 *       FunctionNames  1 "f"
 *       FileLocations  1 {file_name_id=1 function_name_id=1 line=12 end_line=12 column=8 end_column=20}
 *       StackFrames    6 {file_location_id=1 parent_frame_id=2}
 *   A frame's own location is the innermost (the line that made the op); parents are its callers.
 * The tables are parsed once per module text and kept in a one-entry cache. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xla_dump.h"

typedef struct {
  int file, func, line, end_line, col, end_col;
} Loc;

typedef struct {
  const char *key; /* the text the tables came from */
  size_t keylen;
  char **files, **funcs;
  int nfiles, nfuncs;
  Loc *locs;
  int nlocs;
  int *frame_loc;
  int nframes;
} Tables;

static Tables cache;

static void tables_clear(Tables *t) {
  for (int k = 0; k < t->nfiles; k++) fx_free(t->files[k]);
  for (int k = 0; k < t->nfuncs; k++) fx_free(t->funcs[k]);
  fx_free(t->files);
  fx_free(t->funcs);
  fx_free(t->locs);
  fx_free(t->frame_loc);
  fx_free((void *)t->key);
  memset(t, 0, sizeof *t);
}

static int field(const char *s, const char *key) {
  char k[48];
  snprintf(k, sizeof k, "%s=", key);
  const char *p = s;
  while ((p = strstr(p, k))) {
    if (p == s || p[-1] == ' ' || p[-1] == '{') return atoi(p + strlen(k));
    p++;
  }
  return 0;
}

/* Grows *arr (of elem-sized entries) so that index idx exists; zero-fills. */
static bool ensure(void **arr, int *n, int idx, size_t elem) {
  if (idx < *n) return true;
  if (idx > 1000000) return false;
  void *g = fx_realloc(*arr, elem * (size_t)(idx + 1));
  if (!g) return false;
  memset((char *)g + elem * (size_t)*n, 0, elem * (size_t)(idx + 1 - *n));
  *arr = g;
  *n = idx + 1;
  return true;
}

static void parse_tables(Tables *t, const char *text) {
  enum { NONE, FILES, FUNCS, LOCS, FRAMES } sec = NONE;
  for (const char *p = text; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
    p = nl ? nl + 1 : NULL;
    if (strcmp(line, "FileNames") == 0) sec = FILES;
    else if (strcmp(line, "FunctionNames") == 0) sec = FUNCS;
    else if (strcmp(line, "FileLocations") == 0) sec = LOCS;
    else if (strcmp(line, "StackFrames") == 0) sec = FRAMES;
    else if (!isdigit((unsigned char)line[0])) {
      if (line[0]) sec = NONE;
    } else {
      int id = atoi(line);
      const char *rest = strchr(line, ' ');
      if (!rest || id < 0) continue;
      rest++;
      if (sec == FILES || sec == FUNCS) {
        const char *q = strchr(rest, '"');
        const char *qe = q ? strrchr(q + 1, '"') : NULL;
        if (!q || !qe) continue;
        char ***arr = sec == FILES ? &t->files : &t->funcs;
        int *cnt = sec == FILES ? &t->nfiles : &t->nfuncs;
        if (!ensure((void **)arr, cnt, id, sizeof(char *))) continue;
        char *v = fx_malloc((size_t)(qe - q));
        if (!v) continue;
        memcpy(v, q + 1, (size_t)(qe - q - 1));
        v[qe - q - 1] = 0;
        fx_free((*arr)[id]);
        (*arr)[id] = v;
      } else if (sec == LOCS) {
        if (!ensure((void **)&t->locs, &t->nlocs, id, sizeof(Loc))) continue;
        t->locs[id] = (Loc){field(rest, "file_name_id"), field(rest, "function_name_id"), field(rest, "line"),
                            field(rest, "end_line"), field(rest, "column"), field(rest, "end_column")};
      } else if (sec == FRAMES) {
        if (!ensure((void **)&t->frame_loc, &t->nframes, id, sizeof(int))) continue;
        t->frame_loc[id] = field(rest, "file_location_id");
      }
    }
  }
}

static const Tables *tables_of(const IrModule *m) {
  const char *text = m->epilogue && strstr(m->epilogue, "StackFrames") ? m->epilogue : m->prologue;
  if (!text || !strstr(text, "FileLocations")) return NULL;
  size_t len = strlen(text);
  if (cache.key && cache.keylen == len && memcmp(cache.key, text, len) == 0) return &cache;
  tables_clear(&cache);
  char *key = fx_malloc(len + 1);
  if (!key) return NULL;
  memcpy(key, text, len + 1);
  parse_tables(&cache, text);
  cache.key = key; /* freed on the next miss */
  cache.keylen = len;
  return &cache;
}

/* A quoted metadata field into buf; false when absent. */
static bool meta_str(const char *meta, const char *key, char *buf, size_t n) {
  char k[48];
  snprintf(k, sizeof k, "%s=\"", key);
  const char *p = strstr(meta, k);
  if (!p) return false;
  p += strlen(k);
  size_t i = 0;
  for (; *p && *p != '"' && i + 1 < n; p++) {
    if (*p == '\\' && p[1]) p++;
    buf[i++] = *p;
  }
  buf[i] = 0;
  return true;
}

bool xla_source_of(const IrModule *m, const IrInstr *i, XlaSource *src, char *buf, size_t n) {
  memset(src, 0, sizeof *src);
  const char *meta = ir_attr_text(i, "metadata");
  if (!meta || n < 8) return false;
  size_t third = n / 3;
  char *op = buf, *file = buf + third, *fn = buf + 2 * third;
  if (meta_str(meta, "op_name", op, third)) src->op_name = op;
  if (meta_str(meta, "source_file", file, third)) {
    src->file = file;
    src->line = field(meta + 1, "source_line");
    src->end_line = field(meta + 1, "source_end_line");
    if (src->end_line < src->line) src->end_line = src->line;
  }
  int frame = field(meta + 1, "stack_frame_id");
  if (!src->file && frame > 0) {
    const Tables *t = tables_of(m);
    if (t && frame < t->nframes) {
      int li = t->frame_loc[frame];
      if (li > 0 && li < t->nlocs) {
        const Loc *l = &t->locs[li];
        if (l->file > 0 && l->file < t->nfiles && t->files[l->file]) {
          snprintf(file, third, "%s", t->files[l->file]);
          src->file = file;
        }
        if (l->func > 0 && l->func < t->nfuncs && t->funcs[l->func]) {
          snprintf(fn, n - 2 * third, "%s", t->funcs[l->func]);
          src->function = fn;
        }
        src->line = l->line;
        src->end_line = l->end_line >= l->line ? l->end_line : l->line;
        src->col = l->col;
        src->end_col = l->end_col;
      }
    }
  }
  return src->op_name || src->file;
}

void xla_user_name(const IrInstr *i, char *buf, size_t n) {
  buf[0] = 0;
  const char *meta = ir_attr_text(i, "metadata");
  char op[512];
  if (!meta || !meta_str(meta, "op_name", op, sizeof op)) return;
  const char *p = op;
  /* jit(f)/, pjit(g)/: the wrappers every name of a jitted function carries. */
  while ((strncmp(p, "jit(", 4) == 0 || strncmp(p, "pjit(", 5) == 0) && strchr(p, '/')) {
    const char *close = strchr(p, ')');
    if (!close || close[1] != '/') break;
    p = close + 2;
  }
  snprintf(buf, n, "%s", p);
}

void xla_source_short(const IrModule *m, const IrInstr *i, char *buf, size_t n) {
  XlaSource s;
  char tmp[1536];
  buf[0] = 0;
  if (!xla_source_of(m, i, &s, tmp, sizeof tmp) || !s.file) return;
  const char *base = strrchr(s.file, '/');
  snprintf(buf, n, "%s:%d", base ? base + 1 : s.file, s.line);
}

bool xla_source_matches(const IrModule *m, const IrInstr *i, const char *where) {
  XlaSource s;
  char tmp[1536];
  if (!xla_source_of(m, i, &s, tmp, sizeof tmp)) return false;
  const char *colon = strrchr(where, ':');
  bool numeric = colon && colon[1];
  for (const char *q = colon ? colon + 1 : ""; numeric && *q; q++)
    if (!isdigit((unsigned char)*q)) numeric = false;
  bool bare_line = where[0] && strspn(where, "0123456789") == strlen(where);
  if ((numeric || bare_line) && s.file) {
    int line = atoi(bare_line ? where : colon + 1);
    if (line < s.line || line > s.end_line) return false;
    if (bare_line) return true;
    size_t fl = (size_t)(colon - where), pl = strlen(s.file);
    if (fl == 0) return true;
    if (fl > pl || strncmp(s.file + pl - fl, where, fl) != 0) return false;
    return fl == pl || s.file[pl - fl - 1] == '/';
  }
  if (!s.op_name || !where[0]) return false;
  size_t wl = strlen(where);
  for (const char *p = s.op_name; (p = strstr(p, where)); p++) {
    bool start = p == s.op_name || p[-1] == '/';
    bool stop = p[wl] == 0 || p[wl] == '/';
    if (start && stop) return true;
  }
  return false;
}
