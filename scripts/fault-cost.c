/* What a page fault costs on this machine, for docs/experiment-results.md: CPU time per 4KB page of
 * 1 GiB written for the first time (one minor fault each), populated with MADV_POPULATE_WRITE (the
 * allocator's XLAT_MOSAIC_PREFAULT), and written again once resident (no fault).
 * Usage: cc -O2 -o fault-cost scripts/fault-cost.c && taskset -c 0 ./fault-cost */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static long flt(void) { struct rusage r; getrusage(RUSAGE_SELF, &r); return r.ru_minflt; }
int main(void) {
  size_t n = 1UL << 30;
  for (int mode = 0; mode < 3; mode++) {
    char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    madvise(p, n, MADV_NOHUGEPAGE);
    double t0 = cpu(); long f0 = flt();
    if (mode == 0) for (size_t i = 0; i < n; i += 4096) p[i] = 1;          /* first touch: a fault per page */
    else if (mode == 1) madvise(p, n, 23 /* MADV_POPULATE_WRITE */);
    else { for (size_t i = 0; i < n; i += 4096) p[i] = 1; t0 = cpu(); f0 = flt(); for (size_t i = 0; i < n; i += 4096) p[i] = 2; }
    double t = cpu() - t0; long f = flt() - f0;
    printf("%s: %.3f s, %ld faults, %.2f us per 4KB page\n", mode == 0 ? "touch (faults)" : mode == 1 ? "MADV_POPULATE_WRITE" : "touch resident", t, f, t / (n / 4096) * 1e6);
    munmap(p, n);
  }
  return 0;
}
