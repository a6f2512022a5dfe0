/* pool.c -- the three pools of the mosaic allocator (seed 002, section V, Figure 4).
 *
 * Each pool is one contiguous reservation of virtual memory, aligned to 1GiB so that a window at a
 * 1GiB-multiple offset is also 1GiB aligned in the address space.  The rest of a pool is ordinary
 * anonymous memory mapped with MAP_NORESERVE: only touched pages are ever committed, so pools of
 * tens of GiB cost nothing until used.  Windows are mapped over it with MAP_FIXED:
 *   hugetlb mode: MAP_HUGETLB | MAP_HUGE_2MB / MAP_HUGE_1GB, *without* MAP_NORESERVE, so that the
 *                 kernel reserves every huge page up front and a missing page is an error at start,
 *                 not a SIGBUS in the middle of the run;
 *   thp mode:     madvise(MADV_HUGEPAGE) on the window, MADV_NOHUGEPAGE everywhere else.
 *
 *   heap pool: a program break (bump pointer) shared by brk/sbrk and jemalloc's extents;
 *   anon pool: first fit over a sorted set of free ranges (the paper chose first fit, V);
 *   file pool: a PROT_NONE reservation into which file mappings are placed (4KB pages only: the page
 *              cache is 4KB), so that their addresses, like everything else, follow the layout.
 * Memory returned to a pool is zeroed at once (mos_zero_range: MADV_DONTNEED for 4KB pages and
 * whole transparent 2MB pages, memset of the resident pages elsewhere in huge windows, where
 * DONTNEED would split a transparent huge page or give a hugetlb page back), so that the next
 * anonymous mapping sees zero-filled memory exactly as from the kernel; madvise(MADV_DONTNEED) on
 * pool memory does the same (advise.c). */
#include <stdio.h>
#include <sys/resource.h>
#include <errno.h>
#include <linux/mman.h>
#include <string.h>

#include "mosaic.h"
#include "os.h"

#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif
#ifndef MAP_HUGE_1GB
#define MAP_HUGE_1GB (30 << MAP_HUGE_SHIFT)
#endif
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define RW (PROT_READ | PROT_WRITE)
/* MAP_SHARED_VALIDATE (3) has the MAP_PRIVATE bit set: compare the whole mapping type */
#define IS_PRIVATE(flags) (((flags) & MAP_TYPE) == MAP_PRIVATE)
#define ANON_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE)


/* ---- range sets (sorted, disjoint, coalesced), stored in raw mmap memory ---------------------- */

static bool rs_reserve(mos_rangeset_t *s, size_t extra) {
  if (s->n + extra <= s->cap) return true;
  size_t cap = s->cap ? s->cap * 2 : 256;
  while (cap < s->n + extra) cap *= 2;
  mos_range_t *r = mos_os_mmap(NULL, cap * sizeof *r, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r == MAP_FAILED) return false;
  if (s->n) memcpy(r, s->r, s->n * sizeof *r);
  if (s->r) mos_os_munmap(s->r, s->cap * sizeof *r);
  s->r = r;
  s->cap = cap;
  return true;
}

/* index of the first range whose end is > a */
size_t mos_rs_lower(const mos_rangeset_t *s, uintptr_t a) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->r[mid].end <= a) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Union [a,b) into the set, coalescing with touching neighbours. */
bool mos_rs_insert(mos_rangeset_t *s, uintptr_t a, uintptr_t b) {
  if (a >= b) return true;
  if (!rs_reserve(s, 1)) return false;
  size_t i = 0;
  /* first range with end >= a (touching counts, so that neighbours coalesce) */
  { size_t lo = 0, hi = s->n;
    while (lo < hi) { size_t mid = (lo + hi) / 2; if (s->r[mid].end < a) lo = mid + 1; else hi = mid; }
    i = lo; }
  size_t j = i;
  while (j < s->n && s->r[j].start <= b) {
    if (s->r[j].start < a) a = s->r[j].start;
    if (s->r[j].end > b) b = s->r[j].end;
    j++;
  }
  /* ranges [i, j) are replaced by one */
  if (j == i) {
    memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof *s->r);
    s->n++;
  } else if (j > i + 1) {
    memmove(&s->r[i + 1], &s->r[j], (s->n - j) * sizeof *s->r);
    s->n -= j - i - 1;
  }
  s->r[i].start = a;
  s->r[i].end = b;
  return true;
}

