/* args.h — splitting a command line into words, and the helpers commands use to check them.
 *
 * A command line is split like a shell does, without expansions: blanks separate words;
 * '...' is literal; "..." allows \" \\ \n \t; a backslash outside quotes takes the next character
 * literally. Each word remembers its column, so a command can point its error at the word that
 * is wrong (repl_arg_error). The script runner also uses repl_split_commands to cut `-e` text
 * into commands at `;` outside quotes and brackets. */
#ifndef FXPLAIN_ARGS_H
#define FXPLAIN_ARGS_H

#include <stdbool.h>
#include <stddef.h>

#include "../explain/format.h"
#include "session.h"

typedef struct {
  int argc;
  char **argv; /* argc words and a NULL; owned, free with repl_args_free */
  int *cols;   /* 1-based column of each word's first character */
  int end_col; /* column just past the last character of the line */
} ReplArgs;

/* Splits line into words. col0 is the column of line[0] in its source line (1 for a whole line).
 * On an unbalanced quote, returns false with err's column at the opening quote (no file: the
 * caller locates it). */
bool repl_args_split(const char *line, int col0, ReplArgs *out, FxError *err);
void repl_args_free(ReplArgs *a);

/* Cuts text at `;` outside quotes, brackets and braces (and not escaped). Fills starts/lens
 * with up to max pieces (empty pieces included) and returns how many there are. */
int repl_split_commands(const char *text, int *starts, int *lens, int max);

/* Fills err with a message pointing at word argi of the running command (argc points just past
 * the end of the line) and returns false. Use from any command: `return repl_arg_error(s, err, 1,
 * "no stage %s", argv[1]);` */
bool repl_arg_error(Session *s, FxError *err, int argi, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Fills err with an error the engine reported (e, which knows no command line) placed at word argi:
 * one located in a file (a line in it) is kept as it is; one that names only a file says
 * "FILE: message" (fx_read_file's "cannot open it"); any other is the message at the word. */
bool repl_error_at(Session *s, FxError *err, int argi, const FxError *e);

/* Checks min <= argc-1 <= max (max < 0: no limit); otherwise fills err with "missing argument"
 * or "unexpected argument 'X'" and the command's usage line. */
bool repl_check_argc(Session *s, int argc, char **argv, int min, int max, FxError *err);

/* Whole-word numbers. repl_parse_int accepts decimal (and 0x hex) in [lo, hi]; on failure it
 * fills err at word argi with "expected an integer ..." or "... out of range". */
bool repl_parse_int(Session *s, char **argv, int argi, long long lo, long long hi, long long *out,
                    FxError *err);
bool repl_parse_double(Session *s, char **argv, int argi, double *out, FxError *err);
/* on/off, true/false, yes/no, 1/0. */
bool repl_parse_bool(Session *s, char **argv, int argi, bool *out, FxError *err);

/* The candidate nearest to word by edit distance, when it is close enough to be a likely typo
 * (NULL otherwise). */
const char *repl_nearest(const char *word, const char *const *cands, int n);
/* The visible command nearest to word, or NULL. */
const char *repl_nearest_command(const char *word);
/* The instruction name nearest to word in the current stage or the input (a name typed with a
 * typo: reduce_sum14 for reduce_sum.14), or NULL. */
const char *repl_nearest_instruction(Session *s, const char *word);


/* How the engine's answers are printed for this session (explain/format.h): its stream, text or
 * JSON, and on a terminal its width, so that long sentences wrap between words there (0 in batch,
 * JSON or a pipe). */
ExplainOut repl_out(const Session *s);

/* Stage `stage` (-1: the current one) for `run`, `profile` and the kernel views, which compute its
 * values: NULL with err filled at the command ("WHAT: why") when nothing is loaded or it holds a
 * type fxplain computes no value of (explain_module_uncomputed). */
const IrModule *repl_computed_stage(Session *s, int stage, const char *what, FxError *err);

/* True when an input is loaded; otherwise false with the error "nothing is loaded: ..." at the
 * command. */
bool repl_need_input(Session *s, FxError *err);

#endif
