/* core.c -- initialisation, the allocator core and the report.
 *
 * The allocator core is jemalloc 5.3.0 from Debian's libjemalloc_pic.a (the Makefile renames its
 * public symbols to mos_je_* so that they do not clash with our overrides).  jemalloc asks for
 * memory through extent hooks; ours carve every extent from the heap pool's program break, exactly
 * as glibc's morecore extended the heap for the original Mosalloc (seed 002, V).  Extents are never
 * given back (dalloc opts out, as Mosalloc freed only from the top); jemalloc keeps and reuses them.
 * Purging is allowed only on 4KB ranges, where MADV_DONTNEED cannot split or free a huge page.
 * docs/mosaic.md has the measurements behind the choice of jemalloc. */
#include <errno.h>
#include <fcntl.h>
#include <jemalloc/jemalloc.h>
#include <sched.h>
#include <sys/mman.h>
#include <string.h>

#include "mosaic.h"
#include "os.h"

mos_config_t mos_cfg;
volatile int mos_exit_status = -1;
volatile int mos_state;
volatile int mos_pools_ready;
static volatile pid_t init_tid;

/* jemalloc options: no separate arena for huge allocations (it would be created with default hooks,
 * i.e. outside the heap pool), no lazy purging (we offer no purge_lazy hook), and retain:false.
 * With retain (jemalloc's default on Linux) jemalloc grows by ever larger hook extents (geometric
 * "retained" growth) and never asks the hook to extend an extent in place; a block grown with
 * realloc then moves to a fresh extent at each step while the freed ones sit between unused retained
 * tails that they cannot coalesce with, so the pool grew ~9x faster than the program (issue 17: a
 * 160MB array took 1.4GiB of the heap pool).  Without retain, jemalloc asks for exactly what it
 * needs, and asks to extend a block in place at its end, which ext_alloc grants when the block ends
 * at the heap's break: realloc growth at the top of the heap stays in place (docs/mosaic.md has the
 * figures).  dalloc still opts out, so freed extents are kept ("retained") and reused all the same. */
const char *mos_je_malloc_conf = "oversize_threshold:0,muzzy_decay_ms:0,retain:false";
/* With XLAT_MOSAIC_KEEP_FREED, dirty pages never decay (dirty_decay_ms:-1, as glibc with trimming
 * off, which is how Mosalloc ran it), and the purge hook refuses: freed memory stays populated.  Set
 * before jemalloc starts, which is when it reads its options (a MALLOC_CONF in the environment is
 * read after this and may change the decay, but never makes the hook purge). */
static const char keep_freed_conf[] = "oversize_threshold:0,muzzy_decay_ms:0,retain:false,dirty_decay_ms:-1";

/* ---- extent hooks -------------------------------------------------------------------------------- */

static void *ext_alloc(extent_hooks_t *h, void *new_addr, size_t size, size_t alignment, bool *zero, bool *commit,
                       unsigned arena) {
  (void)h, (void)arena;
  bool zeroed;
  void *p = mos_heap_take(size, alignment, new_addr, &zeroed);
  if (!p) return NULL;
  if (*zero && !zeroed) memset(p, 0, size); /* a kept hole (XLAT_MOSAIC_KEEP_FREED) asked to be zero */
  *zero = zeroed || *zero; /* fresh, zeroed when it became a hole, or just now */
  *commit = true;
  return p;
}
static bool ext_dalloc(extent_hooks_t *h, void *a, size_t s, bool c, unsigned i) {
  (void)h, (void)a, (void)s, (void)c, (void)i;
  return true; /* opt out: pool memory is never unmapped; jemalloc retains and reuses it */
}
static void ext_destroy(extent_hooks_t *h, void *a, size_t s, bool c, unsigned i) {
  (void)h, (void)a, (void)s, (void)c, (void)i;
}
static bool ext_commit(extent_hooks_t *h, void *a, size_t s, size_t o, size_t l, unsigned i) {
  (void)h, (void)a, (void)s, (void)o, (void)l, (void)i;
  return false; /* pool memory is always mapped read-write */
}
static bool ext_decommit(extent_hooks_t *h, void *a, size_t s, size_t o, size_t l, unsigned i) {
  (void)h, (void)a, (void)s, (void)o, (void)l, (void)i;
  return true; /* opt out: it stays committed */
}
static bool ext_purge_forced(extent_hooks_t *h, void *a, size_t s, size_t o, size_t l, unsigned i) {
  (void)h, (void)s, (void)i;
  if (mos_cfg.keep_freed) return true; /* opt out: freed memory stays populated */
  return !mos_heap_purge((char *)a + o, l);
}
static bool ext_split(extent_hooks_t *h, void *a, size_t s, size_t sa, size_t sb, bool c, unsigned i) {
  (void)h, (void)a, (void)s, (void)sa, (void)sb, (void)c, (void)i;
  return false;
}
static bool ext_merge(extent_hooks_t *h, void *a, size_t sa, void *b, size_t sb, bool c, unsigned i) {
  (void)h, (void)sa, (void)sb, (void)c, (void)i;
  /* Extents of one pool may merge; not across pools (an aligned extent the heap could not place
   * comes from the anon pool, heap.c), whose memory is released by each pool's rules. */
  return mos_pool_of((uintptr_t)a) != mos_pool_of((uintptr_t)b);
}

