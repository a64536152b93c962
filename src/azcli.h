/* azcli.h - the Azure CLI as a token source: `az account get-access-token`
 * run without a shell, bounded in time and output. */
#ifndef AZTFS_AZCLI_H
#define AZTFS_AZCLI_H

#include <stddef.h>

/* Run `az account get-access-token --output json --resource RESOURCE`
 * (and `--tenant TENANT` when TENANT is not NULL), `az` being the first
 * executable of that name on PATH, with stdin from /dev/null, in its own
 * process group, for at most TIMEOUT_MS (then the group is killed). No
 * shell is involved; the arguments hold no secret. Returns 0 and *OUT
 * (malloc'd NUL-terminated standard output, at most 64 KiB; the caller
 * wipes and frees it) when az exits 0; else -errno with one line in ERR:
 * -ENOENT az is not on PATH, -ETIMEDOUT, -EFBIG too much output, -EACCES
 * az failed (ERR: the first line of its error output, e.g. "Please run 'az
 * login'"), -ENOMEM, or the error of spawning it. */
int azcli_get_token(const char *resource, const char *tenant, long timeout_ms, char **out,
                    char *err, size_t errlen);

#endif
