/* Sets its process title the way redis, nginx and postgres do (setproctitle): the environment
 * strings are copied elsewhere and the original environment block, which follows argv in memory, is
 * overwritten (here with zeros and a title).  Then it allocates and prints a checksum.  Under the
 * mosaic allocator every setting (the report directory above all) must already be copied by then.
 * Usage: env_clobber */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

int main(int argc, char **argv) {
  (void)argc;
  int n = 0;
  while (environ[n]) n++;
  char *start = argv[0], *end = n ? environ[n - 1] + strlen(environ[n - 1]) + 1 : argv[0] + strlen(argv[0]) + 1;
  char **copy = malloc((n + 1) * sizeof *copy);
  for (int i = 0; i < n; i++) copy[i] = strdup(environ[i]);
  copy[n] = NULL;
  environ = copy;
  memset(start, 0, (size_t)(end - start));
  strcpy(start, "env_clobber: title");
  unsigned long sum = 0;
  for (int i = 0; i < 64; i++) {
    unsigned char *p = malloc((size_t)1 << 20);
    memset(p, i, (size_t)1 << 20);
    sum += p[12345] + p[(1 << 20) - 1];
  }
  printf("%s %lu\n", start, sum);
  return 0;
}
