/* test_edmtime.c - src/entity/edmtime.c: Edm.DateTime spellings, canonical UTC form, instant. */
/* test_datetime_canonical, test_datetime_refused and
 * test_datetime_errors_and_roundtrip go through entity_parse and
 * entity_render (parse.c, render.c, check.c) too: they state edmtime's
 * contract, that the form sent and the form shown are the canonical one and
 * a refusal says why. The calendar oracle is the test's own (H. Hinnant's). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "entity/entity.h"
#include "entity_util.h"
#include "tap.h"

/* xorshift64*: a fixed-seed PRNG so failures are reproducible. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static void test_datetime(void)
{
    static const struct {
        const char *s;
        long long sec;
        long nsec;
    } good[] = {
        { "2020-01-02T03:04:05Z", 1577934245LL, 0 },
        { "2020-01-02T03:04:05+00:00", 1577934245LL, 0 },
        { "2026-11-22T08:26:34.9118804Z", 1795335994LL, 911880400 },
        { "2026-11-22T08:26:34.5Z", 1795335994LL, 500000000 },
        { "0001-01-01T00:00:00Z", -62135596800LL, 0 },
        { "2024-02-29T00:00:00Z", 1709164800LL, 0 },
        { "1969-12-31T23:59:59Z", -1LL, 0 },
        { "2020-01-02t03:04:05z", 1577934245LL, 0 },
        { "2020-01-02T04:04:05+01:00", 1577934245LL, 0 },
        { "2020-01-01T21:34:05.25-05:30", 1577934245LL, 250000000 },
        { "2020-01-02T03:04:05.123456700Z", 1577934245LL, 123456700 },
        { "9999-12-31T23:59:59.9999999Z", 253402300799LL, 999999900 },
    };
    static const char *bad[] = {
        "",
        "2020-01-02",
        "2020-01-02T03:04:05",
        "2020-01-02 03:04:05Z",
        "2020-1-02T03:04:05Z",
        "2020-02-30T00:00:00Z",
        "2021-02-29T00:00:00Z",
        "2020-01-02T24:00:00Z",
        "2020-01-02T03:60:00Z",
        "2020-01-02T03:04:60Z",
        "2020-01-02T03:04:05.Z",
        "2020-01-02T03:04:05.12345678Z",
        "2020-01-02T03:04:05+0100",
        "2020-01-02T03:04:05Zjunk",
        "0000-01-01T00:00:00Z",
        "2020-00-10T00:00:00Z",
        "0001-01-01T00:30:00+01:00",
        "9999-12-31T23:30:00-01:00",
    };
    struct timespec ts;

    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        int rc = entity_parse_datetime(good[i].s, &ts);

        ok(rc == 0 && ts.tv_sec == good[i].sec && ts.tv_nsec == good[i].nsec, "datetime %s",
           good[i].s);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        is_int(entity_parse_datetime(bad[i], &ts), -EINVAL, "datetime rejects '%s'", bad[i]);
}

/* Parse {"When": VALUE, "When@odata.type": "Edm.DateTime"}: the DateTime
 * string sent on the wire (malloc'd), or NULL with *rc_out and ERR set. */
static char *parse_datetime_value(const char *value_json, int *rc_out, struct entity_error *err)
{
    char text[256];
    const char *type;
    const json_t *v;
    char *out = NULL;
    json_t *w;

    snprintf(text, sizeof(text), "{\"When\": %s, \"When@odata.type\": \"Edm.DateTime\"}",
             value_json);
    w = parse_text(text, rc_out, err);
    v = json_object_get(w, "When");
    type = json_string_value(json_object_get(w, "When@odata.type"));
    if (*rc_out == 0 && json_is_string(v) && type && strcmp(type, "Edm.DateTime") == 0 &&
        json_object_size(w) == 2)
        out = strdup(json_string_value(v));
    json_decref(w);
    return out;
}

