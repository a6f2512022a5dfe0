/* mosaic.h -- internal interface of the xlat mosaic allocator (libxlat_mosaic.so).
 *
 * Layers, bottom up (mimalloc's shape):
 *   os.h        raw system calls, nothing else
 *   options.c   the environment-variable table and the layout parser/validator
 *   pool.c      the three pools: reservation, page-size windows, brk bump pointer, first-fit ranges
 *   advise.c    madvise over pool memory (DONTNEED zeroes, FREE, REMOVE, THP advice ignored)
 *   core.c      jemalloc (Debian's libjemalloc_pic.a, symbols renamed mos_je_*) pointed at the heap
 *               pool through extent hooks; initialisation, fork handlers, the exit report
 *   override.c  the standard names (malloc family, mmap, munmap, mremap, brk, sbrk) forwarding here
 * Real functions carry the mos_ prefix; only override.c and the xlat_mosaic_* query API are exported. */
#ifndef MOS_MOSAIC_H
#define MOS_MOSAIC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MOS_KiB ((size_t)1 << 10)
#define MOS_MiB ((size_t)1 << 20)
#define MOS_GiB ((size_t)1 << 30)
#define MOS_PAGE_4K (4 * MOS_KiB)
#define MOS_PAGE_2M (2 * MOS_MiB)
#define MOS_PAGE_1G (MOS_GiB)
/* Windows per pool (4KB windows included: all are held until validated); a fixed table keeps
 * initialisation free of malloc. */
#define MOS_MAX_WINDOWS 256
/* Largest pool: each pool is one reservation of its size plus 1GiB of alignment slack, so three
 * pools of 16TiB need 48TiB + 3GiB of the 128TiB (47-bit) user address space, leaving the
 * program, its libraries, stacks and kernel-placed mappings room; three pools of 64TiB could not be
 * placed at all.  The simulator places the pools 16TiB apart.  Same limit in layout.py and
 * crates/xlat-core/src/config/layout.rs (MAX_POOL_SIZE). */
#define MOS_MAX_POOL ((size_t)16 << 40)

enum mos_pool_kind { MOS_HEAP = 0, MOS_ANON = 1, MOS_FILE = 2, MOS_NPOOLS = 3 };
enum mos_mode { MOS_MODE_HUGETLB = 0, MOS_MODE_THP = 1 };
/* What actually backs a window after mapping (reported in the map file). */
enum mos_backing { MOS_BACK_4K = 0, MOS_BACK_HUGETLB = 1, MOS_BACK_THP = 2, MOS_BACK_FALLBACK_4K = 3 };

typedef struct mos_window {
  size_t offset, length, page; /* bytes, relative to the pool start */
  int backing;                 /* enum mos_backing, set when mapped */
} mos_window_t;

typedef struct mos_range {
  uintptr_t start, end;
} mos_range_t;

/* A growable sorted array of disjoint ranges, stored in raw mmap memory (never malloc). */
typedef struct mos_rangeset {
  mos_range_t *r;
  size_t n, cap;
} mos_rangeset_t;

typedef struct mos_pool {
  const char *name;
  int kind;
  size_t size;
  uintptr_t start; /* 0 until mapped */
  int nwin;
  mos_window_t win[MOS_MAX_WINDOWS]; /* sorted by offset, disjoint (validated) */
  pthread_mutex_t lock;
  uintptr_t brk;         /* heap pool: the program break, start <= brk <= start + size */
  mos_rangeset_t free;   /* anon/file pools: free ranges, first fit */
  mos_rangeset_t foreign; /* anon pool: ranges overwritten by MAP_FIXED foreign mappings */
  size_t fallback_bytes; /* requests the pool could not serve, given to the kernel instead */
  unsigned long fallback_count;
  size_t high_water;     /* highest offset ever handed out */
  size_t prefault;       /* bytes from the start populated at start-up (XLAT_MOSAIC_PREFAULT) */
} mos_pool_t;

typedef struct mos_config {
  int mode;         /* enum mos_mode */
  bool best_effort; /* degrade unavailable huge windows to 4KB instead of failing */
  bool verbose;
  /* XLAT_MOSAIC_KEEP_FREED=1: memory the program frees stays populated, as in Mosalloc's pools
   * (glibc with trimming off): jemalloc never purges, and pool ranges given back (munmap, a brk
   * shrink) are zeroed in place instead of dropped with MADV_DONTNEED, so reusing them faults
   * nothing in.  The program's own madvise keeps its semantics (advise.c). */
  bool keep_freed;
  const char *report_dir; /* where map.<pid> and smaps.<pid> are written, or NULL */
  /* CPU time of the process when start-up ended (pools mapped and prefaulted, jemalloc attached):
   * reported, so that a timing can leave start-up out (xlat experiment's "work" runtime) */
  unsigned long long cpu_start_ns;
  unsigned long long minflt_start; /* its minor page faults then (the prefault's among them) */
  mos_pool_t pool[MOS_NPOOLS];
} mos_config_t;

