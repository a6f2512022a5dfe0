/* Time per dependent random read over a region: a random cyclic pointer chain through every 64-byte
 * line of the region (Sattolo's algorithm), then timed walks along it, each load depending on the
 * previous one, so that every step pays the full translation and memory latency.
 * The region is the program's first anonymous mmap, so under the mosaic allocator it sits at
 * offset 0 of the anon pool, inside whatever window the layout puts there.
 * Usage: chase REGION_MIB STEPS REPEATS; prints "ns X" (wall time) and "cpu_ns X" (thread CPU
 * time, which leaves out time the thread was not running) per read, once per repeat. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], 0, 10) : 2048;
  long steps = argc > 2 ? atol(argv[2]) : 5000000;
  int reps = argc > 3 ? atoi(argv[3]) : 5;
  size_t bytes = mib << 20, lines = bytes / 64;
  char *region = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) { perror("mmap"); return 1; }
  uint32_t *order = malloc(lines * sizeof *order);
  if (!order) return 1;
  for (size_t i = 0; i < lines; i++) order[i] = (uint32_t)i;
  uint64_t s = 88172645463325252ull;
  for (size_t i = lines - 1; i > 0; i--) { /* Sattolo: one cycle through all lines */
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    size_t j = s % i;
    uint32_t t = order[i]; order[i] = order[j]; order[j] = t;
  }
  for (size_t i = 0; i < lines; i++)
    *(char **)(region + (size_t)order[i] * 64) = region + (size_t)order[(i + 1) % lines] * 64;
  free(order);
  char *p = region;
  for (long i = 0; i < steps; i++) p = *(char **)p; /* warm caches and TLBs */
  for (int r = 0; r < reps; r++) {
    struct timespec a, b, ca, cb;
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ca);
    for (long i = 0; i < steps; i++) p = *(char **)p;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cb);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)steps;
    double cns = ((double)(cb.tv_sec - ca.tv_sec) * 1e9 + (double)(cb.tv_nsec - ca.tv_nsec)) / (double)steps;
    printf("ns %.1f\ncpu_ns %.1f\n", ns, cns);
  }
  return p == NULL;
}
