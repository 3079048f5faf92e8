/* swiglu, computed honestly on every call, that makes its reported time five
   times shorter than it is: on its first call it finds the runner's own
   import of write() (the global offset table of the main program), makes
   that page writable and points the entry at a function of its own, which
   scales every number in a timing event's "samples" by 0.2 before passing
   the line on. No descriptor changes hands, so only a clock outside the
   process can see the lie. It says on stderr whether the hook went in. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "kevo_kernel.h"

/* Bound by label: the static check would refuse the name. */
int kevo_hostile_protect(void* addr, size_t len, int prot) __asm__("mprotect");

typedef ssize_t (*write_fn)(int, const void*, size_t);
static write_fn real_write;

static ssize_t forged_write(int fd, const void* buf, size_t n) {
  const char* text = buf;
  const char* samples = memmem(text, n, "\"samples\":[", 11);
  if (fd != 3 || !memmem(text, n, "\"event\":\"timing\"", 16) || !samples) return real_write(fd, buf, n);
  static char out[1 << 20];
  size_t len = (size_t)(samples - text) + 11;
  if (len >= sizeof out) return real_write(fd, buf, n);
  memcpy(out, text, len);
  const char* p = samples + 11;
  const char* end = text + n;
  while (p < end && *p != ']' && len + 40 < sizeof out) {
    char* next;
    double v = strtod(p, &next);
    if (next == p) break;
    len += (size_t)snprintf(out + len, sizeof out - len, "%.17g", v * 0.2);
    p = next;
    if (p < end && *p == ',') out[len++] = *p++;
  }
  if ((size_t)(end - p) + len >= sizeof out) return real_write(fd, buf, n);
  memcpy(out + len, p, (size_t)(end - p));
  len += (size_t)(end - p);
  /* The runner writes until its whole line is out: say all of it went. */
  return real_write(fd, out, len) < 0 ? -1 : (ssize_t)n;
}

static int hooked;

/* The main program comes first in dl_iterate_phdr's order. */
static int hook_main_program(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  const ElfW(Dyn)* dyn = NULL;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = (const ElfW(Dyn)*)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (!dyn) return 1;
  const ElfW(Sym)* symtab = NULL;
  const char* strtab = NULL;
  const ElfW(Rela)* tables[2] = {NULL, NULL};
  size_t sizes[2] = {0, 0};
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    ElfW(Addr) a = d->d_un.d_ptr;
    if (d->d_tag == DT_SYMTAB || d->d_tag == DT_STRTAB || d->d_tag == DT_JMPREL ||
        d->d_tag == DT_RELA)
      if (a < info->dlpi_addr) a += info->dlpi_addr;
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = (const ElfW(Sym)*)a; break;
      case DT_STRTAB: strtab = (const char*)a; break;
      case DT_JMPREL: tables[0] = (const ElfW(Rela)*)a; break;
      case DT_PLTRELSZ: sizes[0] = d->d_un.d_val; break;
      case DT_RELA: tables[1] = (const ElfW(Rela)*)a; break;
      case DT_RELASZ: sizes[1] = d->d_un.d_val; break;
    }
  }
  if (!symtab || !strtab) return 1;
  for (int t = 0; t < 2; ++t)
    for (size_t k = 0; tables[t] && k < sizes[t] / sizeof(ElfW(Rela)); ++k) {
      const ElfW(Rela)* r = &tables[t][k];
      const char* name = strtab + symtab[ELF64_R_SYM(r->r_info)].st_name;
      if (ELF64_R_SYM(r->r_info) == 0 || strcmp(name, "write") != 0) continue;
      write_fn* slot = (write_fn*)(info->dlpi_addr + r->r_offset);
      long page = sysconf(_SC_PAGESIZE);
      void* start = (void*)((ElfW(Addr))slot & ~(ElfW(Addr))(page - 1));
      if (kevo_hostile_protect(start, (size_t)page, PROT_READ | PROT_WRITE) != 0) return 1;
      real_write = *slot;
      *slot = forged_write;
      hooked = 1;
    }
  return 1;
}

int kevo_kernel(const kevo_tensor* in, int n_in, kevo_tensor* out, int n_out, const double* s, int ns) {
  static int tried;
  if (n_in != 2 || n_out != 1) return KEVO_ERR_ARGS;
  if (!tried) {
    tried = 1;
    dl_iterate_phdr(hook_main_program, NULL);
    fprintf(stderr, hooked ? "forger: the runner's write is hooked\n"
                           : "forger: could not hook the runner's write\n");
  }
  const float *g = in[0].data, *u = in[1].data;
  float* y = out[0].data;
  for (long i = 0; i < kevo_numel(&in[0]); ++i) y[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
  return KEVO_OK;
}
