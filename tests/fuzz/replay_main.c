/*
** replay_main.c - runs a fuzz target's entry function over saved inputs,
** without libFuzzer, so the normal build (gcc, `make test`) replays every
** input that once crashed a target.
**
** Usage: replay_<target> PATH...  where each PATH is a file or a directory
** whose regular files (sorted by name, dot files skipped) are each one
** input.  A missing directory counts as empty, so a target with no
** regressions yet needs no placeholder.  A crash or a failed oracle aborts
** (the target's FZ_CHECK); otherwise it prints how many inputs it ran.
*/
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      uint8_t *b2 = realloc(buf, cap *= 2);
      if (!b2) free(buf);
      buf = b2;
    }
  }
  fclose(f);
  if (!buf) {
    fprintf(stderr, "replay: out of memory reading %s\n", path);
    return -1;
  }
  fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
  /* A private copy of exactly n bytes, so ASan sees reads past the input. */
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) {
    free(buf);
    return -1;
  }
  memcpy(exact, buf, n);
  free(buf);
  LLVMFuzzerTestOneInput(exact, n);
  free(exact);
  return 1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int replay_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? 0 : -1;
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      char **n2 = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
      if (!n2) break;
      names = n2;
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  if (n > 1) qsort(names, n, sizeof *names, cmp_str);
  int total = 0;
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(dir) + strlen(names[i]) + 2;
    char *path = malloc(len);
    snprintf(path, len, "%s/%s", dir, names[i]);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      int r = replay_file(path);
      if (r < 0)
        total = -1;
      else if (total >= 0)
        total += r;
    }
    free(path);
    free(names[i]);
  }
  free(names);
  return total;
}

int main(int argc, char **argv) {
  int total = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    int r = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? replay_dir(argv[i])
            : stat(argv[i], &st) == 0                      ? replay_file(argv[i])
                                                           : 0;
    if (r < 0) {
      fprintf(stderr, "replay: cannot read %s\n", argv[i]);
      return 1;
    }
    total += r;
  }
  printf("replay: %d inputs, no failures\n", total);
  return 0;
}
