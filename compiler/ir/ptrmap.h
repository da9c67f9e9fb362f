/* ptrmap.h — the one pointer-keyed hash map: open addressing, linear probing, keys compared by
 * address (an instruction, a computation), values a pointer or a small integer cast to one. The
 * kernel plan (instruction -> position), the interpreter (instruction -> position, computation ->
 * its facts) and the CPU backend (instruction -> compiled kernel) use it.
 *
 * The fields are public for iteration: every slot q < cap with keys[q] != NULL holds a value.
 * A zeroed PtrMap is empty and ready; allocation goes through fx_calloc. */
#ifndef FXPLAIN_PTRMAP_H
#define FXPLAIN_PTRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  const void **keys;
  void **vals;
  size_t cap, n; /* cap is 0 or a power of two, at least twice n */
} PtrMap;

/* The value for key k, or NULL when k is not in the map. */
void *ptrmap_get(const PtrMap *m, const void *k);
/* Maps k to v (replacing its value); false when memory runs out (the map is as before). */
bool ptrmap_put(PtrMap *m, const void *k, void *v);
/* Room for n keys without growing; false when memory runs out. */
bool ptrmap_reserve(PtrMap *m, size_t n);
/* Frees the tables (not the values) and empties the map. */
void ptrmap_free(PtrMap *m);

#endif
