/*
 * xlat_trace_plugin: a QEMU TCG plugin (linux-user, x86_64 guests) that records what a program
 * does to its address space: loads and stores (and optionally instruction fetches) with their
 * virtual address, size and per-thread instruction count, plus the syscalls that shape the
 * address space (mmap, munmap, brk, mremap, madvise, shmat, shmdt, exit).
 *
 * The plugin only emits data. Each thread appends fixed-size records to its own buffer (no lock
 * on the per-access path) and, when the buffer fills or the thread makes a syscall that ends it,
 * writes the buffer as one chunk tagged with its thread id to the process's output: a Unix
 * socket (sock=PATH; xlat's recorder accepts one connection per process) or a file (out=PATH; QEMU itself takes file= for the plugin path).
 * A forked child opens its own connection (or PATH.<pid>) so each process gets its own stream.
 * The stream layout is documented in docs/tracing.md; crates/xlat-trace/src/import/qemu.rs reads
 * it.
 *
 * Arguments (key=value): sock=PATH | out=PATH (one is required), skip=N (instructions of the
 * process's first thread to run before recording accesses), ifetch=on|off.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* --- the raw stream (keep in sync with crates/xlat-trace/src/import/qemu.rs) -------------- */

#define STREAM_MAGIC "XLATQRW1"
#define STREAM_VERSION 1
#define CHUNK_MAGIC 0x4b4e4843u /* "CHNK" little-endian */
#define FLAG_IFETCH 1u

#define KIND_LOAD 0
#define KIND_STORE 1
#define KIND_IFETCH 2
#define KIND_SIDE 3

/* xlat's SyscallKind numbering (crates/xlat-trace/src/event.rs). */
enum { XS_MMAP, XS_MUNMAP, XS_BRK, XS_MREMAP, XS_MADVISE, XS_SHMAT, XS_SHMDT, XS_EXIT };

struct hello {
    char magic[8];
    uint32_t version;
    uint32_t flags;
    uint32_t pid;
    uint32_t ppid;
    uint64_t skip;
};

struct chunk_head {
    uint32_t magic;
    uint32_t tid;
    uint32_t nrec;
    uint32_t reserved;
};

/* One access: meta = icount << 8 | (size - 1) << 2 | kind. A side event (kind 3) has the xlat
 * syscall kind in addr and is followed by SIDE_SLOTS records holding args[6], ret and a zero. */
struct rec {
    uint64_t addr;
    uint64_t meta;
};
#define SIDE_SLOTS 4

#define BUF_RECORDS (1u << 16) /* 1 MiB per thread: large writes, few syscalls */

/* --- per-thread state ------------------------------------------------------------------- */

struct tstate {
    struct rec *cur, *end;
    /* Instructions this thread executed up to the end of the current translation block, and
     * up to its start (an access by the TB's instruction i gets tb_base + i + 1). */
    uint64_t icount, tb_base;
    uint32_t tid;
    bool main_thread;
    int64_t pending_nr; /* syscall seen at entry whose result we still need, or -1 */
    uint64_t pending[6];
    struct rec *buf;
    struct tstate *next;
};

/* Initial-exec TLS: one %fs-relative load per callback, no lookup by vCPU index (which QEMU
 * reuses across threads) and no lock. */
static __thread struct tstate *me __attribute__((tls_model("initial-exec")));

/* --- global state ----------------------------------------------------------------------- */

static qemu_plugin_id_t g_id;
static const char *g_sock_path, *g_file_path;
static uint64_t g_skip;
static bool g_ifetch;
static volatile int g_recording; /* accesses are recorded (skip done and output alive) */
static volatile int g_dead;      /* the output failed: record nothing more */
static int g_fd = -1;
static bool g_is_sock;
static pid_t g_pid;
static bool g_is_root = true; /* the first traced process, not a forked child */
static pthread_mutex_t g_out_lock = PTHREAD_MUTEX_INITIALIZER;  /* whole chunks, in order */
static pthread_mutex_t g_list_lock = PTHREAD_MUTEX_INITIALIZER; /* the thread list */
static struct tstate *g_threads;

