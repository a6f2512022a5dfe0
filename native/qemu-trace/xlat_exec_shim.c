/* xlat_exec_shim.so: traces the programs a traced program starts with execve.
 *
 * QEMU user mode passes execve to the host kernel, so a program a traced process starts runs
 * natively, outside QEMU and the plugin. `xlat trace` preloads this library into the guest
 * (qemu -E LD_PRELOAD=...). It wraps the exec family and posix_spawn: the new program is started
 * as `qemu-x86_64 -E LD_PRELOAD=<this> -plugin <plugin>,sock=<recorder>,... -0 ARGV0 -- PATH ARGS`,
 * natively again, so it runs under QEMU with the plugin, connects to the same recorder and gets a
 * trace of its own (and its own children are traced the same way).
 *
 * Configuration comes from the guest's environment, read once when the library loads (a program
 * may pass execve an environment of its own): XLAT_EXEC_QEMU, XLAT_EXEC_PLUGIN,
 * XLAT_TRACE_SOCK (set by the recorder), XLAT_EXEC_SKIP, XLAT_EXEC_IFETCH, XLAT_EXEC_SHIM. Without
 * them the wrappers call the real functions unchanged. Statically linked programs load no
 * preloaded library: what they exec is not traced.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static char g_qemu[PATH_MAX], g_shim[PATH_MAX], g_plugin_arg[3 * PATH_MAX], g_preload_arg[PATH_MAX + 16];
static int g_on;
/* The settings again, as -E NAME=VALUE for the next guest: its program may get an environment
 * without them (env -i, execle), and its own children must still be followed. */
static const char *const g_vars[] = {"XLAT_EXEC_QEMU", "XLAT_EXEC_PLUGIN", "XLAT_TRACE_SOCK",
                                     "XLAT_EXEC_SHIM", "XLAT_EXEC_SKIP",   "XLAT_EXEC_IFETCH"};
#define NVARS (sizeof g_vars / sizeof *g_vars)
static char g_env[NVARS][PATH_MAX + 32];

__attribute__((constructor)) static void init(void) {
    const char *q = getenv("XLAT_EXEC_QEMU"), *p = getenv("XLAT_EXEC_PLUGIN"), *s = getenv("XLAT_TRACE_SOCK");
    const char *shim = getenv("XLAT_EXEC_SHIM"), *skip = getenv("XLAT_EXEC_SKIP"), *ifetch = getenv("XLAT_EXEC_IFETCH");
    if (!q || !p || !s || !shim)
        return;
    if (snprintf(g_qemu, sizeof g_qemu, "%s", q) >= (int)sizeof g_qemu ||
        snprintf(g_shim, sizeof g_shim, "%s", shim) >= (int)sizeof g_shim ||
        snprintf(g_plugin_arg, sizeof g_plugin_arg, "%s,sock=%s,skip=%s,ifetch=%s", p, s, skip ? skip : "0",
                 ifetch ? ifetch : "off") >= (int)sizeof g_plugin_arg ||
        snprintf(g_preload_arg, sizeof g_preload_arg, "LD_PRELOAD=%s", shim) >= (int)sizeof g_preload_arg)
        return;
    for (size_t k = 0; k < NVARS; k++) {
        const char *v = getenv(g_vars[k]);
        if (snprintf(g_env[k], sizeof g_env[k], "%s=%s", g_vars[k], v ? v : "") >= (int)sizeof g_env[k])
            return;
    }
    g_on = 1;
}

/* argv for qemu running `path` with `argv`; NULL (errno set) when it cannot be built. */
static char **qemu_argv(const char *path, char *const argv[]) {
    size_t n = 0;
    while (argv && argv[n])
        n++;
    char **v = malloc((n + 12 + 2 * NVARS) * sizeof *v);
    if (!v) {
        errno = ENOMEM;
        return NULL;
    }
    size_t i = 0;
    v[i++] = g_qemu;
    v[i++] = "-E";
    v[i++] = g_preload_arg;
    for (size_t k = 0; k < NVARS; k++) {
        v[i++] = "-E";
        v[i++] = g_env[k];
    }
    v[i++] = "-plugin";
    v[i++] = g_plugin_arg;
    if (n > 0) {
        v[i++] = "-0";
        v[i++] = argv[0];
    }
    v[i++] = "--";
    v[i++] = (char *)path;
    for (size_t k = 1; k < n; k++)
        v[i++] = argv[k];
    v[i] = NULL;
    return v;
}

