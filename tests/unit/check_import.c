/*
** check_import.c - the text importer's parts (core/import/): the tokenizer,
** the number grammar, the UTF-8 check, and cs_import_text end to end.
**
** The tokenizer is compared with a naive reference written here from the
** rules in cs_csv.c's opening comment: it sees the whole input at once and
** walks it one byte at a time with no state carried between calls, so it
** shares nothing with the streaming code but the rules.  Every input is fed
** to the tokenizer split at every byte (two blocks), and one byte at a
** time, because a record that spans blocks is where a streaming tokenizer
** goes wrong: a quote, a doubled quote, a CR and its LF, a quoted newline
** cut in two.  The inputs are hand-written edge cases plus random strings
** over the alphabet that matters (a, the delimiter, the quote, CR, LF).
**
** threads=N is checked the same way one level up: small inputs with
** quoted newlines (LF and CRLF), doubled and stray quotes, ragged lines and
** CR line ends are imported serially and with 2, 3 and 4 threads at every
** chunk size that splits them, so a chunk boundary falls on every byte;
** rows, rejects (lines and reasons), errors and every cell must be the
** serial import's.
**
** Numbers are compared with strtod on random decimal literals of every
** length and exponent (glibc's strtod is correctly rounded, so the fast
** path must give the same bits), and the grammar's documented cases
** (+1, -0, 1e5, 0x10, NaN, inf, huge integers) are checked one by one.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cs_import_internal.h"
#include "unit_util.h"

/* ---------------------------------------------------- naive reference */

typedef struct ref_field {
  char *bytes;
  size_t n;
  bool quoted;
} ref_field;

typedef struct ref_record {
  ref_field *fields;
  uint32_t n_fields;
  uint64_t line;
} ref_record;

typedef struct ref_parse {
  ref_record *records;
  size_t n_records;
  bool failed; /* a quote left open */
  uint64_t fail_line;
} ref_parse;

static void ref_add_byte(ref_field *f, char b) {
  f->bytes = realloc(f->bytes, f->n + 1);
  f->bytes[f->n++] = b;
}

static ref_parse ref_tokenize(const char *s, size_t n, char delim, char quote) {
  ref_parse out = {0};
  size_t i = 0;
  uint64_t line = 1;
  while (i < n) {
    if (s[i] == '\n' || s[i] == '\r') { /* a blank line */
      if (s[i] == '\r' && i + 1 < n && s[i + 1] == '\n') i++;
      i++, line++;
      continue;
    }
    ref_record rec = {0};
    rec.line = line;
    bool record_done = false;
    while (!record_done) {
      rec.fields = realloc(rec.fields, (rec.n_fields + 1) * sizeof *rec.fields);
      ref_field *f = &rec.fields[rec.n_fields++];
      *f = (ref_field){0};
      bool in_quotes = false;
      if (i < n && s[i] == quote) f->quoted = in_quotes = true, i++;
      uint64_t open_line = line;
      for (;;) {
        if (i >= n) {
          if (in_quotes) {
            out.failed = true;
            out.fail_line = open_line;
            for (uint32_t k = 0; k < rec.n_fields; k++) free(rec.fields[k].bytes);
            free(rec.fields);
            return out;
          }
          record_done = true;
          break;
        }
        char b = s[i];
        if (in_quotes) {
          if (b == quote) {
            if (i + 1 < n && s[i + 1] == quote)
              ref_add_byte(f, quote), i += 2;
            else
              in_quotes = false, i++;
          } else {
            if (b == '\n') line++;
            ref_add_byte(f, b), i++;
          }
          continue;
        }
        if (b == delim) {
          i++;
          break;
        }
        if (b == '\n' || b == '\r') {
          if (b == '\r' && i + 1 < n && s[i + 1] == '\n') i++;
          i++, line++;
          record_done = true;
          break;
        }
        ref_add_byte(f, b), i++;
      }
    }
    out.records = realloc(out.records, (out.n_records + 1) * sizeof *out.records);
    out.records[out.n_records++] = rec;
  }
  return out;
}

