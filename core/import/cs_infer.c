/*
** cs_infer.c - what a field of text is: an integer, a number, or text; and
** whether text is valid UTF-8.
**
** The number grammar is the one INSERT applies when text goes into a
** numeric column (ext/colstore_value.c, SQLite's numeric affinity), less
** the surrounding whitespace SQLite tolerates: a field with spaces around
** its digits is text here, because a CSV cell " 12" usually means the
** producer padded text, and an import must not guess.  So:
**
**     [+-]? digits [. digits?]? ([eE] [+-]? digits)?    or    [+-]? . digits (...)?
**
** An integer literal (no point, no exponent) that fits a signed 64-bit
** integer is an integer; `+1` is 1 and `-0` is 0.  Every other number is a
** double: `1e5`, `1.0`, and integers too large for INT64.  Hex (`0x10`),
** `NaN`, `inf`, `Infinity` are text, as INSERT finds them "not a number".
** A literal whose magnitude is beyond DBL_MAX (`1e999`) is a number that
** rounds to infinity, as INSERT stores it; -0.0 is stored as 0.0, as a
** native REAL column and INSERT store it.
**
** Doubles are correctly rounded.  Most CSV numbers have at most 15
** significant digits and a small exponent; for those the digits as an
** integer and the power of ten are both exact doubles, so one division or
** multiplication is one correct rounding (Clinger's fast path), with no
** library call.  Everything else goes to strtod_l in the C locale, which
** glibc rounds correctly for any length (and which no host's LC_NUMERIC can
** turn into a comma-decimal parser).
*/
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "cs_base_internal.h"
#include "cs_import_internal.h"

static const double exact_powers_of_ten[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                             1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                             1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static locale_t c_locale(void) {
  static locale_t loc;
  locale_t l = __atomic_load_n(&loc, __ATOMIC_ACQUIRE);
  if (l) return l;
  l = newlocale(LC_ALL_MASK, "C", (locale_t)0);
  locale_t expected = (locale_t)0;
  if (!__atomic_compare_exchange_n(&loc, &expected, l, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    freelocale(l);
    l = expected;
  }
  return l;
}

/* strtod wants a terminated string: a copy, on the heap past 255 bytes
** (false when that allocation fails). */
static bool slow_strtod(const uint8_t *s, size_t n, double *out) {
  char small[256];
  char *buf = n < sizeof small ? small : cs__mem_malloc(n + 1);
  if (!buf) return false;
  memcpy(buf, s, n);
  buf[n] = 0;
  locale_t loc = c_locale();
  *out = loc ? strtod_l(buf, NULL, loc) : strtod(buf, NULL);
  if (buf != small) cs__mem_free(buf);
  return true;
}

cs_num_kind cs_parse_number(const uint8_t *s, size_t n, int64_t *out_i, double *out_f) {
  size_t i = 0;
  bool negative = false;
  if (i < n && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  uint64_t mantissa = 0; /* the first 19 significant digits */
  int significant = 0;   /* significant digits seen (leading zeros not counted) */
  int dropped = 0;       /* integer-part digits past the 19 kept */
  int digits = 0, frac_digits_kept = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9') {
    unsigned d = s[i++] - '0';
    digits++;
    if (significant == 0 && d == 0) continue;
    if (significant < 19)
      mantissa = mantissa * 10 + d;
    else
      dropped++;
    significant++;
  }
  bool is_integer = true;
  if (i < n && s[i] == '.') {
    is_integer = false;
    i++;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      unsigned d = s[i++] - '0';
      digits++;
      if (significant == 0 && d == 0) {
        frac_digits_kept++; /* a leading zero after the point still scales */
        continue;
      }
      if (significant < 19) {
        mantissa = mantissa * 10 + d;
        frac_digits_kept++;
      }
      significant++;
    }
  }
  if (digits == 0) return CS_NUM_NONE;
  int64_t exponent = 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    is_integer = false;
    i++;
    bool exp_negative = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) exp_negative = s[i++] == '-';
    int exp_digits = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
      if (exponent < 100000) exponent = exponent * 10 + (s[i] - '0');
      i++, exp_digits++;
    }
    if (exp_digits == 0) return CS_NUM_NONE;
    if (exp_negative) exponent = -exponent;
  }
  if (i != n) return CS_NUM_NONE;
  if (is_integer && significant <= 19) {
    /* 19 digits fit a uint64; INT64's range is [-2^63, 2^63 - 1]. */
    if (!negative && mantissa <= (uint64_t)INT64_MAX) {
      *out_i = (int64_t)mantissa;
      return CS_NUM_INT;
    }
    if (negative && mantissa <= (uint64_t)INT64_MAX + 1) {
      *out_i = mantissa == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mantissa;
      return CS_NUM_INT;
    }
  }
  double d;
  int64_t scale = exponent + dropped - frac_digits_kept;
  if (significant <= 15 && scale >= -22 && scale <= 22) {
    d = (double)mantissa; /* exact: below 10^15 < 2^53 */
    d = scale < 0 ? d / exact_powers_of_ten[-scale] : d * exact_powers_of_ten[scale];
    if (negative) d = -d;
  } else {
    if (!slow_strtod(s, n, &d)) return CS_NUM_NOMEM;
  }
  if (d == 0.0) d = 0.0; /* -0.0 as INSERT stores it */
  *out_f = d;
  return CS_NUM_FLOAT;
}