/* Subtract [a,b) from the set. */
bool mos_rs_remove(mos_rangeset_t *s, uintptr_t a, uintptr_t b) {
  if (a >= b) return true;
  if (!rs_reserve(s, 1)) return false;
  size_t i = mos_rs_lower(s, a);
  while (i < s->n && s->r[i].start < b) {
    mos_range_t *r = &s->r[i];
    if (r->start < a && r->end > b) { /* split in two */
      memmove(&s->r[i + 1], &s->r[i], (s->n - i) * sizeof *s->r);
      s->n++;
      s->r[i].end = a;
      s->r[i + 1].start = b;
      return true;
    }
    if (r->start < a) { r->end = a; i++; continue; }
    if (r->end > b) { r->start = b; return true; }
    memmove(&s->r[i], &s->r[i + 1], (s->n - i - 1) * sizeof *s->r); /* fully covered */
    s->n--;
  }
  return true;
}

bool mos_rs_covers(const mos_rangeset_t *s, uintptr_t a, uintptr_t b) {
  size_t i = mos_rs_lower(s, a);
  return i < s->n && s->r[i].start <= a && s->r[i].end >= b;
}

static bool rs_overlaps(const mos_rangeset_t *s, uintptr_t a, uintptr_t b) {
  size_t i = mos_rs_lower(s, a);
  return i < s->n && s->r[i].start < b;
}

/* Call fn on each part of [a,b) that is NOT in the set (the allocated parts, for a free set).
 * The next gap is looked up again after every call, because fn may insert into the set (and
 * thereby move or reallocate its array). */
typedef void (*mos_part_fn)(mos_pool_t *, uintptr_t, uintptr_t);
static void rs_each_gap(mos_pool_t *p, const mos_rangeset_t *s, uintptr_t a, uintptr_t b, mos_part_fn fn) {
  uintptr_t cur = a;
  while (cur < b) {
    size_t i = mos_rs_lower(s, cur); /* first range ending after cur */
    if (i < s->n && s->r[i].start <= cur) {
      cur = s->r[i].end; /* cur is free: skip the free range */
      continue;
    }
    uintptr_t gap_end = (i < s->n && s->r[i].start < b) ? s->r[i].start : b;
    fn(p, cur, gap_end);
    cur = gap_end;
  }
}

/* ---- windows --------------------------------------------------------------------------------- */

/* The window containing addr, or NULL for the 4KB remainder. */
static const mos_window_t *window_at(const mos_pool_t *p, uintptr_t addr) {
  int lo = 0, hi = p->nwin;
  uintptr_t off = addr - p->start;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    const mos_window_t *w = &p->win[mid];
    if (off < w->offset) hi = mid;
    else if (off >= w->offset + w->length) lo = mid + 1;
    else return w;
  }
  return NULL;
}

/* End of the piece starting at addr that has uniform backing. */
static uintptr_t piece_end(const mos_pool_t *p, uintptr_t addr, uintptr_t limit) {
  const mos_window_t *w = window_at(p, addr);
  uintptr_t e;
  if (w) e = p->start + w->offset + w->length;
  else {
    e = mos_pool_end(p);
    uintptr_t off = addr - p->start;
    for (int i = 0; i < p->nwin; i++)
      if (p->win[i].offset > off) { e = p->start + p->win[i].offset; break; }
  }
  return e < limit ? e : limit;
}

/* Zero [s,e), resident: in place if the program left it writable (MADV_POPULATE_WRITE succeeds on
 * resident writable memory without changing it, and fails with EFAULT instead of faulting where the
 * program made it read-only or PROT_NONE, as runtimes do to decommit memory); otherwise the kernel
 * drops it (DONTNEED: on a hugetlb range that works on whole pages, which is what mprotect allows
 * there). */
static void zero_in_place(uintptr_t s, uintptr_t e) {
  if (mos_os_madvise((void *)s, e - s, MADV_POPULATE_WRITE) == 0) memset((void *)s, 0, e - s);
  else mos_os_madvise((void *)s, e - s, MADV_DONTNEED);
}

/* Zero the resident pages of [a,b) in granules of `unit` (a huge page for hugetlb, else 4KiB),
 * leaving the protection alone: pages that were never touched (mincore says not resident) already
 * read as zero, so a large untouched range costs no page faults.  a and b are 4KiB aligned. */