static void ref_free(ref_parse *p) {
  for (size_t r = 0; r < p->n_records; r++) {
    for (uint32_t f = 0; f < p->records[r].n_fields; f++) free(p->records[r].fields[f].bytes);
    free(p->records[r].fields);
  }
  free(p->records);
}

/* ----------------------------------------------- the streaming tokenizer */

/* Feeds s in pieces: [0, split) then the rest, or every byte alone when
** split is 0; compares each record with the reference as it comes. */
/* The mask cs_csv_next's fast path must give a field of these bytes. */
static uint8_t expected_mask(const uint8_t *p, size_t n) {
  uint8_t m = 0;
  for (size_t i = 0; i < n; i++)
    m |= p[i] >= '0' && p[i] <= '9'   ? CS_CLS_DIGIT
         : p[i] == '+' || p[i] == '-' ? CS_CLS_SIGN
         : p[i] == '.'                ? CS_CLS_DOT
         : p[i] == 'e' || p[i] == 'E' ? CS_CLS_EXP
         : p[i] >= 0x80               ? CS_CLS_OTHER | CS_CLS_HIGH
                                      : CS_CLS_OTHER;
  return m;
}

/* fast: through cs_csv_next (the fast path where it applies), else
** cs_csv_feed alone; both must give the reference's records. */
static void check_streamed(const char *s, size_t n, size_t split, bool fast, const ref_parse *ref,
                           const char *what) {
  cs_csv c;
  cs_csv_init(&c, ',', '"');
  cs_record rec = {0};
  cs_err err = {0};
  size_t got_records = 0;
  size_t piece_start = 0;
  bool failed = false;
  while (piece_start < n && !failed) {
    size_t piece_end = split ? (piece_start == 0 ? split : n) : piece_start + 1;
    if (piece_end > n) piece_end = n;
    size_t pos = 0;
    int got;
    const uint8_t *piece = (const uint8_t *)s + piece_start;
    while ((got = fast ? cs_csv_next(&c, piece, piece_end - piece_start, &pos, &rec, &err)
                       : cs_csv_feed(&c, piece, piece_end - piece_start, &pos, &rec, &err)) == 1) {
      ck_assert_msg(got_records < ref->n_records, "%s split %zu: more records than the reference", what,
                    split);
      const ref_record *want = &ref->records[got_records];
      ck_assert_msg(rec.n_fields == want->n_fields, "%s split %zu record %zu: %u fields, reference %u", what,
                    split, got_records, rec.n_fields, want->n_fields);
      ck_assert_msg(rec.line == want->line, "%s split %zu record %zu: line %llu, reference %llu", what, split,
                    got_records, (unsigned long long)rec.line, (unsigned long long)want->line);
      for (uint32_t f = 0; f < rec.n_fields; f++) {
        size_t fn;
        const uint8_t *p = cs_record_field(&rec, f, &fn);
        ck_assert_msg(fn == want->fields[f].n && (fn == 0 || memcmp(p, want->fields[f].bytes, fn) == 0) &&
                          cs_record_quoted(&rec, f) == want->fields[f].quoted,
                      "%s split %zu record %zu field %u differs", what, split, got_records, f);
        ck_assert_msg((rec.masks[f] & CS_FIELD_UNSCANNED) || rec.masks[f] == expected_mask(p, fn),
                      "%s split %zu record %zu field %u: mask %#x, expected %#x", what, split, got_records, f,
                      rec.masks[f], expected_mask(p, fn));
        for (size_t k = 0; rec.ascii && k < fn; k++) ck_assert_msg(p[k] < 0x80, "%s: not ASCII", what);
      }
      got_records++;
      cs_record_reset(&rec);
    }
    ck_assert_int_ge(got, 0);
    piece_start = piece_end;
  }
  int last = cs_csv_finish(&c, &rec, &err);
  if (ref->failed) {
    ck_assert_msg(last == -1, "%s split %zu: an open quote was not an error", what, split);
    char want[64];
    snprintf(want, sizeof want, "line %llu:", (unsigned long long)ref->fail_line);
    ck_assert_msg(strstr(err.msg, want) != NULL, "%s split %zu: '%s' does not name %s", what, split, err.msg,
                  want);
  } else {
    if (last == 1) {
      ck_assert_msg(got_records < ref->n_records, "%s split %zu: a last record the reference lacks", what,
                    split);
      ck_assert_uint_eq(rec.n_fields, ref->records[got_records].n_fields);
      got_records++;
    }
    ck_assert_msg(got_records == ref->n_records, "%s split %zu: %zu records, reference %zu", what, split,
                  got_records, ref->n_records);
  }
  cs_record_free(&rec);
}

