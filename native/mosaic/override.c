/* override.c -- the standard names, and nothing else: each forwards to a mos_ function.
 *
 * glibc 2.36 has no __morecore hook, so the whole malloc family is replaced (glibc documents which
 * functions a replacement must provide: "Replacing malloc" in the glibc manual).  The system-call
 * wrappers are interposed for programs that call them directly; glibc's own internal calls (thread
 * stacks, ld.so, posix_spawn's exec) use hidden aliases and still reach the kernel, as they did with
 * Mosalloc. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mosaic.h"
#include "os.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT void *malloc(size_t n) {
  mos_ensure_init();
  return mos_je_malloc(n);
}
EXPORT void free(void *p) {
  if (!p) return;
  if (__builtin_expect(mos_big_live != 0, 0) && mos_big_free(p)) return; /* a realloc-grown block (big.c) */
  mos_je_free(p);
}
EXPORT void *calloc(size_t n, size_t s) {
  mos_ensure_init();
  return mos_je_calloc(n, s);
}
EXPORT void *realloc(void *p, size_t n) {
  mos_ensure_init();
  /* growth to 1 MiB or more, and any resize while realloc-grown blocks live: big.c */
  if (p && (n >= MOS_BIG_MIN || mos_big_live)) return mos_big_realloc(p, n);
  return mos_je_realloc(p, n);
}
EXPORT void *reallocarray(void *p, size_t n, size_t s) {
  size_t t;
  if (__builtin_mul_overflow(n, s, &t)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc(p, t);
}
EXPORT int posix_memalign(void **out, size_t align, size_t n) {
  mos_ensure_init();
  return mos_je_posix_memalign(out, align, n);
}
EXPORT void *aligned_alloc(size_t align, size_t n) {
  mos_ensure_init();
  return mos_je_aligned_alloc(align, n);
}
EXPORT void *memalign(size_t align, size_t n) {
  mos_ensure_init();
  return mos_je_memalign(align, n);
}
EXPORT void *valloc(size_t n) {
  mos_ensure_init();
  return mos_je_valloc(n);
}
EXPORT void *pvalloc(size_t n) {
  /* glibc semantics: round up to a whole page; pvalloc(0) gives one page */
  size_t r = (n + MOS_PAGE_4K - 1) & ~(MOS_PAGE_4K - 1);
  if (r < n) {
    errno = ENOMEM;
    return NULL;
  }
  mos_ensure_init();
  return mos_je_memalign(MOS_PAGE_4K, r ? r : MOS_PAGE_4K);
}
EXPORT size_t malloc_usable_size(void *p) {
  if (!p) return 0;
  size_t big = mos_big_usable(p);
  return big ? big : mos_je_malloc_usable_size(p);
}

/* ---- system calls ------------------------------------------------------------------------------- */

/* While this thread initialises the library, mappings are jemalloc's bootstrap (core.c). */
EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  mos_ensure_init();
  if (mos_state != 2) return mos_mmap_bootstrap(addr, len, prot, flags, fd, off);
  return mos_mmap(addr, len, prot, flags, fd, off);
}
EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  return mmap(addr, len, prot, flags, fd, off);
}
EXPORT int munmap(void *addr, size_t len) {
  mos_ensure_init();
  if (!mos_pools_ready) return mos_os_munmap(addr, len);
  return mos_munmap(addr, len);
}
EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...) {
  void *new_addr = NULL;
  if (flags & MREMAP_FIXED) {
    __builtin_va_list ap;
    __builtin_va_start(ap, flags);
    new_addr = __builtin_va_arg(ap, void *);
    __builtin_va_end(ap);
  }
  mos_ensure_init();
  if (!mos_pools_ready) return mos_os_mremap(old, old_len, new_len, flags, new_addr);
  return mos_mremap(old, old_len, new_len, flags, new_addr);
}
EXPORT void *sbrk(intptr_t inc) {
  mos_ensure_init();
  if (!mos_pools_ready) {
    errno = ENOMEM;
    return (void *)-1;
  }
  return mos_sbrk(inc);
}
EXPORT void *__sbrk(intptr_t inc) { return sbrk(inc); }
EXPORT int brk(void *addr) {
  mos_ensure_init();
  if (!mos_pools_ready) {
    errno = ENOMEM;
    return -1;
  }
  return mos_brk(addr);
}

/* DONTNEED, FREE, REMOVE and THP advice on pool memory are emulated (pool.c, mos_madvise). */
EXPORT int madvise(void *addr, size_t len, int advice) {
  if (!mos_pools_ready) return mos_os_madvise(addr, len, advice);
  return mos_madvise(addr, len, advice);
}

/* ---- exec ---------------------------------------------------------------------------------------- */

/* Before the image is replaced, the report directory learns that this process exec'd (event
 * "exec"): a program that does not load the library (static, or run with a cleared environment as
 * by `env -i`) then shows up as such in `xlat run --verify`, not as a process that vanished.  If
 * the exec fails, the map says "start" again.  The exec itself is the kernel's (execve, execv) or
 * glibc's own (the path searches of execvp and execvpe, looked up once with dlsym). */
extern char **environ;

static int exec_done(int r) {
  int e = errno;
  mos_report_write(NULL);
  errno = e;
  return r;
}
EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  mos_report_exec(path);
  return exec_done((int)syscall(SYS_execve, path, argv, envp));
}
EXPORT int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

typedef int (*execvpe_fn)(const char *, char *const[], char *const[]);
static execvpe_fn real_execvpe(void) {
  static execvpe_fn f;
  if (!f) f = (execvpe_fn)dlsym(RTLD_NEXT, "execvpe");
  return f;
}
EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  execvpe_fn f = real_execvpe();
  if (!f) {
    errno = ENOSYS;
    return -1;
  }
  mos_report_exec(file);
  return exec_done(f(file, argv, envp));
}
/* resolved while the process starts, not in a vfork child */
__attribute__((constructor)) static void resolve_exec(void) { real_execvpe(); }
EXPORT int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

/* execl, execlp, execle: the argument list as an array on the stack, as glibc does */
#define COLLECT_ARGS(arg0, ap, argv, extra)                                   \
  size_t n_ = 1;                                                              \
  va_start(ap, arg0);                                                         \
  while (va_arg(ap, char *)) n_++;                                            \
  va_end(ap);                                                                 \
  char *argv[n_ + 1];                                                         \
  argv[0] = (char *)(arg0);                                                   \
  va_start(ap, arg0);                                                         \
  for (size_t i_ = 1; i_ <= n_; i_++) argv[i_] = va_arg(ap, char *);          \
  extra;                                                                      \
  va_end(ap)

EXPORT int execl(const char *path, const char *arg, ...) {
  va_list ap;
  COLLECT_ARGS(arg, ap, argv, (void)0);
  return execve(path, argv, environ);
}
EXPORT int execlp(const char *file, const char *arg, ...) {
  va_list ap;
  COLLECT_ARGS(arg, ap, argv, (void)0);
  return execvpe(file, argv, environ);
}
EXPORT int execle(const char *path, const char *arg, ...) {
  va_list ap;
  char **envp;
  COLLECT_ARGS(arg, ap, argv, envp = va_arg(ap, char **));
  return execve(path, argv, envp);
}

/* ---- process exit ----------------------------------------------------------------------------------- */

/* Programs that end with _exit (shells such as dash do) skip destructors; the exit report (the smaps
 * snapshot behind `xlat run --verify`) is written here for them. */
EXPORT void _exit(int status) {
  mos_exit_status = status & 0xff;
  mos_report_write("exit");
  mos_os_exit(status);
}
EXPORT void _Exit(int status) { _exit(status); }