static void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void warn(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "xlat_trace_plugin[%d]: %s\n", (int)getpid(), msg);
}

static int write_all(const struct iovec *iov_in, int n)
{
    struct iovec iov[4];
    memcpy(iov, iov_in, n * sizeof *iov);
    struct iovec *v = iov;
    while (n > 0) {
        ssize_t w;
        if (g_is_sock) {
            struct msghdr m = { .msg_iov = v, .msg_iovlen = n };
            /* MSG_NOSIGNAL: if the recorder went away, fail with EPIPE instead of killing the
             * traced program with SIGPIPE. */
            w = sendmsg(g_fd, &m, MSG_NOSIGNAL);
        } else {
            w = writev(g_fd, v, n);
        }
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        while (n > 0 && (size_t)w >= v->iov_len) {
            w -= v->iov_len;
            v++;
            n--;
        }
        if (n > 0) {
            v->iov_base = (char *)v->iov_base + w;
            v->iov_len -= w;
        }
    }
    return 0;
}

static void output_failed(void)
{
    if (!g_dead) {
        int e = errno;
        g_dead = 1;
        g_recording = 0;
        /* EPIPE/ECONNRESET: the recorder closed the stream on purpose (e.g. --max reached). */
        if (e != EPIPE && e != ECONNRESET) {
            warn("writing the trace stream failed (%s); recording stops", strerror(e));
        }
    }
}

static int open_output(void)
{
    char path[4096];
    if (g_sock_path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(g_sock_path) >= sizeof sa.sun_path) {
            warn("socket path too long: %s", g_sock_path);
            return -1;
        }
        strcpy(sa.sun_path, g_sock_path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
            warn("cannot connect to the recorder at %s: %s", g_sock_path, strerror(errno));
            if (fd >= 0) {
                close(fd);
            }
            return -1;
        }
        g_fd = fd;
        g_is_sock = true;
    } else {
        /* The first process writes PATH, a forked child PATH.<pid>. */
        if (g_is_root) {
            snprintf(path, sizeof path, "%s", g_file_path);
        } else {
            snprintf(path, sizeof path, "%s.%d", g_file_path, (int)getpid());
        }
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            warn("cannot open %s: %s", path, strerror(errno));
            return -1;
        }
        g_fd = fd;
        g_is_sock = false;
    }
    struct hello h = { .version = STREAM_VERSION, .flags = g_ifetch ? FLAG_IFETCH : 0,
                       .pid = (uint32_t)getpid(), .ppid = (uint32_t)getppid(), .skip = g_skip };
    memcpy(h.magic, STREAM_MAGIC, 8);
    struct iovec iov = { &h, sizeof h };
    if (write_all(&iov, 1) < 0) {
        output_failed();
        return -1;
    }
    return 0;
}

static void become_child(struct tstate *t);

static void flush(struct tstate *t)
{
    if (unlikely(getpid() != g_pid)) {
        /* Forked without us seeing fork return 0 (should not happen): the buffer holds the
         * parent's records, which the parent writes itself. */
        become_child(t);
        return;
    }
    uint32_t n = (uint32_t)(t->cur - t->buf);
    t->cur = t->buf;
    if (n == 0 || g_dead) {
        return;
    }
    struct chunk_head h = { .magic = CHUNK_MAGIC, .tid = t->tid, .nrec = n };
    struct iovec iov[2] = { { &h, sizeof h }, { t->buf, (size_t)n * sizeof(struct rec) } };
    pthread_mutex_lock(&g_out_lock);
    int r = g_fd >= 0 ? write_all(iov, 2) : (errno = EBADF, -1);
    pthread_mutex_unlock(&g_out_lock);
    if (r < 0) {
        output_failed();
    }
}

static struct tstate *thread_init(void)
{
    struct tstate *t = calloc(1, sizeof *t);
    struct rec *buf = malloc(BUF_RECORDS * sizeof(struct rec));
    if (!t || !buf) {
        warn("out of memory for a thread buffer");
        abort();
    }
    t->buf = t->cur = buf;
    t->end = buf + BUF_RECORDS;
    t->tid = (uint32_t)syscall(SYS_gettid);
    t->main_thread = (pid_t)t->tid == getpid();
    t->pending_nr = -1;
    pthread_mutex_lock(&g_list_lock);
    t->next = g_threads;
    g_threads = t;
    pthread_mutex_unlock(&g_list_lock);
    me = t;
    return t;
}

