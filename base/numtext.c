/* Shortest decimal text of doubles and floats (numtext.h).
 *
 * The fast path computes the d significant digits of |v| that printf would write (correctly
 * rounded) as an integer m = round(|v| * 10^s), s = d - 1 - e, with one multiplication or
 * division by an exact power of ten (10^0 .. 10^22), and proves the rounding with fma: the exact
 * remainder |v| * 10^s - m must be below one half by a margin, else the product was too close to a
 * tie and the search with printf decides. Reading the digits back, m / 10^s (or m * 10^-s) has two
 * exact operands (m < 2^53), so IEEE division gives the correctly rounded double, which is what
 * strtod gives for the same decimal. */
#include "base/numtext.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The fast path's limits: at most 15 digits (m exact and far from 2^53), and magnitudes whose
 * scale 10^s stays within the exact powers. */
enum { FAST_DIGITS = 15 };

/* The d significant digits of a > 0, correctly rounded as "%.*e" rounds them: *m in [10^(d-1),
 * 10^d) and the exponent *e that "%.*e" writes (a ~ m * 10^(*e - d + 1)). *e0 is a guess of the
 * decimal exponent of a itself (10^e0 <= a < 10^(e0+1)) on entry and that exponent on success;
 * *e is *e0, or *e0 + 1 where rounding carries (9.96 -> 1.0e+01). False when the digits are not
 * proven. */
static bool round_digits(double a, int d, int *e0, uint64_t *m, int *e)
{
    for (int tries = 0; tries < 3; tries++) {
        int s = d - 1 - *e0;
        if (s > 22 || s < -22)
            return false;
        double r, rem, half;
        if (s >= 0) {
            double p = pow10_exact[s];
            r = nearbyint(a * p);
            rem = fma(a, p, -r); /* a * 10^s - r, rounded once */
            half = 0.5;
        } else {
            double q = pow10_exact[-s];
            r = nearbyint(a / q);
            rem = fma(-r, q, a); /* (a * 10^s - r) * q, rounded once */
            half = 0.5 * q;
        }
        if (!(fabs(rem) < half * (1.0 - 1e-9)))
            return false; /* near a tie, or r is not the nearest integer */
        double lo = pow10_exact[d - 1], hi = pow10_exact[d];
        if (r < lo || (r == lo && rem < 0)) { /* a < 10^e0 */
            (*e0)--;
            continue;
        }
        if (r > hi || (r == hi && rem >= 0)) { /* a >= 10^(e0+1) */
            (*e0)++;
            continue;
        }
        if (r == hi) { /* 10^(e0+1) rounded down to a's d digits: a carry */
            *m = (uint64_t)lo;
            *e = *e0 + 1;
        } else {
            *m = (uint64_t)r;
            *e = *e0;
        }
        return true;
    }
    return false;
}

/* *out = the double that strtod reads from the decimal m * 10^(e - d + 1); false when the scale
 * is past the exact powers (a rounding carry can take it one beyond round_digits' bound), where
 * the caller's printf search decides. */
static bool decimal_value(uint64_t m, int d, int e, double *out)
{
    int s = d - 1 - e;
    if (s > 22 || s < -22)
        return false;
    *out = s >= 0 ? (double)m / pow10_exact[s] : (double)m * pow10_exact[-s];
    return true;
}

static int first_exponent(double a)
{
    return (int)floor(log10(a));
}

/* ---- doubles ------------------------------------------------------------------------------- */

/* The printf search, from `digits` significant digits on (the digits before it were proven not to
 * read back). */
