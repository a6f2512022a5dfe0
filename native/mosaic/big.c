/* big.c -- blocks that realloc grows past MOS_BIG_MIN (1 MiB), kept at page granularity in the
 * heap pool (issue 17: pool use of realloc-grown arrays).
 *
 * jemalloc rounds large blocks up to size classes, four per doubling, and grows a block in place at
 * the heap's top by whole classes: an array that ends just past a class boundary reserves up to a
 * quarter more address space than it ever touches (Python's array of 20M int64, 162 MiB, sat in a
 * 192 MiB class).  glibc on morecore, which the original Mosalloc ran, grows the top chunk by pages.
 * So a block that realloc grows to MOS_BIG_MIN or more leaves jemalloc for a block of whole pages
 * carved from the heap (mos_heap_take), listed here; growing it takes the pages after it when they
 * are at the break or in a hole, otherwise it moves (copied) to a new block with a quarter more room,
 * so that a block that keeps growing where it cannot grow in place is copied about as often as
 * jemalloc's size classes would copy it.  A freed or moved block becomes a hole of the heap (heap.c),
 * reused by later blocks and jemalloc's extents.  Only realloc makes such blocks: malloc and calloc
 * stay jemalloc's, whatever their size.
 *
 * A block starts on a page, so free() and realloc() look one up only for page-aligned pointers while
 * any block lives (mos_big_live): other frees cost one load and a branch. */
#include <string.h>

#include "mosaic.h"
#include "os.h"

typedef struct {
  uintptr_t start;
  size_t len; /* mapped bytes, a multiple of 4KiB: what malloc_usable_size says */
} big_t;

/* live blocks sorted by start, in raw mmap memory; guarded by the heap pool's lock */
static big_t *tab;
static size_t cap;
volatile size_t mos_big_live;

static pthread_mutex_t *heap_lock(void) { return &mos_cfg.pool[MOS_HEAP].lock; }

/* index of the first block starting at or after a */
static size_t lower(uintptr_t a) {
  size_t lo = 0, hi = mos_big_live;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (tab[mid].start < a) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* With the lock held: the block starting at p, or NULL. */
static big_t *find(void *p) {
  size_t i = lower((uintptr_t)p);
  return i < mos_big_live && tab[i].start == (uintptr_t)p ? &tab[i] : NULL;
}

static bool insert(uintptr_t start, size_t len) {
  size_t n = mos_big_live;
  if (n == cap) {
    size_t nc = cap ? cap * 2 : 256;
    big_t *t = mos_os_mmap(NULL, nc * sizeof *t, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED) return false;
    if (n) memcpy(t, tab, n * sizeof *t);
    if (tab) mos_os_munmap(tab, cap * sizeof *t);
    tab = t;
    cap = nc;
  }
  size_t i = lower(start);
  memmove(&tab[i + 1], &tab[i], (n - i) * sizeof *tab);
  tab[i] = (big_t){start, len};
  mos_big_live = n + 1;
  return true;
}

static void erase(big_t *b) {
  size_t i = (size_t)(b - tab), n = mos_big_live;
  memmove(&tab[i], &tab[i + 1], (n - i - 1) * sizeof *tab);
  mos_big_live = n - 1;
}

/* A new block of at least n bytes (page granular), or NULL if the heap pool is full. */
static void *big_new(size_t n) {
  size_t len = mos_up(n, MOS_PAGE_4K);
  if (len < n) return NULL;
  void *p = mos_heap_take(len, MOS_PAGE_4K, NULL, NULL);
  if (!p) return NULL;
  pthread_mutex_lock(heap_lock());
  bool ok = insert((uintptr_t)p, len);
  pthread_mutex_unlock(heap_lock());
  if (!ok) {
    mos_heap_give((uintptr_t)p, (uintptr_t)p + len);
    return NULL;
  }
  return p;
}

/* With the lock held: forget block b; its pages become a hole once the lock is released. */
static void big_drop(big_t *b, uintptr_t *a, uintptr_t *e) {
  *a = b->start;
  *e = b->start + b->len;
  erase(b);
}

bool mos_big_free(void *p) {
  if (((uintptr_t)p & (MOS_PAGE_4K - 1)) || !mos_big_live) return false;
  uintptr_t a, e;
  pthread_mutex_lock(heap_lock());
  big_t *b = find(p);
  if (b) big_drop(b, &a, &e);
  pthread_mutex_unlock(heap_lock());
  if (b) mos_heap_give(a, e);
  return b != NULL;
}

size_t mos_big_usable(void *p) {
  if (((uintptr_t)p & (MOS_PAGE_4K - 1)) || !mos_big_live) return 0;
  pthread_mutex_lock(heap_lock());
  big_t *b = find(p);
  size_t len = b ? b->len : 0;
  pthread_mutex_unlock(heap_lock());
  return len;
}

/* Move: a new block of n bytes plus a quarter, the old contents (`keep` bytes) copied. */
static void *big_move(void *p, size_t keep, size_t n) {
  size_t room = n + n / 4 > n ? n + n / 4 : n;
  void *q = big_new(room);
  if (!q) q = big_new(n);
  if (!q) return NULL;
  memcpy(q, p, keep < n ? keep : n);
  return q;
}

void *mos_big_realloc(void *p, size_t n) {
  size_t len = mos_big_usable(p);
  size_t want = mos_up(n, MOS_PAGE_4K);
  if (len && n > len && want >= n &&
      mos_heap_take(want - len, MOS_PAGE_4K, (void *)((uintptr_t)p + len), NULL)) {
    /* grown in place: the pages after it were at the break or in a hole (the block is the
     * caller's, so nobody else resizes it meanwhile; other blocks may move in the table) */
    pthread_mutex_lock(heap_lock());
    find(p)->len = want;
    pthread_mutex_unlock(heap_lock());
    return p;
  }
  if (!len) { /* a jemalloc block (p is not NULL) */
    size_t old = mos_je_malloc_usable_size(p);
    if (n < MOS_BIG_MIN || n <= old) return mos_je_realloc(p, n);
    void *q = big_new(n);
    if (!q) return mos_je_realloc(p, n); /* heap pool full: jemalloc says so (NULL) */
    memcpy(q, p, old);
    mos_je_free(p);
    return q;
  }
  if (n == 0) { /* as jemalloc's realloc(p, 0): free, return NULL */
    mos_big_free(p);
    return NULL;
  }
  if (n <= len && n >= MOS_BIG_MIN) return p; /* shrinking keeps the block */
  void *q = n < MOS_BIG_MIN ? mos_je_malloc(n) : big_move(p, len, n);
  if (!q) return NULL; /* p is left as it was */
  if (n < MOS_BIG_MIN) memcpy(q, p, n);
  mos_big_free(p);
  return q;
}
