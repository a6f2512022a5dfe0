/* Randomised stress of the anonymous-mapping pool from several threads: mmap, partial munmap
 * (prefix, suffix, middle), mremap (grow and shrink, moving or not) and MAP_FIXED remaps, checking
 * after every step that fresh memory reads zero and that the memory still mapped keeps its
 * contents.  Prints one line per thread with the number of operations and errors (deterministic).
 * Usage: mmap_stress [THREADS] [OPS] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAXM 64
#define PG 4096

/* split: a page inside was replaced with MAP_FIXED, so the kernel holds the range as several
 * mappings and mremap would fail with EFAULT */
typedef struct { unsigned char *p; size_t len; unsigned char v; int split; } m_t;
typedef struct { int id; long ops, errors; } job_t;

static uint64_t rnd(uint64_t *s) { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return *s; }

static long check(const unsigned char *p, size_t len, unsigned char v) {
  long bad = 0;
  for (size_t o = 0; o < len; o += PG) bad += p[o] != v || p[o + PG - 1] != v;
  return bad;
}

static void *worker(void *arg) {
  job_t *j = arg;
  uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(j->id + 7);
  m_t m[MAXM] = {0};
  for (long i = 0; i < j->ops; i++) {
    int k = (int)(rnd(&s) % MAXM);
    unsigned op = rnd(&s) % 6;
    m_t *x = &m[k];
    if (!x->p) {
      size_t len = (1 + rnd(&s) % 256) * PG;
      x->p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (x->p == MAP_FAILED) { x->p = NULL; j->errors++; continue; }
      j->errors += check(x->p, len, 0);
      x->len = len;
      x->split = 0;
      x->v = (unsigned char)(1 + rnd(&s) % 250);
      memset(x->p, x->v, len);
      continue;
    }
    j->errors += check(x->p, x->len, x->v);
    size_t pages = x->len / PG;
    if (op == 0 || pages < 3 || (op >= 4 && x->split)) { munmap(x->p, x->len); x->p = NULL; continue; }
    if (op == 1) { /* drop a prefix */
      size_t cut = (1 + rnd(&s) % (pages - 1)) * PG;
      munmap(x->p, cut); x->p += cut; x->len -= cut; continue;
    }
    if (op == 2) { /* drop a suffix */
      size_t cut = (1 + rnd(&s) % (pages - 1)) * PG;
      munmap(x->p + x->len - cut, cut); x->len -= cut; continue;
    }
    if (op == 3) { /* replace a page in the middle by a fresh one (MAP_FIXED replaces atomically;
                    * munmap first would let another thread's mmap take the hole) */
      size_t at = (1 + rnd(&s) % (pages - 2)) * PG;
      void *r = mmap(x->p + at, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (r != x->p + at) { j->errors++; continue; }
      j->errors += check(r, PG, 0);
      memset(r, x->v, PG);
      x->split = 1;
      continue;
    }
    if (op == 4) { /* grow, possibly moving */
      size_t nl = x->len + (1 + rnd(&s) % 64) * PG;
      unsigned char *q = mremap(x->p, x->len, nl, MREMAP_MAYMOVE);
      if (q == MAP_FAILED) { j->errors++; continue; }
      j->errors += check(q, x->len, x->v) + check(q + x->len, nl - x->len, 0);
      memset(q + x->len, x->v, nl - x->len);
      x->p = q; x->len = nl; continue;
    }
    /* shrink in place */
    size_t nl = (1 + rnd(&s) % (pages - 1)) * PG;
    unsigned char *q = mremap(x->p, x->len, nl, 0);
    if (q != x->p) { j->errors++; continue; }
    x->len = nl;
  }
  for (int k = 0; k < MAXM; k++) if (m[k].p) { j->errors += check(m[k].p, m[k].len, m[k].v); munmap(m[k].p, m[k].len); }
  return NULL;
}

int main(int argc, char **argv) {
  int nt = argc > 1 ? atoi(argv[1]) : 4;
  long ops = argc > 2 ? atol(argv[2]) : 20000;
  pthread_t t[16];
  job_t jobs[16];
  if (nt < 1 || nt > 16) return 2;
  for (int i = 0; i < nt; i++) { jobs[i] = (job_t){i, ops, 0}; pthread_create(&t[i], NULL, worker, &jobs[i]); }
  long errors = 0;
  for (int i = 0; i < nt; i++) {
    pthread_join(t[i], NULL);
    printf("thread %d ops %ld errors %ld\n", i, jobs[i].ops, jobs[i].errors);
    errors += jobs[i].errors;
  }
  return errors != 0;
}