static void search_double(double v, int digits, char *buf, size_t size)
{
    for (; digits < 17; digits++) {
        snprintf(buf, size, "%.*e", digits - 1, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    snprintf(buf, size, "%.*e", digits - 1, v);
    int exponent = atoi(strchr(buf, 'e') + 1);
    if (exponent >= -4 && exponent < 16)
        snprintf(buf, size, "%.*f", digits - 1 - exponent > 0 ? digits - 1 - exponent : 0, v);
}

/* m's d digits, as "%.*e" and "%.*f" place them. */
static size_t write_digits(char *p, uint64_t m, int d)
{
    for (int i = d - 1; i >= 0; i--) {
        p[i] = (char)('0' + m % 10);
        m /= 10;
    }
    return (size_t)d;
}

static size_t write_decimal(char *buf, bool negative, uint64_t m, int d, int e, double v)
{
    char digits[24];
    write_digits(digits, m, d);
    char *p = buf;
    if (negative)
        *p++ = '-';
    if (e >= -4 && e < 16) {
        if (e < 0) { /* 0.000ddd */
            *p++ = '0';
            *p++ = '.';
            for (int i = -1; i > e; i--)
                *p++ = '0';
            memcpy(p, digits, (size_t)d);
            p += d;
        } else if (d - 1 - e > 0) { /* ddd.ddd */
            memcpy(p, digits, (size_t)e + 1);
            p += e + 1;
            *p++ = '.';
            memcpy(p, digits + e + 1, (size_t)(d - 1 - e));
            p += d - 1 - e;
        } else { /* an integer: "%.0f" writes v's own digits, which are m's padded with zeros
                  * (a value below 10^16 whose shortest digits stop before the units is one) */
            p += snprintf(p, 24, "%llu", (unsigned long long)fabs(v));
        }
    } else {
        *p++ = digits[0];
        if (d > 1) {
            *p++ = '.';
            memcpy(p, digits + 1, (size_t)d - 1);
            p += d - 1;
        }
        *p++ = 'e';
        *p++ = e < 0 ? '-' : '+';
        int ae = e < 0 ? -e : e;
        if (ae >= 100)
            *p++ = (char)('0' + ae / 100);
        *p++ = (char)('0' + ae / 10 % 10);
        *p++ = (char)('0' + ae % 10);
    }
    *p = '\0';
    return (size_t)(p - buf);
}

size_t numtext_double(double v, bool as_float, char buf[NUMTEXT_SIZE])
{
    size_t n;
    if (isnan(v)) {
        n = (size_t)snprintf(buf, NUMTEXT_SIZE, "nan");
        return n;
    }
    if (isinf(v)) {
        n = (size_t)snprintf(buf, NUMTEXT_SIZE, v < 0 ? "-inf" : "inf");
        return n;
    }
    int digits = 1;
    bool done = false;
    if (v == 0) {
        n = (size_t)snprintf(buf, NUMTEXT_SIZE, signbit(v) ? "-0" : "0");
        done = true;
    } else {
        double a = fabs(v);
        int e0 = first_exponent(a), e;
        for (; digits <= FAST_DIGITS; digits++) {
            uint64_t m;
            double back;
            if (!round_digits(a, digits, &e0, &m, &e) || !decimal_value(m, digits, e, &back))
                break;
            if (back == a) {
                n = write_decimal(buf, v < 0, m, digits, e, v);
                done = true;
                break;
            }
        }
    }
    if (!done) {
        search_double(v, digits, buf, NUMTEXT_SIZE);
        n = strlen(buf);
    }
    if (as_float && !strpbrk(buf, ".e")) {
        memcpy(buf + n, ".0", 3);
        n += 2;
    }
    return n;
}

/* ---- floats -------------------------------------------------------------------------------- */

double numtext_float_as_double(float f)
{
    if (!isfinite(f) || f == 0.0f)
        return (double)f;
    double a = fabs((double)f);
    int e0 = first_exponent(a), e;
    int digits = 1;
    for (; digits <= 9; digits++) {
        uint64_t m;
        double d;
        if (!round_digits(a, digits, &e0, &m, &e) || !decimal_value(m, digits, e, &d))
            break;
        if (f < 0)
            d = -d;
        if ((float)d == f)
            return d;
    }
    char buf[32];
    for (; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, (double)f);
        double d = strtod(buf, NULL);
        if ((float)d == f) /* through the double, as export and the executor convert it */
            return d;
    }
    return (double)f;
}
