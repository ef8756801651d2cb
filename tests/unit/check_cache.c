/*
** check_cache.c - cache=memory: a snapshot that reads a private copy of the
** store (cs_cache.c).
**
** The copy must be invisible in every result: the same store opened with
** CS_CACHE_MAP and CS_CACHE_MEMORY gives the same cells (every type,
** TEXT/BLOB and NULLs included), the same digest, the same gathers and
** predicate masks, single files and datasets alike.  What the copy changes
** is checked directly: the chunk pointers lie inside the copy, not a
** mapping; a checksum is computed over the copy (a byte changed in the file
** after the copy was made is not in what the memory snapshot reads, while
** the map snapshot sees it), and damage present when the copy is made is
** still found by verify=read and verify=full.  A reopen after an append
** copies only the new bytes from the file, one after a replacement the
** whole file; a store over the limit reads through the mapping and says
** why; and a failed allocation anywhere in a memory open is CS_ENOMEM with
** nothing held afterwards (the k-th allocation made to fail for every k).
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cs_write_internal.h"
#include "unit_util.h"

/* Every fixed-width type, TEXT (in ut_fixed_cols) and a nullable BLOB. */
#define N_COLS (UT_FIXED_COLS + 1)
static cs_column all_cols[N_COLS];
static cs_schema all_schema = {N_COLS, all_cols};

static void schema_init(void) {
  memcpy(all_cols, ut_fixed_cols, sizeof ut_fixed_cols);
  all_cols[UT_FIXED_COLS] = (cs_column){"bl", CS_TYPE_BLOB, true};
}

/* n rows of random values (NULLs in every nullable column) from seed. */
static ut_table *random_table(uint64_t n, uint64_t seed) {
  schema_init();
  ut_table *t = ut_table_new(&all_schema);
  ut_rng r = ut_rng_seed(seed);
  for (uint64_t row = 0; row < n; row++) {
    ut_cell *c = ut_table_add_row(t);
    for (uint32_t col = 0; col < N_COLS; col++)
      ut_cell_random(&r, all_cols[col].type, all_cols[col].nullable, 150, &c[col]);
  }
  return t;
}

static cs_store *open_ok(const char *path, cs_verify verify, cs_cache cache) {
  cs_store *s = NULL;
  cs_err err = {0};
  cs_rc rc = cs_store_open_source_with(path, verify, cache, &s, &err);
  ck_assert_msg(rc == CS_OK, "open %s (%s): %s", path, cs_cache_name(cache), err.msg);
  return s;
}

/* Every chunk pointer of a single-file memory snapshot lies in its copy. */
static void assert_reads_copy(const cs_store *s) {
  ck_assert_ptr_nonnull(s->copy);
  ck_assert_ptr_eq(s->map, s->copy);
  for (uint64_t r = 0; r < cs_store_records(s); r++)
    for (uint32_t c = 0; c < cs_store_schema(s)->n_cols; c++) {
      const cs_chunk *ch = cs_store_chunk(s, r, c);
      const uint8_t *d = ch->data;
      ck_assert_msg(d >= s->copy && d + ch->data_bytes <= s->copy + s->data_end,
                    "record %" PRIu64 " column %u outside the copy", r, c);
    }
}

/* The two snapshots give the same results: cells, digest, a gather of
** every fixed-width column over scattered rows, and predicate masks. */
static void assert_same_results(const cs_store *a, const cs_store *b, const char *ctx) {
  ck_assert_uint_eq(cs_store_rows(a), cs_store_rows(b));
  ck_assert_uint_eq(ut_store_digest(a), ut_store_digest(b));
  uint64_t n = cs_store_rows(a), k = n < 997 ? n : 997;
  uint64_t *rows = malloc(k * sizeof *rows);
  uint8_t *out_a = malloc(k * 8), *out_b = malloc(k * 8), *va = malloc(k), *vb = malloc(k);
  uint8_t *ma = malloc(n ? n : 1), *mb = malloc(n ? n : 1);
  ut_rng r = ut_rng_seed(77);
  for (uint64_t i = 0; i < k; i++) rows[i] = ut_rng_below(&r, n);
  for (uint32_t c = 0; c < cs_store_schema(a)->n_cols; c++) {
    cs_type t = cs_store_schema(a)->cols[c].type;
    if (cs_type_is_varlen(t)) continue;
    cs_gather_rows(a, c, rows, k, out_a, va);
    cs_gather_rows(b, c, rows, k, out_b, vb);
    ck_assert_msg(memcmp(out_a, out_b, k * cs_type_width(t)) == 0 && memcmp(va, vb, k) == 0,
                  "%s: gather of column %u differs", ctx, c);
    cs_pred p = {.col = c,
                 .op = cs_type_is_float(t) ? CS_CMP_GT : CS_CMP_GE,
                 .a = cs_type_is_float(t) ? (cs_value){.kind = CS_VAL_FLOAT, .f = 0.0}
                                          : (cs_value){.kind = CS_VAL_INT, .i = 1}};
    cs_pred_eval(a, &p, 1, 0, n, ma, NULL);
    cs_pred_eval(b, &p, 1, 0, n, mb, NULL);
    ck_assert_msg(memcmp(ma, mb, n) == 0, "%s: predicate on column %u differs", ctx, c);
  }
  free(rows), free(out_a), free(out_b), free(va), free(vb), free(ma), free(mb);
}

