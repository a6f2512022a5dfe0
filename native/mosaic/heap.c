/* heap.c -- the heap pool: a program break shared by brk/sbrk, jemalloc's extents and the
 * page-granular blocks of big.c, plus the holes those blocks leave when they are freed or moved.
 *
 * The heap is used from its start upwards, as glibc's morecore used it for the original Mosalloc
 * (seed 002, V).  jemalloc never gives an extent back (core.c), so the only memory that returns to
 * the heap below the break is a freed page-granular block (big.c): a *hole*, kept in the pool's
 * `free` range set and handed out again, first fit, before the break moves, to jemalloc's extents
 * and to blocks alike.  A hole is zeroed when it is made (mos_release: DONTNEED where that keeps page
 * sizes), except with XLAT_MOSAIC_KEEP_FREED, where it stays populated and holds old data: the
 * caller is told whether what it got is zeroed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mosaic.h"
#include "os.h"

static bool heap_warned, align_warned;

/* With the heap locked: take [a, a+size) if it lies in holes, or in a hole that ends at the break
 * and the break beyond it, or at the break itself (or, with `above`, anywhere above it: the gap
 * left below becomes a hole).  Sets *zeroed (fresh memory past the break is zero; a hole is zero
 * unless freed memory is kept). */
static bool take_at(mos_pool_t *p, uintptr_t a, size_t size, bool above, bool *zeroed) {
  uintptr_t b = a + size;
  if (b < a || b > mos_pool_end(p) || a < p->start) return false;
  if (a >= p->brk) {
    if (a != p->brk && !above) return false;
    if (a != p->brk && !mos_rs_insert(&p->free, p->brk, a)) return false;
    *zeroed = true;
  } else {
    uintptr_t inside = b < p->brk ? b : p->brk; /* the part below the break must be a hole */
    if (!mos_rs_covers(&p->free, a, inside) || !mos_rs_remove(&p->free, a, inside)) return false;
    *zeroed = !mos_cfg.keep_freed;
  }
  if (b > p->brk) {
    p->brk = b;
    if (b - p->start > p->high_water) p->high_water = b - p->start;
  }
  return true;
}

/* With the heap locked: the first hole that holds `size` bytes at `alignment`, or 0. */
static uintptr_t first_fit_hole(mos_pool_t *p, size_t size, size_t alignment) {
  for (size_t i = 0; i < p->free.n; i++) {
    uintptr_t a = mos_up(p->free.r[i].start, alignment);
    if (a < p->free.r[i].end && p->free.r[i].end - a >= size) return a;
  }
  return 0;
}

void *mos_heap_take(size_t size, size_t alignment, void *at, bool *zeroed) {
  mos_pool_t *p = &mos_cfg.pool[MOS_HEAP];
  if (alignment < MOS_PAGE_4K) alignment = MOS_PAGE_4K;
  bool z = true, ok;
  uintptr_t a = (uintptr_t)at;
  pthread_mutex_lock(&p->lock);
  if (at) {
    ok = take_at(p, a, size, false, &z); /* jemalloc extending an extent in place, or a block */
  } else {
    a = first_fit_hole(p, size, alignment);
    ok = a && take_at(p, a, size, false, &z);
    if (!ok) ok = take_at(p, a = mos_up(p->brk, alignment), size, true, &z);
  }
  /* Room for the block, but not at its alignment (posix_memalign of 1 GiB in a heap of 1 GiB: the
   * heap starts 1 GiB-aligned, so only its first byte has that alignment).  Natively glibc serves
   * such a block with an anonymous mapping, so it comes from the anon pool at that alignment
   * (issue 38); only if neither can place it is it NULL, and said so. */
  bool misaligned = !ok && !at && alignment > MOS_PAGE_4K && p->brk + size <= p->start + p->size;
  pthread_mutex_unlock(&p->lock);
  if (misaligned && (a = mos_anon_take_aligned(size, alignment))) {
    if (zeroed) *zeroed = true; /* the anon pool's free memory is zero (mos_release) */
    return (void *)a;
  }
  pthread_mutex_lock(&p->lock);
  bool warn = !ok && !at && !(misaligned ? align_warned : heap_warned);
  if (warn) *(misaligned ? &align_warned : &heap_warned) = true;
  pthread_mutex_unlock(&p->lock);
  if (warn && misaligned) {
    static char why[200];
    int g = alignment >= MOS_GiB, m = alignment >= (1UL << 20);
    snprintf(why, sizeof why,
             " (a block aligned to %lu %s); raise [heap] or [anon] size in the layout by the alignment.",
             (unsigned long)(alignment >> (g ? 30 : m ? 20 : 10)), g ? "GiB" : m ? "MiB" : "KiB");
    mos_warn("neither the heap pool nor the anon pool has room at the alignment asked, so the aligned "
             "allocation returns NULL",
             why, "");
  } else if (warn) {
    mos_warn("the heap pool is exhausted, so malloc now returns NULL", " (raise [heap] size in the layout)", ".");
  }
  if (zeroed) *zeroed = z;
  return ok ? (void *)a : NULL;
}

