/* test_log.c - unit tests for log_escape and the lines log_msg writes (TAP). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "util/util.h"
#include "names/names.h"
#include "tap.h"

/* Escape IN into a roomy buffer; compare with WANT and the returned length. */
static void check_escape(const char *in, const char *want, const char *label)
{
    char out[256];
    size_t n = log_escape(out, sizeof(out), in);

    is_str(out, want, "escape %s", label);
    is_int(n, strlen(want), "length of %s", label);
}

static void test_passes(void)
{
    check_escape("", "", "empty");
    check_escape("GET /t(PartitionKey='p') -> 404", "GET /t(PartitionKey='p') -> 404",
                 "printable ASCII");
    check_escape("caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80",
                 "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80", "valid UTF-8");
    check_escape("\xC2\xA0\xC2\xA9", "\xC2\xA0\xC2\xA9", "U+00A0 and U+00A9 (after C1)");
    check_escape("\xEF\xBF\xBD\xF4\x8F\xBF\xBF", "\xEF\xBF\xBD\xF4\x8F\xBF\xBF",
                 "U+FFFD and U+10FFFF");
    check_escape("%0A %2F", "%0A %2F", "percent escapes are text");
}

static void test_controls(void)
{
    check_escape("a\nb", "a\\x0ab", "newline");
    check_escape("x.json\naztfs: error: forged", "x.json\\x0aaztfs: error: forged",
                 "a forged second line stays on the first");
    check_escape("\t\r\x01\x1F\x7F", "\\x09\\x0d\\x01\\x1f\\x7f", "C0 controls and DEL");
    check_escape("\x1B[31mred", "\\x1b[31mred", "terminal escape sequence");
    check_escape("a\xC2\x85z", "a\\xc2\\x85z", "U+0085 (NEL)");
    check_escape("\xC2\x80\xC2\x9F", "\\xc2\\x80\\xc2\\x9f", "U+0080 and U+009F");
}

static void test_backslash(void)
{
    check_escape("a\\b", "a\\\\b", "backslash doubled");
    check_escape("\\x0a", "\\\\x0a", "a literal \\x0a cannot pass for an escape");
    check_escape("\\\n", "\\\\\\x0a", "backslash then newline");
}

static void test_invalid_utf8(void)
{
    check_escape("\xFF", "\\xff", "0xFF");
    check_escape("a\x80z", "a\\x80z", "stray continuation byte");
    check_escape("\xE6\x97", "\\xe6\\x97", "sequence cut short at the end");
    check_escape("\xE6\x97z", "\\xe6\\x97z", "sequence cut short by ASCII");
    check_escape("\xC3\xC3\xA9", "\\xc3\xC3\xA9", "lead byte then a whole character");
    check_escape("\xC0\x8A", "\\xc0\\x8a", "overlong newline");
    check_escape("\xC0\xAF", "\\xc0\\xaf", "overlong slash");
    check_escape("\xE0\x80\xAF", "\\xe0\\x80\\xaf", "3-byte overlong");
    check_escape("\xED\xA0\x80", "\\xed\\xa0\\x80", "surrogate U+D800");
    check_escape("\xF4\x90\x80\x80", "\\xf4\\x90\\x80\\x80", "past U+10FFFF");
    check_escape("\xF8\x88\x80\x80\x80", "\\xf8\\x88\\x80\\x80\\x80", "5-byte form");
}

static void test_cut(void)
{
    char out[16];

    memset(out, '#', sizeof(out));
    is_int(log_escape(out, 3, "abc"), 3, "cut: returns the whole length");
    is_str(out, "ab", "cut: NUL-terminated within OUTLEN");
    is_int(log_escape(out, 4, "abc"), 3, "exact fit");
    is_str(out, "abc", "exact fit kept whole");
    is_int(log_escape(out, 5, "a\nb"), 6, "escape does not fit");
    is_str(out, "a", "an escape is never split");
    is_int(log_escape(out, 6, "a\nb"), 6, "escape fits, the byte after not");
    is_str(out, "a\\x0a", "cut after the escape");
    is_int(log_escape(out, 4, "a\xE6\x97\xA5"), 4, "character does not fit");
    is_str(out, "a", "a UTF-8 character is never split");
    is_int(log_escape(out, 4, "ab\\"), 4, "doubled backslash does not fit");
    is_str(out, "ab", "a doubled backslash is never split");
    is_int(log_escape(out, 1, "abc"), 3, "OUTLEN 1");
    is_str(out, "", "OUTLEN 1 leaves the empty string");
    is_int(log_escape(NULL, 0, "a\n"), 5, "OUTLEN 0 measures, OUT may be NULL");
}