START_TEST(test_memory_and_map_give_the_same_cells_gathers_and_masks) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = random_table(3000, 11);
  ut_table_create_store(t, sc.path, 3000, 256, 700);
  cs_store *map = open_ok(sc.path, CS_VERIFY_FULL, CS_CACHE_MAP);
  cs_store *mem = open_ok(sc.path, CS_VERIFY_FULL, CS_CACHE_MEMORY);
  ut_assert_store_equals(mem, t, 3000, "memory");
  assert_same_results(map, mem, "single file");
  assert_reads_copy(mem);
  cs_cache_info ci;
  cs_store_cache_info(mem, &ci);
  ck_assert_int_eq(ci.requested, CS_CACHE_MEMORY);
  ck_assert_int_eq(ci.effective, CS_CACHE_MEMORY);
  ck_assert_uint_eq(ci.bytes, mem->data_end);
  ck_assert_uint_eq(ci.read_bytes, ci.bytes);
  ck_assert_str_eq(ci.why, "");
  cs_store_cache_info(map, &ci);
  ck_assert_int_eq(ci.requested, CS_CACHE_MAP);
  ck_assert_int_eq(ci.effective, CS_CACHE_MAP);
  ck_assert_uint_eq(ci.bytes, 0);
  ck_assert_ptr_null(map->copy);
  cs_err err = {0};
  ck_assert_msg(cs_store_verify(mem, &err) == CS_OK, "%s", err.msg);
  cs_store_close(map);
  cs_store_close(mem);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_empty_store_opens_in_memory) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = random_table(0, 1);
  ut_table_create_store(t, sc.path, 0, 256, 0);
  cs_store *mem = open_ok(sc.path, CS_VERIFY_FULL, CS_CACHE_MEMORY);
  ck_assert_uint_eq(cs_store_rows(mem), 0);
  cs_cache_info ci;
  cs_store_cache_info(mem, &ci);
  ck_assert_int_eq(ci.effective, CS_CACHE_MEMORY);
  cs_store_close(mem);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_dataset_in_memory_gives_the_map_results_and_copies_every_file) {
  char *dir = ut_tmpdir();
  ut_table *t = random_table(2500, 12);
  uint64_t cut[4] = {0, 900, 1700, 2500};
  char *paths[3];
  for (int i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof name, "p%d.cst", i);
    paths[i] = ut_join(dir, name);
    ut_table *part = ut_table_new(&all_schema);
    for (uint64_t r = cut[i]; r < cut[i + 1]; r++)
      memcpy(ut_table_add_row(part), ut_table_cell(t, r, 0), N_COLS * sizeof(ut_cell));
    ut_table_create_store(part, paths[i], cut[i + 1] - cut[i], 128, 0);
    part->n_rows = 0; /* the cells belong to t */
    ut_table_free(part);
  }
  cs_store *map = open_ok(dir, CS_VERIFY_READ, CS_CACHE_MAP);
  cs_store *mem = open_ok(dir, CS_VERIFY_READ, CS_CACHE_MEMORY);
  ut_assert_store_equals(mem, t, 2500, "dataset in memory");
  assert_same_results(map, mem, "dataset");
  cs_err err = {0};
  ck_assert_msg(cs_store_check_chunks(mem, 0, cs_store_records(mem), NULL, &err) == CS_OK, "%s", err.msg);
  cs_cache_info ci;
  cs_store_cache_info(mem, &ci);
  ck_assert_int_eq(ci.effective, CS_CACHE_MEMORY);
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < mem->n_parts; i++) {
    assert_reads_copy(mem->parts[i]);
    bytes += mem->parts[i]->data_end;
  }
  ck_assert_uint_eq(ci.bytes, bytes);
  cs_store_close(map);
  cs_store_close(mem);
  for (int i = 0; i < 3; i++) free(paths[i]);
  ut_table_free(t);
  ut_tmpdir_remove(dir);
}
END_TEST

