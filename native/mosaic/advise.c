/* advise.c -- madvise(2) over pool memory, with Linux's semantics for the private anonymous
 * mappings the pools stand for (issue 17: without it, MADV_DONTNEED on part of a hugetlb page failed
 * and left stale data that programs trusting the zeroing, jemalloc among them, then read). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "mosaic.h"
#include "os.h"


#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

/* Advice on memory the pool itself backs (private, read-write at mapping time, in a heap or anon
 * pool), on [a,b).  Returns 0 or an errno value. */
static int advise_own(mos_pool_t *p, uintptr_t a, uintptr_t b, int advice) {
  if (advice == MADV_DONTNEED || advice == MADV_DONTNEED_LOCKED) {
    mos_zero_range(p, a, b);
    return 0;
  }
  if (advice == MADV_REMOVE) return EINVAL; /* as on any private anonymous mapping */
  /* MADV_FREE: the kernel may drop the pages lazily (the next read sees zero or the old data).
   * 4KB pages and whole transparent 2MB pages get exactly that; hugetlb pages and parts of
   * transparent huge pages keep their data (the state of pages not reclaimed yet), so that no huge
   * page is split or given back. */
  while (a < b) {
    int backing;
    uintptr_t e = mos_piece(p, a, b, &backing);
    if (backing == MOS_BACK_THP) {
      uintptr_t ia = mos_up(a, MOS_PAGE_2M), ib = mos_down(e, MOS_PAGE_2M);
      if (ia < ib) mos_os_madvise((void *)ia, ib - ia, MADV_FREE);
    } else if (backing != MOS_BACK_HUGETLB) {
      mos_os_madvise((void *)a, e - a, MADV_FREE);
    }
    a = e;
  }
  return 0;
}

/* [a,b) inside pool p (heap or anon): foreign mappings (placed there with MAP_FIXED) get the
 * kernel's madvise, the rest is handled by advise_own.  Returns 0 or an errno value. */
static int advise_in_pool(mos_pool_t *p, uintptr_t a, uintptr_t b, int advice) {
  int err = 0;
  pthread_mutex_lock(&p->lock);
  uintptr_t cur = a;
  while (cur < b) {
    size_t i = mos_rs_lower(&p->foreign, cur);
    uintptr_t fs = b, fe = b;
    if (i < p->foreign.n && p->foreign.r[i].start < b) {
      fs = p->foreign.r[i].start > cur ? p->foreign.r[i].start : cur;
      fe = p->foreign.r[i].end < b ? p->foreign.r[i].end : b;
    }
    int e = 0;
    if (fs > cur) e = advise_own(p, cur, fs, advice);
    if (!e && fs < fe && mos_os_madvise((void *)fs, fe - fs, advice) != 0) e = errno;
    if (e && !err) err = e;
    cur = fe;
  }
  pthread_mutex_unlock(&p->lock);
  return err;
}

/* madvise(2) with Linux's semantics on pool memory.  The pools are one mapping in the kernel's eyes
 * but stand for many private anonymous mappings of the program's, some on huge pages, so:
 *   MADV_DONTNEED(_LOCKED): the next read sees zeros (zero_range); without this, DONTNEED on part
 *     of a hugetlb page fails with EINVAL and leaves the old data (a program such as jemalloc that
 *     trusts the zeroing then reads stale data);
 *   MADV_FREE: see advise_own;  MADV_REMOVE: EINVAL, as for private anonymous memory;
 *   MADV_HUGEPAGE, MADV_NOHUGEPAGE, MADV_COLLAPSE: accepted and ignored (the layout decides the page
 *     sizes; NumPy advises MADV_HUGEPAGE on every large array);
 * everything else, and memory outside the heap and anon pools, goes to the kernel unchanged. */
int mos_madvise(void *addr, size_t len, int advice) {
  uintptr_t a = (uintptr_t)addr;
  bool thp = advice == MADV_HUGEPAGE || advice == MADV_NOHUGEPAGE || advice == MADV_COLLAPSE;
  bool own = advice == MADV_DONTNEED || advice == MADV_DONTNEED_LOCKED || advice == MADV_FREE ||
             advice == MADV_REMOVE;
  if (!(thp || own) || len == 0) return mos_os_madvise(addr, len, advice);
  uintptr_t b = mos_up(a + len, MOS_PAGE_4K);
  if (a % MOS_PAGE_4K || b < a) {
    errno = EINVAL;
    return -1;
  }
  bool any = false;
  for (int i = 0; i < MOS_NPOOLS; i++) any |= a < mos_pool_end(&mos_cfg.pool[i]) && b > mos_cfg.pool[i].start;
  if (!any) return mos_os_madvise(addr, len, advice);
  int err = 0;
  while (a < b) {
    mos_pool_t *p = mos_pool_of(a);
    uintptr_t e = b;
    int r = 0;
    if (p) {
      e = b < mos_pool_end(p) ? b : mos_pool_end(p);
      if (thp) r = 0;
      else if (p->kind == MOS_FILE) r = mos_os_madvise((void *)a, e - a, advice) ? errno : 0;
      else r = advise_in_pool(p, a, e, advice);
    } else {
      for (int i = 0; i < MOS_NPOOLS; i++) {
        mos_pool_t *q = &mos_cfg.pool[i];
        if (q->start > a && q->start < e) e = q->start;
      }
      r = mos_os_madvise((void *)a, e - a, advice) ? errno : 0;
    }
    if (r && !err) err = r;
    a = e;
  }
  if (err) {
    errno = err;
    return -1;
  }
  return 0;
}
