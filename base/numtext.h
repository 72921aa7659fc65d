/* Numbers as text without printf/strtod round trips: the shortest decimal that reads back as the
 * same double (the graph printer) and the shortest decimal of a float (ONNX import). Each gives
 * exactly the text, or the double, that the printf/strtod search it replaces gives; the search is
 * still the fallback where the fast path cannot prove its digits (very large or small magnitudes,
 * a product too close to a rounding tie, more than 15 digits). */
#ifndef FUSERULE_BASE_NUMTEXT_H
#define FUSERULE_BASE_NUMTEXT_H

#include <stdbool.h>
#include <stddef.h>

enum { NUMTEXT_SIZE = 40 };

/* The shortest text that reads back as v, as Python's repr writes it: the fewest significant
 * digits that round-trip, fixed notation for decimal exponents from -4 to 15, scientific beyond
 * (10.0, 0.0001, 1e-05, 1e+20); nan, inf, -inf. With as_float an integral value keeps ".0". The
 * same bytes as the search with snprintf("%.*e") and strtod. Returns the text's length. */
size_t numtext_double(double v, bool as_float, char buf[NUMTEXT_SIZE]);

/* The double of the shortest decimal (at most 9 significant digits, as "%.*g" writes it) that
 * converts back to f through the double; (double)f when none does, for non-finite values and
 * zeros. */
double numtext_float_as_double(float f);

#endif
