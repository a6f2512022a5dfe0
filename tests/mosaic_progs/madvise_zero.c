/* What a program sees after madvise, munmap+mmap and mremap on anonymous memory, printed so that a
 * run under the mosaic allocator can be compared byte for byte with a native run (Linux semantics:
 * MADV_DONTNEED zeroes, MADV_FREE keeps data that is written again, MADV_REMOVE fails with EINVAL on
 * private anonymous memory).  Ranges cover part of a 2MB page, whole 2MB pages and a range that
 * starts and ends inside 2MB pages, in an mmap'd region and in a malloc'd block.
 * Usage: madvise_zero */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define KB 4096UL
#define MB2 (2UL << 20)

/* non-zero bytes in [p, p+n), and a checksum of the whole region */
static size_t nonzero(const unsigned char *p, size_t n) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += p[i] != 0;
  return c;
}
static uint64_t sum(const unsigned char *p, size_t n) {
  uint64_t s = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i += 64) s = (s ^ p[i] ^ ((uint64_t)p[i + 63] << 8)) * 1099511628211ULL;
  return s;
}
static void fill(unsigned char *p, size_t n, unsigned char v) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(v + i % 251);
}

/* DONTNEED on three ranges of a region of `len` bytes at p (2MB aligned or not) */
static void dontneed_cases(const char *what, unsigned char *p, size_t len) {
  struct { const char *name; size_t off, n; } c[] = {
      {"part-of-2MB", 8 * KB, 16 * KB},
      {"whole-2MB", 2 * MB2, 2 * MB2},
      {"straddling", 5 * MB2 - 12 * KB, MB2 + 20 * KB},
  };
  fill(p, len, 7);
  for (int i = 0; i < 3; i++) {
    int r = madvise(p + c[i].off, c[i].n, MADV_DONTNEED);
    printf("%s dontneed %s rc %d nonzero-after %zu\n", what, c[i].name, r, nonzero(p + c[i].off, c[i].n));
  }
  /* the rest keeps its data; the zeroed parts are usable again */
  printf("%s rest-sum %016llx\n", what, (unsigned long long)sum(p, len));
  fill(p + 8 * KB, 16 * KB, 3);
  printf("%s rewritten-sum %016llx\n", what, (unsigned long long)sum(p, len));
}

int main(void) {
  size_t len = 16 * MB2;
  unsigned char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return perror("mmap"), 1;
  dontneed_cases("mmap", m, len);
  int r;

  /* DONTNEED on memory the program made PROT_NONE (a runtime decommitting it): zero afterwards */
  unsigned char *g = (unsigned char *)(((uintptr_t)m + 8 * MB2 + MB2 - 1) & ~(MB2 - 1));
  memset(g, 0x33, MB2);
  int pr = mprotect(g, MB2, PROT_NONE);
  r = madvise(g, MB2, MADV_DONTNEED);
  pr |= mprotect(g, MB2, PROT_READ | PROT_WRITE);
  printf("prot-none dontneed rc %d mprotect %d nonzero-after %zu\n", r, pr, nonzero(g, MB2));

  /* MADV_FREE: data written afterwards is kept */
  r = madvise(m, 4 * MB2, MADV_FREE);
  memset(m, 0x5a, 4 * MB2);
  size_t lost = 0;
  for (size_t i = 0; i < 4 * MB2; i++) lost += m[i] != 0x5a;
  printf("free rc %d rewritten-bytes-lost %zu\n", r, lost);
  /* MADV_REMOVE: EINVAL on private anonymous memory */
  errno = 0;
  r = madvise(m, MB2, MADV_REMOVE);
  printf("remove rc %d errno %s data-kept %d\n", r, errno == EINVAL ? "EINVAL" : strerror(errno), m[100] == 0x5a);
  /* unaligned address: EINVAL */
  errno = 0;
  r = madvise(m + 1, KB, MADV_DONTNEED);
  printf("unaligned rc %d errno %s\n", r, errno == EINVAL ? "EINVAL" : strerror(errno));

  /* unmap, map again: the first-fit pool hands the same range back, and it must read zero */
  fill(m, len, 9);
  munmap(m, len);
  unsigned char *m2 = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  printf("remap nonzero %zu\n", nonzero(m2, len));
  /* mremap: grow keeps the data, the new tail reads zero */
  fill(m2, len, 11);
  uint64_t before = sum(m2, len);
  unsigned char *m3 = mremap(m2, len, 2 * len, MREMAP_MAYMOVE);
  printf("mremap same-data %d tail-nonzero %zu\n", sum(m3, len) == before, nonzero(m3 + len, len));
  munmap(m3, 2 * len);

  /* a malloc'd block (the heap pool): DONTNEED on its page-aligned part */
  unsigned char *h = malloc(16 * MB2 + MB2);
  unsigned char *ha = (unsigned char *)(((uintptr_t)h + MB2 - 1) & ~(MB2 - 1));
  dontneed_cases("malloc", ha, 16 * MB2);
  /* and freed, reused memory reads what was written, never stale data where it was zeroed */
  free(h);
  unsigned char *z = calloc(1, 8 * MB2);
  printf("calloc nonzero %zu\n", nonzero(z, 8 * MB2));
  free(z);
  return 0;
}