/* Undo log_escape on IN (a "\\" or "\xhh" pair, else the byte) into OUT. */
static size_t unescape(const char *in, char *out)
{
    size_t n = 0;

    while (*in) {
        if (in[0] == '\\' && in[1] == '\\') {
            out[n++] = '\\';
            in += 2;
        } else if (in[0] == '\\' && in[1] == 'x') {
            char hex[3] = { in[2], in[3], 0 };

            out[n++] = (char)strtoul(hex, NULL, 16);
            in += 4;
        } else {
            out[n++] = *in++;
        }
    }
    out[n] = '\0';
    return n;
}

/* Is S printable text on one line: valid UTF-8 without control characters? */
static int printable_line(const char *s)
{
    size_t len = strlen(s);
    unsigned long cp;

    for (size_t i = 0; i < len;) {
        int n = utf8_char(s + i, len - i, &cp);

        if (n == 0 || cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))
            return 0;
        i += (size_t)n;
    }
    return 1;
}

/* xorshift64*: a fixed-seed PRNG so failures are reproducible. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

/* Random byte strings (biased towards '\\', 'x', controls and UTF-8 pieces):
 * the output is one printable line, and unescaping gives the input back. */
static void test_random(void)
{
    static const unsigned char pool[] = { '\\', 'x',  '0',  'a',  '\n', 0x1B, 0x7F, 0x80, 0x85,
                                          0x9F, 0xA0, 0xC2, 0xC3, 0xE6, 0xED, 0xF0, 0xF4, 0xFF };
    uint64_t s = 7;
    int bad = 0, n = 20000;

    for (int t = 0; t < n; t++) {
        char in[33], out[33 * 4 + 1], back[33 * 4 + 1];
        size_t len = 1 + rng_next(&s) % 32;

        for (size_t i = 0; i < len; i++) {
            uint64_t r = rng_next(&s);

            in[i] = (char)(r % 2 ? pool[(r >> 8) % sizeof(pool)] : 1 + (r >> 8) % 255);
        }
        in[len] = '\0';
        if (log_escape(out, sizeof(out), in) != strlen(out) || !printable_line(out) ||
            unescape(out, back) != len || memcmp(back, in, len) != 0)
            bad++;
    }
    is_int(bad, 0, "%d random strings: one printable line that unescapes to the input", n);
}

/* Log MSG at error level with stderr sent to a temporary file; return what
 * log_msg wrote (malloc'd, NULL on failure). */
static char *captured_line(const char *msg)
{
    FILE *tmp = tmpfile();
    int saved = dup(STDERR_FILENO);
    char *text = NULL;
    long size;

    if (!tmp || saved < 0)
        goto out;
    fflush(stderr);
    dup2(fileno(tmp), STDERR_FILENO);
    log_msg(NULL, LOG_LVL_ERROR, "%s", msg);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    if (fseek(tmp, 0, SEEK_END) != 0 || (size = ftell(tmp)) < 0 ||
        !(text = calloc(1, (size_t)size + 1)))
        goto out;
    rewind(tmp);
    if (fread(text, 1, (size_t)size, tmp) != (size_t)size) {
        free(text);
        text = NULL;
    }
out:
    if (saved >= 0)
        close(saved);
    if (tmp)
        fclose(tmp);
    return text;
}