/* The byte a test damages: the first data byte of record 1, column 3. */
static uint64_t victim_offset(const char *path) {
  ut_layout l;
  ut_layout_read(path, &l);
  uint64_t off = ut_layout_data_offset(&l, 1, 3);
  ut_layout_free(&l);
  return off;
}

START_TEST(test_damage_present_at_open_is_found_by_verify_read_and_full) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = random_table(1000, 13);
  ut_table_create_store(t, sc.path, 1000, 256, 0);
  ut_xor_byte(sc.path, victim_offset(sc.path), 0x20);
  cs_store *mem = open_ok(sc.path, CS_VERIFY_READ, CS_CACHE_MEMORY);
  cs_err err = {0};
  ck_assert_int_eq(cs_store_check_chunks(mem, 0, 1, NULL, &err), CS_OK); /* record 0 is intact */
  ck_assert_int_eq(cs_store_check_chunks(mem, 1, 2, NULL, &err), CS_ECORRUPT);
  char want[64];
  snprintf(want, sizeof want, "record 1, column %s", all_cols[3].name);
  ck_assert_msg(strstr(err.msg, want) && strstr(err.msg, sc.path), "message '%s'", err.msg);
  /* Asked again, still corrupt: a failed chunk is never remembered as checked. */
  ck_assert_int_eq(cs_store_check_chunks(mem, 1, 2, NULL, &err), CS_ECORRUPT);
  cs_store_close(mem);
  cs_store *s = NULL;
  ck_assert_int_eq(cs_store_open_with(sc.path, CS_VERIFY_FULL, CS_CACHE_MEMORY, &s, &err), CS_ECORRUPT);
  ck_assert_ptr_null(s);
  ck_assert_msg(strstr(err.msg, want), "message '%s'", err.msg);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_checksums_are_computed_over_the_copy) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = random_table(1000, 14);
  ut_table_create_store(t, sc.path, 1000, 256, 0);
  cs_store *map = open_ok(sc.path, CS_VERIFY_READ, CS_CACHE_MAP);
  cs_store *mem = open_ok(sc.path, CS_VERIFY_READ, CS_CACHE_MEMORY);
  /* Changed in the file after the copy was made: the mapping shows it,
  ** the copy does not (the map snapshot is checked first, so the chunk is
  ** not yet remembered as checked when the copy is). */
  ut_xor_byte(sc.path, victim_offset(sc.path), 0x20);
  cs_err err = {0};
  ck_assert_int_eq(cs_store_check_chunks(map, 1, 2, NULL, &err), CS_ECORRUPT);
  ck_assert_msg(cs_store_check_chunks(mem, 1, 2, NULL, &err) == CS_OK, "%s", err.msg);
  ut_assert_store_equals(mem, t, 1000, "copy made before the change");
  cs_store_close(map);
  cs_store_close(mem);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_reopen_after_append_reads_only_the_new_bytes) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = random_table(1500, 15);
  ut_table_create_store(t, sc.path, 1000, 256, 0);
  cs_store *old = open_ok(sc.path, CS_VERIFY_READ, CS_CACHE_MEMORY);
  cs_store *same = NULL, *now = NULL;
  cs_err err = {0};
  ck_assert_int_eq(cs_store_reopen(old, CS_VERIFY_READ, &same, &err), CS_OK);
  ck_assert_ptr_eq(same, old); /* nothing committed: the same snapshot */
  cs_store_close(same);
  ut_table_append_store(t, sc.path, 1000, 500);
  ck_assert_msg(cs_store_reopen(old, CS_VERIFY_READ, &now, &err) == CS_OK, "%s", err.msg);
  ck_assert_ptr_ne(now, old);
  ut_assert_store_equals(now, t, 1500, "after the append");
  ut_assert_store_equals(old, t, 1000, "the old snapshot");
  assert_reads_copy(now);
  cs_cache_info ci;
  cs_store_cache_info(now, &ci);
  ck_assert_int_eq(ci.requested, CS_CACHE_MEMORY);
  ck_assert_int_eq(ci.effective, CS_CACHE_MEMORY);
  ck_assert_uint_eq(ci.bytes, now->data_end);
  ck_assert_uint_eq(ci.read_bytes, now->data_end - old->data_end);
  ck_assert_msg(cs_store_check_chunks(now, 0, cs_store_records(now), NULL, &err) == CS_OK, "%s", err.msg);
  cs_store *map = open_ok(sc.path, CS_VERIFY_READ, CS_CACHE_MAP);
  assert_same_results(map, now, "after the append");
  cs_store_close(map);
  /* Replaced by another file (a new inode): the whole file is read. */
  ut_table_create_store(t, sc.copy, 1200, 128, 0);
  ck_assert_int_eq(rename(sc.copy, sc.path), 0);
  cs_store *replaced = NULL;
  ck_assert_msg(cs_store_reopen(now, CS_VERIFY_READ, &replaced, &err) == CS_OK, "%s", err.msg);
  ut_assert_store_equals(replaced, t, 1200, "replaced");
  cs_store_cache_info(replaced, &ci);
  ck_assert_uint_eq(ci.read_bytes, ci.bytes);
  ck_assert_uint_eq(ci.bytes, replaced->data_end);
  cs_store_close(replaced);
  cs_store_close(now);
  cs_store_close(old);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