static void check_every_split(const char *s, size_t n, const char *what) {
  ref_parse ref = ref_tokenize(s, n, ',', '"');
  for (int fast = 0; fast <= 1; fast++) {
    for (size_t split = 1; split < n; split++) check_streamed(s, n, split, fast, &ref, what);
    check_streamed(s, n, n ? n : 1, fast, &ref, what);
    check_streamed(s, n, 0, fast, &ref, what);
  }
  ref_free(&ref);
}

static const char *const edge_inputs[] = {
    "a,b,c\n1,2,3\n",
    "a,b\r\n1,2\r\n",
    "a,b\r1,2\r",
    "\"x,y\",\"say \"\"hi\"\"\"\n",
    "\"multi\nline\",2\n\"cr\r\nlf\",3\n",
    "\"\"\n\"\",\n,\"\"\n",
    ",,\n,\n",
    "no newline at end",
    "a,b,\n",
    "\n\n\na\n\r\n\rb\n",
    "ab\"c,d\n",
    "\"ab\"c,d\n",
    "\"open quote\nnever closed",
    "\"\"\"\"\n",
    "\"a\"\"\n\"\"b\",\"\r\"\n",
    "x\r",
    "\"x\"\r",
};

START_TEST(tokenizer_edges_every_split) {
  for (size_t i = 0; i < sizeof edge_inputs / sizeof edge_inputs[0]; i++) {
    char what[32];
    snprintf(what, sizeof what, "edge input %zu", i);
    check_every_split(edge_inputs[i], strlen(edge_inputs[i]), what);
  }
}
END_TEST

START_TEST(tokenizer_random_every_split) {
  static const char alphabet[] = "aa,,\"\"\n\r b1.-e\xc3\xa9";
  uint64_t seed = 0x1234abcd;
  ut_rng r = ut_rng_seed(seed);
  for (int round = 0; round < 400; round++) {
    char buf[48];
    size_t n = 1 + ut_rng_below(&r, sizeof buf - 1);
    for (size_t i = 0; i < n; i++) buf[i] = alphabet[ut_rng_below(&r, sizeof alphabet - 1)];
    char what[64];
    snprintf(what, sizeof what, "seed %llx round %d", (unsigned long long)seed, round);
    check_every_split(buf, n, what);
  }
}
END_TEST

START_TEST(tokenizer_other_delimiter_and_quote) {
  cs_csv c;
  cs_csv_init(&c, ';', '\'');
  cs_record rec = {0};
  cs_err err = {0};
  const char *s = "'a;b';'it''s'\n";
  size_t pos = 0;
  ck_assert_int_eq(cs_csv_feed(&c, (const uint8_t *)s, strlen(s), &pos, &rec, &err), 1);
  ck_assert_uint_eq(rec.n_fields, 2);
  size_t n;
  const uint8_t *p = cs_record_field(&rec, 0, &n);
  ck_assert(n == 3 && memcmp(p, "a;b", 3) == 0);
  p = cs_record_field(&rec, 1, &n);
  ck_assert(n == 4 && memcmp(p, "it's", 4) == 0);
  cs_record_free(&rec);
}
END_TEST