static extent_hooks_t mos_hooks = {
    ext_alloc, ext_dalloc, ext_destroy, ext_commit, ext_decommit, NULL, ext_purge_forced, ext_split, ext_merge,
};

static void attach_jemalloc(void) {
  unsigned narenas = 0;
  size_t sz = sizeof narenas;
  if (mos_je_mallctl("arenas.narenas", &narenas, &sz, NULL, 0) != 0)
    mos_fatal("could not start the allocator core", " (jemalloc)", ".");
  extent_hooks_t *h = &mos_hooks;
  for (unsigned i = 0; i < narenas; i++) {
    char name[64] = "arena.";
    size_t n = strlen(name);
    n += mos_fmt_u64(name + n, i);
    memcpy(name + n, ".extent_hooks", sizeof ".extent_hooks");
    /* For arenas not created yet this creates them with our hooks, so that every automatic arena
     * (one is picked per thread) draws from the heap pool. */
    if (mos_je_mallctl(name, NULL, NULL, &h, sizeof h) != 0)
      mos_fatal("could not attach the heap pool to jemalloc arena ", name, ".");
  }
}

/* ---- fork ------------------------------------------------------------------------------------------ */

static void mos_prefork(void) { mos_pools_lock_all(); }
static void mos_postfork_parent(void) { mos_pools_unlock_all(); }
static long read_sysfs_long(const char *path) {
  char buf[32];
  int fd = mos_os_open(path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return -1;
  ssize_t n = mos_os_read(fd, buf, sizeof buf - 1);
  mos_os_close(fd);
  if (n <= 0) return -1;
  long v = 0;
  for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++) v = v * 10 + (buf[i] - '0');
  return v;
}

/* A forked child shares the parent's hugetlb pages copy-on-write, and writes to them at once
 * (jemalloc's fork handler updates its locks).  Each copy needs a free huge page; without one the
 * kernel kills the child with SIGBUS.  Say so in one sentence before that happens. */
static void warn_if_no_cow_headroom(void) {
  static const struct { size_t page; const char *dir, *msg; } sizes[2] = {
      {MOS_PAGE_2M, "/sys/kernel/mm/hugepages/hugepages-2048kB/",
       "this forked child shares 2MB hugetlb pages copy-on-write but no free 2MB huge page is left, "},
      {MOS_PAGE_1G, "/sys/kernel/mm/hugepages/hugepages-1048576kB/",
       "this forked child shares 1GB hugetlb pages copy-on-write but no free 1GB huge page is left, "},
  };
  for (int s = 0; s < 2; s++) {
    bool used = false;
    for (int i = 0; i < MOS_NPOOLS; i++)
      for (int w = 0; w < mos_cfg.pool[i].nwin; w++)
        used |= mos_cfg.pool[i].win[w].backing == MOS_BACK_HUGETLB && mos_cfg.pool[i].win[w].page == sizes[s].page;
    if (!used) continue;
    char path[96];
    size_t n = strlen(sizes[s].dir);
    memcpy(path, sizes[s].dir, n);
    memcpy(path + n, "free_hugepages", sizeof "free_hugepages");
    long free_pages = read_sysfs_long(path);
    memcpy(path + n, "resv_hugepages", sizeof "resv_hugepages");
    long resv = read_sysfs_long(path);
    if (free_pages >= 0 && resv >= 0 && free_pages - resv < 1)
      mos_warn(sizes[s].msg, "so the kernel will kill it (SIGBUS) when it writes to them",
               " (reserve more with `xlat hugepages reserve`).");
  }
}