static void zero_resident(uintptr_t a, uintptr_t b, size_t unit) {
  unsigned char vec[512];
  if (unit != MOS_PAGE_4K) {
    for (uintptr_t g = mos_down(a, unit); g < b; g += unit) {
      uintptr_t s = g < a ? a : g, e = g + unit < b ? g + unit : b;
      /* one 4KiB probe says whether the huge page is there; if mincore fails, zero anyway */
      if (mos_os_mincore((void *)s, MOS_PAGE_4K, vec) != 0 || (vec[0] & 1)) zero_in_place(s, e);
    }
    return;
  }
  while (a < b) {
    uintptr_t e = b - a > sizeof vec * MOS_PAGE_4K ? a + sizeof vec * MOS_PAGE_4K : b;
    size_t n = (e - a) / MOS_PAGE_4K;
    if (mos_os_mincore((void *)a, e - a, vec) != 0) memset(vec, 1, n);
    for (size_t i = 0; i < n;) {
      if (!(vec[i] & 1)) { i++; continue; }
      size_t j = i;
      while (j < n && (vec[j] & 1)) j++;
      zero_in_place(a + i * MOS_PAGE_4K, a + j * MOS_PAGE_4K);
      i = j;
    }
    a = e;
  }
}

/* Zero [a,b) (pool-owned private memory, 4KiB aligned) the way each backing allows, without
 * changing its page size: 4KB pages and whole transparent 2MB pages are dropped with MADV_DONTNEED
 * (the next touch faults in a zero page, a 2MB one inside a thp window); parts of a transparent huge
 * page and hugetlb pages are zeroed in place (DONTNEED would split the transparent page, or give the
 * hugetlb page back to the kernel, whose reservation the layout relies on). */
void mos_zero_range(mos_pool_t *p, uintptr_t a, uintptr_t b) {
  while (a < b) {
    uintptr_t e = piece_end(p, a, b);
    const mos_window_t *w = window_at(p, a);
    int backing = w ? w->backing : MOS_BACK_4K;
    if (backing == MOS_BACK_HUGETLB) {
      zero_resident(a, e, w->page);
    } else if (backing == MOS_BACK_THP) {
      uintptr_t ia = mos_up(a, MOS_PAGE_2M), ib = mos_down(e, MOS_PAGE_2M);
      if (ia < ib) {
        zero_resident(a, ia, MOS_PAGE_4K);
        mos_os_madvise((void *)ia, ib - ia, MADV_DONTNEED);
        zero_resident(ib, e, MOS_PAGE_4K);
      } else {
        zero_resident(a, e, MOS_PAGE_4K);
      }
    } else {
      mos_os_madvise((void *)a, e - a, MADV_DONTNEED);
    }
    a = e;
  }
}

/* Zero [a,b) keeping every resident page populated (XLAT_MOSAIC_KEEP_FREED): resident pages are
 * written with zeros in place, untouched ones already read as zero. */
static void zero_kept(mos_pool_t *p, uintptr_t a, uintptr_t b) {
  while (a < b) {
    uintptr_t e = piece_end(p, a, b);
    const mos_window_t *w = window_at(p, a);
    zero_resident(a, e, w && w->backing == MOS_BACK_HUGETLB ? w->page : MOS_PAGE_4K);
    a = e;
  }
}

/* Zero [a,b) and make it read-write again, as if freshly mapped; a and b are 4KiB aligned.  The
 * memory is dropped where that keeps page sizes (mos_zero_range), or zeroed in place with
 * XLAT_MOSAIC_KEEP_FREED. */
void mos_release(mos_pool_t *p, uintptr_t a, uintptr_t b) {
  uintptr_t s = a;
  while (s < b) {
    uintptr_t e = piece_end(p, s, b);
    const mos_window_t *w = window_at(p, s);
    if (w && w->backing == MOS_BACK_HUGETLB) {
      /* hugetlb protections change only in whole huge pages; partial pages were never changed */
      uintptr_t ia = mos_up(s, w->page), ib = mos_down(e, w->page);
      if (ia < ib) mos_os_mprotect((void *)ia, ib - ia, RW);
    } else {
      mos_os_mprotect((void *)s, e - s, RW);
    }
    s = e;
  }
  if (mos_cfg.keep_freed) zero_kept(p, a, b);
  else mos_zero_range(p, a, b);
}