START_TEST(delimiter_detection) {
  struct {
    const char *text;
    char want;
  } cases[] = {
      {"a,b,c\n1,2,3\n", ','},
      {"a\tb\tc\n1\t2\t3\n", '\t'},
      {"a;b\n1,5;2,5\n", ';'},
      {"a|b|c\n1|2|3\n", '|'},
      {"\"x;y\",b\n1,2\n", ','},
      {"single\ncolumn\n", ','},
      {"a;b;c\n1;2;3\n4;5;6", ';'},
      {"a,b\n1;2;3\n", ','},
      /* two fields either way; by TAB the quotes would sit inside unquoted
      ** fields (COLSTORE_SEED=372609352 of test_import.py drew it) */
      {"|\"tab\there;x\"\n", '|'},
      /* a stray quote does not lose the only delimiter that splits */
      {"a,b\"c,d\n1,2,3\n", ','},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t got = cs_csv_detect_delim((const uint8_t *)cases[i].text, strlen(cases[i].text), '"');
    ck_assert_msg(got == (uint8_t)cases[i].want, "case %zu: detected '%c', want '%c'", i, got, cases[i].want);
  }
}
END_TEST

/* --------------------------------------------------------------- numbers */

static cs_num_kind parse(const char *s, int64_t *i, double *f) {
  return cs_parse_number((const uint8_t *)s, strlen(s), i, f);
}

START_TEST(number_grammar) {
  int64_t i;
  double f;
  ck_assert_int_eq(parse("+1", &i, &f), CS_NUM_INT);
  ck_assert_int_eq(i, 1);
  ck_assert_int_eq(parse("-0", &i, &f), CS_NUM_INT);
  ck_assert_int_eq(i, 0);
  ck_assert_int_eq(parse("007", &i, &f), CS_NUM_INT);
  ck_assert_int_eq(i, 7);
  ck_assert_int_eq(parse("9223372036854775807", &i, &f), CS_NUM_INT);
  ck_assert_int_eq(i, INT64_MAX);
  ck_assert_int_eq(parse("-9223372036854775808", &i, &f), CS_NUM_INT);
  ck_assert_int_eq(i, INT64_MIN);
  ck_assert_int_eq(parse("9223372036854775808", &i, &f), CS_NUM_FLOAT);
  ck_assert(f == 9223372036854775808.0);
  ck_assert_int_eq(parse("123456789012345678901234567890", &i, &f), CS_NUM_FLOAT);
  ck_assert(f == 123456789012345678901234567890.0);
  ck_assert_int_eq(parse("1e5", &i, &f), CS_NUM_FLOAT);
  ck_assert(f == 1e5);
  ck_assert_int_eq(parse("-0.0", &i, &f), CS_NUM_FLOAT);
  ck_assert(f == 0.0 && !signbit(f));
  ck_assert_int_eq(parse(".5", &i, &f), CS_NUM_FLOAT);
  ck_assert(f == 0.5);
  ck_assert_int_eq(parse("1.", &i, &f), CS_NUM_FLOAT);
  ck_assert(f == 1.0);
  ck_assert_int_eq(parse("1e999", &i, &f), CS_NUM_FLOAT);
  ck_assert(isinf(f));
  const char *not_numbers[] = {"",    "+",    "-",        ".",  "e5", "1e",  "1e+",  "0x10", "NaN",   "nan",
                               "inf", "-inf", "Infinity", " 1", "1 ", "1,5", "1..2", "--1",  "1e5.5", "١"};
  for (size_t k = 0; k < sizeof not_numbers / sizeof not_numbers[0]; k++)
    ck_assert_msg(parse(not_numbers[k], &i, &f) == CS_NUM_NONE, "'%s' parsed as a number", not_numbers[k]);
}
END_TEST

