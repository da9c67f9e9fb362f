/* status.h — the error record every fallible function fills.
 *
 * Errors carry a place (file:line:col and the source line, where there is one) so that the shell
 * prints them chibicc-style:
 *     cartpole.fx:12:7: error: unknown function 'sinn'
 *       y = sinn(x)
 *           ^
 * Functions return false (or NULL) and fill an FxError; they never exit or abort. */
#ifndef FXPLAIN_STATUS_H
#define FXPLAIN_STATUS_H

#include <stdbool.h>
#include <stdio.h>

typedef struct {
  bool set;
  char file[256];  /* "" when there is no place */
  int line, col;   /* 1-based; 0 when unknown */
  char source[256]; /* the offending source line, "" when unknown; a longer line is cut to the
                     * part around col, with "..." where it was cut */
  int caret;        /* where col falls in source (1-based byte) when the line was cut; else 0 */
  char msg[768];
} FxError;

void fx_error_clear(FxError *e);
/* Fills e (first error wins: a set error is not overwritten). Returns false for convenience. */
bool fx_error_set(FxError *e, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Copies the source line `line` (1-based) out of text into e->source. */
void fx_error_set_source(FxError *e, const char *text, int line);
/* Copies the n bytes at p (one line) into e->source: the whole line when it fits, else the part
 * around e->col, so the caret stays under the column the error names. */
void fx_error_source_window(FxError *e, const char *p, size_t n);
/* "FILE:LINE:COL: error: MSG\n  SOURCE\n  ^\n" (place parts omitted when unknown). */
void fx_error_print(FILE *f, const FxError *e);
/* Writes text with control characters (and bytes that are not valid UTF-8) as \xNN, so that no
 * input can send the terminal an escape sequence. */
void fx_fputs_printable(FILE *f, const char *text);
/* Writes word into buf (size n) in a printable form for messages: control characters and bytes
 * that are not UTF-8 become \xNN; long words are cut with "...". Returns buf. */
const char *fx_printable(char *buf, size_t n, const char *word);
/* The length of the UTF-8 character at s (avail bytes readable): 1 for ASCII (NUL and control
 * bytes included: the caller decides about those), 2 to 4 for a valid multi-byte sequence, 0 when
 * the bytes are not valid UTF-8 (a stray continuation byte, a truncated, overlong or surrogate
 * sequence, or past U+10FFFF). */
size_t fx_utf8_len(const unsigned char *s, size_t avail);
/* Sizes in IEC units ("512 B", "1.5 KiB", "2.25 MiB"). The styles differ only in how far the units
 * go and how many decimals each shows, as the views that print them always have: */
typedef enum {
  FX_BYTES_SHORT, /* one decimal in every unit, up to TiB (pictures) */
  FX_BYTES_PLAN,  /* KiB and MiB one decimal, GiB two (the kernel plan's tables) */
  FX_BYTES_RUN,   /* KiB one decimal, MiB and GiB two (what a run measured) */
  FX_BYTES_MIB,   /* one decimal, up to MiB (the cost sentences of decisions) */
} FxBytesStyle;
void fx_format_bytes(char *buf, size_t n, double bytes, FxBytesStyle style);
/* A time of ns nanoseconds in s, ms or us: "1.234 s", "5.678 ms", "12.3 us" (FX_TIME_RUN, what
 * `run` prints) or "1.23 s", "5.7 ms", "12.3 us" (FX_TIME_TABLE, a table's column). */
typedef enum { FX_TIME_RUN, FX_TIME_TABLE } FxTimeStyle;
void fx_format_time(char *buf, size_t n, double ns, FxTimeStyle style);
/* A count with thousands separators: 1,234,567. */
void fx_format_count(char *buf, size_t n, long long v);
/* Reading numbers typed by a user. fx_parse_int: a whole word in base `base` (0: C's prefixes)
 * from lo to hi: 0, or FX_NOT_A_NUMBER, or FX_OUT_OF_RANGE. fx_parse_bytes: a byte count, with an
 * optional K, M or G (KiB, MiB, GiB) suffix, from 0 to 2^64: false when it is not one. */
enum { FX_NOT_A_NUMBER = -1, FX_OUT_OF_RANGE = -2 };
int fx_parse_int(const char *s, int base, long long lo, long long hi, long long *out);
bool fx_parse_bytes(const char *s, double *out);
/* Reads a whole file (at most 1 GiB) into a NUL-terminated buffer from fx_malloc; *len excludes
 * the NUL. NULL with err filled (the file, printable, and why) when it cannot be read. */
char *fx_read_file(const char *path, size_t *len, FxError *err);

#endif