START_TEST(test_dataset_reopen_copies_the_changed_file_from_its_old_copy) {
  char *dir = ut_tmpdir();
  ut_table *t = random_table(1000, 16);
  char *a = ut_join(dir, "a.cst"), *b = ut_join(dir, "b.cst");
  ut_table_create_store(t, a, 400, 128, 0);
  ut_table_create_store(t, b, 300, 128, 0);
  cs_store *old = open_ok(dir, CS_VERIFY_READ, CS_CACHE_MEMORY);
  ck_assert_uint_eq(cs_store_rows(old), 700);
  ut_table_append_store(t, b, 300, 200);
  cs_store *now = NULL;
  cs_err err = {0};
  ck_assert_msg(cs_store_reopen(old, CS_VERIFY_READ, &now, &err) == CS_OK, "%s", err.msg);
  ck_assert_uint_eq(cs_store_rows(now), 900);
  ck_assert_ptr_eq(now->parts[0], old->parts[0]); /* a.cst unchanged: shared */
  assert_reads_copy(now->parts[1]);
  ck_assert_uint_eq(now->parts[1]->copy_read_bytes, now->parts[1]->data_end - old->parts[1]->data_end);
  cs_cache_info ci;
  cs_store_cache_info(now, &ci);
  ck_assert_int_eq(ci.effective, CS_CACHE_MEMORY);
  cs_store *map = open_ok(dir, CS_VERIFY_READ, CS_CACHE_MAP);
  assert_same_results(map, now, "dataset after the append");
  cs_store_close(map);
  cs_store_close(now);
  cs_store_close(old);
  free(a), free(b);
  ut_table_free(t);
  ut_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_over_the_limit_reads_through_the_mapping_and_says_why) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = random_table(800, 17);
  ut_table_create_store(t, sc.path, 800, 256, 0);
  uint64_t dflt = cs_cache_limit();
  ck_assert_uint_gt(dflt, (uint64_t)1 << 20);
  cs_cache_limit_set(4096);
  ck_assert_uint_eq(cs_cache_limit(), 4096);
  cs_store *mem = open_ok(sc.path, CS_VERIFY_READ, CS_CACHE_MEMORY);
  cs_cache_info ci;
  cs_store_cache_info(mem, &ci);
  ck_assert_int_eq(ci.requested, CS_CACHE_MEMORY);
  ck_assert_int_eq(ci.effective, CS_CACHE_MAP);
  ck_assert_msg(strstr(ci.why, "exceed the cache limit of 4096 bytes"), "why: '%s'", ci.why);
  ck_assert_ptr_null(mem->copy);
  ut_assert_store_equals(mem, t, 800, "over the limit");
  cs_store_close(mem);
  /* A dataset counts its files together. */
  char *dir = ut_tmpdir(), *a = ut_join(dir, "a.cst"), *b = ut_join(dir, "b.cst");
  ut_table_create_store(t, a, 400, 128, 0);
  ut_table_create_store(t, b, 400, 128, 0);
  cs_cache_limit_set(ut_file_bytes(a) + ut_file_bytes(b) - 1);
  cs_store *ds = open_ok(dir, CS_VERIFY_READ, CS_CACHE_MEMORY);
  cs_store_cache_info(ds, &ci);
  ck_assert_int_eq(ci.effective, CS_CACHE_MAP);
  ck_assert_msg(strstr(ci.why, "the dataset's"), "why: '%s'", ci.why);
  cs_store_close(ds);
  cs_cache_limit_set(ut_file_bytes(a) + ut_file_bytes(b));
  ds = open_ok(dir, CS_VERIFY_READ, CS_CACHE_MEMORY);
  cs_store_cache_info(ds, &ci);
  ck_assert_int_eq(ci.effective, CS_CACHE_MEMORY);
  cs_store_close(ds);
  cs_cache_limit_set(0);
  ck_assert_uint_eq(cs_cache_limit(), dflt);
  free(a), free(b);
  ut_tmpdir_remove(dir);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

