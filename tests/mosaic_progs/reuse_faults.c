/* Page faults taken when freed memory is reused, counted from getrusage(RUSAGE_SELF).ru_minflt, for
 * the three ways a program gives memory back to the allocator and takes it again: free + malloc of a
 * large block, munmap + mmap of an anonymous region, and a brk shrink + grow.  Each cycle frees a
 * region of 64 MiB that the program had written and writes it again once reallocated; the count is
 * that of the second write.  Natively (and under the mosaic allocator by default) the memory goes
 * back to the kernel (munmap, brk, jemalloc's purge with MALLOC_CONF=dirty_decay_ms:0), so the second
 * write faults every 4KB page in again; with XLAT_MOSAIC_KEEP_FREED=1 it must fault none.  Then the
 * program's own madvise(MADV_DONTNEED) on part of each region, which must read as zeros after it
 * whatever the allocator keeps.
 * Usage: reuse_faults   (prints "CYCLE faults N same-page 0|1 zero-after-dontneed 0|1") */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define LEN (64UL << 20)

static long minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

/* writes every 4KB page; returns the faults it took */
static long touch(unsigned char *p, size_t n, unsigned char v) {
  long before = minflt();
  for (size_t i = 0; i < n; i += 4096) p[i] = v;
  return minflt() - before;
}

/* the program's own DONTNEED on 1 MiB in the middle: zeros afterwards */
static int dontneed_zeroes(unsigned char *p) {
  unsigned char *q = (unsigned char *)(((uintptr_t)p + (8UL << 20)) & ~(uintptr_t)4095);
  memset(q, 0x5a, 1UL << 20);
  if (madvise(q, 1UL << 20, MADV_DONTNEED) != 0) return 0;
  for (size_t i = 0; i < (1UL << 20); i++)
    if (q[i]) return 0;
  return 1;
}

static void report(const char *cycle, long faults, void *a, void *b, unsigned char *p) {
  printf("%s faults %ld same-page %d zero-after-dontneed %d\n", cycle, faults, (uintptr_t)a >> 12 == (uintptr_t)b >> 12,
         dontneed_zeroes(p));
}

int main(void) {
  /* free + malloc (a large block: its own extent, which jemalloc reuses) */
  unsigned char *a = malloc(LEN);
  if (!a) return perror("malloc"), 1;
  touch(a, LEN, 1);
  free(a);
  unsigned char *b = malloc(LEN);
  if (!b) return perror("malloc"), 1;
  report("malloc", touch(b, LEN, 2), a, b, b);
  free(b);

  /* munmap + mmap (the anon pool's first fit hands the same range out again) */
  unsigned char *m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return perror("mmap"), 1;
  touch(m, LEN, 3);
  munmap(m, LEN);
  unsigned char *n = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (n == MAP_FAILED) return perror("mmap"), 1;
  size_t nonzero = 0; /* a fresh anonymous mapping reads as zeros, reused or not */
  for (size_t i = 0; i < LEN; i += 4096) nonzero += n[i] != 0;
  long f = touch(n, LEN, 4);
  printf("mmap nonzero-before-write %zu\n", nonzero);
  report("mmap", f, m, n, n);
  munmap(n, LEN);

  /* brk shrink + grow */
  unsigned char *s = sbrk(0);
  if (sbrk(LEN) == (void *)-1) return perror("sbrk"), 1;
  touch(s, LEN, 5);
  sbrk(-(intptr_t)LEN);
  unsigned char *t = sbrk(LEN);
  if (t == (void *)-1) return perror("sbrk"), 1;
  nonzero = 0;
  for (size_t i = 0; i < LEN; i += 4096) nonzero += t[i] != 0;
  f = touch(t, LEN, 6);
  printf("brk nonzero-before-write %zu\n", nonzero);
  report("brk", f, s, t, t);
  return 0;
}
