/* options.c -- configuration from environment variables, through one table.
 *
 * The Python front end (python/xlat/layout.py) validates the TOML layout and passes it here in a
 * deliberately simple form; this file validates it again, because the library can also be preloaded
 * by hand and must never act on a layout it cannot honour.  Nothing here may call malloc: it runs
 * before the allocator exists.
 *
 *   XLAT_MOSAIC_MODE=hugetlb|thp          backing for windows (default hugetlb)
 *   XLAT_MOSAIC_HEAP="SIZE [OFF:LEN:PAGE]..."  pool size and windows, all in bytes, space separated
 *   XLAT_MOSAIC_ANON=...  XLAT_MOSAIC_FILE=SIZE    (the file pool takes no windows)
 *   XLAT_MOSAIC_BEST_EFFORT=0|1           degrade unavailable huge windows to 4KB instead of failing
 *   XLAT_MOSAIC_KEEP_FREED=0|1            freed pool memory stays populated (no purging, zeroed in place)
 *   XLAT_MOSAIC_PREFAULT="HEAP ANON"      bytes at the start of the heap and anon pools to populate at start-up
 *   XLAT_MOSAIC_REPORT=DIR                write DIR/map.PID at start and DIR/smaps.PID at exit
 *   XLAT_MOSAIC_VERBOSE=0|1               print what was mapped on stderr
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mosaic.h"
#include "os.h"

/* Default pool sizes when a pool is not configured; keep in sync with layout.py DEFAULT_SIZES. */
#define MOS_DEFAULT_HEAP (32 * MOS_GiB)
#define MOS_DEFAULT_ANON (32 * MOS_GiB)
#define MOS_DEFAULT_FILE (8 * MOS_GiB)

size_t mos_fmt_u64(char *buf, uint64_t v) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; i++) buf[i] = tmp[n - 1 - i];
  buf[n] = 0;
  return n;
}

static void mos_say(const char *prefix, const char *a, const char *b, const char *c) {
  char line[1024];
  size_t n = 0;
  const char *parts[4] = {prefix, a, b, c};
  for (int i = 0; i < 4; i++)
    for (const char *p = parts[i]; p && *p && n < sizeof line - 2; p++) line[n++] = *p;
  line[n++] = '\n';
  mos_os_write(2, line, n);
}

/* One sentence on stderr, then exit 127 (the shell's "could not run" status): the program has not
 * started doing anything yet when this is called. */
void (*mos_fatal_hook)(const char *sentence);

void mos_fatal(const char *a, const char *b, const char *c) {
  mos_say("xlat-mosaic: ", a, b, c);
  if (mos_fatal_hook) {
    /* the same sentence into the report directory, so that xlat run --verify can say which process
     * of the run stopped and why (core.c) */
    char line[1024];
    size_t n = 0;
    const char *parts[3] = {a, b, c};
    for (int i = 0; i < 3; i++)
      for (const char *p = parts[i]; p && *p && n < sizeof line - 1; p++) line[n++] = *p == '\n' ? ' ' : *p;
    line[n] = 0;
    mos_fatal_hook(line);
  }
  mos_os_exit(127);
}

void mos_warn(const char *a, const char *b, const char *c) { mos_say("xlat-mosaic: warning: ", a, b, c); }

