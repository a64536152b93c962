/* entity/number.c - an Edm.Double as text: the shortest decimal that reads
 * back to the same double, laid out as ECMAScript's Number::toString (the
 * form both the file text and the wire use). A leaf of entity/. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity_i.h"

/* Does the "%.*e" text E read back to D, sign of zero included? */
static int reads_back(const char *e, double d)
{
    double back = strtod(e, NULL);

    return back == d && !!signbit(back) == !!signbit(d);
}

/* Put in E_FORM (32 bytes) finite D in "%.*e" form with the fewest
 * significant digits (1..17) that read back to D. A normal double holds
 * 15 digits (its half unit in the last place is below half a unit of the
 * 15th digit), so if D's 15-digit form reads back, that form without its
 * trailing zeros is the shortest (a shorter one would be the nearest
 * 15-digit form too); else 16 digits, else 17, which always do. Two or
 * three conversions instead of one per digit count. Subnormal numbers
 * hold fewer digits: those try every count. */
static void shortest_e_form(double d, char e_form[32])
{
    const char *mant_end;
    int prec, nd = 0;

    if (d != 0 && fabs(d) < DBL_MIN) {
        for (prec = 1; prec < 17; prec++) {
            snprintf(e_form, 32, "%.*e", prec - 1, d);
            if (reads_back(e_form, d))
                return;
        }
        snprintf(e_form, 32, "%.16e", d);
        return;
    }
    snprintf(e_form, 32, "%.14e", d);
    if (reads_back(e_form, d)) {
        mant_end = strchr(e_form, 'e');
        for (const char *p = e_form; p < mant_end; p++)
            if (*p >= '0' && *p <= '9')
                nd++;
        for (const char *p = mant_end - 1; nd > 1 && *p == '0'; p--)
            nd--;
        if (nd < 15)
            snprintf(e_form, 32, "%.*e", nd - 1, d);
        return;
    }
    snprintf(e_form, 32, "%.15e", d);
    if (!reads_back(e_form, d))
        snprintf(e_form, 32, "%.16e", d);
}

/* Format finite D as the shortest decimal that reads back to the same double
 * (sign of zero included): the fewest significant digits (1..17) for which
 * "%.*e" round-trips, then laid out like ECMAScript's Number::toString:
 * positional for 1e-7 < |D| < 1e21, always with a '.' ("2.0", "100.0",
 * "0.000001"), else C's exponent form ("1e+21", "1e-07", "5e-324").
 * OUT must hold 32 bytes. */
void entity_format_double(double d, char out[32])
{
    char e_form[32], digits[24];
    const char *p;
    int exp10, nd = 0;
    size_t o = 0;

    shortest_e_form(d, e_form);
    p = e_form + (e_form[0] == '-');
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    exp10 = *p ? atoi(p + 1) : 0;
    if (exp10 <= -7 || exp10 >= 21) {
        memcpy(out, e_form, strlen(e_form) + 1);
        return;
    }
    if (signbit(d))
        out[o++] = '-';
    if (exp10 < 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = 0; i < -exp10 - 1; i++)
            out[o++] = '0';
        memcpy(out + o, digits, (size_t)nd);
        o += (size_t)nd;
    } else if (exp10 >= nd - 1) {
        memcpy(out + o, digits, (size_t)nd);
        o += (size_t)nd;
        for (int i = 0; i < exp10 - (nd - 1); i++)
            out[o++] = '0';
        out[o++] = '.';
        out[o++] = '0';
    } else {
        memcpy(out + o, digits, (size_t)exp10 + 1);
        o += (size_t)exp10 + 1;
        out[o++] = '.';
        memcpy(out + o, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
        o += (size_t)(nd - exp10 - 1);
    }
    out[o] = '\0';
}