extern mos_config_t mos_cfg;

static inline uintptr_t mos_up(uintptr_t x, size_t a) { return (x + a - 1) & ~(uintptr_t)(a - 1); }
static inline uintptr_t mos_down(uintptr_t x, size_t a) { return x & ~(uintptr_t)(a - 1); }
static inline uintptr_t mos_pool_end(const mos_pool_t *p) { return p->start + p->size; }

/* options.c */
void mos_options_load(mos_config_t *cfg);                     /* exits with one sentence on bad input */
void mos_fatal(const char *fmt_a, const char *b, const char *c) __attribute__((noreturn));
extern void (*mos_fatal_hook)(const char *sentence); /* set by core.c: records a fatal error */
void mos_warn(const char *a, const char *b, const char *c);
size_t mos_fmt_u64(char *buf, uint64_t v);

/* pool.c */
void mos_pools_map(mos_config_t *cfg);   /* exits with one sentence if the layout cannot be honoured */
mos_pool_t *mos_pool_of(uintptr_t addr); /* the pool containing addr, or NULL */
void *mos_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int mos_munmap(void *addr, size_t len);
void *mos_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr);
void mos_zero_range(mos_pool_t *p, uintptr_t a, uintptr_t b); /* zero, keeping page sizes */
void mos_release(mos_pool_t *p, uintptr_t a, uintptr_t b);    /* zero (or keep), read-write again */
bool mos_rs_insert(mos_rangeset_t *s, uintptr_t a, uintptr_t b);
bool mos_rs_remove(mos_rangeset_t *s, uintptr_t a, uintptr_t b);
bool mos_rs_covers(const mos_rangeset_t *s, uintptr_t a, uintptr_t b);
uintptr_t mos_piece(const mos_pool_t *p, uintptr_t addr, uintptr_t limit, int *backing);
size_t mos_rs_lower(const mos_rangeset_t *s, uintptr_t a); /* first range ending after a */
uintptr_t mos_anon_take_aligned(size_t len, size_t alignment); /* from the anon pool, or 0 */

/* heap.c: the program break and the holes freed blocks leave below it */
/* size bytes at `alignment` (a hole first fit, else the break), or exactly at `at` (in place growth
 * of what ends there); *zeroed says whether the memory reads as zero; NULL if it cannot be had */
void *mos_heap_take(size_t size, size_t alignment, void *at, bool *zeroed);
void mos_heap_give(uintptr_t a, uintptr_t b); /* [a,b) becomes a hole (zeroed unless keep_freed) */
bool mos_heap_purge(void *addr, size_t len); /* zero+release 4KB-only ranges; false if not possible */
void *mos_sbrk(intptr_t inc);
int mos_brk(void *addr);

/* big.c: blocks grown by realloc past MOS_BIG_MIN, kept at page granularity */
#define MOS_BIG_MIN MOS_MiB
extern volatile size_t mos_big_live; /* how many there are (read without the lock as a hint) */
void *mos_big_realloc(void *p, size_t n); /* realloc of p (not NULL) when n >= MOS_BIG_MIN or blocks live */
bool mos_big_free(void *p);               /* true if p was such a block (now freed) */
size_t mos_big_usable(void *p);           /* its usable size, or 0 if p is not one */

/* advise.c */
int mos_madvise(void *addr, size_t len, int advice); /* Linux's semantics over pool memory */
void mos_pools_lock_all(void);
void mos_pools_unlock_all(void);
void mos_pools_reinit_locks(void);

/* core.c */
extern volatile int mos_state; /* 0 = not started, 1 = initialising, 2 = ready */
extern volatile int mos_pools_ready;
void mos_init_slow(void);
bool mos_init_by_me(void); /* true while this thread is inside initialisation */
void *mos_mmap_bootstrap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
void mos_report_write(const char *what);
void mos_report_exec(const char *target); /* map file with event "exec" and the program exec'd */
extern volatile int mos_exit_status; /* the status passed to exit/_exit, -1 until then */

/* jemalloc, from Debian's libjemalloc_pic.a with its public names renamed by the Makefile */
void *mos_je_malloc(size_t);
void *mos_je_calloc(size_t, size_t);
void *mos_je_realloc(void *, size_t);
void mos_je_free(void *);
int mos_je_posix_memalign(void **, size_t, size_t);
void *mos_je_aligned_alloc(size_t, size_t);
void *mos_je_memalign(size_t, size_t);
void *mos_je_valloc(size_t);
size_t mos_je_malloc_usable_size(void *);
int mos_je_mallctl(const char *, void *, size_t *, void *, size_t);

static inline void mos_ensure_init(void) {
  if (__builtin_expect(mos_state != 2, 0)) mos_init_slow();
}

#endif
