/* test_number.c - src/entity/number.c: an Edm.Double as text (entity_format_double). */
/* test_doubles goes through entity_render (render.c), which lays each double
 * out with entity_format_double: it states number.c's layout (ECMAScript's
 * Number::toString); its NaN and infinities, which render.c writes as
 * strings, came with it. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entity/entity.h"
#include "entity/entity_i.h"
#include "entity_util.h"
#include "tap.h"

/* A reproducible 64-bit generator (xorshift64*). */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* The significant digits of the number TEXT (positional or exponent
 * form) into OUT: its digits before any exponent, leading and trailing
 * zeros dropped ("0" for zero). */
static void sig_digits(const char *text, char out[40])
{
    size_t n = 0;

    for (; *text && *text != 'e'; text++)
        if (*text >= '0' && *text <= '9' && (n > 0 || *text != '0') && n < 39)
            out[n++] = *text;
    while (n > 0 && out[n - 1] == '0')
        n--;
    if (n == 0)
        out[n++] = '0';
    out[n] = '\0';
}

/* Does TEXT read back to D, sign of zero included? */
static int reads_back(const char *text, double d)
{
    double back = strtod(text, NULL);

    return back == d && !!signbit(back) == !!signbit(d);
}

/* Check entity_format_double(D) by its contract, not by its method: it
 * reads back to D, and its digits are those of the nearest decimal of the
 * fewest digits that reads back ("%.*e" for 1, 2, ... 17 digits). Returns
 * 1 when it holds; prints a diagnostic otherwise. */
static int shortest_holds(double d)
{
    char out[32], e[40], got[40], want[40];
    int k;

    entity_format_double(d, out);
    if (!reads_back(out, d)) {
        printf("# %a formatted as %s, which does not read back\n", d, out);
        return 0;
    }
    for (k = 1; k < 17; k++) {
        snprintf(e, sizeof(e), "%.*e", k - 1, d);
        if (reads_back(e, d))
            break;
    }
    snprintf(e, sizeof(e), "%.*e", k - 1, d);
    sig_digits(out, got);
    sig_digits(e, want);
    if (strcmp(got, want) != 0) {
        printf("# %a formatted as %s, but the shortest is %s\n", d, out, e);
        return 0;
    }
    return 1;
}

static void test_shortest_doubles(void)
{
    static const double edges[] = {
        0.0,
        -0.0,
        5e-324,
        -5e-324,
        DBL_MIN,
        DBL_MAX,
        -DBL_MAX,
        0.1,
        0.2,
        0.3,
        1.0 / 3,
        2.0 / 3,
        1e21,
        1e-7,
        123456789012345678.0,
        9007199254740993.0,
        2.2250738585072009e-308,
        4.9406564584124654e-324,
        1e23,
        8.41e21,
        5e-310,
    };
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    int bad = 0, n = 0;

    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++, n++)
        bad += !shortest_holds(edges[i]);
    for (int i = 0; i < 200000 && bad < 5; i++) {
        uint64_t bits = next_rand(&s);
        double d;

        memcpy(&d, &bits, sizeof(d));
        if (!isfinite(d))
            continue;
        bad += !shortest_holds(d);
        n++;
        /* decimals of few digits, the common case in tables */
        d = (double)(int64_t)(next_rand(&s) % 2000001 - 1000000);
        for (uint64_t k = next_rand(&s) % 12; k > 0; k--)
            d /= 10;
        bad += !shortest_holds(d);
        n++;
    }
    is_int(bad, 0,
           "%d doubles (edges, random bit patterns, short decimals) formatted "
           "shortest and reading back",
           n);
}

static void test_doubles(void)
{
    static const struct {
        const char *value, *want;
    } cases[] = {
        { "0.1", "0.1" },
        { "2.0", "2.0" },
        { "-2.5", "-2.5" },
        { "100.0", "100.0" },
        { "1e300", "1e+300" },
        { "1e21", "1e+21" },
        { "1e-7", "1e-07" },
        { "1e-6", "0.000001" },
        { "1.5e-6", "0.0000015" },
        { "1e20", "100000000000000000000.0" },
        { "1.2345678901234567e20", "123456789012345670000.0" },
        { "-1234.5", "-1234.5" },
        { "-0.0", "-0.0" },
        { "0.0", "0.0" },
        { "5e-324", "5e-324" },
        { "2.2250738585072014e-308", "2.2250738585072014e-308" },
        { "1.7976931348623157e308", "1.7976931348623157e+308" },
        { "0.30000000000000004", "0.30000000000000004" },
        { "123456789.125", "123456789.125" },
        { "9007199254740993.0", "9007199254740992.0" },
    };
    char want[128], *got;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(want, sizeof(want), "\"v\": %s|\"v@odata.type\": \"Edm.Double\"", cases[i].want);
        got = render_value(cases[i].value, NULL);
        is_str(got, want, "double %s", cases[i].value);
        free(got);
    }
    got = render_value("\"NaN\"", "Edm.Double");
    is_str(got, "\"v\": \"NaN\"|\"v@odata.type\": \"Edm.Double\"", "double NaN");
    free(got);
    got = render_value("\"Infinity\"", "Edm.Double");
    is_str(got, "\"v\": \"Infinity\"|\"v@odata.type\": \"Edm.Double\"", "double Infinity");
    free(got);
    got = render_value("\"-Infinity\"", "Edm.Double");
    is_str(got, "\"v\": \"-Infinity\"|\"v@odata.type\": \"Edm.Double\"", "double -Infinity");
    free(got);
}

int main(void)
{
    test_shortest_doubles();
    test_doubles();
    return done_testing();
}
