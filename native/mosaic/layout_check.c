/* layout_check.c -- a test driver for the allocator's layout parser (options.c), not part of the
 * library.  It runs mos_options_load() on the environment exactly as the library does at start-up
 * and prints what it understood, one line per pool:
 *
 *   heap SIZE OFFSET:LENGTH:PAGE ...      (bytes; windows sorted by offset, 4KB windows dropped)
 *
 * or, for a layout the library would refuse, the library's one sentence on stderr and exit status
 * 127.  tests/test_layout_corpus.py drives it over the shared layout corpus (tests/layouts/).
 * Built by `make layout-check`; it maps nothing and never loads the allocator. */
#include <stdio.h>

#include "mosaic.h"

int main(void) {
  static mos_config_t cfg;
  mos_options_load(&cfg);
  for (int i = 0; i < MOS_NPOOLS; i++) {
    const mos_pool_t *p = &cfg.pool[i];
    printf("%s %zu", p->name, p->size);
    for (int w = 0; w < p->nwin; w++) printf(" %zu:%zu:%zu", p->win[w].offset, p->win[w].length, p->win[w].page);
    printf("\n");
  }
  return 0;
}
