/* Random 8-byte loads over a malloc'd table, each load's index depending on the one before (so
 * the loads do not overlap and a page walk adds its latency to every one): a small TLB-bound
 * program for the experiment's end-to-end test.  usage: gather MIB LOADS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoull(argv[1], 0, 10) : 64;
  size_t loads = argc > 2 ? strtoull(argv[2], 0, 10) : 1000000;
  size_t n = (mib << 20) / sizeof(uint64_t);
  uint64_t *t = malloc(n * sizeof *t);
  if (!t) return 1;
  for (size_t i = 0; i < n; i++) t[i] = i;
  uint64_t x = 88172645463325252ull, sum = 0, j = 0;
  for (size_t i = 0; i < loads; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
    j = (x ^ t[j]) % n;                       /* the next index needs this load's value */
    sum += j;
  }
  printf("%llu\n", (unsigned long long)sum);
  return 0;
}