START_TEST(numbers_round_like_strtod) {
  uint64_t seed = 0xfeedbeef;
  ut_rng r = ut_rng_seed(seed);
  for (int round = 0; round < 200000; round++) {
    char buf[64];
    size_t n = 0;
    if (ut_rng_below(&r, 2)) buf[n++] = '-';
    int int_digits = (int)ut_rng_below(&r, 20);
    int frac_digits = (int)ut_rng_below(&r, 20);
    if (int_digits + frac_digits == 0) int_digits = 1;
    for (int k = 0; k < int_digits; k++) buf[n++] = (char)('0' + ut_rng_below(&r, 10));
    bool point = frac_digits || ut_rng_below(&r, 2);
    if (point) {
      buf[n++] = '.';
      for (int k = 0; k < frac_digits; k++) buf[n++] = (char)('0' + ut_rng_below(&r, 10));
    }
    /* without a point an exponent makes it a float: small or wide */
    if (!point || ut_rng_below(&r, 2)) {
      int span = ut_rng_below(&r, 2) ? 7 : 700;
      n += (size_t)snprintf(buf + n, sizeof buf - n, "e%d", (int)ut_rng_below(&r, (uint64_t)span) - span / 2);
    }
    buf[n] = 0;
    int64_t i;
    double f;
    ck_assert_msg(parse(buf, &i, &f) == CS_NUM_FLOAT, "seed %llx: '%s' not a float", (unsigned long long)seed,
                  buf);
    double want = strtod(buf, NULL);
    if (want == 0.0) want = 0.0;
    ck_assert_msg(memcmp(&f, &want, sizeof f) == 0, "seed %llx: '%s' gave %.17g, strtod %.17g",
                  (unsigned long long)seed, buf, f, want);
    /* The importer's short path: every decimal of at most 15 digits
    ** without an exponent, bit for bit strtod's; nothing else. */
    double g;
    bool short_ok = cs_parse_short_decimal((const uint8_t *)buf, n, &g);
    bool is_short = !strpbrk(buf, "eE") && int_digits + frac_digits <= 15;
    ck_assert_msg(short_ok == is_short, "seed %llx: '%s' short path %d", (unsigned long long)seed, buf,
                  short_ok);
    ck_assert_msg(!short_ok || memcmp(&g, &want, sizeof g) == 0,
                  "seed %llx: '%s' short path gave %.17g, strtod %.17g", (unsigned long long)seed, buf, g,
                  want);
  }
  const char *not_short[] = {"", "-", ".", "1.2.3", "1-2", "+-1", "1e5", "0x1", "1234567890123456"};
  double g;
  for (size_t k = 0; k < sizeof not_short / sizeof not_short[0]; k++)
    ck_assert_msg(!cs_parse_short_decimal((const uint8_t *)not_short[k], strlen(not_short[k]), &g), "'%s'",
                  not_short[k]);
  ck_assert(cs_parse_short_decimal((const uint8_t *)"-0.000", 6, &g) && g == 0.0 && !signbit(g));
}
END_TEST

