/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stand-alone program around a harness's LLVMFuzzerTestOneInput,
 * included at the end of each harness with FUZZ_NAME defined: it runs
 * files, directories of files (not recursive), or stdin; with
 * RLK_FUZZ_AFL as well it uses AFL++'s persistent mode when compiled by
 * afl-clang-fast.
 */
#ifdef RLK_FUZZ_MAIN
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define READ_MAX (1u << 20) /* the harnesses use less of an input anyway */

static void *fuzz_alloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs(FUZZ_NAME ": out of memory in the harness\n", stderr);
        abort();
    }
    return q;
}

static int run_stream(FILE *f, const char *name)
{
    size_t cap = 4096, len = 0;
    uint8_t *buf = fuzz_alloc(NULL, cap);
    for (;;) {
        if (len == cap) {
            if (cap >= READ_MAX) break;
            cap *= 2;
            buf = fuzz_alloc(buf, cap);
        }
        size_t k = fread(buf + len, 1, cap - len, f);
        len += k;
        if (k == 0) break;
    }
    if (ferror(f)) {
        fprintf(stderr, FUZZ_NAME ": %s: read error\n", name);
        free(buf);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, FUZZ_NAME ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    int r = run_stream(f, path);
    fclose(f);
    return r;
}

/* A file, or every regular file of a directory (not recursive). */
static int run_path(const char *path, unsigned long *count)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(stderr, FUZZ_NAME ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(sb.st_mode)) {
        if (run_file(path) != 0) return -1;
        ++*count;
        return 0;
    }
    DIR *d = opendir(path);
    if (!d) {
        fprintf(stderr, FUZZ_NAME ": %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        size_t k = strlen(path) + strlen(de->d_name) + 2;
        char *full = fuzz_alloc(NULL, k);
        snprintf(full, k, "%s/%s", path, de->d_name);
        if (stat(full, &sb) == 0 && S_ISREG(sb.st_mode)) {
            if (run_file(full) != 0) rc = -1;
            else ++*count;
        }
        free(full);
    }
    closedir(d);
    return rc;
}

#if defined(RLK_FUZZ_AFL) && defined(__AFL_FUZZ_TESTCASE_LEN)
#include <unistd.h> /* read(), used by the macros below */
__AFL_FUZZ_INIT();
#endif

int main(int argc, char **argv)
{
    unsigned long count = 0;
    int rc = 0;

    if (argc < 2) {
#if defined(RLK_FUZZ_AFL) && defined(__AFL_FUZZ_TESTCASE_LEN)
#ifdef __AFL_HAVE_MANUAL_CONTROL
        __AFL_INIT();
#endif
        /* Persistent mode: many inputs per process, handed over in
         * shared memory. */
        const unsigned char *tc = __AFL_FUZZ_TESTCASE_BUF;
        while (__AFL_LOOP(10000)) LLVMFuzzerTestOneInput(tc, __AFL_FUZZ_TESTCASE_LEN);
        return 0;
#else
        return run_stream(stdin, "stdin") == 0 ? 0 : 1;
#endif
    }
    for (int i = 1; i < argc; i++)
        if (run_path(argv[i], &count) != 0) rc = 1;
    printf(FUZZ_NAME ": %lu input%s, all properties hold\n", count, count == 1 ? "" : "s");
    return rc;
}
#endif