static void mos_postfork_child(void) {
  mos_pools_reinit_locks();
  mos_cfg.cpu_start_ns = 0; /* a new process: its CPU time and faults start at 0 */
  mos_cfg.minflt_start = 0;
  /* the child's own map file, so that a child killed before it exits is still seen by --verify
   * (exit status unknown); it has no status yet, whatever its parent recorded */
  mos_exit_status = -1;
  mos_report_write(NULL);
  if (mos_cfg.mode == MOS_MODE_HUGETLB) warn_if_no_cow_headroom();
}

/* ---- initialisation -------------------------------------------------------------------------------- */

bool mos_init_by_me(void) { return mos_state == 1 && init_tid == mos_os_gettid(); }

/* mmap while this thread initialises: jemalloc's bootstrap.  Private anonymous requests come from
 * the heap pool's break, 2MiB aligned so that jemalloc never has to trim an over-sized mapping. */
void *mos_mmap_bootstrap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  /* Requests under 2MiB are jemalloc's one-page probes (does MADV_DONTNEED zero memory?), which
   * must see ordinary 4KB memory to give the right answer: those go to the kernel. */
  if (mos_pools_ready && mos_init_by_me() && addr == NULL && len >= MOS_PAGE_2M && (flags & MAP_ANONYMOUS) &&
      (flags & MAP_TYPE) == MAP_PRIVATE &&
      !(flags & (MAP_FIXED | MAP_HUGETLB)) && prot == (PROT_READ | PROT_WRITE)) {
    bool zeroed;
    void *p = mos_heap_take(mos_up(len, MOS_PAGE_4K), MOS_PAGE_2M, NULL, &zeroed);
    if (p && !zeroed) memset(p, 0, len); /* as from mmap */
    if (p) return p;
  }
  return mos_os_mmap(addr, len, prot, flags, fd, off);
}

static void report_fatal(const char *sentence);
/* exit() runs the handlers registered with atexit/on_exit in reverse order, and ld.so's, which runs
 * the libraries' destructors, was registered after ours (by __libc_start_main, after the preloaded
 * libraries' constructors ran): so this handler runs last of all, after every destructor, and is
 * the one to write the exit report, now with the exit status. */
static volatile int exit_handler_set;
static void on_exit_status(int status, void *arg) {
  (void)arg;
  mos_exit_status = status & 0xff;
  mos_report_write("exit");
}

void mos_init_slow(void) {
  if (mos_state == 2) return;
  if (__sync_bool_compare_and_swap(&mos_state, 0, 1)) {
    init_tid = mos_os_gettid();
    mos_fatal_hook = report_fatal;
    mos_options_load(&mos_cfg);
    if (mos_cfg.keep_freed) mos_je_malloc_conf = keep_freed_conf;
    mos_pools_map(&mos_cfg);
    __sync_synchronize();
    mos_pools_ready = 1;
    /* Our fork handlers are registered before jemalloc registers its own (while it starts, just
     * below), so that at fork jemalloc's prepare handler runs first and takes the arena locks,
     * and ours then takes the pool locks.  Threads take a pool lock inside a hook while holding
     * an arena lock, never the reverse, so this order cannot deadlock.  (glibc keeps the first 48
     * handlers in static storage, so this call does not allocate.) */
    pthread_atfork(mos_prefork, mos_postfork_parent, mos_postfork_child);
    /* Starting jemalloc maps its bootstrap memory (base metadata, arena 0's first extents) with
     * its default hooks; mos_mmap_bootstrap puts those mappings in the heap pool too. */
    attach_jemalloc();
    mos_cfg.cpu_start_ns = mos_os_cpu_ns();
    mos_cfg.minflt_start = mos_os_minflt();
    __sync_synchronize();
    mos_state = 2;
    /* the exit status, for the report: on_exit handlers get it from exit() and from main's return
     * (glibc keeps the first 32 handlers in static storage) */
    exit_handler_set = on_exit(on_exit_status, NULL) == 0;
    mos_report_write(NULL);
    if (mos_cfg.verbose) mos_warn("pools mapped", mos_cfg.mode == MOS_MODE_THP ? " (thp mode)" : " (hugetlb mode)", ".");
    return;
  }
  if (init_tid == mos_os_gettid()) return; /* recursion from inside initialisation: caller copes */
  while (mos_state != 2) sched_yield();
}