START_TEST(number_kind_agrees_with_parse) {
  static const char alphabet[] = "0123456789+-.eE x9";
  uint64_t seed = 0x5eed;
  ut_rng r = ut_rng_seed(seed);
  for (int round = 0; round < 300000; round++) {
    char buf[32];
    size_t n = ut_rng_below(&r, 24);
    for (size_t i = 0; i < n; i++) buf[i] = alphabet[ut_rng_below(&r, sizeof alphabet - 1)];
    int64_t iv;
    double fv;
    cs_num_kind want = cs_parse_number((const uint8_t *)buf, n, &iv, &fv);
    ck_assert_msg(cs_number_kind((const uint8_t *)buf, n) == want, "seed %llx: '%.*s'",
                  (unsigned long long)seed, (int)n, buf);
  }
  /* Integer literals around INT64's edges, leading zeros and signs. */
  static const char *const edges[] = {"9223372036854775807", "9223372036854775808", "9223372036854775806",
                                      "9999999999999999999", "1000000000000000000", "999999999999999999"};
  for (int round = 0; round < 20000; round++) {
    char buf[40];
    size_t n = 0;
    uint64_t sign = ut_rng_below(&r, 3);
    if (sign) buf[n++] = sign == 1 ? '-' : '+';
    for (uint64_t z = ut_rng_below(&r, 4); z > 0; z--) buf[n++] = '0';
    if (ut_rng_below(&r, 2)) {
      const char *e = edges[ut_rng_below(&r, sizeof edges / sizeof edges[0])];
      memcpy(buf + n, e, strlen(e));
      n += strlen(e);
    } else {
      for (uint64_t d = 17 + ut_rng_below(&r, 5); d > 0; d--) buf[n++] = (char)('0' + ut_rng_below(&r, 10));
    }
    int64_t iv;
    double fv;
    cs_num_kind want = cs_parse_number((const uint8_t *)buf, n, &iv, &fv);
    ck_assert_msg(cs_number_kind((const uint8_t *)buf, n) == want, "seed %llx: '%.*s'",
                  (unsigned long long)seed, (int)n, buf);
  }
}
END_TEST

START_TEST(utf8_check) {
  const char *valid[] = {"",
                         "plain",
                         "caf\xc3\xa9",
                         "\xe2\x82\xac",
                         "\xf0\x9f\x98\x80",
                         "\xed\x9f\xbf",
                         "\xf4\x8f\xbf\xbf",
                         "12345678\xc3\xa9"};
  const char *invalid[] = {"\xc3", "\xc0\xaf", "\xe0\x80\xaf",     "\xed\xa0\x80", "\xf4\x90\x80\x80",
                           "\xff", "\x80",     "abcdefgh\xe2\x82", "\xf0\x9f\x98"};
  for (size_t k = 0; k < sizeof valid / sizeof valid[0]; k++)
    ck_assert_msg(cs_utf8_valid((const uint8_t *)valid[k], strlen(valid[k])), "valid %zu refused", k);
  for (size_t k = 0; k < sizeof invalid / sizeof invalid[0]; k++)
    ck_assert_msg(!cs_utf8_valid((const uint8_t *)invalid[k], strlen(invalid[k])), "invalid %zu accepted", k);
}
END_TEST

/* ------------------------------------------------------------ end to end */

START_TEST(import_infers_and_writes) {
  char *dir = ut_tmpdir();
  char *csv = ut_join(dir, "in.csv"), *path = ut_join(dir, "t.cst");
  const char *text = "\xef\xbb\xbfid;x;name\r\n1;2.5;\"a;b\"\r\n2;;c\r\n3;1e3;\r\n";
  ut_write_all(csv, text, strlen(text));
  cs_import_result res;
  cs_err err;
  ck_assert_int_eq(cs_import_text(path, csv, NULL, &res, &err), CS_OK);
  ck_assert_uint_eq(res.rows, 3);
  ck_assert_int_eq(res.delim, ';');
  ck_assert(res.header);
  ck_assert_uint_eq(res.n_cols, 3);
  ck_assert_str_eq(res.cols[0].name, "id");
  ck_assert_int_eq(res.cols[0].type, CS_TYPE_INT64);
  ck_assert_int_eq(res.cols[1].type, CS_TYPE_FLOAT64);
  ck_assert_int_eq(res.cols[2].type, CS_TYPE_TEXT);
  cs_import_result_free(&res);
  cs_store *store = NULL;
  ck_assert_int_eq(cs_store_open(path, CS_VERIFY_FULL, &store, &err), CS_OK);
  ck_assert_uint_eq(cs_store_rows(store), 3);
  cs_store_close(store);
  /* create on an existing path: an error, the store untouched */
  uint64_t before = ut_file_bytes(path);
  ck_assert_int_eq(cs_import_text(path, csv, NULL, &res, &err), CS_EEXIST);
  ck_assert(strstr(err.msg, "already exists") != NULL);
  cs_import_result_free(&res);
  ck_assert_uint_eq(ut_file_bytes(path), before);
  free(csv);
  free(path);
  ut_tmpdir_remove(dir);
}
END_TEST