/* Every allocation of a memory open, its verify and a reopen after an
** append fails in turn: CS_OK or CS_ENOMEM, and nothing is left held. */
START_TEST(test_each_failed_allocation_is_enomem_and_leaks_nothing) {
  ut_scratch sc = ut_scratch_new();
  ut_table *t = random_table(600, 18);
  ut_table_create_store(t, sc.path, 400, 128, 0);
  cs_store *base = open_ok(sc.path, CS_VERIFY_READ, CS_CACHE_MEMORY);
  ut_table_append_store(t, sc.path, 400, 200);
  /* One clean run first: the process-wide record of checked chunks, which
  ** base keeps alive, grows to hold this file's chunks here, not in a
  ** counted run. */
  cs_store *warm = open_ok(sc.path, CS_VERIFY_FULL, CS_CACHE_MEMORY);
  cs_store_close(warm);
  long n_allocs = 0, n_nomem = 0;
  for (int pass = 0; pass < 2; pass++) {
    for (long k = 0;; k++) {
      long live = cs_mem_live();
      cs_mem_fail_after(k ? k : -1, pass == 1);
      cs_store *s = NULL, *s2 = NULL;
      cs_err err = {0};
      cs_rc rc = cs_store_open_with(sc.path, CS_VERIFY_FULL, CS_CACHE_MEMORY, &s, &err);
      if (rc == CS_OK) rc = cs_store_reopen(base, CS_VERIFY_READ, &s2, &err);
      long counted = cs_mem_count();
      cs_mem_fail_after(-1, false);
      ck_assert_msg(rc == CS_OK || rc == CS_ENOMEM, "k = %ld: %s (%s)", k, cs_rc_name(rc), err.msg);
      if (rc == CS_ENOMEM) {
        n_nomem++;
        ck_assert_msg(strncmp(err.msg, "colstore: ", 10) == 0, "k = %ld: '%s'", k, err.msg);
      } else {
        ck_assert_uint_eq(cs_store_rows(s2), 600);
        ut_assert_store_equals(s, t, 600, "allocations failing");
      }
      cs_store_close(s2);
      cs_store_close(s);
      ck_assert_msg(cs_mem_live() == live, "k = %ld: %ld blocks held after the run", k, cs_mem_live() - live);
      if (k == 0)
        n_allocs = counted;
      else if (k > n_allocs)
        break;
    }
  }
  ck_assert_int_gt(n_nomem, 0);
  cs_store_close(base);
  ut_table_free(t);
  ut_scratch_free(&sc);
}
END_TEST

static Suite *cache_suite(void) {
  Suite *s = suite_create("cache");
  TCase *tc = tcase_create("memory");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_memory_and_map_give_the_same_cells_gathers_and_masks);
  tcase_add_test(tc, test_empty_store_opens_in_memory);
  tcase_add_test(tc, test_dataset_in_memory_gives_the_map_results_and_copies_every_file);
  tcase_add_test(tc, test_damage_present_at_open_is_found_by_verify_read_and_full);
  tcase_add_test(tc, test_checksums_are_computed_over_the_copy);
  tcase_add_test(tc, test_reopen_after_append_reads_only_the_new_bytes);
  tcase_add_test(tc, test_dataset_reopen_copies_the_changed_file_from_its_old_copy);
  tcase_add_test(tc, test_over_the_limit_reads_through_the_mapping_and_says_why);
  tcase_add_test(tc, test_each_failed_allocation_is_enomem_and_leaks_nothing);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(cache_suite()); }
