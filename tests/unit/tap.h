/* tap.h - a minimal Test Anything Protocol emitter for the C unit tests. */
#ifndef AZTFS_TAP_H
#define AZTFS_TAP_H

#include <ftw.h>
#include <stdio.h>
#include <string.h>

/* Each test program keeps its own counters; these are file-local, not shared. */
static int tap_n, tap_failed;

/* ok(cond, fmt, ...): record one test point; prints "ok N - ..." or "not ok N - ...". */
#define ok(cond, ...)                                            \
    do {                                                         \
        int tap_c_ = !!(cond);                                   \
        tap_n++;                                                 \
        if (!tap_c_)                                             \
            tap_failed++;                                        \
        printf("%sok %d - ", tap_c_ ? "" : "not ", tap_n);       \
        printf(__VA_ARGS__);                                     \
        printf("\n");                                            \
        if (!tap_c_)                                             \
            printf("#   failed at %s:%d\n", __FILE__, __LINE__); \
    } while (0)

/* is_str(got, want, name): string equality test point (NULL-safe). */
#define is_str(got, want, ...)                                                            \
    do {                                                                                  \
        const char *tap_g_ = (got), *tap_w_ = (want);                                     \
        int tap_e_ = (tap_g_ && tap_w_) ? strcmp(tap_g_, tap_w_) == 0 : tap_g_ == tap_w_; \
        ok(tap_e_, __VA_ARGS__);                                                          \
        if (!tap_e_)                                                                      \
            printf("#   got:  '%s'\n#   want: '%s'\n", tap_g_ ? tap_g_ : "(null)",        \
                   tap_w_ ? tap_w_ : "(null)");                                           \
    } while (0)

/* is_int(got, want, name): integer equality test point. */
#define is_int(got, want, ...)                                           \
    do {                                                                 \
        long long tap_g_ = (long long)(got), tap_w_ = (long long)(want); \
        ok(tap_g_ == tap_w_, __VA_ARGS__);                               \
        if (tap_g_ != tap_w_)                                            \
            printf("#   got:  %lld\n#   want: %lld\n", tap_g_, tap_w_);  \
    } while (0)

/* An nftw callback of tap_rmtree: remove PATH. */
static inline int tap_remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Remove DIR and everything below it, links not followed. 1 when all is gone. */
static inline int tap_rmtree(const char *dir)
{
    return nftw(dir, tap_remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0;
}

/* done_testing(): print the plan and return the exit status for main(). */
static inline int done_testing(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