__attribute__((constructor)) static void mos_ctor(void) { mos_ensure_init(); }

/* ---- report: the window map and, at exit, a copy of /proc/self/smaps ------------------------------- */

typedef struct {
  char b[4096];
  size_t n;
  int fd;
} outbuf_t;
static void ob_flush(outbuf_t *o) {
  size_t d = 0;
  while (d < o->n) {
    ssize_t w = mos_os_write(o->fd, o->b + d, o->n - d);
    if (w <= 0) break;
    d += (size_t)w;
  }
  o->n = 0;
}
static void ob_str(outbuf_t *o, const char *s) {
  while (*s) {
    if (o->n == sizeof o->b) ob_flush(o);
    o->b[o->n++] = *s++;
  }
}
static void ob_u64(outbuf_t *o, uint64_t v) {
  char t[24];
  mos_fmt_u64(t, v);
  ob_str(o, t);
}

static int open_report(const char *kind, pid_t pid) {
  char path[4096];
  size_t n = strlen(mos_cfg.report_dir);
  if (n > sizeof path - 64) return -1;
  memcpy(path, mos_cfg.report_dir, n);
  path[n++] = '/';
  memcpy(path + n, kind, strlen(kind));
  n += strlen(kind);
  path[n++] = '.';
  n += mos_fmt_u64(path + n, (uint64_t)pid);
  path[n] = 0;
  return mos_os_open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

static const char *backing_name(int b) {
  switch (b) {
  case MOS_BACK_HUGETLB: return "hugetlb";
  case MOS_BACK_THP: return "thp";
  case MOS_BACK_FALLBACK_4K: return "fallback-4KB";
  default: return "4KB";
  }
}

static char exec_target[1024]; /* the program being exec'd, for the "exec" event */

void mos_report_exec(const char *target) {
  size_t n = 0;
  for (; target && target[n] && n < sizeof exec_target - 1; n++)
    exec_target[n] = target[n] == '\n' ? ' ' : target[n];
  exec_target[n] = 0;
  mos_report_write("exec");
}

/* The header of a map file: which process (pid, parent, executable), the mode, what happened
 * (start, exit, demand, fatal) and, once known, the exit status. */
static void report_header(outbuf_t *o, pid_t pid, const char *event, unsigned long long cpu_ns,
                          unsigned long long minflt) {
  ob_str(o, "# xlat mosaic map v1: pool NAME START SIZE BRK FALLBACK_BYTES FALLBACK_COUNT HIGH_WATER; "
            "window POOL OFFSET LENGTH PAGE BACKING START\n");
  ob_str(o, "pid ");
  ob_u64(o, (uint64_t)pid);
  ob_str(o, "\nppid ");
  ob_u64(o, (uint64_t)syscall(SYS_getppid));
  char exe[1024];
  long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = 0;
    for (long i = 0; i < n; i++)
      if (exe[i] == '\n') exe[i] = ' ';
    ob_str(o, "\nexe ");
    ob_str(o, exe);
  }
  ob_str(o, "\nmode ");
  ob_str(o, mos_cfg.mode == MOS_MODE_THP ? "thp" : "hugetlb");
  ob_str(o, "\nevent ");
  ob_str(o, event);
  if (mos_exit_status >= 0) {
    ob_str(o, "\nstatus ");
    ob_u64(o, (uint64_t)mos_exit_status);
  }
  ob_str(o, "\ncpu_start_ns ");
  ob_u64(o, mos_cfg.cpu_start_ns);
  ob_str(o, "\nminflt_start ");
  ob_u64(o, mos_cfg.minflt_start);
  if (cpu_ns) {
    ob_str(o, "\ncpu_ns ");
    ob_u64(o, cpu_ns);
    ob_str(o, "\nminflt ");
    ob_u64(o, minflt);
  }
  if (!strcmp(event, "exec") && exec_target[0]) {
    ob_str(o, "\ntarget ");
    ob_str(o, exec_target);
  }
  ob_str(o, "\n");
}

/* A fatal error before the program ran (too few huge pages, a bad layout): a map file with the
 * event "fatal", status 127 and the sentence, so that the run's verification reports it. */
