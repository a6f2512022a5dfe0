/* Checks, from inside a program run under libxlat_mosaic.so, that memory really comes from the
 * pools (as mimalloc's tests assert memory came from its own regions), including after fork, in
 * threads and in an exec'd image.  Prints "ok NAME" or "FAIL NAME: why" per check; exits 1 on any
 * failure.  Usage: probe [check|rss|exec-child] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*pool_fn)(const char *, uintptr_t *, size_t *);
static uintptr_t ps[3];
static size_t pz[3];
static int failures;
enum { HEAP, ANON, FILEP };

#define CHECK(name, cond, why)                                      \
  do {                                                              \
    if (cond) printf("ok %s\n", name);                              \
    else { printf("FAIL %s: %s\n", name, why); failures++; }        \
  } while (0)

static int in_pool(int k, const void *p, size_t n) {
  uintptr_t a = (uintptr_t)p;
  return a >= ps[k] && a + n <= ps[k] + pz[k];
}

static int load_pools(void) {
  pool_fn f = (pool_fn)dlsym(RTLD_DEFAULT, "xlat_mosaic_pool");
  if (!f) return -1;
  const char *names[3] = {"heap", "anon", "file"};
  for (int i = 0; i < 3; i++)
    if (f(names[i], &ps[i], &pz[i])) return -1;
  return 0;
}

static void *thread_alloc(void *arg) {
  (void)arg;
  void *small = malloc(1000), *big = malloc(10 << 20);
  memset(big, 1, 10 << 20);
  long ok = in_pool(HEAP, small, 1000) && in_pool(HEAP, big, 10 << 20);
  free(small), free(big);
  return (void *)ok;
}

static long rss_kb(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) v = atol(line + 6);
  if (f) fclose(f);
  return v;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "check";
  if (load_pools()) {
    printf("FAIL pools: libxlat_mosaic.so is not loaded\n");
    return 1;
  }
  if (!strcmp(mode, "exec-child")) {
    void *p = malloc(4096);
    CHECK("exec-child-heap", in_pool(HEAP, p, 4096), "malloc in an exec'd image is outside the heap pool");
    return failures != 0;
  }
  if (!strcmp(mode, "rss")) {
    /* a huge reservation exists, but only what is touched may be resident */
    char *p = malloc(1 << 30);
    memset(p, 1, 16 << 20);
    long r = rss_kb();
    printf("rss_kb %ld heap_pool_gib %zu anon_pool_gib %zu\n", r, pz[HEAP] >> 30, pz[ANON] >> 30);
    return 0;
  }

  size_t sizes[] = {16, 100000, 64u << 20};
  for (int i = 0; i < 3; i++) {
    char *p = malloc(sizes[i]);
    char name[64];
    snprintf(name, sizeof name, "malloc-%zu-in-heap", sizes[i]);
    CHECK(name, p && in_pool(HEAP, p, sizes[i]), "malloc returned memory outside the heap pool");
    free(p);
  }
  unsigned char *z = calloc(1 << 20, 4);
  int zero = 1;
  for (size_t i = 0; i < (4u << 20); i += 4093) zero &= z[i] == 0;
  CHECK("calloc-zero-in-heap", z && zero && in_pool(HEAP, z, 4 << 20), "calloc memory not zero or not in heap");
  free(z);

  void *al = NULL;
  CHECK("posix_memalign-2MiB", !posix_memalign(&al, 2 << 20, 3 << 20) && !((uintptr_t)al & ((2 << 20) - 1)) &&
                                   in_pool(HEAP, al, 3 << 20), "bad alignment or outside heap");
  free(al);
  void *aa = aligned_alloc(4096, 8192), *va = valloc(100), *pv = pvalloc(5000), *ma = memalign(64, 100);
  CHECK("aligned-family", !((uintptr_t)aa & 4095) && !((uintptr_t)va & 4095) && !((uintptr_t)pv & 4095) &&
                              !((uintptr_t)ma & 63) && malloc_usable_size(pv) >= 8192 && malloc_usable_size(ma) >= 100,
        "aligned_alloc/valloc/pvalloc/memalign/malloc_usable_size misbehave");
  free(aa), free(va), free(pv), free(ma);

  pthread_t t[4];
  long tok = 1;
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, thread_alloc, NULL);
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(t[i], &r);
    tok &= (long)r;
  }
  CHECK("threads-heap", tok, "a thread's malloc returned memory outside the heap pool");

  size_t m = 8 << 20;
  unsigned char *a = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK("mmap-anon-in-pool", a != MAP_FAILED && in_pool(ANON, a, m), "anonymous mmap outside the anon pool");
  memset(a, 0xAB, m);
  munmap(a, m);
  unsigned char *b = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int bz = 1;
  for (size_t i = 0; i < m; i += 4096) bz &= b[i] == 0 && b[i + 4095] == 0;
  CHECK("mmap-anon-first-fit-reuse-zeroed", b == a && bz, "freed range not reused first-fit, or not zeroed");
  unsigned char *c = mremap(b, m, 2 * m, MREMAP_MAYMOVE);
  memset(b == c ? c : c, 0, 0);
  CHECK("mremap-grow", c != MAP_FAILED && in_pool(ANON, c, 2 * m) && c[m + 5] == 0, "mremap grow failed");
  munmap(c, 2 * m);
  void *ro = mmap(NULL, 1 << 20, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK("mmap-anon-readonly", ro != MAP_FAILED && ((unsigned char *)ro)[100] == 0, "read-only mapping failed");
  munmap(ro, 1 << 20);

  /* MAP_FIXED over memory the program got from the anon pool: anonymous (fresh, zeroed) and a file */
  unsigned char *r4 = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(r4, 0x5A, 4 << 20);
  unsigned char *fx = mmap(r4 + (1 << 20), 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  int fz = fx == r4 + (1 << 20);
  for (size_t i = 0; fz && i < (1u << 20); i += 4096) fz &= fx[i] == 0;
  CHECK("mmap-fixed-anon-in-pool", fz && r4[0] == 0x5A && r4[2 << 20] == 0x5A && in_pool(ANON, fx, 1 << 20),
        "MAP_FIXED anonymous mapping inside the pool is not fresh zeroed memory");
  int efd = open(argv[0], O_RDONLY);
  unsigned char fhead[16];
  ssize_t fgot = read(efd, fhead, sizeof fhead);
  /* over whole 2MB pages: inside a hugetlb window, as for any hugetlb memory, the kernel replaces
   * only whole huge pages */
  unsigned char *r8 = mmap(NULL, 8 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  unsigned char *at = (unsigned char *)(((uintptr_t)r8 + (2 << 20) - 1) & ~(uintptr_t)((2 << 20) - 1));
  unsigned char *ff = mmap(at, 2 << 20, PROT_READ, MAP_PRIVATE | MAP_FIXED, efd, 0);
  CHECK("mmap-fixed-file-over-pool", ff == at && fgot == 16 && !memcmp(ff, fhead, 16),
        "MAP_FIXED file mapping over pool memory failed");
  close(efd);
  munmap(r8, 8 << 20);
  munmap(r4, 4 << 20);
  int *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  *shared = 0;
  if (fork() == 0) {
    *shared = 42;
    _exit(0);
  }
  wait(NULL);
  CHECK("mmap-shared-anon-stays-shared", *shared == 42 && !in_pool(ANON, shared, 4096),
        "a shared anonymous mapping was not shared with the child");
  munmap(shared, 4096);

  int fd = open(argv[0], O_RDONLY);
  char head[64];
  ssize_t got = read(fd, head, sizeof head);
  char *fm = mmap(NULL, 65536, PROT_READ, MAP_PRIVATE, fd, 0);
  CHECK("mmap-file-in-pool", fm != MAP_FAILED && in_pool(FILEP, fm, 65536) && got == 64 && !memcmp(fm, head, 64),
        "file mapping outside the file pool or wrong contents");
  munmap(fm, 65536);
  close(fd);

  char *b0 = sbrk(0);
  char *b1 = sbrk(1 << 20);
  memset(b1, 3, 1 << 20);
  char *b2 = sbrk(0);
  CHECK("sbrk-in-heap", in_pool(HEAP, b0, 1) && b1 == b0 && b2 == b0 + (1 << 20), "sbrk does not move the heap pool's break");
  sbrk(-(1 << 20));

  pid_t pid = fork();
  if (pid == 0) {
    char *p = malloc(1 << 20);
    memset(p, 9, 1 << 20);
    void *q = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    _exit(in_pool(HEAP, p, 1 << 20) && in_pool(ANON, q, 1 << 20) ? 0 : 1);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  char why[128];
  snprintf(why, sizeof why, "a forked child allocated outside its pools (exit %d, signal %d)",
           WIFEXITED(st) ? WEXITSTATUS(st) : -1, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  CHECK("fork-child-uses-pools", WIFEXITED(st) && WEXITSTATUS(st) == 0, why);

  fflush(stdout);
  pid = fork();
  if (pid == 0) {
    execl("/proc/self/exe", argv[0], "exec-child", (char *)NULL);
    _exit(2);
  }
  waitpid(pid, &st, 0);
  CHECK("exec-gets-fresh-pools", WIFEXITED(st) && WEXITSTATUS(st) == 0, "an exec'd image did not get the preload");
  return failures != 0;
}