void mos_heap_give(uintptr_t a, uintptr_t b) {
  mos_pool_t *p = &mos_cfg.pool[MOS_HEAP];
  pthread_mutex_lock(&p->lock);
  if (b > p->brk) b = p->brk; /* the program moved the break below it */
  if (a < b) {
    if (!mos_cfg.keep_freed) mos_release(p, a, b);
    mos_rs_insert(&p->free, a, b);
  }
  pthread_mutex_unlock(&p->lock);
}

bool mos_heap_purge(void *addr, size_t len) {
  uintptr_t a = (uintptr_t)addr, b = a + len;
  if (a % MOS_PAGE_4K || b % MOS_PAGE_4K) return false;
  mos_pool_t *p = mos_pool_of(a); /* the heap's, or the anon pool's for an aligned block (above) */
  if (!p) return false;
  /* only ranges entirely on 4KB pages: dropping part of a huge page would split or free it */
  for (int i = 0; i < p->nwin; i++) {
    uintptr_t ws = p->start + p->win[i].offset, we = ws + p->win[i].length;
    if (a < we && b > ws && p->win[i].backing != MOS_BACK_FALLBACK_4K) return false;
  }
  return mos_os_madvise(addr, len, MADV_DONTNEED) == 0;
}

void *mos_sbrk(intptr_t inc) {
  mos_pool_t *p = &mos_cfg.pool[MOS_HEAP];
  pthread_mutex_lock(&p->lock);
  uintptr_t old = p->brk, nb = old + (uintptr_t)inc;
  if ((inc > 0 && (nb > mos_pool_end(p) || nb < old)) || (inc < 0 && (nb < p->start || nb > old))) {
    pthread_mutex_unlock(&p->lock);
    errno = ENOMEM;
    return (void *)-1;
  }
  if (inc < 0 && mos_up(nb, MOS_PAGE_4K) < mos_up(old, MOS_PAGE_4K)) {
    mos_release(p, mos_up(nb, MOS_PAGE_4K), mos_up(old, MOS_PAGE_4K));
    mos_rs_remove(&p->free, nb, old); /* holes above the new break are gone */
  }
  p->brk = nb;
  if (nb - p->start > p->high_water) p->high_water = nb - p->start;
  pthread_mutex_unlock(&p->lock);
  return (void *)old;
}

int mos_brk(void *addr) {
  mos_pool_t *p = &mos_cfg.pool[MOS_HEAP];
  uintptr_t a = (uintptr_t)addr;
  if (a < p->start || a > mos_pool_end(p)) {
    errno = ENOMEM;
    return -1;
  }
  pthread_mutex_lock(&p->lock);
  intptr_t inc = (intptr_t)(a - p->brk);
  pthread_mutex_unlock(&p->lock);
  return mos_sbrk(inc) == (void *)-1 ? -1 : 0;
}