static void test_log_msg(void)
{
    char *big = malloc(1200), *line;
    size_t n;

    line = captured_line("/t/p/a\nb\\c.json: not a valid name");
    is_str(line, "aztfs: error: /t/p/a\\x0ab\\\\c.json: not a valid name\n",
           "log_msg escapes the whole message");
    free(line);

    if (!big)
        return;
    memset(big, '\n', 1199);
    big[1199] = '\0';
    line = captured_line(big);
    n = line ? strlen(line) : 0;
    ok(line && strchr(line, '\n') == line + n - 1, "1199 newlines: still one line");
    is_int(n, strlen("aztfs: error: ") + LOG_LINE_MAX / 4 * 4 + 1,
           "cut at LOG_LINE_MAX, after a whole escape");
    free(line);
    free(big);
}

/* The whole content of PATH (malloc'd), or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *text = calloc(1, 65536);
    size_t n = 0;

    if (f && text)
        n = fread(text, 1, 65535, f);
    if (f)
        fclose(f);
    if (text)
        text[n] = '\0';
    return text;
}

/* -o logfile=: created 0600, appended to, a failure recorded in the ring,
 * reopened by name after a rename (logrotate), but not through a symlink
 * planted at the name. */
static void test_log_file(void)
{
    char dir[] = "/tmp/aztfs-logtest-XXXXXX", path[128], moved[160], victim[160];
    struct logger lg = { .level = LOG_LVL_INFO };
    struct failure f = { "save", "/t/p/a.json", 22, 0, NULL, "line 1: bad" };
    struct stat st;
    char *text, *json;

    if (!mkdtemp(dir)) {
        ok(0, "mkdtemp");
        return;
    }
    snprintf(path, sizeof(path), "%s/a.log", dir);
    snprintf(moved, sizeof(moved), "%s/a.log.1", dir);
    lg.failures = failring_new();
    is_int(log_open_file(&lg, path, 0), 0, "log_open_file");
    ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "created 0600");
    log_info(&lg, "first");
    failring_add(lg.failures, &f);
    log_error(&lg, "%s: not saved: %s", f.path, f.message);
    log_debug(&lg, "dropped at info");
    text = slurp(path);
    ok(text && strstr(text, "]: info: first\n") &&
           strstr(text, "]: error: /t/p/a.json: not saved: line 1: bad\n") &&
           !strstr(text, "dropped"),
       "lines appended with their level");
    ok(text && text[4] == '-' && text[10] == 'T' && strstr(text, "Z aztfs["),
       "each line starts with the UTC time");
    free(text);
    json = failring_json(lg.failures, 65536);
    ok(json && strstr(json, "\"failures\":1") && strstr(json, "\"path\":\"/t/p/a.json\"") &&
           strstr(json, "\"error\":\"EINVAL\""),
       "the logger's ring holds the failure");
    free(json);
    ok(rename(path, moved) == 0, "rotate: rename");
    is_int(log_reopen(&lg), 0, "log_reopen");
    log_info(&lg, "second");
    text = slurp(path);
    ok(text && strstr(text, "second") && !strstr(text, "first"), "new lines in the new file");
    free(text);
    text = slurp(moved);
    ok(text && !strstr(text, "second"), "the old file keeps the old lines only");
    free(text);
    /* rotated again, and a symlink planted at the name: refused at SIGHUP */
    snprintf(victim, sizeof(victim), "%s/victim", dir);
    ok(rename(path, moved) == 0 && symlink(victim, path) == 0 && close(creat(victim, 0600)) == 0,
       "rotate, then a symlink at the name");
    lg.level = LOG_LVL_QUIET; /* the refusal's line would go to the old file */
    is_int(log_reopen(&lg), -ELOOP, "log_reopen refuses the symlink");
    lg.level = LOG_LVL_INFO;
    log_info(&lg, "third");
    text = slurp(moved);
    ok(text && strstr(text, "third"), "and goes on writing to the old file");
    free(text);
    ok(stat(victim, &st) == 0 && st.st_size == 0, "the symlink's target is unchanged");
    unlink(victim);
    log_close(&lg);
    ok(!lg.use_file && !lg.path, "log_close");
    failring_free(lg.failures);
    unlink(path);
    unlink(moved);
    rmdir(dir);
}

int main(void)
{
    test_passes();
    test_controls();
    test_backslash();
    test_invalid_utf8();
    test_cut();
    test_random();
    test_log_msg();
    test_log_file();
    return done_testing();
}