bool cs_parse_short_decimal(const uint8_t *s, size_t n, double *out) {
  /* Clinger's fast path without cs_parse_number's bookkeeping: at most 15
  ** digits in all (leading zeros counted, so the integer is below 10^15 <
  ** 2^53 and exact) over an exact power of ten at most 10^15.  Two tight
  ** loops, before and after the point. */
  const uint8_t *p = s, *end = s + n;
  bool negative = false;
  if (p < end && (*p == '+' || *p == '-')) negative = *p++ == '-';
  if (end - p > 16) return false;
  uint64_t v = 0;
  unsigned d;
  const uint8_t *digits0 = p;
  while (p < end && (d = (unsigned)*p - '0') <= 9) v = v * 10 + d, p++;
  size_t digits = (size_t)(p - digits0), frac = 0;
  if (p < end) {
    if (*p++ != '.') return false;
    const uint8_t *frac0 = p;
    while (p < end && (d = (unsigned)*p - '0') <= 9) v = v * 10 + d, p++;
    if (p != end) return false;
    frac = (size_t)(p - frac0);
    digits += frac;
  }
  if (digits == 0 || digits > 15) return false;
  double x = (double)v;
  if (frac) x /= exact_powers_of_ten[frac];
  *out = negative && v != 0 ? -x : x; /* -0 is 0.0, as INSERT stores it */
  return true;
}

cs_num_kind cs_number_kind(const uint8_t *s, size_t n) {
  /* The grammar of cs_parse_number without computing the value: what pass
  ** one of an import needs; it allocates nothing. */
  size_t i = 0;
  if (i < n && (s[i] == '+' || s[i] == '-')) i++;
  size_t digits_start = i;
  while (i < n && s[i] >= '0' && s[i] <= '9') i++;
  size_t int_digits = i - digits_start;
  if (i == n) {
    if (int_digits == 0) return CS_NUM_NONE;
    if (int_digits <= 18) return CS_NUM_INT;
    /* Longer: INT64 when its significant digits are at most 18, or 19
    ** not past 2^63 - 1 (2^63 for a negative one); else a double. */
    size_t z = digits_start;
    while (z + 1 < n && s[z] == '0') z++;
    size_t significant = n - z;
    if (significant != 19) return significant < 19 ? CS_NUM_INT : CS_NUM_FLOAT;
    const char *limit = s[0] == '-' ? "9223372036854775808" : "9223372036854775807";
    return memcmp(s + z, limit, 19) <= 0 ? CS_NUM_INT : CS_NUM_FLOAT;
  }
  size_t frac_digits = 0;
  if (s[i] == '.') {
    i++;
    size_t f0 = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    frac_digits = i - f0;
  }
  if (int_digits + frac_digits == 0) return CS_NUM_NONE;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    size_t e0 = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    if (i == e0) return CS_NUM_NONE;
  }
  return i == n ? CS_NUM_FLOAT : CS_NUM_NONE;
}

/* Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past
** U+10FFFF.  ASCII runs go eight bytes at a time. */
bool cs_utf8_valid(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n) {
      uint64_t w;
      memcpy(&w, s + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    uint8_t b = s[i];
    if (b < 0x80) {
      i++;
      continue;
    }
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF)
      len = 2;
    else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + len > n) return false;
    if (s[i + 1] < lo || s[i + 1] > hi) return false;
    for (size_t k = 2; k < len; k++)
      if (s[i + k] < 0x80 || s[i + k] > 0xBF) return false;
    i += len;
  }
  return true;
}