/* ---- mapping the pools at start ---------------------------------------------------------------- */

static void map_pool(mos_config_t *cfg, mos_pool_t *p) {
  size_t slack = MOS_GiB;
  void *r = mos_os_mmap(NULL, p->size + slack, PROT_NONE, ANON_FLAGS, -1, 0);
  if (r == MAP_FAILED) {
    /* Under `ulimit -v` (RLIMIT_AS) say so: the message alone names no cause. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
      static char why[200];
      snprintf(why, sizeof why,
               " pool: it needs %lu MiB of address space (plus 1 GiB to align it) and `ulimit -v` (RLIMIT_AS) "
               "allows %lu MiB in all; raise the limit or make the pool smaller.",
               (unsigned long)(p->size >> 20), (unsigned long)(rl.rlim_cur >> 20));
      mos_fatal("could not reserve address space for the ", p->name, why);
    }
    mos_fatal("could not reserve address space for the ", p->name, " pool.");
  }
  uintptr_t start = mos_up((uintptr_t)r, MOS_GiB);
  if (start > (uintptr_t)r) mos_os_munmap(r, start - (uintptr_t)r);
  uintptr_t rend = (uintptr_t)r + p->size + slack;
  if (rend > start + p->size) mos_os_munmap((void *)(start + p->size), rend - (start + p->size));
  p->start = start;
  p->brk = start;
  p->high_water = 0;
  pthread_mutex_init(&p->lock, NULL);

  if (p->kind == MOS_FILE) {
    /* stays PROT_NONE: file mappings are placed over it with MAP_FIXED */
    mos_rs_insert(&p->free, start, start + p->size);
    return;
  }
  if (mos_os_mmap((void *)start, p->size, RW, ANON_FLAGS | MAP_FIXED, -1, 0) == MAP_FAILED)
    mos_fatal("could not map the ", p->name, " pool.");
  /* explicit 4KB everywhere first, so that a system with THP "always" still honours the layout */
  mos_os_madvise((void *)start, p->size, MADV_NOHUGEPAGE);
  for (int i = 0; i < p->nwin; i++) {
    mos_window_t *w = &p->win[i];
    void *wa = (void *)(start + w->offset);
    if (cfg->mode == MOS_MODE_THP) {
      if (mos_os_madvise(wa, w->length, MADV_HUGEPAGE) == 0) w->backing = MOS_BACK_THP;
      else if (!cfg->best_effort)
        mos_fatal("madvise(MADV_HUGEPAGE) failed for a window of the ", p->name,
                  " pool (is transparent_hugepage disabled?).");
      else {
        mos_warn("a window of the ", p->name, " pool stays on 4KB pages: madvise(MADV_HUGEPAGE) failed.");
        w->backing = MOS_BACK_FALLBACK_4K;
      }
      continue;
    }
    int hflag = w->page == MOS_PAGE_1G ? MAP_HUGE_1GB : MAP_HUGE_2MB;
    void *m = mos_os_mmap(wa, w->length, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_HUGETLB | hflag, -1, 0);
    if (m != MAP_FAILED) {
      w->backing = MOS_BACK_HUGETLB;
      continue;
    }
    /* put the 4KB mapping back whatever happened to the range, then fail or degrade */
    mos_os_mmap(wa, w->length, RW, ANON_FLAGS | MAP_FIXED, -1, 0);
    mos_os_madvise(wa, w->length, MADV_NOHUGEPAGE);
    if (!cfg->best_effort) {
      mos_fatal(w->page == MOS_PAGE_1G ? "too few free 1GB huge pages to back a window of the "
                                       : "too few free 2MB huge pages to back a window of the ",
                p->name, " pool (run `xlat hugepages reserve` or pass --best-effort).");
    }
    mos_warn("a huge-page window of the ", p->name, " pool falls back to 4KB pages: too few free huge pages.");
    w->backing = MOS_BACK_FALLBACK_4K;
  }
  if (p->kind == MOS_ANON) mos_rs_insert(&p->free, start, start + p->size);
}

/* Fault in [a, a+len) of a freshly mapped pool (zero pages, so nothing the program sees changes):
 * MADV_POPULATE_WRITE (Linux 5.14), or a write to every 4KiB page where the kernel lacks it. */