static void report_fatal(const char *sentence) {
  if (!mos_cfg.report_dir) return;
  pid_t pid = mos_os_getpid();
  outbuf_t o;
  o.n = 0;
  o.fd = open_report("map", pid);
  if (o.fd < 0) return;
  mos_exit_status = 127;
  report_header(&o, pid, "fatal", 0, 0);
  ob_str(&o, "message ");
  ob_str(&o, sentence);
  ob_str(&o, "\n");
  ob_flush(&o);
  mos_os_close(o.fd);
}

/* what: NULL at start (map only), "exec" just before an exec (map only: if the new image loads
 * the library it writes its own map under the same pid, otherwise the run knows it was replaced),
 * "exit" or "demand" (map and smaps). */
void mos_report_write(const char *what) {
  if (!mos_cfg.report_dir || mos_state != 2) return;
  /* the CPU time at the event, before writing the report costs any (exit and demand events) */
  unsigned long long cpu_ns = what && strcmp(what, "exec") ? mos_os_cpu_ns() : 0;
  unsigned long long minflt = cpu_ns ? mos_os_minflt() : 0;
  pid_t pid = mos_os_getpid();
  outbuf_t o;
  o.n = 0;
  o.fd = open_report("map", pid);
  if (o.fd < 0) return;
  report_header(&o, pid, what ? what : "start", cpu_ns, minflt);
  for (int i = 0; i < MOS_NPOOLS; i++) {
    mos_pool_t *p = &mos_cfg.pool[i];
    ob_str(&o, "pool ");
    ob_str(&o, p->name);
    ob_str(&o, " ");
    ob_u64(&o, p->start);
    ob_str(&o, " ");
    ob_u64(&o, p->size);
    ob_str(&o, " ");
    ob_u64(&o, p->brk);
    ob_str(&o, " ");
    ob_u64(&o, p->fallback_bytes);
    ob_str(&o, " ");
    ob_u64(&o, p->fallback_count);
    ob_str(&o, " ");
    ob_u64(&o, p->high_water);
    ob_str(&o, "\n");
    for (int w = 0; w < p->nwin; w++) {
      ob_str(&o, "window ");
      ob_str(&o, p->name);
      ob_str(&o, " ");
      ob_u64(&o, p->win[w].offset);
      ob_str(&o, " ");
      ob_u64(&o, p->win[w].length);
      ob_str(&o, " ");
      ob_u64(&o, p->win[w].page);
      ob_str(&o, " ");
      ob_str(&o, backing_name(p->win[w].backing));
      ob_str(&o, " ");
      ob_u64(&o, p->start + p->win[w].offset);
      ob_str(&o, "\n");
    }
  }
  ob_flush(&o);
  mos_os_close(o.fd);
  if (!what || !strcmp(what, "exec")) return;
  int in = mos_os_open("/proc/self/smaps", O_RDONLY | O_CLOEXEC, 0);
  if (in < 0) return;
  o.fd = open_report("smaps", pid);
  if (o.fd >= 0) {
    ssize_t r;
    while ((r = mos_os_read(in, o.b, sizeof o.b)) > 0) {
      o.n = (size_t)r;
      ob_flush(&o);
    }
    mos_os_close(o.fd);
  }
  mos_os_close(in);
}

/* Without the exit handler (it could not be registered), the destructor writes the exit report. */
__attribute__((destructor)) static void mos_dtor(void) {
  if (!exit_handler_set) mos_report_write("exit");
}

/* ---- exported query API (not an override; found with dlsym by tests and tools) --------------------- */

/* Start and size of pool `name` ("heap", "anon", "file"); 0 on success, -1 if unknown. */
__attribute__((visibility("default"))) int xlat_mosaic_pool(const char *name, uintptr_t *start, size_t *size) {
  mos_ensure_init();
  for (int i = 0; i < MOS_NPOOLS; i++)
    if (!strcmp(name, mos_cfg.pool[i].name)) {
      *start = mos_cfg.pool[i].start;
      *size = mos_cfg.pool[i].size;
      return 0;
    }
  return -1;
}

/* Write the map and a copy of /proc/self/smaps to the report directory now (verify on demand). */
__attribute__((visibility("default"))) void xlat_mosaic_report(void) { mos_report_write("demand"); }
