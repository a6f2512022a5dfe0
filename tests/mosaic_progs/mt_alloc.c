/* Multi-threaded, malloc-heavy workload with deterministic output: every thread runs its own
 * pseudo-random sequence of malloc/calloc/realloc/posix_memalign/free and direct mmap/munmap,
 * checks that every block still holds what was written into it, and prints a checksum that does
 * not depend on addresses, so the output is byte-identical under any allocator or layout.
 * Usage: mt_alloc [THREADS] [ITERATIONS] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SLOTS 2048

typedef struct {
  int id;
  long iters;
  uint64_t checksum;
  long errors;
} job_t;

static uint64_t next(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  return *s = x;
}

static size_t pick_size(uint64_t r) {
  unsigned k = r % 1000;
  if (k < 800) return 8 + (r >> 10) % 248;
  if (k < 950) return 256 + (r >> 10) % 8000;
  if (k < 998) return 8192 + (r >> 10) % 120000;
  return (1 << 20) + (r >> 10) % (3 << 20);
}

static void *worker(void *arg) {
  job_t *j = arg;
  uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(j->id + 1);
  unsigned char *ptr[SLOTS] = {0};
  size_t len[SLOTS] = {0};
  unsigned char val[SLOTS] = {0};
  for (long i = 0; i < j->iters; i++) {
    uint64_t r = next(&s);
    int k = (int)(r % SLOTS);
    if (ptr[k]) {
      /* check the block's first, middle and last byte */
      size_t n = len[k];
      if (ptr[k][0] != val[k] || ptr[k][n / 2] != val[k] || ptr[k][n - 1] != val[k]) j->errors++;
      j->checksum += n * 31 + val[k];
      if ((r >> 32) % 4 == 0) { /* grow or shrink, contents must survive */
        size_t nn = pick_size(next(&s));
        unsigned char *q = realloc(ptr[k], nn);
        if (!q) { j->errors++; continue; }
        size_t keep = nn < n ? nn : n;
        if (q[0] != val[k] || q[keep - 1] != val[k]) j->errors++;
        memset(q, val[k], nn);
        ptr[k] = q, len[k] = nn;
      } else {
        free(ptr[k]);
        ptr[k] = NULL;
      }
      continue;
    }
    size_t n = pick_size(r);
    unsigned kind = (r >> 40) % 16;
    unsigned char *p;
    if (kind == 0) {
      p = calloc(1, n);
      if (p && (p[0] | p[n / 2] | p[n - 1])) j->errors++; /* calloc must zero */
    } else if (kind == 1) {
      void *q = NULL;
      if (posix_memalign(&q, 4096, n) || ((uintptr_t)q & 4095)) j->errors++;
      p = q;
    } else {
      p = malloc(n);
    }
    if (!p) { j->errors++; continue; }
    val[k] = (unsigned char)(r >> 48) | 1;
    memset(p, val[k], n);
    ptr[k] = p, len[k] = n;
    if (i % 20000 == 0) { /* a direct anonymous mapping, as some programs make */
      size_t m = (size_t)(1 + (r >> 20) % 16) << 20;
      unsigned char *a = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (a == MAP_FAILED) { j->errors++; continue; }
      if (a[0] || a[m - 1]) j->errors++; /* fresh mappings are zero */
      memset(a, 7, m);
      j->checksum += a[m / 3] + m;
      munmap(a, m);
    }
  }
  for (int k = 0; k < SLOTS; k++) free(ptr[k]);
  return NULL;
}

int main(int argc, char **argv) {
  int nt = argc > 1 ? atoi(argv[1]) : 4;
  long iters = argc > 2 ? atol(argv[2]) : 300000;
  pthread_t t[64];
  job_t jobs[64];
  if (nt < 1 || nt > 64) return 2;
  for (int i = 0; i < nt; i++) {
    jobs[i] = (job_t){.id = i, .iters = iters};
    pthread_create(&t[i], NULL, worker, &jobs[i]);
  }
  long errors = 0;
  for (int i = 0; i < nt; i++) {
    pthread_join(t[i], NULL);
    printf("thread %d checksum %llu errors %ld\n", i, (unsigned long long)jobs[i].checksum, jobs[i].errors);
    errors += jobs[i].errors;
  }
  printf("total errors %ld\n", errors);
  return errors != 0;
}