static int stop_at_once(void *ctx, const cs_import_progress *p) {
  (void)ctx, (void)p;
  return 1;
}

START_TEST(import_stopped_leaves_nothing) {
  char *dir = ut_tmpdir();
  char *csv = ut_join(dir, "in.csv"), *path = ut_join(dir, "t.cst");
  ut_write_all(csv, "a,b\n1,2\n", 8);
  cs_import_options opt = {.progress = stop_at_once};
  cs_import_result res;
  cs_err err;
  ck_assert_int_ne(cs_import_text(path, csv, &opt, &res, &err), CS_OK);
  ck_assert(res.interrupted);
  ck_assert_str_eq(err.msg, "colstore: interrupted");
  cs_import_result_free(&res);
  ck_assert(!ut_exists(path));
  ck_assert_int_eq(ut_dir_entries(dir), 1);
  free(csv);
  free(path);
  ut_tmpdir_remove(dir);
}
END_TEST

/* ------------------------------------------------ threads: every split */

static void assert_stores_equal(const char *a, const char *b, const char *ctx) {
  cs_store *sa = ut_open_ok(a, CS_VERIFY_FULL, ctx), *sb = ut_open_ok(b, CS_VERIFY_FULL, ctx);
  ut_assert_schema_equals(cs_store_schema(sb), cs_store_schema(sa), ctx);
  ck_assert_msg(cs_store_rows(sa) == cs_store_rows(sb), "%s: %llu rows, serial %llu", ctx,
                (unsigned long long)cs_store_rows(sb), (unsigned long long)cs_store_rows(sa));
  const cs_schema *sc = cs_store_schema(sa);
  for (uint64_t r = 0; r < cs_store_rows(sa); r++)
    for (uint32_t c = 0; c < sc->n_cols; c++) {
      ut_cell x, y;
      ut_store_cell(sa, r, c, &x);
      ut_store_cell(sb, r, c, &y);
      ck_assert_msg(ut_cell_equal(sc->cols[c].type, &x, &y), "%s: row %llu column %u differs", ctx,
                    (unsigned long long)r, c);
    }
  cs_store_close(sa);
  cs_store_close(sb);
}

