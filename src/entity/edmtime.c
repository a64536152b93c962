/* entity/edmtime.c - Edm.DateTime values: the spellings accepted, normalised to the
 * canonical UTC form (entity_datetime_canonical, entity_parse_datetime). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "entity/entity.h"

/* A DateTime as written, split by dt_parse(). */
struct dt_fields {
    struct tm tm; /* date and time as written (local to OFFSET) */
    int offset;   /* the time zone, minutes east of UTC */
    char frac[8]; /* the fraction digits kept (0 to 7), NUL-terminated */
};

/* Read exactly N decimal digits at *P into *val and advance *P. */
static int read_digits(const char **p, int n, int *val)
{
    *val = 0;
    for (int i = 0; i < n; i++) {
        if ((*p)[i] < '0' || (*p)[i] > '9')
            return -EINVAL;
        *val = *val * 10 + ((*p)[i] - '0');
    }
    *p += n;
    return 0;
}

/* Read one of the characters CHARS at *P and advance *P. */
static int expect(const char **p, const char *chars)
{
    if (**p == '\0' || !strchr(chars, **p))
        return -EINVAL;
    (*p)++;
    return 0;
}

/* Scan "YYYY-MM-DDThh:mm:ss" at *P into TM (not range-checked), advance *P. */
static int dt_scan_fields(const char **p, struct tm *tm)
{
    int y, mo;

    if (read_digits(p, 4, &y) || expect(p, "-") || read_digits(p, 2, &mo) || expect(p, "-") ||
        read_digits(p, 2, &tm->tm_mday) || expect(p, "Tt") || read_digits(p, 2, &tm->tm_hour) ||
        expect(p, ":") || read_digits(p, 2, &tm->tm_min) || expect(p, ":") ||
        read_digits(p, 2, &tm->tm_sec))
        return -EINVAL;
    tm->tm_year = y - 1900;
    tm->tm_mon = mo - 1;
    return 0;
}

/* Scan an optional ".digits" at *P into FRAC (at most 7 digits kept; any
 * further digit must be '0' and is dropped), advance *P. Returns 0 or
 * -EINVAL with *why. */
static int dt_scan_fraction(const char **p, char frac[8], const char **why)
{
    const char *q = *p;
    size_t k = 0;

    frac[0] = '\0';
    if (*q != '.')
        return 0;
    if (*++q < '0' || *q > '9') {
        *why = "no digit after the '.'";
        return -EINVAL;
    }
    for (; *q >= '0' && *q <= '9'; q++) {
        if (k < 7) {
            frac[k++] = *q;
        } else if (*q != '0') {
            *why = "more than 7 fraction digits (100 ns)";
            return -EINVAL;
        }
    }
    frac[k] = '\0';
    *p = q;
    return 0;
}

/* Scan the time zone P, which must end the string: "Z" or "z" (UTC), or
 * "+hh:mm" / "-hh:mm" up to 23:59, into *offset (minutes east of UTC).
 * Returns 0 or -EINVAL with *why. */
static int dt_scan_zone(const char *p, int *offset, const char **why)
{
    int h, m, sign;

    *offset = 0;
    if (*p == '\0') {
        *why = "no time zone";
        return -EINVAL;
    }
    if ((*p == 'Z' || *p == 'z') && p[1] == '\0')
        return 0;
    sign = *p == '-' ? -1 : 1;
    if (expect(&p, "+-") || read_digits(&p, 2, &h) || expect(&p, ":") || read_digits(&p, 2, &m) ||
        *p != '\0') {
        *why = "bad time zone";
        return -EINVAL;
    }
    if (h > 23 || m > 59) {
        *why = "time zone offset beyond 23:59";
        return -EINVAL;
    }
    *offset = sign * (h * 60 + m);
    return 0;
}

/* Check the date and time of F and convert them to UTC: *t (seconds since
 * the epoch) and *utc (years 0001-9999 only). Returns 0 or -EINVAL with *why. */
static int dt_to_utc(const struct dt_fields *f, time_t *t, struct tm *utc, const char **why)
{
    struct tm tm = f->tm;

    if (tm.tm_year < 1 - 1900) {
        *why = "year 0000";
        return -EINVAL;
    }
    if (tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 59) {
        *why = "no such time of day";
        return -EINVAL;
    }
    errno = 0;
    *t = timegm(&tm); /* normalises TM: a day that does not exist moves */
    if (*t == (time_t)-1 && errno == EOVERFLOW) {
        *why = "year out of range";
        return -EINVAL;
    }
    if (tm.tm_year != f->tm.tm_year || tm.tm_mon != f->tm.tm_mon || tm.tm_mday != f->tm.tm_mday) {
        *why = "no such date";
        return -EINVAL;
    }
    *t -= (time_t)f->offset * 60;
    if (!gmtime_r(t, utc) || utc->tm_year < 1 - 1900 || utc->tm_year > 9999 - 1900) {
        *why = "year outside 0001-9999 once in UTC";
        return -EINVAL;
    }
    return 0;
}

/* Parse the DateTime S into F and convert it to UTC (*t, *utc): the common
 * part of entity_datetime_canonical() and entity_parse_datetime().
 * Returns 0 or -EINVAL with *why. */
static int dt_parse(const char *s, struct dt_fields *f, time_t *t, struct tm *utc, const char **why)
{
    const char *p = s;

    memset(f, 0, sizeof(*f));
    if (dt_scan_fields(&p, &f->tm) < 0) {
        *why = "wrong layout";
        return -EINVAL;
    }
    if (dt_scan_fraction(&p, f->frac, why) < 0 || dt_scan_zone(p, &f->offset, why) < 0)
        return -EINVAL;
    return dt_to_utc(f, t, utc, why);
}

/* entity_datetime_canonical: see entity.h. */
int entity_datetime_canonical(const char *s, char out[ENTITY_DATETIME_SIZE], const char **why)
{
    struct dt_fields f;
    struct tm utc;
    const char *reason;
    time_t t;
    int n;

    if (!why)
        why = &reason;
    if (dt_parse(s, &f, &t, &utc, why) < 0)
        return -EINVAL;
    n = snprintf(out, ENTITY_DATETIME_SIZE, "%04d-%02d-%02dT%02d:%02d:%02d%s%sZ",
                 utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                 utc.tm_sec, f.frac[0] ? "." : "", f.frac);
    if (n < 0 || n >= ENTITY_DATETIME_SIZE) {
        *why = "cannot be formatted"; /* not reached: every field is in range */
        return -EINVAL;
    }
    return 0;
}

/* entity_parse_datetime: see entity.h. No leap seconds. */
int entity_parse_datetime(const char *s, struct timespec *ts)
{
    struct dt_fields f;
    struct tm utc;
    const char *why;
    size_t k = 0;
    long ns = 0;
    time_t t;

    if (dt_parse(s, &f, &t, &utc, &why) < 0)
        return -EINVAL;
    for (int i = 0; i < 9; i++) {
        ns = ns * 10 + (f.frac[k] ? f.frac[k] - '0' : 0);
        k += f.frac[k] != '\0';
    }
    ts->tv_sec = t;
    ts->tv_nsec = ns;
    return 0;
}