static void prefault(uintptr_t a, size_t len) {
  if (!len || mos_os_madvise((void *)a, len, MADV_POPULATE_WRITE) == 0) return;
  for (uintptr_t x = a; x < a + len; x += MOS_PAGE_4K) *(volatile char *)x = 0;
}

void mos_pools_map(mos_config_t *cfg) {
  for (int i = 0; i < MOS_NPOOLS; i++) {
    map_pool(cfg, &cfg->pool[i]);
    if (cfg->pool[i].kind != MOS_FILE) prefault(cfg->pool[i].start, mos_up(cfg->pool[i].prefault, MOS_PAGE_4K));
  }
}

mos_pool_t *mos_pool_of(uintptr_t addr) {
  for (int i = 0; i < MOS_NPOOLS; i++) {
    mos_pool_t *p = &mos_cfg.pool[i];
    if (p->start && addr >= p->start && addr < mos_pool_end(p)) return p;
  }
  return NULL;
}

void mos_pools_lock_all(void) {
  for (int i = 0; i < MOS_NPOOLS; i++) pthread_mutex_lock(&mos_cfg.pool[i].lock);
}
void mos_pools_unlock_all(void) {
  for (int i = MOS_NPOOLS - 1; i >= 0; i--) pthread_mutex_unlock(&mos_cfg.pool[i].lock);
}
void mos_pools_reinit_locks(void) {
  for (int i = 0; i < MOS_NPOOLS; i++) pthread_mutex_init(&mos_cfg.pool[i].lock, NULL);
}

/* ---- anonymous and file pools ------------------------------------------------------------------- */

static void note_fallback(mos_pool_t *p, size_t len) {
  pthread_mutex_lock(&p->lock);
  bool first = p->fallback_count++ == 0;
  p->fallback_bytes += len;
  pthread_mutex_unlock(&p->lock);
  if (first)
    mos_warn("the ", p->name, " pool could not serve a mapping, so the kernel placed it on 4KB pages (see the verify report).");
}

static uintptr_t take_first_fit(mos_pool_t *p, size_t len) {
  uintptr_t res = 0;
  pthread_mutex_lock(&p->lock);
  for (size_t i = 0; i < p->free.n; i++)
    if (p->free.r[i].end - p->free.r[i].start >= len) {
      res = p->free.r[i].start;
      if (!mos_rs_remove(&p->free, res, res + len)) res = 0;
      else if (res + len - p->start > p->high_water) p->high_water = res + len - p->start;
      break;
    }
  pthread_mutex_unlock(&p->lock);
  return res;
}

/* An aligned block for the heap's allocator that the heap cannot place (heap.c): the first free
 * address of the anon pool at `alignment` with `len` bytes after it, taken; 0 if there is none.  The
 * anon pool's free memory is zero (mos_release zeroes what is unmapped, or keeps it zeroed). */
uintptr_t mos_anon_take_aligned(size_t len, size_t alignment) {
  mos_pool_t *p = &mos_cfg.pool[MOS_ANON];
  uintptr_t res = 0;
  pthread_mutex_lock(&p->lock);
  for (size_t i = 0; i < p->free.n && !res; i++) {
    uintptr_t a = mos_up(p->free.r[i].start, alignment);
    if (a >= p->free.r[i].start && a < p->free.r[i].end && p->free.r[i].end - a >= len) res = a;
  }
  if (res && !mos_rs_remove(&p->free, res, res + len)) res = 0;
  if (res && res + len - p->start > p->high_water) p->high_water = res + len - p->start;
  pthread_mutex_unlock(&p->lock);
  return res;
}

/* First fit restricted to memory outside hugetlb windows: for mappings whose protection cannot be
 * applied inside a hugetlb window (mprotect works there only on whole huge pages). */
static uintptr_t take_first_fit_4k(mos_pool_t *p, size_t len) {
  uintptr_t res = 0;
  pthread_mutex_lock(&p->lock);
  for (size_t i = 0; i < p->free.n && !res; i++) {
    uintptr_t a = p->free.r[i].start, b = p->free.r[i].end, run = 0;
    while (a < b) {
      uintptr_t e = piece_end(p, a, b);
      const mos_window_t *w = window_at(p, a);
      if (w && w->backing == MOS_BACK_HUGETLB) run = 0;
      else {
        if (!run) run = a;
        if (e - run >= len) { res = run; break; }
      }
      a = e;
    }
  }
  if (res && !mos_rs_remove(&p->free, res, res + len)) res = 0;
  if (res && res + len - p->start > p->high_water) p->high_water = res + len - p->start;
  pthread_mutex_unlock(&p->lock);
  return res;
}