static inline struct tstate *state(void)
{
    struct tstate *t = me;
    return likely(t != NULL) ? t : thread_init();
}

static void thread_release(struct tstate *t)
{
    flush(t);
    pthread_mutex_lock(&g_list_lock);
    for (struct tstate **p = &g_threads; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            break;
        }
    }
    pthread_mutex_unlock(&g_list_lock);
    free(t->buf);
    free(t);
    me = NULL;
}

/* In a freshly forked child: only the forking thread exists, its buffer holds records the
 * parent will write, and the output belongs to the parent. Start a stream of our own. */
static void become_child(struct tstate *t)
{
    pthread_mutex_init(&g_out_lock, NULL);
    pthread_mutex_init(&g_list_lock, NULL);
    for (struct tstate *o = g_threads, *next; o; o = next) {
        next = o->next;
        if (o != t) {
            free(o->buf);
            free(o);
        }
    }
    g_threads = t;
    t->next = NULL;
    t->cur = t->buf;
    t->tid = (uint32_t)syscall(SYS_gettid);
    t->main_thread = true;
    t->icount = t->tb_base = 0;
    t->pending_nr = -1;
    g_pid = getpid();
    g_is_root = false;
    if (g_fd >= 0) {
        close(g_fd);
        g_fd = -1;
    }
    if (!g_dead && open_output() < 0) {
        g_dead = 1;
        g_recording = 0;
    }
}

/* --- callbacks on the hot path ---------------------------------------------------------- */

static void tb_exec(unsigned int vcpu, void *ud)
{
    struct tstate *t = state();
    t->tb_base = t->icount;
    t->icount += (uintptr_t)ud;
}

static void reinstrument(qemu_plugin_id_t id);

/* While skipping: count instructions only; the TBs carry no memory callbacks at all. */
static void tb_exec_skipping(unsigned int vcpu, void *ud)
{
    struct tstate *t = state();
    t->tb_base = t->icount;
    t->icount += (uintptr_t)ud;
    if (unlikely(t->main_thread && t->icount >= g_skip && !g_recording && !g_dead)) {
        g_recording = 1;
        /* Drop every translated block and translate again with memory callbacks. */
        qemu_plugin_reset(g_id, reinstrument);
    }
}

static inline void put(struct tstate *t, uint64_t addr, uint64_t meta)
{
    struct rec *r = t->cur;
    r->addr = addr;
    r->meta = meta;
    if (unlikely(++t->cur == t->end)) {
        flush(t);
    }
}

static void mem_access(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *ud)
{
    struct tstate *t = me;
    uint64_t size = 1u << qemu_plugin_mem_size_shift(info);
    uint64_t kind = qemu_plugin_mem_is_store(info) ? KIND_STORE : KIND_LOAD;
    put(t, vaddr, ((t->tb_base + (uintptr_t)ud) << 8) | ((size - 1) << 2) | kind);
}

struct insn_desc {
    uint64_t vaddr;
    uint64_t idx1; /* index in the TB + 1 */
    uint64_t size;
};

static void insn_fetch(unsigned int vcpu, void *ud)
{
    struct tstate *t = me;
    const struct insn_desc *d = ud;
    if (g_recording) {
        put(t, d->vaddr, ((t->tb_base + d->idx1) << 8) | ((d->size - 1) << 2) | KIND_IFETCH);
    }
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    if (!g_recording) {
        qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec_skipping, QEMU_PLUGIN_CB_NO_REGS,
                                             (void *)(uintptr_t)n);
        return;
    }
    qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)n);
    struct insn_desc *descs = NULL;
    if (g_ifetch) {
        /* Lives as long as the translated block may run; QEMU gives no hook to free it when the
         * block is dropped, so it leaks (24 bytes per translated instruction). */
        descs = malloc(n * sizeof *descs);
    }
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        if (descs) {
            descs[i] = (struct insn_desc){ qemu_plugin_insn_vaddr(insn), i + 1,
                                           qemu_plugin_insn_size(insn) };
            qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_fetch, QEMU_PLUGIN_CB_NO_REGS,
                                                   &descs[i]);
        }
        /* One callback for both directions: QEMU 7.2 calls a callback registered for
         * QEMU_PLUGIN_MEM_R on stores too, so the direction must come from the meminfo. */
        qemu_plugin_register_vcpu_mem_cb(insn, mem_access, QEMU_PLUGIN_CB_NO_REGS,
                                         QEMU_PLUGIN_MEM_RW, (void *)(uintptr_t)(i + 1));
    }
}

