/* os.h -- the only place the mosaic allocator talks to the kernel.
 *
 * Every call is a raw system call, never the glibc wrapper: the library interposes mmap, munmap,
 * mremap, brk and sbrk itself, so calling the wrappers here would recurse into our own overrides.
 * None of these functions allocate memory, take locks or touch errno beyond what syscall(2) does,
 * so they are safe during initialisation, inside fork handlers and inside jemalloc's hooks. */
#ifndef MOS_OS_H
#define MOS_OS_H

#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* Precondition: same as mmap(2). Returns MAP_FAILED and sets errno on failure. */
static inline void *mos_os_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
  return r == -1 ? MAP_FAILED : (void *)r;
}
/* Precondition: addr page aligned. */
static inline int mos_os_munmap(void *addr, size_t len) { return (int)syscall(SYS_munmap, addr, len); }
/* Precondition: addr aligned to the page size of the mapping (4KiB, or the hugetlb page size). */
static inline int mos_os_mprotect(void *addr, size_t len, int prot) {
  return (int)syscall(SYS_mprotect, addr, len, prot);
}
/* Precondition: addr page aligned; MADV_DONTNEED on private anonymous memory zeroes it. */
static inline int mos_os_madvise(void *addr, size_t len, int advice) {
  return (int)syscall(SYS_madvise, addr, len, advice);
}
/* Precondition: addr 4KiB aligned; vec holds one byte per 4KiB page of [addr, addr+len). */
static inline int mos_os_mincore(void *addr, size_t len, unsigned char *vec) {
  return (int)syscall(SYS_mincore, addr, len, vec);
}
static inline void *mos_os_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr) {
  long r = syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
  return r == -1 ? MAP_FAILED : (void *)r;
}
static inline ssize_t mos_os_write(int fd, const void *buf, size_t n) { return syscall(SYS_write, fd, buf, n); }
static inline ssize_t mos_os_read(int fd, void *buf, size_t n) { return syscall(SYS_read, fd, buf, n); }
static inline int mos_os_open(const char *path, int flags, int mode) {
  return (int)syscall(SYS_openat, -100 /* AT_FDCWD */, path, flags, mode);
}
static inline int mos_os_close(int fd) { return (int)syscall(SYS_close, fd); }
static inline pid_t mos_os_getpid(void) { return (pid_t)syscall(SYS_getpid); }
static inline pid_t mos_os_gettid(void) { return (pid_t)syscall(SYS_gettid); }
/* Minor page faults of the whole process so far (getrusage(RUSAGE_SELF).ru_minflt). */
static inline unsigned long long mos_os_minflt(void) {
  struct { long t[4]; long maxrss, ixrss, idrss, isrss, minflt, majflt, rest[8]; } ru;
  if (syscall(SYS_getrusage, 0 /* RUSAGE_SELF */, &ru) != 0) return 0;
  return (unsigned long long)ru.minflt;
}
/* CPU time of the whole process (all threads) so far, in ns (CLOCK_PROCESS_CPUTIME_ID). */
static inline unsigned long long mos_os_cpu_ns(void) {
  struct { long s, ns; } ts = {0, 0};
  if (syscall(SYS_clock_gettime, 2 /* CLOCK_PROCESS_CPUTIME_ID */, &ts) != 0) return 0;
  return (unsigned long long)ts.s * 1000000000ULL + (unsigned long long)ts.ns;
}
__attribute__((noreturn)) static inline void mos_os_exit(int status) { syscall(SYS_exit_group, status); __builtin_unreachable(); }

#endif
