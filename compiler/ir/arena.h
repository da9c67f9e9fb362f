/* arena.h — bump allocation owned by one module or one command, freed as a whole.
 *
 * Every allocation in fxplain goes through fx_malloc/fx_calloc/fx_realloc (alloc.c), so tests can
 * make the Nth allocation fail on purpose (fx_alloc_fail_after).  Arena functions return NULL when
 * the underlying allocation fails; callers turn that into an FxStatus error. */
#ifndef FXPLAIN_ARENA_H
#define FXPLAIN_ARENA_H

#include <stddef.h>
#include <stdint.h>

/* The largest single request any of them grants, 1 TiB: a size a module's text asks for (a splat
 * constant of 10^17 elements) fails like any allocation the machine cannot satisfy, with the
 * caller's own message, rather than reach malloc (which a sanitizer build aborts on). */
#define FX_ALLOC_MAX ((size_t)1 << 40)
void *fx_malloc(size_t n);
void *fx_calloc(size_t count, size_t size);
void *fx_realloc(void *p, size_t n);
void fx_free(void *p);
char *fx_strdup(const char *s);
/* Fault injection: after `n` more successful allocations, every allocation fails
 * (n < 0 turns injection off). fx_alloc_count() counts allocations since start. */
void fx_alloc_fail_after(long n);
long fx_alloc_count(void);

typedef struct ArenaBlock ArenaBlock;
typedef struct {
  ArenaBlock *head;
  size_t total; /* bytes handed out, for `show stats` and memory benchmarks */
} Arena;

void arena_init(Arena *a);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t n);   /* zeroed, 16-byte aligned; NULL on failure */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Grows *arr (of *cap elements of size elem) to hold at least need elements. Returns 0 or -1. */
int arena_grow(Arena *a, void **arr, int *cap, int need, size_t elem);

#endif
