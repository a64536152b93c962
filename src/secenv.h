/* secenv.h - secrets passed in environment variables: removed from the
 * process once read, including the copy the kernel shows others. */
#ifndef AZTFS_SECENV_H
#define AZTFS_SECENV_H

/* Remove every variable NAME from the environment (unsetenv) and wipe its
 * bytes (OPENSSL_cleanse) where they lie: for a variable the process was
 * started with, that is the environment block the kernel shows in
 * /proc/PID/environ and `ps e`, and there the whole "NAME=value" string is
 * zeroed, so neither the value nor the name shows any more (the block keeps
 * its length: the kernel shows a run of NUL bytes in its place). A
 * variable set later by the process (setenv) is not in that block: only
 * its value is wiped, as the C library may keep the string. Pointers from
 * an earlier getenv(NAME) then see an empty string. Not thread-safe (like
 * unsetenv): call before starting threads. */
void env_scrub(const char *name);

#endif
