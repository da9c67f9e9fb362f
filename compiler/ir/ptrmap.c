/* ptrmap.c — the pointer-keyed hash map (see ptrmap.h). */
#include "ptrmap.h"

#include <stdint.h>
#include <string.h>

#include "arena.h"

static size_t ptr_hash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x;
}

void *ptrmap_get(const PtrMap *m, const void *k) {
  if (!m->cap) return NULL;
  for (size_t h = ptr_hash(k) & (m->cap - 1);; h = (h + 1) & (m->cap - 1)) {
    if (m->keys[h] == k) return m->vals[h];
    if (!m->keys[h]) return NULL;
  }
}

/* Moves every entry into tables of nc slots. */
static bool rehash(PtrMap *m, size_t nc) {
  const void **nk = fx_calloc(nc, sizeof *nk);
  void **nv = fx_calloc(nc, sizeof *nv);
  if (!nk || !nv) {
    fx_free(nk);
    fx_free(nv);
    return false;
  }
  for (size_t j = 0; j < m->cap; j++)
    if (m->keys[j]) {
      size_t h = ptr_hash(m->keys[j]) & (nc - 1);
      while (nk[h]) h = (h + 1) & (nc - 1);
      nk[h] = m->keys[j];
      nv[h] = m->vals[j];
    }
  fx_free(m->keys);
  fx_free(m->vals);
  m->keys = nk;
  m->vals = nv;
  m->cap = nc;
  return true;
}

bool ptrmap_reserve(PtrMap *m, size_t n) {
  size_t nc = m->cap ? m->cap : 64;
  while (n * 2 > nc) nc *= 2;
  return nc == m->cap || rehash(m, nc);
}

bool ptrmap_put(PtrMap *m, const void *k, void *v) {
  if ((m->n + 1) * 2 > m->cap && !ptrmap_reserve(m, m->n + 1)) return false;
  size_t h = ptr_hash(k) & (m->cap - 1);
  while (m->keys[h] && m->keys[h] != k) h = (h + 1) & (m->cap - 1);
  if (!m->keys[h]) m->n++;
  m->keys[h] = k;
  m->vals[h] = v;
  return true;
}

void ptrmap_free(PtrMap *m) {
  fx_free(m->keys);
  fx_free(m->vals);
  memset(m, 0, sizeof *m);
}