static void reserve_again(mos_pool_t *p, uintptr_t a, uintptr_t b) {
  (void)p;
  mos_os_mmap((void *)a, b - a, PROT_NONE, ANON_FLAGS | MAP_FIXED, -1, 0);
}

/* Called with the pool locked, on each allocated part of a range being unmapped. */
static void free_part_anon(mos_pool_t *p, uintptr_t a, uintptr_t b);
static void reserve_again(mos_pool_t *p, uintptr_t a, uintptr_t b);
static void free_part_foreign(mos_pool_t *p, uintptr_t a, uintptr_t b) {
  /* A foreign mapping was placed here with MAP_FIXED: unmap it and put the pool's own backing
   * back, piece by piece.  A piece that cannot get it back (part of a hugetlb page, or no free huge
   * page any more) stays reserved PROT_NONE and is never handed out again. */
  mos_os_munmap((void *)a, b - a);
  mos_rs_remove(&p->foreign, a, b);
  while (a < b) {
    uintptr_t e = piece_end(p, a, b);
    const mos_window_t *w = window_at(p, a);
    int backing = w ? w->backing : MOS_BACK_4K;
    bool ok = false;
    if (backing == MOS_BACK_HUGETLB) {
      int hflag = w->page == MOS_PAGE_1G ? MAP_HUGE_1GB : MAP_HUGE_2MB;
      ok = a % w->page == 0 && e % w->page == 0 &&
           mos_os_mmap((void *)a, e - a, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_HUGETLB | hflag, -1, 0) !=
               MAP_FAILED;
    } else {
      ok = mos_os_mmap((void *)a, e - a, RW, ANON_FLAGS | MAP_FIXED, -1, 0) != MAP_FAILED;
      if (ok) mos_os_madvise((void *)a, e - a, backing == MOS_BACK_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    }
    if (!ok) reserve_again(p, a, e);
    else if (p->kind == MOS_ANON) mos_rs_insert(&p->free, a, e);
    a = e;
  }
}
static void free_part_plain(mos_pool_t *p, uintptr_t a, uintptr_t b) {
  mos_release(p, a, b);
  if (p->kind == MOS_ANON) mos_rs_insert(&p->free, a, b);
}
static void free_part_anon(mos_pool_t *p, uintptr_t a, uintptr_t b) {
  /* split [a,b) by the foreign set: foreign parts inside, plain parts in the gaps */
  size_t i = mos_rs_lower(&p->foreign, a);
  uintptr_t cur = a;
  while (cur < b) {
    if (i < p->foreign.n && p->foreign.r[i].start < b) {
      uintptr_t fs = p->foreign.r[i].start > cur ? p->foreign.r[i].start : cur;
      uintptr_t fe = p->foreign.r[i].end < b ? p->foreign.r[i].end : b;
      if (fs > cur) free_part_plain(p, cur, fs);
      free_part_foreign(p, fs, fe); /* removes entry i (or a part of it) */
      i = mos_rs_lower(&p->foreign, fe);
      cur = fe;
    } else {
      free_part_plain(p, cur, b);
      cur = b;
    }
  }
}
static void free_part_file(mos_pool_t *p, uintptr_t a, uintptr_t b) {
  reserve_again(p, a, b);
  mos_rs_insert(&p->free, a, b);
}

static void pool_unmap(mos_pool_t *p, uintptr_t a, uintptr_t b) {
  pthread_mutex_lock(&p->lock);
  if (p->kind == MOS_FILE) rs_each_gap(p, &p->free, a, b, free_part_file);
  else if (p->kind == MOS_ANON) rs_each_gap(p, &p->free, a, b, free_part_anon);
  else free_part_anon(p, a, b); /* heap: munmap of heap memory zeroes it, like a brk shrink */
  pthread_mutex_unlock(&p->lock);
}

int mos_munmap(void *addr, size_t len) {
  uintptr_t a = (uintptr_t)addr;
  if (a % MOS_PAGE_4K || len == 0) {
    errno = EINVAL;
    return -1;
  }
  uintptr_t b = mos_up(a + len, MOS_PAGE_4K);
  /* split the range by the (at most three) pools; whatever lies outside goes to the kernel */
  while (a < b) {
    mos_pool_t *p = mos_pool_of(a);
    if (p) {
      uintptr_t e = b < mos_pool_end(p) ? b : mos_pool_end(p);
      pool_unmap(p, a, e);
      a = e;
      continue;
    }
    uintptr_t e = b;
    for (int i = 0; i < MOS_NPOOLS; i++) {
      mos_pool_t *q = &mos_cfg.pool[i];
      if (q->start > a && q->start < e) e = q->start;
    }
    if (mos_os_munmap((void *)a, e - a) != 0) return -1;
    a = e;
  }
  return 0;
}

/* MAP_FIXED (or MAP_FIXED_NOREPLACE) into a pool. */
static void *fixed_into_pool(mos_pool_t *p, uintptr_t a, uintptr_t b, int prot, int flags, int fd, off_t off) {
  bool private_anon = (flags & MAP_ANONYMOUS) && IS_PRIVATE(flags) && !(flags & MAP_HUGETLB);
  pthread_mutex_lock(&p->lock);
  if (flags & MAP_FIXED_NOREPLACE) {
    bool all_free = p->kind != MOS_HEAP && mos_rs_covers(&p->free, a, b);
    if (!all_free) {
      pthread_mutex_unlock(&p->lock);
      errno = EEXIST;
      return MAP_FAILED;
    }
  }
  /* Replace pool memory by fresh pool memory: zero it and apply the protection.  Where the
   * protection cannot be applied (part of a hugetlb page), the kernel maps the range instead. */
  if (private_anon && p->kind != MOS_FILE && !rs_overlaps(&p->foreign, a, b) &&
      (prot == RW || mos_os_mprotect((void *)a, b - a, prot) == 0)) {
    /* allocated parts hold old data, and so may the heap's holes (XLAT_MOSAIC_KEEP_FREED) */
    if (p->kind == MOS_HEAP) mos_release(p, a, b);
    else rs_each_gap(p, &p->free, a, b, mos_release);
    if (prot != RW) mos_os_mprotect((void *)a, b - a, prot); /* release made them read-write */
    mos_rs_remove(&p->free, a, b); /* anon: no longer free; heap: no longer a hole */
    pthread_mutex_unlock(&p->lock);
    return (void *)a;
  }
  void *r = mos_os_mmap((void *)a, b - a, prot, (flags & ~MAP_FIXED_NOREPLACE) | MAP_FIXED, fd, off);
  if (r != MAP_FAILED) {
    mos_rs_remove(&p->free, a, b);
    if (p->kind != MOS_FILE) mos_rs_insert(&p->foreign, a, b);
  }
  pthread_mutex_unlock(&p->lock);
  return r;
}

void *mos_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  if (len == 0) {
    errno = EINVAL;
    return MAP_FAILED;
  }
  size_t rlen = mos_up(len, MOS_PAGE_4K);
  if (rlen < len) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  if (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)) {
    uintptr_t a = (uintptr_t)addr;
    if (a % MOS_PAGE_4K) {
      errno = EINVAL;
      return MAP_FAILED;
    }
    for (int i = 0; i < MOS_NPOOLS; i++) {
      mos_pool_t *p = &mos_cfg.pool[i];
      if (!(a < mos_pool_end(p) && a + rlen > p->start)) continue;
      if (a >= p->start && a + rlen <= mos_pool_end(p)) return fixed_into_pool(p, a, a + rlen, prot, flags, fd, off);
      errno = EINVAL; /* a fixed mapping straddling a pool boundary cannot be tracked */
      return MAP_FAILED;
    }
    return mos_os_mmap(addr, len, prot, flags, fd, off);
  }
  /* shared, huge-page, stack-like and 32-bit mappings keep their kernel semantics */
  if ((flags & (MAP_HUGETLB | MAP_GROWSDOWN | MAP_32BIT)) || ((flags & MAP_ANONYMOUS) && !IS_PRIVATE(flags)))
    return mos_os_mmap(addr, len, prot, flags, fd, off);

  if (flags & MAP_ANONYMOUS) {
    mos_pool_t *p = &mos_cfg.pool[MOS_ANON];
    uintptr_t a = take_first_fit(p, rlen);
    if (a) {
      if (prot == RW || mos_os_mprotect((void *)a, rlen, prot) == 0) {
        if (flags & MAP_POPULATE) mos_os_madvise((void *)a, rlen, MADV_POPULATE_WRITE);
        return (void *)a;
      }
      pthread_mutex_lock(&p->lock);
      mos_rs_insert(&p->free, a, a + rlen);
      pthread_mutex_unlock(&p->lock);
      if ((a = take_first_fit_4k(p, rlen))) {
        if (mos_os_mprotect((void *)a, rlen, prot) == 0) return (void *)a;
        pthread_mutex_lock(&p->lock);
        mos_rs_insert(&p->free, a, a + rlen);
        pthread_mutex_unlock(&p->lock);
      }
    }
    void *r = mos_os_mmap(addr, len, prot, flags, fd, off);
    if (r != MAP_FAILED) note_fallback(p, rlen);
    return r;
  }

  mos_pool_t *p = &mos_cfg.pool[MOS_FILE];
  uintptr_t a = take_first_fit(p, rlen);
  if (a) {
    void *r = mos_os_mmap((void *)a, len, prot, flags | MAP_FIXED, fd, off);
    if (r != MAP_FAILED) return r;
    pthread_mutex_lock(&p->lock);
    reserve_again(p, a, a + rlen);
    mos_rs_insert(&p->free, a, a + rlen);
    pthread_mutex_unlock(&p->lock);
  }
  void *r = mos_os_mmap(addr, len, prot, flags, fd, off);
  if (r != MAP_FAILED) note_fallback(p, rlen); /* the pool was full, or the placement was refused */
  return r;
}