static bool parse_u64(const char **s, uint64_t *out) {
  const char *p = *s;
  if (*p < '0' || *p > '9') return false;
  uint64_t v = 0;
  while (*p >= '0' && *p <= '9') {
    uint64_t d = (uint64_t)(*p - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
    p++;
  }
  *s = p;
  *out = v;
  return true;
}

static void bad(const char *var, const char *what) { mos_fatal("environment variable ", var, what); }

static void load_pool(mos_pool_t *pool, const char *var, size_t dflt, bool windows_allowed) {
  const char *s = getenv(var);
  pool->size = dflt;
  pool->nwin = 0;
  if (!s || !*s) return;
  uint64_t size;
  while (*s == ' ') s++;
  if (!parse_u64(&s, &size)) bad(var, " must start with the pool size in bytes.");
  if (size == 0 || size % MOS_PAGE_2M) bad(var, " gives a pool size that is not a positive multiple of 2MiB.");
  if (size > MOS_MAX_POOL) bad(var, " gives a pool size above 16TiB.");
  pool->size = size;
  for (;;) {
    while (*s == ' ') s++;
    if (!*s) break;
    if (!windows_allowed) bad(var, " lists windows, but the file pool is backed by 4KB pages only.");
    if (pool->nwin == MOS_MAX_WINDOWS) bad(var, " lists more than 256 windows.");
    uint64_t off, len, page;
    if (!parse_u64(&s, &off) || *s++ != ':' || !parse_u64(&s, &len) || *s++ != ':' || !parse_u64(&s, &page) ||
        (*s && *s != ' '))
      bad(var, " has a window that is not OFFSET:LENGTH:PAGE in bytes.");
    if (page != MOS_PAGE_4K && page != MOS_PAGE_2M && page != MOS_PAGE_1G)
      bad(var, " has a window whose page size is not 4096, 2097152 or 1073741824.");
    if (len == 0 || off % page || len % page)
      bad(var, " has a window whose offset or length is not a positive multiple of its page size.");
    if (off + len > size || off + len < off) bad(var, " has a window that extends beyond the pool size.");
    mos_window_t *w = &pool->win[pool->nwin++];
    w->offset = off;
    w->length = len;
    w->page = page;
    w->backing = MOS_BACK_4K;
  }
  /* Sort by offset (insertion sort: at most 256 entries, no malloc), then reject overlaps. */
  for (int i = 1; i < pool->nwin; i++) {
    mos_window_t w = pool->win[i];
    int j = i - 1;
    while (j >= 0 && pool->win[j].offset > w.offset) {
      pool->win[j + 1] = pool->win[j];
      j--;
    }
    pool->win[j + 1] = w;
  }
  for (int i = 1; i < pool->nwin; i++)
    if (pool->win[i - 1].offset + pool->win[i - 1].length > pool->win[i].offset)
      bad(var, " has overlapping windows.");
  /* 4KB windows are just the default backing; drop them so that only huge windows remain. */
  int k = 0;
  for (int i = 0; i < pool->nwin; i++)
    if (pool->win[i].page != MOS_PAGE_4K) pool->win[k++] = pool->win[i];
  pool->nwin = k;
}

/* XLAT_MOSAIC_PREFAULT="HEAP ANON": how many bytes from the start of the heap and the anon pool to
 * populate (fault in) at start-up, at most each pool's size. */
static void load_prefault(mos_config_t *cfg) {
  static const char var[] = "XLAT_MOSAIC_PREFAULT";
  const char *s = getenv(var);
  if (!s || !*s) return;
  mos_pool_t *pools[2] = {&cfg->pool[MOS_HEAP], &cfg->pool[MOS_ANON]};
  for (int i = 0; i < 2; i++) {
    uint64_t n;
    while (*s == ' ') s++;
    if (!parse_u64(&s, &n)) bad(var, " must be two byte counts, for the heap and the anon pool.");
    if (n > pools[i]->size) bad(var, " asks to populate more than the pool's size.");
    pools[i]->prefault = n;
  }
  while (*s == ' ') s++;
  if (*s) bad(var, " must be two byte counts, for the heap and the anon pool.");
}

static bool env_flag(const char *var) {
  const char *s = getenv(var);
  if (!s || !*s || !strcmp(s, "0")) return false;
  if (!strcmp(s, "1")) return true;
  bad(var, " must be 0 or 1.");
  return false;
}

/* The report directory, copied at start-up: programs overwrite their environment block (redis,
 * nginx and others set their process title with setproctitle over argv and environ), so a pointer
 * into it may later read "" or another string.  A relative path is made absolute now, before the
 * program can change directory. */
static char report_dir_copy[4096];

static const char *copy_report_dir(const char *s) {
  if (!s || !*s) return NULL;
  size_t n = 0;
  if (*s != '/') {
    long r = syscall(SYS_getcwd, report_dir_copy, sizeof report_dir_copy);
    if (r <= 0) bad("XLAT_MOSAIC_REPORT", " is a relative path and the current directory is unknown.");
    n = strlen(report_dir_copy);
    if (n > 1) report_dir_copy[n++] = '/';
  }
  size_t len = strlen(s);
  if (n + len >= sizeof report_dir_copy - 64) bad("XLAT_MOSAIC_REPORT", " is too long a path.");
  memcpy(report_dir_copy + n, s, len + 1);
  return report_dir_copy;
}

/* Every setting is read here, once, at start-up (the library's constructor or its first call):
 * nothing keeps a pointer into the environment. */
void mos_options_load(mos_config_t *cfg) {
  /* first, so that a fatal error below can still be reported there (xlat run --verify) */
  cfg->report_dir = copy_report_dir(getenv("XLAT_MOSAIC_REPORT"));
  const char *mode = getenv("XLAT_MOSAIC_MODE");
  if (!mode || !*mode || !strcmp(mode, "hugetlb"))
    cfg->mode = MOS_MODE_HUGETLB;
  else if (!strcmp(mode, "thp"))
    cfg->mode = MOS_MODE_THP;
  else
    bad("XLAT_MOSAIC_MODE", " must be hugetlb or thp.");
  cfg->best_effort = env_flag("XLAT_MOSAIC_BEST_EFFORT");
  cfg->verbose = env_flag("XLAT_MOSAIC_VERBOSE");
  cfg->keep_freed = env_flag("XLAT_MOSAIC_KEEP_FREED");

  static const struct {
    const char *var, *name;
    size_t dflt;
    bool windows;
  } table[MOS_NPOOLS] = {
      {"XLAT_MOSAIC_HEAP", "heap", MOS_DEFAULT_HEAP, true},
      {"XLAT_MOSAIC_ANON", "anon", MOS_DEFAULT_ANON, true},
      {"XLAT_MOSAIC_FILE", "file", MOS_DEFAULT_FILE, false},
  };
  for (int i = 0; i < MOS_NPOOLS; i++) {
    mos_pool_t *p = &cfg->pool[i];
    p->name = table[i].name;
    p->kind = i;
    load_pool(p, table[i].var, table[i].dflt, table[i].windows);
    if (cfg->mode == MOS_MODE_THP)
      for (int w = 0; w < p->nwin; w++)
        if (p->win[w].page == MOS_PAGE_1G) {
          if (!cfg->best_effort)
            mos_fatal("the ", p->name, " pool has a 1GB window, which thp mode cannot back (use hugetlb mode).");
          /* Best effort: a 1GB window becomes 512 transparent 2MB pages. */
          p->win[w].page = MOS_PAGE_2M;
        }
  }
  load_prefault(cfg);
}
