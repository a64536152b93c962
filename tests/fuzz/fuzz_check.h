/* fuzz_check.h - the check every fuzz target makes (tests/fuzz): a failed
 * one names the target's file and the condition, then aborts, which
 * libFuzzer reports as a crash with the input that caused it. */
#ifndef AZTFS_FUZZ_CHECK_H
#define AZTFS_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond, ...)                                           \
    do {                                                                \
        if (!(cond)) {                                                  \
            fprintf(stderr, "%s: check failed: %s: ", __FILE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                               \
            fputc('\n', stderr);                                        \
            abort();                                                    \
        }                                                               \
    } while (0)

#endif
