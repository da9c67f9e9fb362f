/* arena.c — the one allocation hook (with fault injection) and module/command arenas. */
#include "arena.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long fail_after = -1;
static long alloc_count;

static int should_fail(void) {
  alloc_count++;
  if (fail_after < 0) return 0;
  if (fail_after == 0) return 1;
  fail_after--;
  return 0;
}

void fx_alloc_fail_after(long n) { fail_after = n; }
long fx_alloc_count(void) { return alloc_count; }

void *fx_malloc(size_t n) { return should_fail() || n > FX_ALLOC_MAX ? NULL : malloc(n ? n : 1); }
void *fx_calloc(size_t count, size_t size) {
  if (size && count > FX_ALLOC_MAX / size) return NULL;
  return should_fail() ? NULL : calloc(count ? count : 1, size ? size : 1);
}
void *fx_realloc(void *p, size_t n) { return should_fail() || n > FX_ALLOC_MAX ? NULL : realloc(p, n ? n : 1); }
void fx_free(void *p) { free(p); }
char *fx_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = fx_malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

struct ArenaBlock {
  ArenaBlock *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
};

enum { ARENA_BLOCK = 64 * 1024 };

/* Freed standard-size blocks are kept for the next arena, up to ARENA_SPARE_MAX of them (32 MiB):
 * every pass copies the module it edits into a new arena and frees a stage's, and blocks handed
 * back to the system came back as fresh pages, each zeroed by the kernel on its first touch (a
 * seventh of a pipeline's time on the largest corpus module). */
#if defined(__SANITIZE_ADDRESS__)
#define FX_ARENA_KEEPS_NO_BLOCKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FX_ARENA_KEEPS_NO_BLOCKS 1
#endif
#endif
#ifdef FX_ARENA_KEEPS_NO_BLOCKS
enum { ARENA_SPARE_MAX = 0 }; /* under AddressSanitizer every freed block goes back, so a use after free is seen */
#else
enum { ARENA_SPARE_MAX = 512 };
#endif
static struct {
  pthread_mutex_t lock;
  ArenaBlock *head;
  int n;
} spare = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

static ArenaBlock *spare_take(void) {
  pthread_mutex_lock(&spare.lock);
  ArenaBlock *b = spare.head;
  if (b) {
    spare.head = b->next;
    spare.n--;
  }
  pthread_mutex_unlock(&spare.lock);
  return b;
}

/* Keeps b when it is a standard block and there is room; else frees it. */
static void spare_give(ArenaBlock *b) {
  if (b->cap == ARENA_BLOCK) {
    pthread_mutex_lock(&spare.lock);
    bool kept = spare.n < ARENA_SPARE_MAX;
    if (kept) {
      b->next = spare.head;
      spare.head = b;
      spare.n++;
    }
    pthread_mutex_unlock(&spare.lock);
    if (kept) return;
  }
  fx_free(b);
}

void arena_init(Arena *a) { a->head = NULL; a->total = 0; }

void arena_free(Arena *a) {
  ArenaBlock *b = a->head;
  while (b) {
    ArenaBlock *n = b->next;
    spare_give(b);
    b = n;
  }
  a->head = NULL;
  a->total = 0;
}

void *arena_alloc(Arena *a, size_t n) {
  if (n > FX_ALLOC_MAX) return NULL; /* (and the rounding below cannot wrap) */
  n = (n + 15) & ~(size_t)15;
  if (n == 0) n = 16;
  ArenaBlock *b = a->head;
  if (!b || b->cap - b->used < n) {
    /* Big requests get a block of their own, placed behind the current one so the current
     * block's free space is not wasted. */
    size_t cap = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;
    ArenaBlock *nb = NULL;
    if (cap == ARENA_BLOCK) {
      if (should_fail()) return NULL; /* a kept block counts as an allocation, for fault injection */
      nb = spare_take();
    }
    if (!nb) nb = cap == ARENA_BLOCK ? malloc(sizeof(ArenaBlock) + cap) : fx_malloc(sizeof(ArenaBlock) + cap);
    if (!nb) return NULL;
    nb->used = 0;
    nb->cap = cap;
    if (b && cap != ARENA_BLOCK) {
      nb->next = b->next;
      b->next = nb;
    } else {
      nb->next = b;
      a->head = nb;
    }
    b = nb;
  }
  void *p = b->data + b->used;
  b->used += n;
  a->total += n;
  memset(p, 0, n);
  return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
  char *d = arena_alloc(a, n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = 0;
  return d;
}

char *arena_strdup(Arena *a, const char *s) { return s ? arena_strndup(a, s, strlen(s)) : NULL; }

char *arena_printf(Arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return NULL;
  char *d = arena_alloc(a, (size_t)n + 1);
  if (!d) return NULL;
  va_start(ap, fmt);
  vsnprintf(d, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return d;
}

int arena_grow(Arena *a, void **arr, int *cap, int need, size_t elem) {
  if (need <= *cap) return 0;
  int nc = *cap ? *cap : 4;
  while (nc < need) nc *= 2;
  void *n = arena_alloc(a, (size_t)nc * elem);
  if (!n) return -1;
  if (*arr && *cap) memcpy(n, *arr, (size_t)*cap * elem);
  *arr = n;
  *cap = nc;
  return 0;
}
