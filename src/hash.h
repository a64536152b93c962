/* hash.h - FNV-1a string hash shared by the cache, listings and inode numbers. */
#ifndef AZTFS_HASH_H
#define AZTFS_HASH_H

#include <stdint.h>

/* 64-bit FNV-1a of the NUL-terminated string S. */
static inline uint64_t hash_fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;

    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 1099511628211ull;
    }
    return h;
}

#endif
