/* Blocks grown and shrunk by realloc across the 1 MiB line where the mosaic allocator keeps them at
 * page granularity (native/mosaic/big.c), with their contents checked at every step, printed so
 * that a run under the allocator can be compared byte for byte with a native run:
 *   one block grown by 1/16 at a time to 64 MiB (in place at the heap's top);
 *   two blocks grown in turn (neither can stay at the top: they move, and leave holes);
 *   a block shrunk back below 1 MiB, and realloc(p, 0);
 *   calloc and malloc after the holes exist (calloc must read zeros, whatever the holes held);
 *   two threads growing their own blocks at once.
 * Usage: realloc_big   (prints one line per check; "FAIL" never appears in a good run) */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;

static unsigned char pat(uint64_t seed, size_t i) { return (unsigned char)((i * 2654435761u + seed) >> 7); }
static void fill(unsigned char *p, size_t from, size_t to, uint64_t seed) {
  for (size_t i = from; i < to; i++) p[i] = pat(seed, i);
}
/* wrong bytes among every 509th (a prime, so every page is sampled at shifting offsets) and the last 64 */
static size_t bad_bytes(const unsigned char *p, size_t n, uint64_t seed) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i += 509) bad += p[i] != pat(seed, i);
  for (size_t i = n > 64 ? n - 64 : 0; i < n; i++) bad += p[i] != pat(seed, i);
  return bad;
}
static void check(const char *what, int ok) {
  if (!ok) fails++;
  printf("%s %s\n", what, ok ? "ok" : "FAIL");
}

/* grow by 1/16 (as Python's array does) from 1 KiB to `to` bytes, checking the kept prefix */
static unsigned char *grow(unsigned char *p, size_t *n, size_t to, uint64_t seed, size_t *bad) {
  while (*n < to) {
    size_t m = *n + *n / 16 + 64;
    if (m > to) m = to;
    p = realloc(p, m);
    if (!p) return NULL;
    *bad += bad_bytes(p, *n, seed);
    fill(p, *n, m, seed);
    *n = m;
  }
  return p;
}

static void *thread_grow(void *arg) {
  uint64_t seed = (uint64_t)(uintptr_t)arg;
  size_t n = 1024, bad = 0;
  unsigned char *p = malloc(n);
  fill(p, 0, n, seed);
  p = grow(p, &n, 24u << 20, seed, &bad);
  bad += p ? bad_bytes(p, n, seed) : 1;
  free(p);
  return (void *)(uintptr_t)bad;
}

int main(void) {
  /* one block to 64 MiB */
  size_t n = 1024, bad = 0;
  unsigned char *a = malloc(n);
  fill(a, 0, n, 1);
  a = grow(a, &n, 64u << 20, 1, &bad);
  check("grow-64MiB contents", a && bad == 0 && bad_bytes(a, n, 1) == 0);
  check("grow-64MiB usable-size", malloc_usable_size(a) >= n);

  /* two blocks in turn */
  size_t nb = 1024, nc = 1024;
  unsigned char *b = malloc(nb), *c = malloc(nc);
  fill(b, 0, nb, 2);
  fill(c, 0, nc, 3);
  size_t badb = 0, badc = 0;
  for (size_t to = 2u << 20; to <= (32u << 20); to += 3u << 20) {
    b = grow(b, &nb, to, 2, &badb);
    c = grow(c, &nc, to + (1u << 20), 3, &badc);
  }
  check("two-blocks contents", b && c && badb == 0 && badc == 0 && !bad_bytes(b, nb, 2) && !bad_bytes(c, nc, 3));

  /* shrink below 1 MiB, then to nothing */
  a = realloc(a, 300000);
  check("shrink-below-1MiB contents", a && bad_bytes(a, 300000, 1) == 0);
  b = realloc(b, 8u << 20);
  check("shrink-to-8MiB contents", b && bad_bytes(b, 8u << 20, 2) == 0);
  free(a);

  /* holes now lie below the top: calloc reads zeros, malloc'd memory is writable */
  free(c);
  size_t zeros_bad = 0;
  for (int i = 0; i < 64; i++) {
    size_t m = (size_t)(i + 1) * 65536;
    unsigned char *z = calloc(1, m);
    if (!z) { zeros_bad++; continue; }
    for (size_t j = 0; j < m; j++) zeros_bad += z[j] != 0;
    memset(z, 0xee, m);
    free(z);
  }
  check("calloc-after-holes zeros", zeros_bad == 0);
  unsigned char *big = calloc(1, 40u << 20);
  size_t nz = 0;
  for (size_t j = 0; big && j < (40u << 20); j += 4096) nz += big[j] != 0;
  check("calloc-40MiB zeros", big && nz == 0);
  free(big);
  void *r0 = realloc(b, 0); /* frees b; glibc and jemalloc both return NULL */
  printf("realloc-to-0 %s\n", r0 ? "non-null" : "null");
  free(r0);

  /* two threads */
  pthread_t t[2];
  for (uintptr_t i = 0; i < 2; i++) pthread_create(&t[i], NULL, thread_grow, (void *)(i + 10));
  size_t tbad = 0;
  for (int i = 0; i < 2; i++) {
    void *r;
    pthread_join(t[i], &r);
    tbad += (size_t)(uintptr_t)r;
  }
  check("threads contents", tbad == 0);
  printf("%s\n", fails ? "FAILED" : "all ok");
  return fails != 0;
}