/* The same input imported serially and with 2, 3 and 4 threads at every
** chunk size that splits it: records with quoted newlines (LF and CRLF),
** doubled quotes, a stray quote in an unquoted field (which fools the
** quote-parity guess, so the check and the serial retry run), ragged lines
** (rejects, whose lines must be the serial ones) and CRLF line ends. */
static void check_parallel_matches_serial(const char *text, bool skip, const char *what) {
  char *dir = ut_tmpdir();
  char *csv = ut_join(dir, "in.csv"), *serial = ut_join(dir, "serial.cst"), *par = ut_join(dir, "par.cst");
  ut_write_all(csv, text, strlen(text));
  cs_import_options opt = {.skip_errors = skip};
  cs_import_result want, got;
  cs_err want_err, err;
  cs_rc want_rc = cs_import_text(serial, csv, &opt, &want, &want_err);
  size_t n = strlen(text);
  for (uint32_t threads = 2; threads <= 4; threads++)
    for (uint32_t chunk = 1; 2 * chunk <= n; chunk++) {
      char ctx[96];
      snprintf(ctx, sizeof ctx, "%s, %u threads, %u-byte chunks", what, threads, chunk);
      opt.threads = threads;
      opt.chunk_bytes = chunk;
      unlink(par);
      cs_rc rc = cs_import_text(par, csv, &opt, &got, &err);
      ck_assert_msg(rc == want_rc, "%s: rc %d, serial %d (%s)", ctx, rc, want_rc, err.msg);
      if (rc != CS_OK) {
        ck_assert_msg(strcmp(err.msg, want_err.msg) == 0, "%s: '%s', serial '%s'", ctx, err.msg,
                      want_err.msg);
        ck_assert_msg(!ut_exists(par), "%s: a failed import left a store", ctx);
      } else {
        ck_assert_msg(got.rows == want.rows && got.rejected == want.rejected,
                      "%s: %llu rows %llu rejected, serial %llu %llu", ctx, (unsigned long long)got.rows,
                      (unsigned long long)got.rejected, (unsigned long long)want.rows,
                      (unsigned long long)want.rejected);
        ck_assert_uint_eq(got.n_rejects, want.n_rejects);
        for (size_t i = 0; i < got.n_rejects; i++)
          ck_assert_msg(got.rejects[i].line == want.rejects[i].line &&
                            strcmp(got.rejects[i].reason, want.rejects[i].reason) == 0,
                        "%s: reject %zu: line %llu '%s', serial line %llu '%s'", ctx, i,
                        (unsigned long long)got.rejects[i].line, got.rejects[i].reason,
                        (unsigned long long)want.rejects[i].line, want.rejects[i].reason);
        for (uint32_t c = 0; c < got.n_cols; c++) ck_assert_int_eq(got.cols[c].type, want.cols[c].type);
        assert_stores_equal(serial, par, ctx);
      }
      cs_import_result_free(&got);
    }
  cs_import_result_free(&want);
  free(csv);
  free(serial);
  free(par);
  ut_tmpdir_remove(dir);
}

START_TEST(parallel_matches_serial_at_every_split) {
  const char *quoted =
      "id,name,x\r\n1,\"multi\nline\",1.5\r\n2,\"say \"\"hi\"\"\r\nthere\",2\r\n3,plain,\r\n"
      "4,\"a,b\",4e2\r\n5,\"\",5\r\n6,\"\n\n\",6\r\n7,last,7\r\n";
  check_parallel_matches_serial(quoted, false, "quoted newlines");
  const char *ragged = "a,b\n1,\"x\ny\"\n2\n3,\"p,q\"\n4,5,6\n5,\"z\"\n\n6,w\n7,\"\"\"\"\n8,end";
  check_parallel_matches_serial(ragged, true, "ragged lines skipped");
  check_parallel_matches_serial(ragged, false, "ragged lines failing");
  const char *stray = "a,b\n1,ab\"c\n2,\"q\nr\"\n3,d\"e\"f\n4,\"s\"\n5,g\n";
  check_parallel_matches_serial(stray, false, "stray quotes");
  const char *cr_only = "a,b\r1,\"x\ry\"\r2,z\r3,w\r";
  check_parallel_matches_serial(cr_only, false, "CR line ends");
}
END_TEST

static Suite *import_suite(void) {
  Suite *s = suite_create("import");
  TCase *tc = tcase_create("import");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, tokenizer_edges_every_split);
  tcase_add_test(tc, tokenizer_random_every_split);
  tcase_add_test(tc, tokenizer_other_delimiter_and_quote);
  tcase_add_test(tc, delimiter_detection);
  tcase_add_test(tc, number_grammar);
  tcase_add_test(tc, numbers_round_like_strtod);
  tcase_add_test(tc, number_kind_agrees_with_parse);
  tcase_add_test(tc, utf8_check);
  tcase_add_test(tc, import_infers_and_writes);
  tcase_add_test(tc, import_stopped_leaves_nothing);
  tcase_add_test(tc, parallel_matches_serial_at_every_split);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return ut_run_suite(import_suite()); }