/* --- syscalls --------------------------------------------------------------------------- */

/* x86_64 syscall numbers. */
enum {
    NR_mmap = 9, NR_munmap = 11, NR_brk = 12, NR_mremap = 25, NR_madvise = 28, NR_shmat = 30,
    NR_clone = 56, NR_fork = 57, NR_vfork = 58, NR_exit = 60, NR_shmdt = 67, NR_exit_group = 231,
    NR_clone3 = 435, NR_kill = 62, NR_rt_sigqueueinfo = 129, NR_tkill = 200, NR_tgkill = 234,
    NR_rt_tgsigqueueinfo = 297,
};

static void emit_side(struct tstate *t, int kind, const uint64_t args[6], int64_t ret)
{
    if (g_dead) {
        return;
    }
    if (t->end - t->cur < 1 + SIDE_SLOTS) {
        flush(t);
    }
    struct rec *r = t->cur;
    r[0].addr = (uint64_t)kind;
    r[0].meta = (t->icount << 8) | KIND_SIDE;
    uint64_t *w = (uint64_t *)&r[1];
    memcpy(w, args, 6 * sizeof(uint64_t));
    memcpy(&w[6], &ret, sizeof ret);
    w[7] = 0;
    t->cur += 1 + SIDE_SLOTS;
}

static void on_syscall(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, uint64_t a1,
                       uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
                       uint64_t a7, uint64_t a8)
{
    struct tstate *t = state();
    uint64_t a[6] = { a1, a2, a3, a4, a5, a6 };
    switch (num) {
    case NR_mmap: case NR_munmap: case NR_brk: case NR_mremap: case NR_madvise:
    case NR_shmat: case NR_shmdt:
        t->pending_nr = num;
        memcpy(t->pending, a, sizeof a);
        break;
    case NR_exit: {
        /* The thread ends here and QEMU may hand its vCPU to the next new thread. */
        uint64_t e[6] = { a1 };
        emit_side(t, XS_EXIT, e, 0);
        thread_release(t);
        break;
    }
    case NR_exit_group: {
        uint64_t e[6] = { a1 };
        emit_side(t, XS_EXIT, e, 0);
        flush(t);
        break;
    }
    case NR_kill: case NR_tkill: case NR_tgkill: case NR_rt_sigqueueinfo:
    case NR_rt_tgsigqueueinfo:
        /* QEMU 7.2 does not run the atexit callback when a signal kills the program (abort(),
         * raise()), so write this thread's records before a signal that may be fatal. */
        t->pending_nr = -1;
        flush(t);
        break;
    default:
        t->pending_nr = -1;
    }
}