/* envp without LD_PRELOAD (qemu itself is a native program; the guest gets it back with -E). */
static char **host_env(char *const envp[]) {
    size_t n = 0;
    while (envp && envp[n])
        n++;
    char **e = malloc((n + 1) * sizeof *e);
    if (!e)
        return (char **)envp;
    size_t j = 0;
    for (size_t k = 0; k < n; k++)
        if (strncmp(envp[k], "LD_PRELOAD=", 11) != 0)
            e[j++] = envp[k];
    e[j] = NULL;
    return e;
}

/* Only executable ELF files are redirected (qemu-user loads nothing else); a #! script runs
 * natively with this library still preloaded, so the programs it starts are traced. */
static int traceable(const char *path) {
    if (!g_on || !path || access(path, X_OK) != 0)
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    char m[4] = {0};
    size_t got = fread(m, 1, 4, f);
    fclose(f);
    return got == 4 && !memcmp(m, "\x7f" "ELF", 4);
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                        char *const[], char *const[]);

int execve(const char *path, char *const argv[], char *const envp[]) {
    static execve_fn real;
    if (!real)
        real = (execve_fn)dlsym(RTLD_NEXT, "execve");
    if (!traceable(path))
        return real(path, argv, envp);
    char **v = qemu_argv(path, argv);
    if (!v)
        return -1;
    int r = real(g_qemu, v, host_env(envp));
    int saved = errno;
    free(v);
    errno = saved;
    return r;
}

/* PATH search as execvp does it: the first executable candidate. */
static const char *search(const char *file, char *buf, size_t len) {
    if (strchr(file, '/'))
        return file;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;; p = strchr(p, ':') + 1) {
        const char *end = strchr(p, ':');
        size_t dl = end ? (size_t)(end - p) : strlen(p);
        if (snprintf(buf, len, "%.*s%s%s", (int)dl, p, dl ? "/" : "", file) < (int)len && access(buf, X_OK) == 0)
            return buf;
        if (!end)
            break;
    }
    return file;
}

int execv(const char *path, char *const argv[]) { return execve(path, argv, environ); }

int execvpe(const char *file, char *const argv[], char *const envp[]) {
    char buf[PATH_MAX];
    return execve(search(file, buf, sizeof buf), argv, envp);
}

int execvp(const char *file, char *const argv[]) { return execvpe(file, argv, environ); }

#define COLLECT_ARGS(first, last_is_envp)                                                                      \
    size_t n = 1;                                                                                              \
    va_list ap;                                                                                                \
    va_start(ap, first);                                                                                       \
    while (va_arg(ap, char *))                                                                                 \
        n++;                                                                                                   \
    va_end(ap);                                                                                                \
    char **argv = alloca((n + 1) * sizeof *argv);                                                              \
    va_start(ap, first);                                                                                       \
    argv[0] = (char *)first;                                                                                   \
    for (size_t k = 1; k <= n; k++)                                                                            \
        argv[k] = va_arg(ap, char *);                                                                          \
    char *const *envp = last_is_envp ? va_arg(ap, char *const *) : environ;                                    \
    va_end(ap);

int execl(const char *path, const char *arg, ...) {
    COLLECT_ARGS(arg, 0)
    return execve(path, argv, envp);
}

int execlp(const char *file, const char *arg, ...) {
    COLLECT_ARGS(arg, 0)
    return execvpe(file, argv, envp);
}

int execle(const char *path, const char *arg, ...) {
    COLLECT_ARGS(arg, 1)
    return execve(path, argv, envp);
}

int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                char *const argv[], char *const envp[]) {
    static spawn_fn real;
    if (!real)
        real = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
    if (!traceable(path))
        return real(pid, path, fa, attr, argv, envp);
    char **v = qemu_argv(path, argv);
    if (!v)
        return ENOMEM;
    char **e = host_env(envp);
    int r = real(pid, g_qemu, fa, attr, v, e);
    if (e != (char **)envp)
        free(e);
    free(v);
    return r;
}

int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
                 char *const argv[], char *const envp[]) {
    char buf[PATH_MAX];
    const char *path = search(file, buf, sizeof buf);
    if (!traceable(path)) {
        static spawn_fn real;
        if (!real)
            real = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawnp");
        return real(pid, file, fa, attr, argv, envp);
    }
    return posix_spawn(pid, path, fa, attr, argv, envp);
}