void *mos_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr) {
  uintptr_t a = (uintptr_t)old;
  mos_pool_t *p = mos_pool_of(a);
  if (!p) return mos_os_mremap(old, old_len, new_len, flags, new_addr);
  if (a % MOS_PAGE_4K || new_len == 0 || old_len == 0 || (flags & ~MREMAP_MAYMOVE)) {
    /* MREMAP_FIXED / MREMAP_DONTUNMAP and duplicating mappings are not supported inside pools */
    errno = EINVAL;
    return MAP_FAILED;
  }
  uintptr_t ob = mos_up(a + old_len, MOS_PAGE_4K), nb = mos_up(a + new_len, MOS_PAGE_4K);
  if (ob > mos_pool_end(p)) {
    errno = EFAULT;
    return MAP_FAILED;
  }
  if (nb <= ob) {
    if (nb < ob) {
      if (p->kind == MOS_FILE) {
        void *r = mos_os_mremap(old, ob - a, nb - a, 0, NULL);
        if (r == MAP_FAILED) return r;
      }
      pool_unmap(p, nb, ob);
    }
    return old;
  }
  if (p->kind == MOS_ANON && nb <= mos_pool_end(p)) { /* grow in place if the next range is free */
    pthread_mutex_lock(&p->lock);
    bool ok = mos_rs_covers(&p->free, ob, nb) && mos_rs_remove(&p->free, ob, nb);
    pthread_mutex_unlock(&p->lock);
    if (ok) return old;
  }
  if (!(flags & MREMAP_MAYMOVE)) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  if (p->kind == MOS_FILE) {
    /* the kernel moves the file mapping out of the pool; the old range is reserved again */
    void *r = mos_os_mremap(old, ob - a, new_len, MREMAP_MAYMOVE, NULL);
    if (r == MAP_FAILED) return r;
    pthread_mutex_lock(&p->lock);
    reserve_again(p, a, ob);
    mos_rs_insert(&p->free, a, ob);
    pthread_mutex_unlock(&p->lock);
    note_fallback(p, new_len);
    return r;
  }
  void *r = mos_mmap(NULL, new_len, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (r == MAP_FAILED) return r;
  memcpy(r, old, ob - a);
  mos_munmap(old, ob - a);
  return r;
}

/* The end of the piece of uniform backing that starts at addr (at most limit), and its backing. */
uintptr_t mos_piece(const mos_pool_t *p, uintptr_t addr, uintptr_t limit, int *backing) {
  const mos_window_t *w = window_at(p, addr);
  *backing = w ? w->backing : MOS_BACK_4K;
  return piece_end(p, addr, limit);
}