static void on_syscall_ret(qemu_plugin_id_t id, unsigned int vcpu, int64_t num, int64_t ret)
{
    struct tstate *t = state();
    if ((num == NR_fork || num == NR_vfork || num == NR_clone || num == NR_clone3) && ret == 0 &&
        getpid() != g_pid) {
        become_child(t);
        return;
    }
    if (t->pending_nr != num) {
        return;
    }
    t->pending_nr = -1;
    uint64_t *p = t->pending, a[6] = { 0 };
    switch (num) {
    case NR_mmap:
        memcpy(a, p, sizeof a);
        a[4] = (uint64_t)(int64_t)(int32_t)a[4]; /* fd is an int: keep -1 as -1 */
        emit_side(t, XS_MMAP, a, ret);
        break;
    case NR_munmap:
        a[0] = p[0], a[1] = p[1];
        emit_side(t, XS_MUNMAP, a, ret);
        break;
    case NR_brk:
        a[0] = p[0];
        emit_side(t, XS_BRK, a, ret);
        break;
    case NR_mremap:
        memcpy(a, p, 5 * sizeof *a);
        emit_side(t, XS_MREMAP, a, ret);
        break;
    case NR_madvise:
        memcpy(a, p, 3 * sizeof *a);
        emit_side(t, XS_MADVISE, a, ret);
        break;
    case NR_shmat: {
        /* The segment size is not an argument; guest shm ids are host ids under qemu-user. */
        struct shmid_ds ds;
        a[0] = p[0], a[1] = p[1], a[2] = p[2];
        if (ret >= 0 && shmctl((int)p[0], IPC_STAT, &ds) == 0) {
            a[3] = ds.shm_segsz;
        }
        emit_side(t, XS_SHMAT, a, ret);
        break;
    }
    case NR_shmdt:
        a[0] = p[0];
        emit_side(t, XS_SHMDT, a, ret);
        break;
    }
}

/* --- life cycle ------------------------------------------------------------------------- */

static void on_exit_cb(qemu_plugin_id_t id, void *ud)
{
    /* QEMU has unregistered the other callbacks and stopped translated code from calling us,
     * so every buffer can be written from here, each under its own thread's id. */
    pthread_mutex_lock(&g_list_lock);
    for (struct tstate *t = g_threads; t; t = t->next) {
        flush(t);
    }
    pthread_mutex_unlock(&g_list_lock);
    if (g_fd >= 0) {
        if (g_is_sock) {
            shutdown(g_fd, SHUT_WR);
        }
        close(g_fd);
        g_fd = -1;
    }
}

static void register_callbacks(qemu_plugin_id_t id)
{
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
    qemu_plugin_register_vcpu_syscall_ret_cb(id, on_syscall_ret);
    qemu_plugin_register_atexit_cb(id, on_exit_cb, NULL);
}

static void reinstrument(qemu_plugin_id_t id)
{
    register_callbacks(id);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv)
{
    if (info->system_emulation || strcmp(info->target_name, "x86_64") != 0) {
        fprintf(stderr, "xlat_trace_plugin: only qemu-x86_64 (linux-user) is supported, not %s%s\n",
                info->target_name, info->system_emulation ? " system emulation" : "");
        return -1;
    }
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char *eq = strchr(arg, '=');
        if (!eq) {
            fprintf(stderr, "xlat_trace_plugin: argument '%s' is not key=value\n", arg);
            return -1;
        }
        size_t klen = (size_t)(eq - arg);
        const char *val = eq + 1;
        if (klen == 4 && !strncmp(arg, "sock", 4)) {
            g_sock_path = val;
        } else if (klen == 3 && !strncmp(arg, "out", 3)) {
            g_file_path = val;
        } else if (klen == 4 && !strncmp(arg, "skip", 4)) {
            char *end;
            errno = 0;
            g_skip = strtoull(val, &end, 10);
            if (errno || *end || !*val) {
                fprintf(stderr, "xlat_trace_plugin: skip=%s is not a number of instructions\n", val);
                return -1;
            }
        } else if (klen == 6 && !strncmp(arg, "ifetch", 6)) {
            if (!qemu_plugin_bool_parse("ifetch", val, &g_ifetch)) {
                fprintf(stderr, "xlat_trace_plugin: ifetch=%s is not on or off\n", val);
                return -1;
            }
        } else {
            fprintf(stderr, "xlat_trace_plugin: unknown argument '%s' (known: sock, out, skip, ifetch)\n",
                    arg);
            return -1;
        }
    }
    if (!g_sock_path == !g_file_path) {
        fprintf(stderr, "xlat_trace_plugin: give exactly one of sock=PATH or out=PATH\n");
        return -1;
    }
    g_id = id;
    g_pid = getpid();
    if (open_output() < 0) {
        return -1;
    }
    g_recording = g_skip == 0;
    register_callbacks(id);
    return 0;
}
