/* Malloc-heavy microbenchmark: each thread replaces random slots of a 4096-entry working set with
 * new blocks (70% 16-128 B, 25% 128 B-1 KiB, 5% 1-16 KiB), touching each block once.
 * Usage: malloc_bench THREADS OPS_PER_THREAD; prints "mops X" (million malloc+free pairs per second
 * of wall time) and "cpu_mops X" (per second of CPU time of all threads: steadier on a shared
 * machine, where wall time also counts the time other processes held the CPU). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long ops;

static void *worker(void *arg) {
  uint64_t s = 0x2545F4914F6CDD1Dull * (uint64_t)((intptr_t)arg + 1);
  void *slot[4096] = {0};
  for (long i = 0; i < ops; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    unsigned k = s % 4096, c = (s >> 16) % 100;
    size_t n = c < 70 ? 16 + (s >> 24) % 112 : c < 95 ? 128 + (s >> 24) % 896 : 1024 + (s >> 24) % 15360;
    free(slot[k]);
    char *p = malloc(n);
    p[0] = (char)i;
    slot[k] = p;
  }
  for (int k = 0; k < 4096; k++) free(slot[k]);
  return NULL;
}

int main(int argc, char **argv) {
  int nt = argc > 1 ? atoi(argv[1]) : 1;
  ops = argc > 2 ? atol(argv[2]) : 10000000;
  pthread_t t[64];
  struct timespec a, b, ca, cb;
  clock_gettime(CLOCK_MONOTONIC, &a);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
  for (intptr_t i = 0; i < nt; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < nt; i++) pthread_join(t[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &b);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
  double sec = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
  double cpu = (double)(cb.tv_sec - ca.tv_sec) + (double)(cb.tv_nsec - ca.tv_nsec) * 1e-9;
  printf("mops %.3f\ncpu_mops %.3f\n", (double)ops * nt / sec / 1e6, (double)ops * nt / cpu / 1e6);
  return 0;
}