/* Every accepted spelling: the canonical UTC form sent (entity_parse), shown
 * in the file (entity_render of a wire value) and returned by
 * entity_datetime_canonical. */
static void test_datetime_canonical(void)
{
    static const struct {
        const char *in, *want, *label;
    } cases[] = {
        { "2020-01-02T03:04:05Z", "2020-01-02T03:04:05Z", "Z" },
        { "2020-01-02T03:04:05+00:00", "2020-01-02T03:04:05Z", "+00:00" },
        { "2020-01-02T03:04:05-00:00", "2020-01-02T03:04:05Z", "-00:00" },
        { "2020-01-02t03:04:05z", "2020-01-02T03:04:05Z", "lower-case t and z" },
        { "2020-01-02T03:04:05+05:30", "2020-01-01T21:34:05Z", "+05:30 back over midnight" },
        { "2020-01-02T20:00:00-08:00", "2020-01-03T04:00:00Z", "-08:00 over midnight" },
        { "2020-01-01T02:00:00+05:30", "2019-12-31T20:30:00Z", "back over the new year" },
        { "2019-12-31T20:00:00-08:00", "2020-01-01T04:00:00Z", "over the new year" },
        { "2020-04-30T23:59:59-00:01", "2020-05-01T00:00:59Z", "over a 30-day month end" },
        { "2020-02-28T23:30:00-01:00", "2020-02-29T00:30:00Z", "into Feb 29 of a leap year" },
        { "2021-02-28T23:30:00-01:00", "2021-03-01T00:30:00Z", "Feb 28 to Mar 1, common year" },
        { "2020-03-01T00:30:00+01:00", "2020-02-29T23:30:00Z", "back into Feb 29" },
        { "2100-03-01T00:30:00+01:00", "2100-02-28T23:30:00Z", "2100 is not a leap year" },
        { "2000-03-01T00:30:00+01:00", "2000-02-29T23:30:00Z", "2000 is a leap year" },
        { "2024-02-29T12:00:00+14:00", "2024-02-28T22:00:00Z", "+14:00" },
        { "2020-06-15T12:00:00+23:59", "2020-06-14T12:01:00Z", "largest offset" },
        { "2020-06-15T12:00:00-23:59", "2020-06-16T11:59:00Z", "smallest offset" },
        { "1970-01-01T00:59:59+01:00", "1969-12-31T23:59:59Z", "to the second before the epoch" },
        { "1969-12-31T23:59:59Z", "1969-12-31T23:59:59Z", "the second before the epoch" },
        { "1601-01-01T00:00:00Z", "1601-01-01T00:00:00Z", "Windows epoch" },
        { "0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "first instant" },
        { "0001-01-01T05:00:00+04:59", "0001-01-01T00:01:00Z", "offset down to year 0001" },
        { "9999-12-31T23:59:59.9999999Z", "9999-12-31T23:59:59.9999999Z", "last instant" },
        { "9999-12-31T20:00:00-03:59", "9999-12-31T23:59:00Z", "offset up to year 9999" },
        { "2020-01-02T03:04:05.1Z", "2020-01-02T03:04:05.1Z", "1 fraction digit" },
        { "2020-01-02T03:04:05.12Z", "2020-01-02T03:04:05.12Z", "2 fraction digits" },
        { "2020-01-02T03:04:05.123Z", "2020-01-02T03:04:05.123Z", "3 fraction digits" },
        { "2020-01-02T03:04:05.1234Z", "2020-01-02T03:04:05.1234Z", "4 fraction digits" },
        { "2020-01-02T03:04:05.12345Z", "2020-01-02T03:04:05.12345Z", "5 fraction digits" },
        { "2020-01-02T03:04:05.123456Z", "2020-01-02T03:04:05.123456Z", "6 fraction digits" },
        { "2020-01-02T03:04:05.1234567Z", "2020-01-02T03:04:05.1234567Z", "7 fraction digits" },
        { "2020-01-02T03:04:05.000000Z", "2020-01-02T03:04:05.000000Z",
          "zero fraction kept as written (the SDK's form)" },
        { "2020-01-02T03:04:05.5000000Z", "2020-01-02T03:04:05.5000000Z", "trailing zeros kept" },
        { "2020-01-02T03:04:05.12345670Z", "2020-01-02T03:04:05.1234567Z", "8th digit 0 dropped" },
        { "2020-01-02T03:04:05.123456700Z", "2020-01-02T03:04:05.1234567Z",
          "9 digits ending in 00 (nanoseconds)" },
        { "2020-01-02T03:04:05.0000000000Z", "2020-01-02T03:04:05.0000000Z", "10 zero digits" },
        { "2020-01-02T03:04:05.1234567+05:30", "2020-01-01T21:34:05.1234567Z",
          "fraction with an offset" },
        { "2020-01-02T03:04:05.9-00:30", "2020-01-02T03:34:05.9Z", "fraction with -00:30" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[128], canon[ENTITY_DATETIME_SIZE] = "", want_line[160], *got, *line;
        const char *why = "";
        struct entity_error err;
        int rc;

        snprintf(json, sizeof(json), "\"%s\"", cases[i].in);
        got = parse_datetime_value(json, &rc, &err);
        is_str(got, cases[i].want, "parse DateTime %s (%s)%s%s", cases[i].in, cases[i].label,
               rc ? ": " : "", rc ? err.text : "");
        free(got);
        snprintf(want_line, sizeof(want_line), "\"v\": \"%s\"|\"v@odata.type\": \"Edm.DateTime\"",
                 cases[i].want);
        line = render_value(json, "Edm.DateTime");
        is_str(line, want_line, "  render shows it as %s", cases[i].want);
        free(line);
        rc = entity_datetime_canonical(cases[i].in, canon, &why);
        ok(rc == 0 && strcmp(canon, cases[i].want) == 0,
           "  entity_datetime_canonical gives %s (rc %d, '%s')", canon, rc, rc ? why : "");
    }
}

/* Every refused spelling: EINVAL, no wire object, the reason in the text. */
static void test_datetime_refused(void)
{
    static const struct {
        const char *json, *why;
    } cases[] = {
        { "\"2020-01-02T03:04:05\"", "no time zone" },
        { "\"2020-01-02T03:04:05.123\"", "no time zone" },
        { "\"2020-01-02\"", "wrong layout" },
        { "\"\"", "wrong layout" },
        { "\"yesterday\"", "wrong layout" },
        { "\"2020-01-02 03:04:05Z\"", "wrong layout" },
        { "\"2020-1-02T03:04:05Z\"", "wrong layout" },
        { "\"2020-01-02T3:04:05Z\"", "wrong layout" },
        { "\"2020-01-02T03:04Z\"", "wrong layout" },
        { "\"20200102T030405Z\"", "wrong layout" },
        { "\"+2020-01-02T03:04:05Z\"", "wrong layout" },
        { "\"12020-01-02T03:04:05Z\"", "wrong layout" },
        { "\"2020-01-02T03:04:05.Z\"", "no digit after the '.'" },
        { "\"2020-01-02T03:04:05,5Z\"", "bad time zone" },
        { "\"2020-01-02T03:04:05.12345678Z\"", "more than 7 fraction digits" },
        { "\"2020-01-02T03:04:05.123456789Z\"", "more than 7 fraction digits" },
        { "\"2020-01-02T03:04:05.00000001Z\"", "more than 7 fraction digits" },
        { "\"2020-01-02T03:04:05+0530\"", "bad time zone" },
        { "\"2020-01-02T03:04:05+05\"", "bad time zone" },
        { "\"2020-01-02T03:04:05+5:30\"", "bad time zone" },
        { "\"2020-01-02T03:04:05 Z\"", "bad time zone" },
        { "\"2020-01-02T03:04:05Z \"", "bad time zone" },
        { "\"2020-01-02T03:04:05UTC\"", "bad time zone" },
        { "\"2020-01-02T03:04:05GMT+1\"", "bad time zone" },
        { "\"2020-01-02T03:04:05Zjunk\"", "bad time zone" },
        { "\"2020-01-02T03:04:05+00:00Z\"", "bad time zone" },
        { "\"2020-01-02T03:04:05+24:00\"", "offset beyond 23:59" },
        { "\"2020-01-02T03:04:05-05:60\"", "offset beyond 23:59" },
        { "\"2020-02-30T00:00:00Z\"", "no such date" },
        { "\"2021-02-29T00:00:00Z\"", "no such date" },
        { "\"2100-02-29T00:00:00Z\"", "no such date" },
        { "\"2020-04-31T00:00:00Z\"", "no such date" },
        { "\"2020-13-01T00:00:00Z\"", "no such date" },
        { "\"2020-00-10T00:00:00Z\"", "no such date" },
        { "\"2020-01-00T00:00:00Z\"", "no such date" },
        { "\"2020-01-02T24:00:00Z\"", "no such time of day" },
        { "\"2020-01-02T03:60:00Z\"", "no such time of day" },
        { "\"2016-12-31T23:59:60Z\"", "no such time of day" },
        { "\"0000-01-01T00:00:00Z\"", "year 0000" },
        { "\"0000-12-31T23:00:00-01:00\"", "year 0000" },
        { "\"0001-01-01T00:30:00+01:00\"", "year outside 0001-9999 once in UTC" },
        { "\"9999-12-31T23:30:00-01:00\"", "year outside 0001-9999 once in UTC" },
        { "\"2020-01-02T03:04:05Z\\u0000\"", "a NUL character" },
        { "1577934245", "not a string" },
        { "true", "not a string" },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct entity_error err;
        int rc;
        char *got = parse_datetime_value(cases[i].json, &rc, &err);

        is_int(rc, -EINVAL, "DateTime %s refused", cases[i].json);
        ok(got == NULL && strstr(err.text, cases[i].why) != NULL &&
               strstr(err.text, "expected YYYY-MM-DDThh:mm:ss[.fffffff] then Z or +hh:mm") !=
                   NULL &&
               strcmp(err.property, "When") == 0 && err.line == 1,
           "  reason '%s' and the expected spelling: %s", cases[i].why, err.text);
        free(got);
    }
}

/* The exact error text, render's handling of bad wire values, round trips. */
static void test_datetime_errors_and_roundtrip(void)
{
    static const char *wires[] = {
        ("{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"a\":\"2020-01-02T03:04:05+05:30\","
         "\"a@odata.type\":\"Edm.DateTime\",\"b\":\"2020-01-02T03:04:05.000000Z\","
         "\"b@odata.type\":\"Edm.DateTime\",\"c\":\"2020-01-02t03:04:05.1234567-08:00\","
         "\"c@odata.type\":\"Edm.DateTime\"}"),
    };
    const char *why = NULL;
    char canon[ENTITY_DATETIME_SIZE];
    struct entity_error err;
    char *out;
    int rc;

    parse_fails("{\n  \"x\": 1,\n  \"When\": \"2020-02-30T00:00:00Z\",\n"
                "  \"When@odata.type\": \"Edm.DateTime\"\n}\n",
                -EINVAL, 3,
                "property 'When': value \"2020-02-30T00:00:00Z\" is not an Edm.DateTime "
                "(no such date); expected YYYY-MM-DDThh:mm:ss[.fffffff] then Z or +hh:mm",
                "DateTime Feb 30: exact reason");
    out = render_text("{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"v\":\"2020-01-02T03:04:05\","
                      "\"v@odata.type\":\"Edm.DateTime\"}",
                      &rc, &err);
    is_int(rc, -EINVAL, "render refuses a DateTime without a time zone");
    ok(out == NULL && strstr(err.text, "no time zone") != NULL, "  reason: %s", err.text);
    free(out);
    is_int(entity_datetime_canonical("2020-02-30T00:00:00Z", canon, NULL), -EINVAL,
           "entity_datetime_canonical: WHY may be NULL");
    is_int(entity_datetime_canonical("2020-02-30T00:00:00Z", canon, &why), -EINVAL,
           "entity_datetime_canonical refuses Feb 30");
    is_str(why, "no such date", "  and says why");
    for (size_t i = 0; i < sizeof(wires) / sizeof(wires[0]); i++) {
        json_t *w = json_loads(wires[i], 0, NULL);

        ok(w && roundtrips(w, &err), "DateTime spellings on the wire round-trip (%zu)", i);
        json_decref(w);
    }
}

/* Days since 1970-01-01 of Y-M-D in the proleptic Gregorian calendar, and
 * back (H. Hinnant's algorithms): an oracle independent of timegm. */
static long long days_from_civil(long long y, int m, int d)
{
    long long era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(long long z, int *y, int *m, int *d)
{
    long long era, doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = z - era * 146097;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

/* Random valid dates with random offsets and fractions: the canonical form
 * matches the oracle, and entity_parse_datetime agrees on the instant. */
static void test_datetime_random(void)
{
    static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    uint64_t s = 0xDA7E;
    int good = 0, n = 3000;

    for (int i = 0; i < n; i++) {
        int y = 1 + (int)(rng_next(&s) % 9999), mo = 1 + (int)(rng_next(&s) % 12);
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        int d = 1 + (int)(rng_next(&s) % (uint64_t)(mdays[mo - 1] + (mo == 2 && leap)));
        int h = (int)(rng_next(&s) % 24), mi = (int)(rng_next(&s) % 60);
        int sec = (int)(rng_next(&s) % 60), off = (int)(rng_next(&s) % (2 * 1439 + 1)) - 1439;
        int nfrac = (int)(rng_next(&s) % 8), uy, um, ud;
        char in[64], want[64], frac[9] = "", got[ENTITY_DATETIME_SIZE] = "";
        long long t, ut;
        struct timespec ts, ts2;

        for (int k = 0; k < nfrac; k++)
            frac[k] = (char)('0' + rng_next(&s) % 10);
        frac[nfrac] = '\0';
        snprintf(in, sizeof(in), "%04d-%02d-%02dT%02d:%02d:%02d%s%s%c%02d:%02d", y, mo, d, h, mi,
                 sec, nfrac ? "." : "", frac, off < 0 ? '-' : '+', abs(off) / 60, abs(off) % 60);
        t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
        ut = t - off * 60LL;
        civil_from_days(ut >= 0 ? ut / 86400 : (ut - 86399) / 86400, &uy, &um, &ud);
        ut -= (ut >= 0 ? ut / 86400 : (ut - 86399) / 86400) * 86400;
        snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d%s%sZ", uy, um, ud,
                 (int)(ut / 3600), (int)(ut / 60 % 60), (int)(ut % 60), nfrac ? "." : "", frac);
        if (uy < 1 || uy > 9999) {
            if (entity_datetime_canonical(in, got, NULL) == -EINVAL)
                good++;
            else
                printf("# %s: want a refusal (year %d), got %s\n", in, uy, got);
            continue;
        }
        if (entity_datetime_canonical(in, got, NULL) == 0 && strcmp(got, want) == 0 &&
            entity_parse_datetime(in, &ts) == 0 && entity_parse_datetime(got, &ts2) == 0 &&
            ts.tv_sec == ts2.tv_sec && ts.tv_nsec == ts2.tv_nsec && ts.tv_sec == t - off * 60LL)
            good++;
        else
            printf("# %s: got '%s', want '%s'\n", in, got, want);
    }
    is_int(good, n, "%d random DateTimes with offsets normalise like the oracle", n);
}

int main(void)
{
    test_datetime();
    test_datetime_canonical();
    test_datetime_refused();
    test_datetime_errors_and_roundtrip();
    test_datetime_random();
    return done_testing();
}
