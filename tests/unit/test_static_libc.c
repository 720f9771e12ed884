/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the static command brings of its own in place of the C library's
 * (compiled here under other names, beside the C library's):
 * - its allocator (src/cli/static_malloc.c, as rlk__t_malloc...): sizes,
 *   alignment, contents kept through realloc, calloc's zeros and
 *   overflow, requests too big, freed blocks reused (the bytes mapped
 *   stop growing), big blocks given back, threads at once, and fork
 *   while another thread allocates (the child can still allocate);
 * - its strlen, memchr, __strchrnul (musl's strchrnul), strcmp,
 *   strncmp, strcasecmp, strncasecmp, strcpy, strncpy, strspn and
 *   strcspn against the C library's on generated strings (bytes past
 *   0x7f too), the comparisons by sign;
 * - its strstr and strtol family (src/cli/static_libc.c, as rlk__t_...)
 *   against the C library's: value, errno and end, on edge cases and on
 *   generated strings;
 * - its qsort against the C library's, on arrays of every length to 70
 *   and some longer, of elements of 1 to 24 bytes, with equal keys;
 * - its strerror against the C library's (GNU libc's words) for every
 *   error it knows and for some it does not;
 * - its inet_ntop against the C library's on IPv4, on IPv6 addresses of
 *   many zero groups and buffers of every length (the addresses whose
 *   first 96 bits are zero but not ::ffff:0:0/96 apart: GNU libc writes
 *   them as IPv4, musl does not), and on musl's own forms of those;
 * - its inet_pton against the C library's (musl's and GNU libc's rules
 *   agree) on generated strings of address characters, on inet_ntop's
 *   forms of random addresses and on those changed a little, and
 *   EAFNOSUPPORT for another family;
 * - its fstat (x86-64) against the C library's on a file, a pipe and a
 *   closed descriptor;
 * - its fcntl (x86-64) against the C library's on a pipe: the status
 *   flags and the descriptor's flags, got and set, F_DUPFD and
 *   F_DUPFD_CLOEXEC above a bound, EBADF and EINVAL;
 * - its clock_gettime (x86-64): each clock's time between two of the C
 *   library's, and EINVAL for a clock that is none;
 * - its open, pipe2, getrlimit, mmap and munmap (x86-64): a file created
 *   with its mode (and not again, with O_EXCL), O_CLOEXEC, a missing
 *   file; pipes with and without O_CLOEXEC and O_NONBLOCK, a bad flag;
 *   limits as the C library's; anonymous memory zeroed, mapped and
 *   unmapped, EBADF, EINVAL;
 * - its sigaction and signal (x86-64): the handler, flags and mask the
 *   C library sees, the old action given back, a handler that runs and
 *   returns, and EINVAL for signals that may not be changed;
 * - its socket, signalfd, nanosleep, tcgetpgrp, tcsetpgrp, tcgetattr,
 *   tcsetattr, isatty and gethostname (x86-64): flags, a signal read, a sleep's length, pipes
 *   that are no terminals, a closed descriptor, /dev/tty when there is
 *   one, and the host name at every length (musl's cut);
 * - its stdio (src/cli/static_stdio.c): stdout buffered (fflush, a
 *   write larger than the buffer) and stderr not, on files, and EOF with
 *   the error flag on /dev/full;
 * - its pthread_mutex_lock, trylock and unlock (x86-64) on musl's layout:
 *   normal, recursive and error-checking mutexes, EBUSY, EDEADLK and
 *   EPERM, and four threads counting under one;
 * - its setenv: a new variable, one replaced (and not, without
 *   overwrite), the others kept, and EINVAL for a bad name;
 * - its execvp: a script found through PATH (past a directory that does
 *   not exist, and past one where the name is not executable), the
 *   current directory as an empty element, a name with '/' run as it
 *   is, "true" without PATH, ENOENT for a missing name and EACCES when
 *   only a file that may not be run has it;
 * - its gai_strerror against musl's words, for each error and others;
 * - its __lookup_serv (musl's, for getaddrinfo) against what musl 1.2's
 *   gives for numeric services, and EAI_NONAME for a name;
 * - its getaddrinfo (src/cli/static_resolv.c, with the files it reads and
 *   the nameservers' port set here): numeric hosts of every form (a
 *   scope too), the errors for a bad family, flags or service, no host,
 *   "localhost" (::1 first where it can be reached), a hosts file of the
 *   test's own (any case, comments, bad lines), and a DNS server of the
 *   test's own on 127.0.0.1 (a thread) that answers A, AAAA, a CNAME
 *   chain out of order, a CNAME loop, NXDOMAIN, SERVFAIL, REFUSED, a
 *   reply with another id, another question or from another port before
 *   the real one, a record cut short, an rdlength past the end, a
 *   name pointing at itself, the TC bit, and nothing (EAI_AGAIN after
 *   the 1 s asked); search domains with ndots, a final '.', names that
 *   are no DNS names, and the order of the names asked;
 * - the command's UTC date (src/cli/utc.c) against gmtime_r.
 */
#define _GNU_SOURCE 1
#include "config.h"
#include "testlib.h"
#include "cli/cli.h"

#include <errno.h>
#include <arpa/inet.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

void *rlk__t_malloc(size_t n);
void *rlk__t_calloc(size_t k, size_t n);
void *rlk__t_realloc(void *p, size_t n);
void rlk__t_free(void *p);
extern size_t rlk__t_mapped_bytes;

char *rlk__t_strstr(const char *h, const char *n);
long rlk__t_strtol(const char *restrict s, char **restrict end, int base);
long long rlk__t_strtoll(const char *restrict s, char **restrict end, int base);
unsigned long rlk__t_strtoul(const char *restrict s, char **restrict end, int base);
unsigned long long rlk__t_strtoull(const char *restrict s, char **restrict end, int base);
void rlk__t_qsort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
char *rlk__t_strerror(int e);
struct serv {
    unsigned short port;
    unsigned char proto, socktype;
};
const char *rlk__t_gai_strerror(int e);
int rlk__t_setenv(const char *k, const char *v, int overwrite);
const char *rlk__t_inet_ntop(int af, const void *restrict a0, char *restrict s, socklen_t l);
size_t rlk__t_strlen(const char *s);
void *rlk__t_memchr(const void *s, int c, size_t n);
char *rlk__t___strchrnul(const char *s, int c);
int rlk__t_strcmp(const char *a, const char *b);
int rlk__t_strncmp(const char *a, const char *b, size_t n);
int rlk__t_strcasecmp(const char *a, const char *b);
int rlk__t_strncasecmp(const char *a, const char *b, size_t n);
char *rlk__t_strcpy(char *restrict d, const char *restrict s);
char *rlk__t_strncpy(char *restrict d, const char *restrict s, size_t n);
size_t rlk__t_strspn(const char *s, const char *c);
size_t rlk__t_strcspn(const char *s, const char *c);
int rlk__t_inet_pton(int af, const char *restrict s, void *restrict a0);
#if defined(__x86_64__)
#include <sys/stat.h>
#include <fcntl.h>
int rlk__t_fstat(int fd, struct stat *st);
int rlk__t_fcntl(int fd, int cmd, ...);
int rlk__t_clock_gettime(clockid_t c, struct timespec *ts);
#include <sys/mman.h>
#include <sys/resource.h>
int rlk__t_open(const char *path, int flags, ...);
int rlk__t_pipe2(int fd[2], int flags);
int rlk__t_getrlimit(int resource, struct rlimit *lim);
void *rlk__t_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int rlk__t_munmap(void *addr, size_t len);
int rlk__t_sigaction(int sig, const struct sigaction *restrict sa, struct sigaction *restrict old);
void (*rlk__t_signal(int sig, void (*f)(int)))(int);
int rlk__t_pthread_mutex_lock(pthread_mutex_t *m);
int rlk__t_socket(int domain, int type, int proto);
int rlk__t_signalfd(int fd, const sigset_t *mask, int flags);
int rlk__t_nanosleep(const struct timespec *req, struct timespec *rem);
pid_t rlk__t_tcgetpgrp(int fd);
int rlk__t_tcsetpgrp(int fd, pid_t pg);
int rlk__t_tcgetattr(int fd, struct termios *t);
int rlk__t_tcsetattr(int fd, int act, const struct termios *t);
int rlk__t_isatty(int fd);
int rlk__t_gethostname(char *name, size_t len);
int rlk__t_pthread_mutex_trylock(pthread_mutex_t *m);
int rlk__t_pthread_mutex_unlock(pthread_mutex_t *m);
int rlk__t_pthread_mutex_destroy(pthread_mutex_t *m);
int rlk__t_pthread_cond_destroy(pthread_cond_t *c);
#endif
int rlk__t_execvp(const char *file, char *const argv[]);
struct rlk_file;
extern struct rlk_file *const rlk__t_stdout, *const rlk__t_stderr;
size_t rlk__t_fwrite(const void *restrict p, size_t size, size_t n, struct rlk_file *restrict f);
int rlk__t_fputs(const char *restrict s, struct rlk_file *restrict f);
int rlk__t_fputc(int c, struct rlk_file *f);
int rlk__t_putchar(int c);
int rlk__t_puts(const char *s);
int rlk__t_fflush(struct rlk_file *f);
int rlk__t_ferror(struct rlk_file *f);
void rlk__t_flockfile(struct rlk_file *f);
void rlk__t_funlockfile(struct rlk_file *f);
int rlk__t_getaddrinfo(const char *restrict host, const char *restrict serv, const struct addrinfo *restrict hints,
                       struct addrinfo **restrict res);
void rlk__t_freeaddrinfo(struct addrinfo *ai);
extern const char *rlk__t_hosts_path, *rlk__t_resolv_path;
extern unsigned short rlk__t_dns_port;
int rlk__t___lookup_serv(struct serv *buf, const char *name, int proto, int socktype, int flags);

/* A small generator of its own, so that threads do not share one. */
static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ------------------------------------------------------------------ */
/* The allocator                                                        */

/* A block's pattern: its first and last 64 bytes whole (where blocks
 * meet), every 61st byte between (so that the test stays quick under
 * valgrind). */
static size_t next_at(size_t i, size_t n)
{
    return i < 64 || i + 65 >= n ? i + 1 : (i + 61 < n - 64 ? i + 61 : n - 64);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i = next_at(i, n)) p[i] = (unsigned char)(seed + i * 7);
}

/* Whether the first `keep` bytes of a block filled at size n are still
 * its pattern. */
static int kept(const unsigned char *p, size_t n, size_t keep, unsigned seed)
{
    for (size_t i = 0; i < n && i < keep; i = next_at(i, n))
        if (p[i] != (unsigned char)(seed + i * 7)) return 0;
    return 1;
}

static int intact(const unsigned char *p, size_t n, unsigned seed)
{
    return kept(p, n, n, seed);
}

static void test_malloc_sizes(void)
{
    void *a = rlk__t_malloc(0), *b = rlk__t_malloc(0);
    CHECK(a != NULL && b != NULL && a != b);
    rlk__t_free(a);
    rlk__t_free(b);
    rlk__t_free(NULL);
    /* Every size to past the biggest small block, and some far beyond:
     * aligned to 16, writable to its end, and apart from the others. */
    static size_t sizes[] = {1, 15, 16, 17, 31, 32, 33, 100, 4080, 4096, 65520, 65536,
                             131056, 131057, 131072, 200000, 1 << 20, 3 << 20};
    void *p[sizeof sizes / sizeof sizes[0]];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        p[i] = rlk__t_malloc(sizes[i]);
        if (!CHECK_MSG(p[i] != NULL, "malloc(%zu)", sizes[i])) return;
        CHECK_MSG(((uintptr_t)p[i] & 15) == 0, "malloc(%zu) = %p: not aligned to 16", sizes[i], p[i]);
        fill(p[i], sizes[i], (unsigned)i);
    }
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        CHECK_MSG(intact(p[i], sizes[i], (unsigned)i), "malloc(%zu): overwritten", sizes[i]);
        rlk__t_free(p[i]);
    }
    for (size_t n = 0; n < 600; n++) {
        void *q = rlk__t_malloc(n);
        if (!CHECK_MSG(q && ((uintptr_t)q & 15) == 0, "malloc(%zu) = %p", n, q)) return;
        rlk__t_free(q);
    }
}

static void test_malloc_too_big(void)
{
    errno = 0;
    CHECK(rlk__t_malloc(SIZE_MAX) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(rlk__t_malloc(SIZE_MAX / 2 + 1) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(rlk__t_calloc(SIZE_MAX / 8, 16) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(rlk__t_calloc((size_t)1 << 33, (size_t)1 << 33) == NULL && errno == ENOMEM);
    void *p = rlk__t_malloc(10);
    errno = 0;
    CHECK(rlk__t_realloc(p, SIZE_MAX) == NULL && errno == ENOMEM);
    CHECK(p != NULL);
    rlk__t_free(p); /* still the caller's after a failed realloc */
    CHECK(rlk__t_calloc(0, 5) != NULL);
}

static void test_calloc_zeros(void)
{
    for (size_t n = 1; n < 70000; n = n * 3 + 1) {
        unsigned char *p = rlk__t_malloc(n);
        if (!CHECK(p != NULL)) return;
        memset(p, 0xA5, n);
        rlk__t_free(p);
        unsigned char *q = rlk__t_calloc(n, 1);
        if (!CHECK(q != NULL)) return;
        CHECK_MSG(q == p, "calloc(%zu, 1) did not reuse the block just freed", n);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++) bad += q[i] != 0;
        CHECK_MSG(bad == 0, "calloc(%zu, 1): %zu bytes not zero", n, bad);
        rlk__t_free(q);
    }
}

static void test_realloc_keeps(void)
{
    unsigned char *p = rlk__t_realloc(NULL, 5);
    if (!CHECK(p != NULL)) return;
    fill(p, 5, 1);
    size_t n = 5;
    /* Growing through every kind of block, then shrinking. */
    for (size_t to = 7; to < (2u << 20); to = to * 2 + 3) {
        p = rlk__t_realloc(p, to);
        if (!CHECK_MSG(p != NULL, "realloc to %zu", to)) return;
        CHECK_MSG(intact(p, n, 1), "realloc from %zu to %zu: contents lost", n, to);
        fill(p, to, 1);
        n = to;
    }
    p = rlk__t_realloc(p, 3);
    CHECK(p != NULL && kept(p, n, 3, 1));
    unsigned char *q = rlk__t_realloc(p, 0);
    CHECK(q != NULL);
    rlk__t_free(q);
}

/* Random work on up to `slots` blocks, each filled and checked when it
 * is freed or resized; 1 when nothing was found overwritten. */
static int churn(uint64_t seed, int ops, int slots, size_t big_every)
{
    enum { MAXSLOTS = 256 };
    unsigned char *p[MAXSLOTS] = {0};
    size_t len[MAXSLOTS] = {0};
    int ok = 1;
    for (int i = 0; i < ops && ok; i++) {
        int k = (int)(next_rand(&seed) % (unsigned)slots);
        uint64_t r = next_rand(&seed);
        size_t n = big_every && r % big_every == 0 ? 131000 + r % 400000 : r % 2048;
        if (p[k] && !intact(p[k], len[k], (unsigned)k)) ok = 0;
        if (p[k] && r % 3 == 0) {
            unsigned char *q = rlk__t_realloc(p[k], n);
            if (!q) ok = 0;
            else if (!kept(q, len[k], n, (unsigned)k)) ok = 0;
            p[k] = q;
        } else {
            rlk__t_free(p[k]);
            p[k] = rlk__t_malloc(n);
            if (!p[k]) ok = 0;
        }
        if (p[k]) fill(p[k], n, (unsigned)k);
        len[k] = n;
    }
    for (int k = 0; k < slots; k++) {
        if (p[k] && !intact(p[k], len[k], (unsigned)k)) ok = 0;
        rlk__t_free(p[k]);
    }
    return ok;
}

static void test_churn(void)
{
    CHECK_MSG(churn(0x1234567, 60000, 256, 97), "a block was overwritten");
}

/* A program whose needs do not grow does not grow: after one round of
 * work, the same work again maps nothing more; and big blocks are given
 * back when freed. */
static void test_reuse(void)
{
    CHECK(churn(99, 50000, 64, 0));
    size_t after_one = rlk__t_mapped_bytes;
    for (int round = 0; round < 5; round++) CHECK(churn(99, 50000, 64, 0));
    CHECK_MSG(rlk__t_mapped_bytes == after_one, "mapped %zu bytes after one round, %zu after six",
              after_one, rlk__t_mapped_bytes);
    size_t before = rlk__t_mapped_bytes;
    void *big = rlk__t_malloc(5u << 20);
    CHECK(big != NULL && rlk__t_mapped_bytes >= before + (5u << 20));
    rlk__t_free(big);
    CHECK_MSG(rlk__t_mapped_bytes == before, "a freed 5 MiB block is still mapped (%zu, was %zu)",
              rlk__t_mapped_bytes, before);
}

static void *churn_thread(void *arg)
{
    return (void *)(intptr_t)churn((uint64_t)(intptr_t)arg, 40000, 128, 211);
}

static void test_threads(void)
{
    pthread_t t[4];
    for (intptr_t i = 0; i < 4; i++) pthread_create(&t[i], NULL, churn_thread, (void *)(i * 7919 + 1));
    for (int i = 0; i < 4; i++) {
        void *ok = NULL;
        pthread_join(t[i], &ok);
        CHECK_MSG(ok != NULL, "thread %d: a block was overwritten", i);
    }
}

static volatile int stop_hammer;

/* Allocates all the time; now and then it yields, so that the thread
 * that forks runs under valgrind too (whose scheduler would let this one
 * run alone, as it never waits). */
static void *hammer(void *arg)
{
    (void)arg;
    for (unsigned i = 0; !stop_hammer; i++) {
        rlk__t_free(rlk__t_malloc(48));
        if (i % 64 == 0) sched_yield();
    }
    return NULL;
}

/* fork while another thread allocates all the time: without the lock
 * taken around fork, a child often inherits it held, by a thread it does
 * not have, and waits for ever (here: until its alarm). */
static void test_fork(void)
{
    pthread_t t;
    stop_hammer = 0;
    pthread_create(&t, NULL, hammer, NULL);
    int stuck = 0, forks = 300;
    for (int i = 0; i < forks; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(5);
            void *p = rlk__t_malloc(48);
            rlk__t_free(p);
            _exit(p ? 0 : 1);
        }
        int st = 0;
        if (!CHECK(pid > 0) || !CHECK(waitpid(pid, &st, 0) == pid)) break;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            stuck = i + 1;
            break;
        }
    }
    stop_hammer = 1;
    pthread_join(t, NULL);
    CHECK_MSG(stuck == 0, "child %d of %d could not allocate", stuck, forks);
}

/* ------------------------------------------------------------------ */
/* strstr and the strtol family                                         */

static int sign(int v)
{
    return (v > 0) - (v < 0);
}

/* A string of up to n - 1 bytes from a small alphabet (which has a case,
 * and bytes past 0x7f), so that strings often share a start. */
static void gen(char *a, size_t n, uint64_t *seed)
{
    static const char set[] = "aAbB:.0\x80\xe9\xff";
    size_t l = next_rand(seed) % n;
    for (size_t k = 0; k < l; k++) a[k] = set[next_rand(seed) % (sizeof set - 1)];
    a[l] = '\0';
}

static void test_strings(void)
{
    uint64_t seed = 11;
    for (int i = 0; i < 20000; i++) {
        char a[12], b[12], x[16], y[16];
        gen(a, sizeof a, &seed);
        gen(b, sizeof b, &seed);
        if (i % 4 == 0) memcpy(b, a, sizeof a);
        size_t n = next_rand(&seed) % 14, la = strlen(a);
        int c = (unsigned char)b[0];
        int ok = CHECK(rlk__t_strlen(a) == la);
        ok = ok && CHECK(rlk__t_memchr(a, c, n < la ? n : la + 1) == memchr(a, c, n < la ? n : la + 1));
        ok = ok && CHECK(rlk__t___strchrnul(a, c) == strchrnul(a, c));
        ok = ok && CHECK(sign(rlk__t_strcmp(a, b)) == sign(strcmp(a, b)));
        ok = ok && CHECK(sign(rlk__t_strncmp(a, b, n)) == sign(strncmp(a, b, n)));
        ok = ok && CHECK(sign(rlk__t_strcasecmp(a, b)) == sign(strcasecmp(a, b)));
        ok = ok && CHECK(sign(rlk__t_strncasecmp(a, b, n)) == sign(strncasecmp(a, b, n)));
        ok = ok && CHECK(rlk__t_strspn(a, b) == strspn(a, b) && rlk__t_strcspn(a, b) == strcspn(a, b));
        memset(x, 1, sizeof x), memset(y, 1, sizeof y);
        ok = ok && CHECK(rlk__t_strcpy(x, a) == x && !memcmp(x, strcpy(y, a), sizeof x));
        memset(x, 1, sizeof x), memset(y, 1, sizeof y);
        ok = ok && CHECK(rlk__t_strncpy(x, a, n) == x && !memcmp(x, strncpy(y, a, n), sizeof x));
        if (!ok) {
            fprintf(stderr, "  strings \"%s\", \"%s\", n %zu\n", a, b, n);
            break;
        }
    }
    CHECK(rlk__t_strcasecmp("Redis", "rEDIS") == 0 && rlk__t_strncasecmp("abc", "ABD", 2) == 0);
    CHECK(rlk__t_strncmp("abc", "abd", 0) == 0 && rlk__t_memchr("abc", 'c', 2) == NULL);
}

/* inet_pton on s, mine against the C library's: the result, and the
 * address when it is one. */
static int same_pton(int af, const char *s)
{
    unsigned char x[16], y[16];
    int p = rlk__t_inet_pton(af, s, x), q = inet_pton(af, s, y);
    return CHECK_MSG(p == q && (p != 1 || !memcmp(x, y, af == AF_INET ? 4 : 16)),
                     "inet_pton(%d, \"%s\"): %d, the C library's %d", af, s, p, q);
}

static void test_inet_pton(void)
{
    static const char *const v4[] = {"0.0.0.0", "127.0.0.1", "255.255.255.255", "256.1.1.1", "01.2.3.4",
                                      "1.2.3", "1.2.3.4.", "1.2.3.4.5", "1..2.3", ".1.2.3", "1.2.3.04",
                                      "1.2.3.0", "1.2.3.4 ", "1.2.3.1000", "", "0x1.2.3.4", "1.2.3.-4"};
    static const char *const v6[] = {"::", "::1", "1::", ":::", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9",
                                     "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1:2:3:4::5:6:7:8", ":1::2",
                                     "1::2::3", "::ffff:1.2.3.4", "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:7:1.2.3.4",
                                     "1:2:3:4:5::1.2.3.4", "::1.2.3", "::01.2.3.4", "12345::", "ABCD:ef01::",
                                     "1:", "1:2:3:4:5:6:7:", "fe80::1%eth0", "::1.2.3.4:5", "", ":", "g::"};
    for (size_t i = 0; i < sizeof v4 / sizeof v4[0]; i++) same_pton(AF_INET, v4[i]);
    for (size_t i = 0; i < sizeof v6 / sizeof v6[0]; i++) same_pton(AF_INET6, v6[i]);
    uint64_t seed = 5;
    static const char set[] = "0123456789aF:.";
    for (int k = 0; k < 100000; k++) {
        char s[48];
        size_t l = next_rand(&seed) % 40;
        for (size_t i = 0; i < l; i++) s[i] = set[next_rand(&seed) % (sizeof set - 1)];
        s[l] = '\0';
        if (!same_pton(AF_INET6, s) || !same_pton(AF_INET, s)) break;
    }
    for (int k = 0; k < 20000; k++) {
        unsigned char a[16];
        char s[64];
        unsigned r = (unsigned)next_rand(&seed);
        for (int i = 0; i < 16; i++) a[i] = r >> (i / 2) & 1 ? (unsigned char)next_rand(&seed) : 0;
        if (k % 3 == 0) memcpy(a, "\0\0\0\0\0\0\0\0\0\0\377\377", 12);
        inet_ntop(AF_INET6, a, s, sizeof s);
        if (!same_pton(AF_INET6, s)) break;
        size_t l = strlen(s), at = next_rand(&seed) % (l + 1);
        if (k % 2) memmove(s + at + 1, s + at, l - at + 1), s[at] = set[next_rand(&seed) % (sizeof set - 1)];
        else memmove(s + at, s + at + 1, l - at + (at < l));
        if (!same_pton(AF_INET6, s)) break;
    }
    unsigned char a[16];
    errno = 0;
    CHECK(rlk__t_inet_pton(AF_UNIX, "::1", a) == -1 && errno == EAFNOSUPPORT);
}

static void test_fstat(void)
{
#if defined(__x86_64__)
    struct stat x, y;
    int fd[2];
    FILE *f = tmpfile();
    if (!CHECK(f && fputs("twelve bytes", f) >= 0 && fflush(f) == 0 && pipe(fd) == 0)) return;
    int fds[] = {fileno(f), fd[0], fd[1]};
    for (size_t i = 0; i < 3; i++) {
        memset(&x, 0, sizeof x);
        CHECK(rlk__t_fstat(fds[i], &x) == 0 && fstat(fds[i], &y) == 0);
        CHECK(x.st_dev == y.st_dev && x.st_ino == y.st_ino && x.st_mode == y.st_mode &&
              x.st_size == y.st_size && x.st_nlink == y.st_nlink);
    }
    CHECK(x.st_size == 0 && S_ISFIFO(x.st_mode));
    CHECK(rlk__t_fstat(fileno(f), &x) == 0 && x.st_size == 12 && S_ISREG(x.st_mode));
    close(fd[0]);
    close(fd[1]);
    fclose(f);
    errno = 0;
    CHECK(rlk__t_fstat(fd[0], &x) == -1 && errno == EBADF);
    errno = 0;
    CHECK(rlk__t_fstat(-1, &x) == -1 && errno == EBADF);
#endif
}

static void test_fcntl(void)
{
#if defined(__x86_64__)
    int fd[2];
    if (!CHECK(pipe(fd) == 0)) return;
    CHECK(rlk__t_fcntl(fd[0], F_GETFL) == fcntl(fd[0], F_GETFL));
    CHECK(!(rlk__t_fcntl(fd[1], F_GETFL) & O_NONBLOCK));
    CHECK(rlk__t_fcntl(fd[1], F_SETFL, rlk__t_fcntl(fd[1], F_GETFL) | O_NONBLOCK) == 0);
    CHECK(fcntl(fd[1], F_GETFL) & O_NONBLOCK);
    CHECK(rlk__t_fcntl(fd[1], F_GETFL) == fcntl(fd[1], F_GETFL));
    CHECK(rlk__t_fcntl(fd[0], F_GETFD) == 0);
    CHECK(rlk__t_fcntl(fd[0], F_SETFD, FD_CLOEXEC) == 0 && fcntl(fd[0], F_GETFD) == FD_CLOEXEC);
    CHECK(rlk__t_fcntl(fd[0], F_GETFD) == FD_CLOEXEC);
    int d = rlk__t_fcntl(fd[0], F_DUPFD, 40);
    CHECK(d >= 40 && fcntl(d, F_GETFD) == 0);
    int e = rlk__t_fcntl(fd[0], F_DUPFD_CLOEXEC, 50);
    CHECK(e >= 50 && fcntl(e, F_GETFD) == FD_CLOEXEC);
    struct stat x, y;
    CHECK(fstat(e, &x) == 0 && fstat(fd[0], &y) == 0 && x.st_ino == y.st_ino);
    close(d);
    close(e);
    errno = 0;
    CHECK(rlk__t_fcntl(d, F_GETFL) == -1 && errno == EBADF);
    errno = 0;
    CHECK(rlk__t_fcntl(fd[0], F_DUPFD, -1) == -1 && errno == EINVAL);
    close(fd[0]);
    close(fd[1]);
#endif
}

/* open, pipe2, getrlimit, mmap and munmap (x86-64): the system calls. */
static void test_syscalls(void)
{
#if defined(__x86_64__)
    char path[] = "/tmp/rlk-static-libc-XXXXXX";
    int t = mkstemp(path);
    if (!CHECK(t >= 0)) return;
    close(t);
    unlink(path);
    int fd = rlk__t_open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 0777) == (0640 & ~umask(022)));
    umask(022);
    CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC);
    CHECK(write(fd, "abc", 3) == 3);
    close(fd);
    errno = 0;
    CHECK(rlk__t_open(path, O_WRONLY | O_CREAT | O_EXCL, 0600) == -1 && errno == EEXIST);
    fd = rlk__t_open(path, O_RDONLY);
    char b[4];
    CHECK(fd >= 0 && fcntl(fd, F_GETFD) == 0 && read(fd, b, sizeof b) == 3 && !memcmp(b, "abc", 3));
    close(fd);
    unlink(path);
    errno = 0;
    CHECK(rlk__t_open(path, O_RDONLY) == -1 && errno == ENOENT);

    int p[2];
    CHECK(rlk__t_pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0);
    CHECK(fcntl(p[0], F_GETFD) == FD_CLOEXEC && fcntl(p[1], F_GETFD) == FD_CLOEXEC);
    CHECK((fcntl(p[0], F_GETFL) & O_NONBLOCK) && write(p[1], "x", 1) == 1 && read(p[0], b, 2) == 1);
    close(p[0]);
    close(p[1]);
    CHECK(rlk__t_pipe2(p, 0) == 0 && fcntl(p[0], F_GETFD) == 0 && !(fcntl(p[1], F_GETFL) & O_NONBLOCK));
    close(p[0]);
    close(p[1]);
    errno = 0;
    CHECK(rlk__t_pipe2(p, O_APPEND) == -1 && errno == EINVAL);

    int res[] = {RLIMIT_NOFILE, RLIMIT_STACK, RLIMIT_CORE, RLIMIT_AS};
    for (size_t i = 0; i < sizeof res / sizeof res[0]; i++) {
        struct rlimit x, y;
        CHECK(rlk__t_getrlimit(res[i], &x) == 0 && getrlimit(res[i], &y) == 0);
        CHECK(x.rlim_cur == y.rlim_cur && x.rlim_max == y.rlim_max);
    }
    struct rlimit z;
    errno = 0;
    CHECK(rlk__t_getrlimit(1000, &z) == -1 && errno == EINVAL);

    size_t n = 1 << 20;
    unsigned char *m = rlk__t_mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (CHECK(m != MAP_FAILED)) {
        CHECK(m[0] == 0 && m[n - 1] == 0);
        m[0] = m[n - 1] = 7;
        CHECK(rlk__t_munmap(m, n) == 0);
    }
    errno = 0;
    CHECK(rlk__t_mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, -1, 0) == MAP_FAILED && errno == EBADF);
    errno = 0;
    CHECK(rlk__t_mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 1) == MAP_FAILED && errno == EINVAL);
    errno = 0;
    CHECK(rlk__t_munmap((char *)m + 1, 4096) == -1 && errno == EINVAL);
#endif
}

#if defined(__x86_64__)
static volatile sig_atomic_t caught;
static void on_sig(int sig) { caught = sig; }
#endif

/* sigaction and signal (x86-64): what the C library sees set, the old
 * action, a handler that runs and returns (through the code the kernel
 * returns to), and the errors. */
static void test_sigaction(void)
{
#if defined(__x86_64__)
    struct sigaction sa = {.sa_handler = on_sig, .sa_flags = SA_RESTART}, old, seen, saved;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGUSR2);
    CHECK(sigaction(SIGUSR1, NULL, &saved) == 0);
    CHECK(rlk__t_sigaction(SIGUSR1, &sa, NULL) == 0);
    CHECK(sigaction(SIGUSR1, NULL, &seen) == 0 && seen.sa_handler == on_sig);
    CHECK((seen.sa_flags & SA_RESTART) && !(seen.sa_flags & SA_SIGINFO));
    CHECK(sigismember(&seen.sa_mask, SIGUSR2) == 1 && sigismember(&seen.sa_mask, SIGINT) == 0);
    caught = 0;
    CHECK(raise(SIGUSR1) == 0 && caught == SIGUSR1);
    caught = 0;
    CHECK(kill(getpid(), SIGUSR1) == 0 && caught == SIGUSR1);
    CHECK(rlk__t_sigaction(SIGUSR1, NULL, &old) == 0 && old.sa_handler == on_sig);
    CHECK((old.sa_flags & SA_RESTART) && sigismember(&old.sa_mask, SIGUSR2) == 1);
    CHECK(sigismember(&old.sa_mask, SIGINT) == 0);
    /* The old action given back as it was. */
    struct sigaction ign = {.sa_handler = SIG_IGN};
    CHECK(rlk__t_sigaction(SIGUSR1, &ign, &old) == 0 && old.sa_handler == on_sig);
    CHECK(sigaction(SIGUSR1, NULL, &seen) == 0 && seen.sa_handler == SIG_IGN);
    CHECK(rlk__t_sigaction(SIGUSR1, &old, NULL) == 0);
    caught = 0;
    CHECK(raise(SIGUSR1) == 0 && caught == SIGUSR1);
    CHECK(rlk__t_signal(SIGUSR1, SIG_IGN) == on_sig);
    CHECK(sigaction(SIGUSR1, NULL, &seen) == 0 && seen.sa_handler == SIG_IGN && (seen.sa_flags & SA_RESTART));
    CHECK(raise(SIGUSR1) == 0);
    CHECK(rlk__t_signal(SIGUSR1, on_sig) == SIG_IGN);
    caught = 0;
    CHECK(raise(SIGUSR1) == 0 && caught == SIGUSR1);
    CHECK(sigaction(SIGUSR1, &saved, NULL) == 0);
    int bad[] = {0, 32, 33, 34, 65, -1, SIGKILL, SIGSTOP};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        errno = 0;
        CHECK(rlk__t_sigaction(bad[i], &sa, NULL) == -1 && errno == EINVAL);
        errno = 0;
        CHECK(rlk__t_signal(bad[i], SIG_IGN) == SIG_ERR && errno == EINVAL);
    }
#endif
}

#if defined(__x86_64__)
/* musl's mutex as the command's mutexes see it: the type first. */
static pthread_mutex_t musl_mutex(int type)
{
    pthread_mutex_t m;
    memset(&m, 0, sizeof m);
    memcpy(&m, &type, sizeof type);
    return m;
}

static pthread_mutex_t shared_mu;
static long shared_n;

static void *add_thread(void *arg)
{
    int rec = arg != NULL;
    for (int i = 0; i < 50000; i++) {
        if (rlk__t_pthread_mutex_lock(&shared_mu) != 0) return NULL;
        if (rec && rlk__t_pthread_mutex_lock(&shared_mu) != 0) return NULL;
        long n = shared_n;
        if (i % 1000 == 0) sched_yield();
        shared_n = n + 1;
        if (rec && rlk__t_pthread_mutex_unlock(&shared_mu) != 0) return NULL;
        if (rlk__t_pthread_mutex_unlock(&shared_mu) != 0) return NULL;
    }
    return &shared_n;
}

static void *try_thread(void *arg)
{
    (void)arg;
    static int r[2];
    r[0] = rlk__t_pthread_mutex_trylock(&shared_mu);
    r[1] = rlk__t_pthread_mutex_unlock(&shared_mu);
    return r;
}
#endif

#if defined(__x86_64__)
#include <sys/signalfd.h>
#include <sys/utsname.h>
#include <netinet/in.h>
#endif

static long long ns_of(const struct timespec *t);

/* socket, signalfd, nanosleep, tcgetpgrp, tcsetpgrp, isatty and
 * gethostname (x86-64): the system calls (and musl's gethostname, which
 * cuts a long name where GNU libc's fails). */
static void test_syscalls2(void)
{
#if defined(__x86_64__)
    int fd = rlk__t_socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int type = 0;
    socklen_t tl = sizeof type;
    CHECK(fd >= 0 && getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM);
    CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC && (fcntl(fd, F_GETFL) & O_NONBLOCK));
    close(fd);
    fd = rlk__t_socket(AF_INET6, SOCK_DGRAM, 0);
    CHECK(fd >= 0 && fcntl(fd, F_GETFD) == 0);
    if (fd >= 0) close(fd);
    errno = 0;
    CHECK(rlk__t_socket(12345, SOCK_STREAM, 0) == -1 && errno == EAFNOSUPPORT);

    sigset_t mask, old;
    sigemptyset(&mask);
    sigaddset(&mask, SIGUSR2);
    CHECK(sigprocmask(SIG_BLOCK, &mask, &old) == 0);
    int sfd = rlk__t_signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    struct signalfd_siginfo si;
    CHECK(sfd >= 0 && fcntl(sfd, F_GETFD) == FD_CLOEXEC);
    errno = 0;
    CHECK(read(sfd, &si, sizeof si) == -1 && errno == EAGAIN);
    CHECK(raise(SIGUSR2) == 0);
    CHECK(read(sfd, &si, sizeof si) == (ssize_t)sizeof si && si.ssi_signo == SIGUSR2);
    close(sfd);
    CHECK(sigprocmask(SIG_SETMASK, &old, NULL) == 0);
    errno = 0;
    CHECK(rlk__t_signalfd(sfd, &mask, 0) == -1 && errno == EBADF);

    struct timespec a, b, d = {0, 20 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &a);
    CHECK(rlk__t_nanosleep(&d, NULL) == 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    CHECK(ns_of(&b) - ns_of(&a) >= 20 * 1000 * 1000);
    d.tv_nsec = 1000000000;
    errno = 0;
    CHECK(rlk__t_nanosleep(&d, NULL) == -1 && errno == EINVAL);

    int p[2];
    if (!CHECK(pipe(p) == 0)) return;
    errno = 0;
    CHECK(rlk__t_isatty(p[0]) == 0 && errno == ENOTTY);
    errno = 0;
    CHECK(rlk__t_tcgetpgrp(p[0]) == -1 && errno == ENOTTY);
    errno = 0;
    CHECK(rlk__t_tcsetpgrp(p[1], getpgrp()) == -1 && errno == ENOTTY);
    struct termios tio, tio2;
    errno = 0;
    CHECK(rlk__t_tcgetattr(p[0], &tio) == -1 && errno == ENOTTY);
    /* (Set: valgrind checks TCSETS's input before the kernel says
     * ENOTTY, and an error it reports here the children of test_execvp
     * inherit, as their exit status 99.) */
    memset(&tio, 0, sizeof tio);
    errno = 0;
    CHECK(rlk__t_tcsetattr(p[0], TCSANOW, &tio) == -1 && errno == ENOTTY);
    errno = 0;
    CHECK(rlk__t_tcsetattr(p[0], TCSAFLUSH + 1, &tio) == -1 && errno == EINVAL);
    close(p[0]);
    close(p[1]);
    errno = 0;
    CHECK(rlk__t_isatty(p[0]) == 0 && errno == EBADF);
    for (int i = 0; i < 3; i++) CHECK(rlk__t_isatty(i) == isatty(i));
    int tty = open("/dev/tty", O_RDWR | O_NOCTTY);
    if (tty >= 0) {
        CHECK(rlk__t_isatty(tty) == 1);
        pid_t pg = tcgetpgrp(tty);
        CHECK(rlk__t_tcgetpgrp(tty) == pg);
        if (pg == getpgrp()) CHECK(rlk__t_tcsetpgrp(tty, pg) == 0 && tcgetpgrp(tty) == pg);
        /* The flags and control characters the C library reads, set
         * again as they are. */
        memset(&tio, 0, sizeof tio);
        CHECK(rlk__t_tcgetattr(tty, &tio) == 0 && tcgetattr(tty, &tio2) == 0);
        CHECK(tio.c_iflag == tio2.c_iflag && tio.c_oflag == tio2.c_oflag && tio.c_cflag == tio2.c_cflag &&
              tio.c_lflag == tio2.c_lflag && !memcmp(tio.c_cc, tio2.c_cc, 17));
        for (int act = TCSANOW; act <= TCSADRAIN; act++) CHECK(rlk__t_tcsetattr(tty, act, &tio) == 0);
        close(tty);
    }

    struct utsname u;
    char h[300], g[300];
    CHECK(uname(&u) == 0 && gethostname(g, sizeof g) == 0);
    memset(h, 'x', sizeof h);
    CHECK(rlk__t_gethostname(h, sizeof h) == 0 && strcmp(h, g) == 0 && strcmp(h, u.nodename) == 0);
    size_t n = strlen(u.nodename);
    for (size_t len = 1; len <= n + 1; len++) {
        memset(h, 'x', sizeof h);
        CHECK(rlk__t_gethostname(h, len) == 0);
        CHECK(strlen(h) == (len <= n ? len - 1 : n) && !strncmp(h, u.nodename, strlen(h)) && h[len] == 'x');
    }
#endif
}

/* The command's stdout (buffered: written at fflush, when full and at
 * exit) and stderr (written at once) on descriptors 1 and 2, made a
 * file here; EOF and the error flag where a write fails. */
static int size_of(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? (int)st.st_size : -1;
}

static void test_stdio(void)
{
    FILE *f = tmpfile(), *e = tmpfile();
    if (!CHECK(f && e)) return;
    CHECK(fflush(stdout) == 0 && fflush(stderr) == 0);
    int save = dup(1), save2 = dup(2);
    CHECK(save >= 0 && save2 >= 0 && dup2(fileno(f), 1) == 1 && dup2(fileno(e), 2) == 2);
    CHECK(rlk__t_fputs("ab", rlk__t_stdout) == 0 && rlk__t_putchar('c') == 'c' &&
          rlk__t_putchar(0x100 + 'd') == 'd' && rlk__t_puts("ef") == 0 &&
          rlk__t_fputc('g', rlk__t_stdout) == 'g');
    CHECK(size_of(1) == 0); /* a file: fully buffered */
    CHECK(rlk__t_fwrite("hijk", 2, 2, rlk__t_stdout) == 2 && rlk__t_fwrite("x", 0, 1, rlk__t_stdout) == 0);
    CHECK(rlk__t_fflush(NULL) == 0 && size_of(1) == 12 && !rlk__t_ferror(rlk__t_stdout));
    /* More than the buffer holds: written at once, in order. */
    static char big[10000];
    memset(big, 'z', sizeof big);
    CHECK(rlk__t_fputc('<', rlk__t_stdout) == '<' && rlk__t_fwrite(big, 1, sizeof big, rlk__t_stdout) == sizeof big);
    CHECK(size_of(1) == 12 + 1 + 10000 && rlk__t_fputs(">", rlk__t_stdout) == 0 && size_of(1) == 10013);
    CHECK(rlk__t_fflush(rlk__t_stdout) == 0 && rlk__t_fflush(rlk__t_stdout) == 0 && size_of(1) == 10014);
    rlk__t_flockfile(rlk__t_stderr);
    CHECK(rlk__t_fputs("err", rlk__t_stderr) == 0 && rlk__t_fputc('!', rlk__t_stderr) == '!' && size_of(2) == 4);
    rlk__t_funlockfile(rlk__t_stderr);
    char b[16] = "";
    CHECK(pread(fileno(f), b, 12, 0) == 12 && !memcmp(b, "abcdef\nghijk", 12));
    CHECK(pread(fileno(f), b, 2, 11) == 2 && !memcmp(b, "k<", 2));
    CHECK(pread(fileno(f), b, 3, 10012) == 2 && !memcmp(b, "z>", 2));
    CHECK(pread(fileno(e), b, 4, 0) == 4 && !memcmp(b, "err!", 4));
    /* A write that fails: EOF (at once on stderr, at fflush on stdout),
     * the bytes dropped, the flag kept. */
    int full = open("/dev/full", O_WRONLY);
    if (full >= 0) {
        CHECK(dup2(full, 2) == 2 && rlk__t_fputc('a', rlk__t_stderr) == EOF && rlk__t_ferror(rlk__t_stderr));
        CHECK(rlk__t_fputs("b", rlk__t_stderr) == EOF && rlk__t_fflush(rlk__t_stderr) == 0);
        CHECK(dup2(full, 1) == 1 && rlk__t_puts("lost") == 0 && !rlk__t_ferror(rlk__t_stdout));
        CHECK(rlk__t_fflush(NULL) == EOF && rlk__t_ferror(rlk__t_stdout) && rlk__t_fflush(NULL) == 0);
        CHECK(rlk__t_ferror(rlk__t_stdout));
        close(full);
    }
    CHECK(dup2(save, 1) == 1 && dup2(save2, 2) == 2);
    close(save);
    close(save2);
    fclose(f);
    fclose(e);
}

/* pthread_mutex_lock, trylock, unlock and destroy and
 * pthread_cond_destroy (x86-64) on musl's layout: normal, recursive and error-checking mutexes, each by one thread and
 * by several at once (every increment under the lock counted). */
static void test_mutex(void)
{
#if defined(__x86_64__)
    for (int type = 0; type < 3; type++) {
        pthread_mutex_t m = musl_mutex(type);
        CHECK(rlk__t_pthread_mutex_lock(&m) == 0);
        int again = rlk__t_pthread_mutex_trylock(&m);
        CHECK(again == (type == PTHREAD_MUTEX_RECURSIVE ? 0 : EBUSY));
        if (type == PTHREAD_MUTEX_ERRORCHECK) CHECK(rlk__t_pthread_mutex_lock(&m) == EDEADLK);
        if (type == PTHREAD_MUTEX_RECURSIVE) {
            CHECK(rlk__t_pthread_mutex_lock(&m) == 0);
            CHECK(rlk__t_pthread_mutex_unlock(&m) == 0 && rlk__t_pthread_mutex_unlock(&m) == 0);
        }
        /* Another thread cannot take it, nor (but a normal one) unlock it. */
        shared_mu = m;
        pthread_t t;
        void *res = NULL;
        CHECK(pthread_create(&t, NULL, try_thread, NULL) == 0 && pthread_join(t, &res) == 0);
        int *r = res;
        CHECK(r && r[0] == EBUSY);
        m = shared_mu;
        if (type == PTHREAD_MUTEX_NORMAL) {
            CHECK(r && r[1] == 0);
        } else {
            CHECK(r && r[1] == EPERM);
            CHECK(rlk__t_pthread_mutex_unlock(&m) == 0);
            CHECK(rlk__t_pthread_mutex_unlock(&m) == EPERM);
        }
        CHECK(rlk__t_pthread_mutex_trylock(&m) == 0 && rlk__t_pthread_mutex_unlock(&m) == 0);
        CHECK(rlk__t_pthread_mutex_destroy(&m) == 0);
    }
    /* Destroyed, a condition variable no thread waits on is the C
     * library's to make again. */
    pthread_cond_t cv;
    CHECK(pthread_cond_init(&cv, NULL) == 0 && rlk__t_pthread_cond_destroy(&cv) == 0);
    CHECK(pthread_cond_init(&cv, NULL) == 0 && pthread_cond_destroy(&cv) == 0);
    for (int type = 0; type < 2; type++) {
        shared_mu = musl_mutex(type);
        shared_n = 0;
        pthread_t t[4];
        for (int i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, add_thread, type ? &shared_n : NULL) == 0);
        for (int i = 0; i < 4; i++) {
            void *ok = NULL;
            CHECK(pthread_join(t[i], &ok) == 0 && ok == &shared_n);
        }
        CHECK(shared_n == 4 * 50000);
        int lock;
        memcpy(&lock, (char *)&shared_mu + sizeof(int), sizeof lock);
        CHECK(lock == 0);
    }
#endif
}

static long long ns_of(const struct timespec *t)
{
    return (long long)t->tv_sec * 1000000000 + t->tv_nsec;
}

static void test_clock_gettime(void)
{
#if defined(__x86_64__)
    static const clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_PROCESS_CPUTIME_ID};
    for (size_t i = 0; i < sizeof clocks / sizeof *clocks; i++) {
        struct timespec a, b, c;
        CHECK(clock_gettime(clocks[i], &a) == 0);
        CHECK(rlk__t_clock_gettime(clocks[i], &b) == 0);
        CHECK(clock_gettime(clocks[i], &c) == 0);
        CHECK_MSG(ns_of(&a) <= ns_of(&b) && ns_of(&b) <= ns_of(&c) && b.tv_nsec >= 0 && b.tv_nsec < 1000000000,
                  "clock %d: %lld, %lld, %lld", (int)clocks[i], ns_of(&a), ns_of(&b), ns_of(&c));
    }
    struct timespec t;
    errno = 0;
    CHECK(rlk__t_clock_gettime((clockid_t)1000, &t) == -1 && errno == EINVAL);
#endif
}

static void test_strstr(void)
{
    const char *h[] = {"", "a", "redis://host:1", "aaab", "abcabcabd", "rediss://x", "reset by peer"};
    const char *n[] = {"", "a", "://", "aab", "abd", "abcabd", "b", "peer", "x", "reset by peer!"};
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
        for (size_t j = 0; j < sizeof n / sizeof n[0]; j++)
            CHECK_MSG(rlk__t_strstr(h[i], n[j]) == strstr(h[i], n[j]), "strstr(\"%s\", \"%s\")", h[i],
                      n[j]);
    uint64_t seed = 42;
    for (int i = 0; i < 20000; i++) {
        char a[24], b[5];
        size_t la = next_rand(&seed) % sizeof a, lb = next_rand(&seed) % sizeof b;
        for (size_t k = 0; k < la; k++) a[k] = (char)('a' + next_rand(&seed) % 3);
        for (size_t k = 0; k < lb; k++) b[k] = (char)('a' + next_rand(&seed) % 3);
        a[la] = b[lb] = '\0';
        if (!CHECK_MSG(rlk__t_strstr(a, b) == strstr(a, b), "strstr(\"%s\", \"%s\")", a, b)) break;
    }
}

/* The four functions on s in base, mine against the C library's: value,
 * errno and end (the end not when the base is bad: the C library leaves
 * it as it was). */
static int same_strto(const char *s, int base)
{
    char *e1, *e2;
    int ok = 1, bad_base = base == 1 || base < 0 || base > 36;
#define SAME(mine, theirs, fmt)                                                             \
    do {                                                                                    \
        errno = 0;                                                                          \
        e1 = NULL;                                                                          \
        __typeof__(theirs(s, &e2, base)) v1 = mine(s, &e1, base);                           \
        int r1 = errno;                                                                     \
        errno = 0;                                                                          \
        e2 = NULL;                                                                          \
        __typeof__(theirs(s, &e2, base)) v2 = theirs(s, &e2, base);                         \
        int r2 = errno;                                                                     \
        if (v1 != v2 || r1 != r2 || (!bad_base && e1 != e2)) {                              \
            ok = CHECK_MSG(0, #theirs "(\"%s\", %d): " fmt " errno %d end +%td, libc " fmt  \
                           " errno %d end +%td", s, base, v1, r1, e1 ? e1 - s : -1, v2, r2, \
                           e2 ? e2 - s : -1);                                               \
        }                                                                                   \
    } while (0)
    SAME(rlk__t_strtol, strtol, "%ld");
    SAME(rlk__t_strtoll, strtoll, "%lld");
    SAME(rlk__t_strtoul, strtoul, "%lu");
    SAME(rlk__t_strtoull, strtoull, "%llu");
#undef SAME
    return ok;
}

static void test_strtol(void)
{
    static const char *cases[] = {
        "", " ", "0", "-0", "+0", "00", "0x", "0X", "0x1f", "0X1F", "0xg", "0x1g", "-0x10", "+0x",
        "077", "08", "09", "z", "Zz", "zz", "\t\n\v\f\r 12", " \t-12abc", "+-1", "-+1", "- 1",
        "1e5", "12 34", "0b101", "2147483647", "2147483648", "-2147483648", "-2147483649",
        "4294967295", "4294967296", "-4294967295", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
        "18446744073709551616", "-18446744073709551615", "-18446744073709551616",
        "99999999999999999999999999", "-99999999999999999999999999", "0xffffffffffffffff",
        "0x10000000000000000", "-0x8000000000000000", "0x8000000000000000", "1777777777777777777777",
        "2000000000000000000000", "11111111111111111111111111111111111111111111111111111111111111111",
        "3w5e11264sgsf", "3w5e11264sgsg", "-3w5e11264sgsg", "6379", "  6379/x", "65536"};
    static const int bases[] = {0, 2, 8, 10, 16, 36, 1, 37, -1};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (size_t j = 0; j < sizeof bases / sizeof bases[0]; j++) same_strto(cases[i], bases[j]);
    static const char alphabet[] = "0123456789abcdefxXzZ +-\t9f7";
    uint64_t seed = 7;
    for (int i = 0; i < 30000; i++) {
        char s[28];
        size_t n = next_rand(&seed) % sizeof s;
        for (size_t k = 0; k < n; k++) s[k] = alphabet[next_rand(&seed) % (sizeof alphabet - 1)];
        s[n] = '\0';
        if (!same_strto(s, bases[next_rand(&seed) % 6])) break;
    }
}

/* ------------------------------------------------------------------ */
/* qsort                                                                */

/* An element of `size` bytes is ordered by its first byte, so that equal
 * keys are common; the rest of it is a tag, to find one lost or copied. */
static size_t elem_size;
static int by_first(const void *a, const void *b)
{
    return *(const unsigned char *)a - *(const unsigned char *)b;
}
static int by_tag(const void *a, const void *b)
{
    return memcmp(a, b, elem_size);
}

static int same_qsort(const unsigned char *in, size_t n, size_t size)
{
    unsigned char mine[600 * 24], theirs[600 * 24];
    memcpy(mine, in, n * size);
    memcpy(theirs, in, n * size);
    rlk__t_qsort(mine, n, size, by_first);
    qsort(theirs, n, size, by_first);
    for (size_t i = 0; i < n; i++)
        if (mine[i * size] != theirs[i * size])
            return CHECK_MSG(0, "qsort of %zu elements of %zu bytes: key %zu is %u, libc %u", n,
                             size, i, mine[i * size], theirs[i * size]);
    /* The same elements, each once: sorted whole, both are the same. */
    elem_size = size;
    qsort(mine, n, size, by_tag);
    qsort(theirs, n, size, by_tag);
    return CHECK_MSG(memcmp(mine, theirs, n * size) == 0,
                     "qsort of %zu elements of %zu bytes: not a permutation", n, size);
}

static void test_qsort(void)
{
    static const size_t sizes[] = {1, 2, 3, 8, 16, 24};
    unsigned char in[600 * 24];
    uint64_t seed = 11;
    rlk__t_qsort(NULL, 0, 8, by_first);
    for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
        size_t size = sizes[z];
        for (size_t n = 0; n <= 600; n = n < 70 ? n + 1 : n * 2 + 7) {
            if (n * size > sizeof in) break;
            for (unsigned keys = 2; keys <= 256; keys *= 8) {
                for (size_t i = 0; i < n * size; i++)
                    in[i] = (unsigned char)(i % size ? next_rand(&seed) : next_rand(&seed) % keys);
                if (!same_qsort(in, n, size)) return;
            }
            /* Sorted, reversed, and all equal. */
            for (int shape = 0; shape < 3; shape++) {
                for (size_t i = 0; i < n * size; i++)
                    in[i] = (unsigned char)(i % size ? i / size
                                                     : shape == 0 ? i / size
                                                     : shape == 1 ? n - i / size
                                                                  : 7);
                if (!same_qsort(in, n, size)) return;
            }
        }
    }
}

/* Every error it names has the C library's words; the others, "Unknown
 * error N", GNU libc's words for those it does not know (not asked of it
 * here: it keeps that text in memory of its own). */
static void test_strerror(void)
{
    static const int known[] = {
        EPERM,       ENOENT,        EINTR,        EIO,          E2BIG,        ENOEXEC,
        EBADF,       EAGAIN,        ENOMEM,       EACCES,       ENOTDIR,      EISDIR,
        EINVAL,      ENFILE,        EMFILE,       ENOSPC,       EPIPE,        ENAMETOOLONG,
        ELOOP,       EPROTO,        ENOTSOCK,     EAFNOSUPPORT, EADDRINUSE,   EADDRNOTAVAIL,
        ENETDOWN,    ENETUNREACH,   ECONNABORTED, ECONNRESET,   ENOBUFS,      ENOTCONN,
        ETIMEDOUT,   ECONNREFUSED,  EHOSTDOWN,    EHOSTUNREACH, EINPROGRESS};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        CHECK_MSG(strcmp(rlk__t_strerror(known[i]), strerror(known[i])) == 0, "strerror(%d): '%s', libc '%s'",
                  known[i], rlk__t_strerror(known[i]), strerror(known[i]));
    CHECK_EQ_STR(rlk__t_strerror(0), strerror(0));
    CHECK_EQ_STR(rlk__t_strerror(-3), "Unknown error -3");
    CHECK_EQ_STR(rlk__t_strerror(4000), "Unknown error 4000");
    CHECK(strncmp(rlk__t_strerror(EDOM), "Unknown error ", 14) == 0);
}

/* ------------------------------------------------------------------ */
/* The UTC date                                                         */

static int same_utc(int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    cli_date d;
    cli_utc(t, &d);
    if (!gmtime_r(&tt, &tm)) return CHECK_MSG(0, "gmtime_r(%lld) failed", (long long)t);
    return CHECK_MSG(d.year == (int64_t)tm.tm_year + 1900 && d.mon == tm.tm_mon + 1 &&
                         d.mday == tm.tm_mday && d.hour == tm.tm_hour && d.min == tm.tm_min &&
                         d.sec == tm.tm_sec,
                     "%lld: %lld-%02d-%02d %02d:%02d:%02d, gmtime_r %d-%02d-%02d %02d:%02d:%02d",
                     (long long)t, (long long)d.year, d.mon, d.mday, d.hour, d.min, d.sec,
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void test_utc(void)
{
    static const int64_t edges[] = {0, -1, 1, 59, 60, 86399, 86400, -86400, -86401,
                                    951782400,             /* 2000-02-29 */
                                    951868800,             /* 2000-03-01 */
                                    4107456000,            /* 2100-02-28 */
                                    4107542400,            /* 2100-03-01 */
                                    -2203891200,           /* 1900-02-28 */
                                    -62135596800,          /* 0001-01-01 */
                                    -62135596801,          /* 0000-12-31T23:59:59 */
                                    -62162035200,          /* 0000-02-29 */
                                    253402300799,          /* 9999-12-31T23:59:59 */
                                    INT64_C(1) << 40, -(INT64_C(1) << 40),
                                    INT64_C(67767976233532799)}; /* the last second gmtime_r holds */
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) same_utc(edges[i]);
    uint64_t seed = 3;
    for (int i = 0; i < 200000; i++) {
        int64_t t = (int64_t)(next_rand(&seed) % 40000000000ULL) - 20000000000LL;
        if (!same_utc(t)) break;
    }
    for (int64_t day = -800000; day < 800000; day += 7) /* every weekday's midnight, -2190 to 4160 */
        if (!same_utc(day * 86400)) break;
}

/* The longest runs of two or more zero groups in a: how many there are. */
static int longest_runs(const unsigned char *a)
{
    int best = 1, count = 0;
    for (int i = 0; i < 8;) {
        int j = i;
        while (j < 8 && !a[2 * j] && !a[2 * j + 1]) j++;
        if (j - i > best) best = j - i, count = 1;
        else if (j - i == best && best > 1) count++;
        i = j > i ? j : i + 1;
    }
    return count;
}

/* inet_ntop on a, with buffers of every length to 50: the C library's
 * words where the longest run of zero groups is one (where there are
 * more, GNU libc shortens the first, musl the first not at the start),
 * else an address inet_pton reads back as a, NULL (ENOSPC) when short. */
static int same_ntop(int af, const unsigned char *a)
{
    char x[64], y[64];
    int like_c = af == AF_INET || longest_runs(a) <= 1;
    for (socklen_t l = 0; l <= 50; l++) {
        errno = 0;
        const char *p = rlk__t_inet_ntop(af, a, x, l);
        int e = errno, ok;
        if (like_c) {
            errno = 0;
            const char *q = inet_ntop(af, a, y, l);
            ok = (p == NULL) == (q == NULL) && (p ? !strcmp(x, y) && p == x : e == errno);
        } else {
            unsigned char back[16];
            rlk__t_inet_ntop(af, a, y, sizeof y);
            ok = inet_pton(af, y, back) == 1 && !memcmp(back, a, 16) && strstr(y, "::") &&
                 (l > strlen(y) ? p == x && !strcmp(x, y) : !p && e == ENOSPC);
        }
        if (!CHECK(ok)) {
            fprintf(stderr, "  inet_ntop, %u bytes: %s\n", (unsigned)l, p ? x : "NULL");
            return 0;
        }
    }
    return 1;
}

static void test_inet_ntop(void)
{
    unsigned char a[16] = {127, 0, 0, 1};
    same_ntop(AF_INET, a);
    memset(a, 255, 4);
    same_ntop(AF_INET, a);
    uint64_t seed = 7;
    for (int k = 0; k < 20000; k++) {
        unsigned r = (unsigned)next_rand(&seed);
        for (int i = 0; i < 16; i += 2) { /* each group zero half the time */
            unsigned v = (unsigned)next_rand(&seed);
            a[i] = (unsigned char)(r >> i & 1 ? v : 0);
            a[i + 1] = (unsigned char)(r >> i & 1 ? v >> 8 : 0);
        }
        if (k % 5 == 0) memcpy(a, "\0\0\0\0\0\0\0\0\0\0\377\377", 12);
        if (!memcmp(a, "\0\0\0\0\0\0\0\0\0\0\0\0", 12)) continue;
        if (!same_ntop(AF_INET6, a)) break;
    }
    char x[64];
    memset(a, 0, 16);
    CHECK_EQ_STR(rlk__t_inet_ntop(AF_INET6, a, x, sizeof x), "::");
    a[15] = 1;
    CHECK_EQ_STR(rlk__t_inet_ntop(AF_INET6, a, x, sizeof x), "::1");
    a[15] = 2;
    CHECK_EQ_STR(rlk__t_inet_ntop(AF_INET6, a, x, sizeof x), "::2");
    a[12] = 10;
    CHECK_EQ_STR(rlk__t_inet_ntop(AF_INET6, a, x, sizeof x), "::a00:2");
    static const unsigned char two[16] = {0, 0, 0, 0, 0x3c, 0x96, 0, 0, 0, 0, 0x26, 0xc2, 0, 0, 0x2a, 0x0d};
    CHECK_EQ_STR(rlk__t_inet_ntop(AF_INET6, two, x, sizeof x), "0:0:3c96::26c2:0:2a0d");
    static const unsigned char ends[16] = {0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0};
    CHECK_EQ_STR(rlk__t_inet_ntop(AF_INET6, ends, x, sizeof x), "1:0:0:2::");
    errno = 0;
    CHECK(rlk__t_inet_ntop(AF_UNIX, a, x, sizeof x) == NULL && errno == EAFNOSUPPORT);
}

static size_t env_count(void)
{
    size_t n = 0;
    while (environ[n]) n++;
    return n;
}

static void test_setenv(void)
{
    CHECK(setenv("RLK_T_KEPT", "kept", 1) == 0);
    char **saved = environ;
    size_t n = env_count();
    CHECK(getenv("RLK_T_NEW") == NULL);
    CHECK(rlk__t_setenv("RLK_T_NEW", "one", 1) == 0 && env_count() == n + 1);
    CHECK_EQ_STR(getenv("RLK_T_NEW"), "one");
    /* What it replaces it keeps (see static_libc.c): freed here. */
    char *replaced = getenv("RLK_T_NEW") - strlen("RLK_T_NEW=");
    CHECK(rlk__t_setenv("RLK_T_NEW", "two=2", 1) == 0 && env_count() == n + 1);
    free(replaced);
    CHECK_EQ_STR(getenv("RLK_T_NEW"), "two=2");
    CHECK(rlk__t_setenv("RLK_T_NEW", "three", 0) == 0);
    CHECK_EQ_STR(getenv("RLK_T_NEW"), "two=2");
    CHECK(rlk__t_setenv("RLK_T_NE", "short", 0) == 0 && env_count() == n + 2);
    CHECK_EQ_STR(getenv("RLK_T_NE"), "short");
    CHECK_EQ_STR(getenv("RLK_T_NEW"), "two=2");
    CHECK(rlk__t_setenv("RLK_T_EMPTY", "", 1) == 0);
    CHECK_EQ_STR(getenv("RLK_T_EMPTY"), "");
    for (int i = 0; i < 100; i++) { /* the array grows, its entries kept */
        char k[32];
        snprintf(k, sizeof k, "RLK_T_%d", i);
        CHECK(rlk__t_setenv(k, k, 1) == 0);
    }
    CHECK(env_count() == n + 103);
    CHECK_EQ_STR(getenv("RLK_T_0"), "RLK_T_0");
    CHECK_EQ_STR(getenv("RLK_T_99"), "RLK_T_99");
    CHECK_EQ_STR(getenv("RLK_T_KEPT"), "kept");
    CHECK_EQ_STR(getenv("RLK_T_NE"), "short");
    static const char *const bad[] = {"", "A=B", "=A"};
    for (size_t i = 0; i < 3; i++) {
        errno = 0;
        CHECK(rlk__t_setenv(bad[i], "x", 1) == -1 && errno == EINVAL);
    }
    errno = 0;
    CHECK(rlk__t_setenv(NULL, "x", 1) == -1 && errno == EINVAL);
    CHECK(env_count() == n + 103);
    /* The environment as it was, and what the test made freed. */
    char **mine = environ;
    environ = saved;
    for (char **e = mine; *e; e++) {
        int theirs = 0;
        for (char **o = saved; *o && !theirs; o++) theirs = *o == *e;
        if (!theirs) free(*e);
    }
    if (mine != saved) free(mine);
}

/* The exit status of rlk__t_execvp(name) with PATH path (unset when
 * NULL) in a child in directory dir: the program's, or 100 + errno. */
static int exec_status(const char *dir, const char *path, const char *name)
{
    pid_t pid = fork();
    if (pid == 0) {
        char *argv[] = {(char *)name, NULL};
        if (chdir(dir) != 0) _exit(99);
        if (path) setenv("PATH", path, 1);
        else unsetenv("PATH");
        rlk__t_execvp(name, argv);
        _exit(100 + errno);
    }
    int st = 0;
    if (!CHECK(pid > 0) || !CHECK(waitpid(pid, &st, 0) == pid) || !CHECK(WIFEXITED(st))) return -1;
    return WEXITSTATUS(st);
}

static void test_execvp(void)
{
    char dir[] = "/tmp/rlk-t-execvp-XXXXXX", a[64], b[64], path[256];
    if (!CHECK(mkdtemp(dir) != NULL)) return;
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    CHECK(mkdir(a, 0700) == 0 && mkdir(b, 0700) == 0);
    /* a/rlk-t-run may not be run; b/rlk-t-run exits 7. */
    static const char *const files[][2] = {{"a/rlk-t-run", "#!/bin/sh\nexit 5\n"}, {"b/rlk-t-run", "#!/bin/sh\nexit 7\n"}};
    for (int i = 0; i < 2; i++) {
        char f[96];
        snprintf(f, sizeof f, "%s/%s", dir, files[i][0]);
        FILE *o = fopen(f, "w");
        if (!CHECK(o != NULL)) return;
        fputs(files[i][1], o);
        fclose(o);
        CHECK(chmod(f, i ? 0700 : 0600) == 0);
    }
    snprintf(path, sizeof path, "%s/none:%s:%s", dir, a, b);
    CHECK_EQ_INT(exec_status(dir, path, "rlk-t-run"), 7);
    snprintf(path, sizeof path, "/nonexistent::%s", a);
    CHECK_EQ_INT(exec_status(b, path, "rlk-t-run"), 7); /* "": the current directory */
    CHECK_EQ_INT(exec_status(dir, "/nonexistent", "b/rlk-t-run"), 7);
    CHECK_EQ_INT(exec_status(dir, "/nonexistent", "./a/rlk-t-run"), 100 + EACCES);
    CHECK_EQ_INT(exec_status(dir, NULL, "true"), 0);
    CHECK_EQ_INT(exec_status(dir, path, "rlk-t-none"), 100 + ENOENT);
    CHECK_EQ_INT(exec_status(dir, "", "rlk-t-none"), 100 + ENOENT);
    CHECK_EQ_INT(exec_status(dir, "/nonexistent", ""), 100 + ENOENT);
    snprintf(path, sizeof path, "/nonexistent:%s:%s/none", a, dir);
    CHECK_EQ_INT(exec_status(dir, path, "rlk-t-run"), 100 + EACCES);
    snprintf(path, sizeof path, "%s/a/rlk-t-run:%s", dir, b); /* a file as a directory: ENOTDIR */
    CHECK_EQ_INT(exec_status(dir, path, "rlk-t-run"), 7);
    char f[96];
    for (int i = 0; i < 2; i++) {
        snprintf(f, sizeof f, "%s/%s", dir, files[i][0]);
        unlink(f);
    }
    CHECK(rmdir(a) == 0 && rmdir(b) == 0 && rmdir(dir) == 0);
}

static void test_gai_strerror(void)
{
    static const char *const musl[] = {"Invalid flags", "Name does not resolve", "Try again",
                                       "Non-recoverable error", "Unknown error",
                                       "Unrecognized address family or invalid length",
                                       "Unrecognized socket type", "Unrecognized service", "Unknown error",
                                       "Out of memory", "System error", "Overflow"};
    for (int i = 0; i < 12; i++) CHECK_EQ_STR(rlk__t_gai_strerror(-1 - i), musl[i]);
    CHECK_EQ_STR(rlk__t_gai_strerror(0), "Unknown error");
    CHECK_EQ_STR(rlk__t_gai_strerror(5), "Unknown error");
    CHECK_EQ_STR(rlk__t_gai_strerror(-13), "Unknown error");
    CHECK_EQ_STR(rlk__t_gai_strerror(-100), "Unknown error");
}

static void test_lookup_serv(void)
{
    struct serv b[2];
    CHECK(rlk__t___lookup_serv(b, "6379", 0, SOCK_STREAM, AI_NUMERICSERV) == 1);
    CHECK(b[0].port == 6379 && b[0].proto == IPPROTO_TCP && b[0].socktype == SOCK_STREAM);
    CHECK(rlk__t___lookup_serv(b, "65535", IPPROTO_TCP, SOCK_STREAM, 0) == 1 && b[0].port == 65535);
    CHECK(rlk__t___lookup_serv(b, "53", 0, SOCK_DGRAM, 0) == 1);
    CHECK(b[0].port == 53 && b[0].proto == IPPROTO_UDP && b[0].socktype == SOCK_DGRAM);
    CHECK(rlk__t___lookup_serv(b, "80", 0, 0, 0) == 2);
    CHECK(b[0].port == 80 && b[0].proto == IPPROTO_TCP && b[0].socktype == SOCK_STREAM);
    CHECK(b[1].port == 80 && b[1].proto == IPPROTO_UDP && b[1].socktype == SOCK_DGRAM);
    CHECK(rlk__t___lookup_serv(b, NULL, 0, SOCK_STREAM, 0) == 1 && b[0].port == 0);
    CHECK(rlk__t___lookup_serv(b, NULL, 7, SOCK_RAW, 0) == 1);
    CHECK(b[0].port == 0 && b[0].proto == 7 && b[0].socktype == SOCK_RAW);
    CHECK(rlk__t___lookup_serv(b, "1", 0, SOCK_RAW, 0) == EAI_SERVICE);
    CHECK(rlk__t___lookup_serv(b, "1", IPPROTO_UDP, SOCK_STREAM, 0) == EAI_SERVICE);
    CHECK(rlk__t___lookup_serv(b, "", 0, SOCK_STREAM, 0) == EAI_SERVICE);
    CHECK(rlk__t___lookup_serv(b, "65536", 0, SOCK_STREAM, 0) == EAI_SERVICE);
    CHECK(rlk__t___lookup_serv(b, "http", 0, SOCK_STREAM, AI_NUMERICSERV) == EAI_NONAME);
    CHECK(rlk__t___lookup_serv(b, "80x", 0, SOCK_STREAM, 0) == EAI_NONAME);
}

/* ------------------------------------------------------------------ */
/* getaddrinfo (src/cli/static_resolv.c)                               */

/* The addresses rlk__t_getaddrinfo gives host (port 6379, SOCK_STREAM,
 * AI_NUMERICSERV and flags) as text, one space between; its result. */
static int resolve(const char *host, int family, int flags, char *out, size_t n)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | flags;
    out[0] = '\0';
    int rc = rlk__t_getaddrinfo(host, "6379", &hints, &res);
    if (rc) return rc;
    size_t k = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        char b[INET6_ADDRSTRLEN + 16];
        const void *a;
        unsigned port;
        if (ai->ai_family == AF_INET) {
            const struct sockaddr_in *s = (const void *)ai->ai_addr;
            CHECK(ai->ai_addrlen == sizeof *s && s->sin_family == AF_INET);
            a = &s->sin_addr;
            port = ntohs(s->sin_port);
        } else {
            const struct sockaddr_in6 *s = (const void *)ai->ai_addr;
            CHECK(ai->ai_family == AF_INET6 && ai->ai_addrlen == sizeof *s && s->sin6_family == AF_INET6);
            a = &s->sin6_addr;
            port = ntohs(s->sin6_port);
        }
        CHECK(port == 6379 && ai->ai_socktype == SOCK_STREAM && ai->ai_protocol == IPPROTO_TCP);
        CHECK(ai->ai_canonname == NULL);
        inet_ntop(ai->ai_family, a, b, sizeof b);
        k += (size_t)snprintf(out + k, n - k, "%s%s", k ? " " : "", b);
        if (k >= n) break;
    }
    rlk__t_freeaddrinfo(res);
    return 0;
}

#define CHECK_RESOLVE(host, family, flags, want) do { \
        char got_[512]; \
        int rc_ = resolve(host, family, flags, got_, sizeof got_); \
        CHECK_MSG(rc_ == 0, "%s: %s", host, gai_strerror(rc_)); \
        CHECK_EQ_STR(got_, want); \
    } while (0)
#define CHECK_RESOLVE_FAILS(host, family, flags, err) do { \
        char got_[512]; \
        int rc_ = resolve(host, family, flags, got_, sizeof got_); \
        CHECK_MSG(rc_ == (err), "%s: %d (%s), want %d", host, rc_, got_, err); \
    } while (0)

/* A file of the test's own with text s: its name into path (64 bytes). */
static int write_temp(char *path, const char *s)
{
    strcpy(path, "/tmp/rlk-t-resolv-XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return 0;
    size_t l = strlen(s);
    int ok = write(fd, s, l) == (ssize_t)l;
    close(fd);
    return ok;
}

/* Can a UDP socket be connected to ::1 (is the IPv6 loopback there)? */
static int ipv6_loopback(void)
{
    struct sockaddr_in6 sa;
    memset(&sa, 0, sizeof sa);
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(9);
    sa.sin6_addr = in6addr_loopback;
    int fd = socket(AF_INET6, SOCK_DGRAM, 0), ok = fd >= 0 && connect(fd, (void *)&sa, sizeof sa) == 0;
    if (fd >= 0) close(fd);
    return ok;
}

static void test_gai_numeric(void)
{
    rlk__t_hosts_path = rlk__t_resolv_path = "/nonexistent/rlk-t";
    CHECK_RESOLVE("127.0.0.1", AF_UNSPEC, 0, "127.0.0.1");
    CHECK_RESOLVE("192.0.2.1", AF_INET, AI_NUMERICHOST, "192.0.2.1");
    CHECK_RESOLVE("127.1", AF_UNSPEC, AI_NUMERICHOST, "127.0.0.1");
    CHECK_RESOLVE("10.1.258", AF_UNSPEC, AI_NUMERICHOST, "10.1.1.2");
    CHECK_RESOLVE("0x7f.0.0.01", AF_UNSPEC, AI_NUMERICHOST, "127.0.0.1");
    CHECK_RESOLVE("2130706433", AF_UNSPEC, AI_NUMERICHOST, "127.0.0.1");
    CHECK_RESOLVE("::1", AF_UNSPEC, 0, "::1");
    CHECK_RESOLVE("2001:db8::1:2", AF_INET6, AI_NUMERICHOST, "2001:db8::1:2");
    CHECK_RESOLVE("::ffff:192.0.2.1", AF_UNSPEC, AI_NUMERICHOST, "::ffff:192.0.2.1");
    static const char *const bad[] = {"256.0.0.1", "1.2.3.4.5", "1.2.3.", "08.1.1.1", "1.2.3.4 ", "1..2",
                                      "4294967296", "1.16777216", "fe80::1%eth0", "fe80::1%", "::1::2",
                                      "example.test", "localhost", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) CHECK_RESOLVE_FAILS(bad[i], AF_UNSPEC, AI_NUMERICHOST, EAI_NONAME);
    CHECK_RESOLVE_FAILS("127.0.0.1", AF_INET6, 0, EAI_NONAME);
    CHECK_RESOLVE_FAILS("::1", AF_INET, 0, EAI_NONAME);

    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET6;
    CHECK(rlk__t_getaddrinfo("fe80::1%7", "80", &hints, &res) == 0);
    if (res) {
        const struct sockaddr_in6 *s = (const void *)res->ai_addr;
        CHECK(s->sin6_scope_id == 7 && ntohs(s->sin6_port) == 80);
        /* No socket type asked: one entry for TCP, one for UDP. */
        CHECK(res->ai_socktype == SOCK_STREAM && res->ai_protocol == IPPROTO_TCP && res->ai_next);
        CHECK(res->ai_next && res->ai_next->ai_socktype == SOCK_DGRAM && !res->ai_next->ai_next);
        rlk__t_freeaddrinfo(res);
    }
    /* No host: the wildcard (AI_PASSIVE) or the loopback address. */
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    res = NULL;
    CHECK(rlk__t_getaddrinfo(NULL, "6379", &hints, &res) == 0);
    if (res) {
        const struct sockaddr_in *s = (const void *)res->ai_addr;
        CHECK(s->sin_addr.s_addr == htonl(INADDR_ANY) && ntohs(s->sin_port) == 6379 && !res->ai_next);
        rlk__t_freeaddrinfo(res);
    }
    hints.ai_flags = 0;
    res = NULL;
    CHECK(rlk__t_getaddrinfo(NULL, "6379", &hints, &res) == 0);
    if (res) {
        const struct sockaddr_in *s = (const void *)res->ai_addr;
        CHECK(s->sin_addr.s_addr == htonl(INADDR_LOOPBACK));
        rlk__t_freeaddrinfo(res);
    }
    CHECK(rlk__t_getaddrinfo(NULL, NULL, &hints, &res) == EAI_NONAME);
    CHECK(rlk__t_getaddrinfo("127.0.0.1", "http", &hints, &res) == EAI_NONAME);
    CHECK(rlk__t_getaddrinfo("127.0.0.1", "65536", &hints, &res) == EAI_SERVICE);
    hints.ai_protocol = IPPROTO_UDP;
    CHECK(rlk__t_getaddrinfo("127.0.0.1", "1", &hints, &res) == EAI_SERVICE);
    hints.ai_protocol = 0;
    hints.ai_family = AF_UNIX;
    CHECK(rlk__t_getaddrinfo("127.0.0.1", "1", &hints, &res) == EAI_FAMILY);
    hints.ai_family = AF_UNSPEC;
    hints.ai_flags = 0x40000000;
    CHECK(rlk__t_getaddrinfo("127.0.0.1", "1", &hints, &res) == EAI_BADFLAGS);
    res = NULL;
    CHECK(rlk__t_getaddrinfo("127.0.0.1", "1", NULL, &res) == 0 && res && res->ai_next);
    rlk__t_freeaddrinfo(res);
}

static void test_gai_localhost(void)
{
    rlk__t_hosts_path = rlk__t_resolv_path = "/nonexistent/rlk-t";
    CHECK_RESOLVE("localhost", AF_INET, 0, "127.0.0.1");
    CHECK_RESOLVE("localhost", AF_INET6, 0, "::1");
    CHECK_RESOLVE("LocalHost.", AF_INET, 0, "127.0.0.1");
    /* ::1 first where it can be reached (its precedence is higher). */
    CHECK_RESOLVE("localhost", AF_UNSPEC, 0, ipv6_loopback() ? "::1 127.0.0.1" : "127.0.0.1 ::1");
}

static void test_gai_hosts(void)
{
    char hosts[64], conf[64];
    if (!CHECK(write_temp(hosts, "# the test's\n"
                                 "192.0.2.10 one.test alias.test   # a comment\n"
                                 "2001:db8::10\tone.test\n"
                                 "\n"
                                 "   192.0.2.11\ttwo.test\r\n"
                                 "bogus three.test\n"
                                 "192.0.2.12 other.test Three.Test\n"
                                 "192.0.2.13 x.test\n"
                                 "192.0.2.14 ones.test one.tes\n"
                                 "192.0.2.15 last.test")) ||
        !CHECK(write_temp(conf, "options timeout:1 attempts:1\n")))
        return;
    rlk__t_hosts_path = hosts;
    rlk__t_resolv_path = conf;
    CHECK_RESOLVE("one.test", AF_INET, 0, "192.0.2.10");
    CHECK_RESOLVE("one.test", AF_INET6, 0, "2001:db8::10");
    CHECK_RESOLVE("ALIAS.test", AF_UNSPEC, 0, "192.0.2.10");
    CHECK_RESOLVE("two.test", AF_UNSPEC, 0, "192.0.2.11");
    CHECK_RESOLVE("three.test", AF_UNSPEC, 0, "192.0.2.12");
    CHECK_RESOLVE("last.test", AF_UNSPEC, 0, "192.0.2.15");
    char got[512];
    CHECK(resolve("one.test", AF_UNSPEC, 0, got, sizeof got) == 0);
    CHECK_MSG(!strcmp(got, "192.0.2.10 2001:db8::10") || !strcmp(got, "2001:db8::10 192.0.2.10"), "%s", got);
    /* Not in the file: DNS, here 127.0.0.1:53 (nobody, or a server
     * that does not know the name): a failure either way. */
    rlk__t_dns_port = 1;
    CHECK(resolve("a.test", AF_INET, 0, got, sizeof got) != 0);
    CHECK(resolve("comment", AF_INET, 0, got, sizeof got) != 0);
    rlk__t_dns_port = 53;
    unlink(hosts);
    unlink(conf);
}

/* The test's DNS server: on 127.0.0.1 (a port of its own), it answers
 * each query as its name's first label says (dns_answer), and writes
 * "name/type " to its log. */
struct dns_server {
    int fd, other;
    unsigned short port;
    pthread_mutex_t mu;
    char log[1024];
};

static size_t put_name(unsigned char *p, const char *name)
{
    size_t k = 0;
    while (*name) {
        size_t l = strcspn(name, ".");
        p[k] = (unsigned char)l;
        memcpy(p + k + 1, name, l);
        k += l + 1;
        name += l + !!name[l];
    }
    p[k++] = 0;
    return k;
}

/* An answer record: owner (NULL: a pointer to the question's name),
 * type, class IN, TTL 60 and rdlength rdlen with rdata d (len bytes of
 * it written). */
static size_t put_rr(unsigned char *p, const char *owner, unsigned type, const void *d, size_t len, size_t rdlen)
{
    size_t k = owner ? put_name(p, owner) : (p[0] = 0xc0, p[1] = 12, 2);
    unsigned char f[10] = {0, (unsigned char)type, 0, 1, 0, 0, 0, 60, (unsigned char)(rdlen >> 8), (unsigned char)rdlen};
    memcpy(p + k, f, 10);
    memcpy(p + k + 10, d, len);
    return k + 10 + len;
}

static size_t put_a(unsigned char *p, const char *owner, const char *ip)
{
    unsigned char a[16];
    int six = strchr(ip, ':') != NULL;
    inet_pton(six ? AF_INET6 : AF_INET, ip, a);
    return put_rr(p, owner, six ? 28 : 1, a, six ? 16 : 4, six ? 16 : 4);
}

static size_t put_cname(unsigned char *p, const char *owner, const char *to)
{
    unsigned char n[256];
    size_t l = put_name(n, to);
    return put_rr(p, owner, 5, n, l, l);
}

/* The reply to query q (n bytes; name its question's name, type its
 * type) into r: its length, 0 for none; *again set to send it twice
 * (the first time spoiled as dns_serve says). */
static size_t dns_answer(const unsigned char *q, size_t n, const char *name, unsigned type, unsigned char *r,
                         int *spoil)
{
    size_t k = n, an = 0;
    int rcode = 0, tc = 0;
    char first[64];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(name, "."), name);
    for (char *c = first; *c; c++) *c = (char)(*c | 32); /* letters alone: any case */
    size_t l = strlen(name);
    memcpy(r, q, n);
    *spoil = 0;
    if (l > 8 && !strcmp(name + l - 8, ".s1.test") && strcmp(first, "fail")) {
        rcode = 3;
    } else if (!strcmp(name, "host.s2.test")) {
        if (type == 1) k += put_a(r + k, NULL, "192.0.2.20"), an++;
    } else if (!strcmp(first, "a")) {
        if (type == 1) k += put_a(r + k, NULL, "192.0.2.1"), k += put_a(r + k, NULL, "192.0.2.2"), an += 2;
    } else if (!strcmp(first, "six")) {
        if (type == 28) k += put_a(r + k, NULL, "2001:db8::6"), an++;
    } else if (!strcmp(first, "both")) {
        k += put_a(r + k, NULL, type == 1 ? "192.0.2.5" : "2001:db8::5"), an++;
    } else if (!strcmp(first, "cname")) {
        /* The last name's address first, then the chain, and others. */
        if (type == 1) k += put_a(r + k, "c3.test", "192.0.2.3"), an++;
        k += put_a(r + k, "other.test", "192.0.2.66");
        k += put_cname(r + k, NULL, "c2.test");
        k += put_cname(r + k, "C2.test", "c3.test");
        an += 3;
    } else if (!strcmp(first, "cloop")) {
        k += put_cname(r + k, NULL, "c4.test");
        k += put_cname(r + k, "c4.test", name);
        k += put_a(r + k, "c4.test", "192.0.2.66");
        an += 3;
    } else if (!strcmp(first, "fail")) {
        rcode = 2;
    } else if (!strcmp(first, "refused")) {
        rcode = 5;
    } else if (!strcmp(first, "wrongid") || !strcmp(first, "wrongq") || !strcmp(first, "spoof")) {
        *spoil = first[5] == 'i' ? 1 : first[5] == 'q' ? 2 : 3;
        k += put_a(r + k, NULL, "192.0.2.7"), an++;
    } else if (!strcmp(first, "short")) {
        k += put_a(r + k, NULL, "192.0.2.66") - 6, an++;
    } else if (!strcmp(first, "rdlen")) {
        unsigned char a[4] = {192, 0, 2, 66};
        k += put_rr(r + k, NULL, 1, a, 4, 200), an++;
    } else if (!strcmp(first, "loop")) {
        /* The owner a pointer to itself. */
        r[k] = 0xc0;
        r[k + 1] = (unsigned char)k;
        unsigned char f[14] = {0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 66};
        memcpy(r + k + 2, f, 14);
        k += 16, an++;
    } else if (!strcmp(first, "tc")) {
        tc = 1;
        k += put_a(r + k, NULL, "192.0.2.66"), an++;
    } else if (!strcmp(first, "silent")) {
        return 0;
    } else {
        rcode = 3;
    }
    r[2] = (unsigned char)(0x81 | tc << 1);
    r[3] = (unsigned char)(0x80 | rcode);
    r[6] = (unsigned char)(an >> 8);
    r[7] = (unsigned char)an;
    return k;
}

static void *dns_serve(void *arg)
{
    struct dns_server *s = arg;
    for (;;) {
        unsigned char q[512], r[2048];
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(s->fd, q, sizeof q, 0, (struct sockaddr *)&from, &fl);
        if (n == 1 && q[0] == 'q') break;
        if (n < 17) continue;
        char name[256];
        size_t k = 0, p = 12;
        while (p < (size_t)n && q[p] && p + q[p] < (size_t)n) {
            k += (size_t)snprintf(name + k, sizeof name - k, "%s%.*s", k ? "." : "", q[p], (char *)q + p + 1);
            p += q[p] + 1u;
        }
        name[k] = '\0';
        if (p + 5 > (size_t)n) continue;
        unsigned type = (unsigned)q[p + 1] << 8 | q[p + 2];
        pthread_mutex_lock(&s->mu);
        size_t ll = strlen(s->log);
        snprintf(s->log + ll, sizeof s->log - ll, "%s/%u ", name, type);
        pthread_mutex_unlock(&s->mu);
        int spoil;
        size_t len = dns_answer(q, (size_t)n, name, type, r, &spoil);
        if (!len) continue;
        if (spoil) {
            /* First an answer that must not count: another id, another
             * question, or from another port; then the real one. */
            unsigned char bad[2048];
            memcpy(bad, r, len);
            bad[len - 1] = 66;
            if (spoil == 1) bad[1] ^= 1;
            if (spoil == 2) bad[13] ^= 1; /* the name's first letter */
            sendto(spoil == 3 ? s->other : s->fd, bad, len, 0, (struct sockaddr *)&from, fl);
        }
        sendto(s->fd, r, len, 0, (struct sockaddr *)&from, fl);
    }
    return NULL;
}

static int udp_bound(unsigned short *port)
{
    struct sockaddr_in sa;
    socklen_t l = sizeof sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &l) != 0)
        return -1;
    *port = ntohs(sa.sin_port);
    return fd;
}

/* The server's log since the last call, emptied. */
static void take_log(struct dns_server *s, char *out, size_t n)
{
    pthread_mutex_lock(&s->mu);
    snprintf(out, n, "%s", s->log);
    s->log[0] = '\0';
    pthread_mutex_unlock(&s->mu);
}

#define CHECK_LOG(s, want) do { \
        char log_[1024]; \
        take_log(s, log_, sizeof log_); \
        CHECK_EQ_STR(log_, want); \
    } while (0)

static void test_gai_dns(void)
{
    static struct dns_server s;
    unsigned short other;
    s.fd = udp_bound(&s.port);
    s.other = udp_bound(&other);
    pthread_mutex_init(&s.mu, NULL);
    s.log[0] = '\0';
    pthread_t t;
    char conf[64], conf2[64], hosts[64];
    if (!CHECK(s.fd >= 0 && s.other >= 0) || !CHECK(pthread_create(&t, NULL, dns_serve, &s) == 0)) return;
    /* Two nameservers: nobody answers on 127.0.0.2 (or it refuses). */
    CHECK(write_temp(conf, "# the test's\n"
                           "domain ignored.test\n"
                           "nameserver 127.0.0.2\n"
                           "nameserver 127.0.0.1 ; a comment\n"
                           "search s1.test s2.test\n"
                           "options timeout:1 attempts:1 ndots:1\n"));
    CHECK(write_temp(conf2, "nameserver 127.0.0.1\nsearch s1.test s2.test\noptions ndots:2 timeout:1 attempts:1\n"));
    CHECK(write_temp(hosts, "192.0.2.99 other.test\n"));
    rlk__t_resolv_path = conf;
    rlk__t_hosts_path = hosts;
    rlk__t_dns_port = s.port;

    CHECK_RESOLVE("a.test", AF_INET, 0, "192.0.2.1 192.0.2.2");
    CHECK_LOG(&s, "a.test/1 ");
    CHECK_RESOLVE("a.test", AF_UNSPEC, 0, "192.0.2.1 192.0.2.2");
    CHECK_LOG(&s, "a.test/1 a.test/28 ");
    CHECK_RESOLVE_FAILS("a.test", AF_INET6, 0, EAI_NONAME);
    CHECK_LOG(&s, "a.test/28 ");
    CHECK_RESOLVE("six.test", AF_INET6, 0, "2001:db8::6");
    CHECK_RESOLVE("SIX.test", AF_UNSPEC, 0, "2001:db8::6");
    char got[512];
    CHECK(resolve("both.test", AF_UNSPEC, 0, got, sizeof got) == 0);
    CHECK_MSG(!strcmp(got, "192.0.2.5 2001:db8::5") || !strcmp(got, "2001:db8::5 192.0.2.5"), "%s", got);
    CHECK_RESOLVE("cname.test", AF_INET, 0, "192.0.2.3");
    CHECK_RESOLVE_FAILS("cname.test", AF_INET6, 0, EAI_NONAME);
    CHECK_RESOLVE_FAILS("cloop.test", AF_INET, 0, EAI_FAIL);
    take_log(&s, got, sizeof got);

    CHECK_RESOLVE_FAILS("nx.test", AF_UNSPEC, 0, EAI_NONAME);
    CHECK_RESOLVE_FAILS("fail.test", AF_INET, 0, EAI_AGAIN);
    CHECK_RESOLVE_FAILS("refused.test", AF_INET, 0, EAI_FAIL);
    CHECK_RESOLVE("wrongid.test", AF_INET, 0, "192.0.2.7");
    CHECK_RESOLVE("wrongq.test", AF_INET, 0, "192.0.2.7");
    CHECK_RESOLVE("spoof.test", AF_INET, 0, "192.0.2.7");
    CHECK_RESOLVE_FAILS("short.test", AF_INET, 0, EAI_FAIL);
    CHECK_RESOLVE_FAILS("rdlen.test", AF_INET, 0, EAI_FAIL);
    CHECK_RESOLVE_FAILS("loop.test", AF_INET, 0, EAI_FAIL);
    CHECK_RESOLVE_FAILS("tc.test", AF_INET, 0, EAI_AGAIN);
    CHECK_LOG(&s, "nx.test/1 nx.test/28 fail.test/1 refused.test/1 wrongid.test/1 wrongq.test/1 spoof.test/1 "
                  "short.test/1 rdlen.test/1 loop.test/1 tc.test/1 ");
    /* No answer: EAI_AGAIN after the one attempt of 1 s. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_RESOLVE_FAILS("silent.test", AF_INET, 0, EAI_AGAIN);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    CHECK_MSG(ms >= 900 && ms < 3000, "%ld ms", ms);
    CHECK_LOG(&s, "silent.test/1 ");
    /* The hosts file before DNS. */
    CHECK_RESOLVE("other.test", AF_INET, 0, "192.0.2.99");
    CHECK_LOG(&s, "");

    /* Search domains: fewer dots than ndots, each domain then the name
     * alone; a final '.', as it is; another failure than NXDOMAIN ends it. */
    CHECK_RESOLVE("host", AF_INET, 0, "192.0.2.20");
    CHECK_LOG(&s, "host.s1.test/1 host.s2.test/1 ");
    CHECK_RESOLVE_FAILS("host.", AF_INET, 0, EAI_NONAME);
    CHECK_LOG(&s, "host/1 ");
    CHECK_RESOLVE_FAILS("x.y", AF_INET, 0, EAI_NONAME);
    CHECK_LOG(&s, "x.y/1 ");
    CHECK_RESOLVE_FAILS("fail", AF_INET, 0, EAI_AGAIN);
    CHECK_LOG(&s, "fail.s1.test/1 ");
    CHECK_RESOLVE_FAILS("nothere", AF_INET, 0, EAI_NONAME);
    CHECK_LOG(&s, "nothere.s1.test/1 nothere.s2.test/1 nothere/1 ");
    rlk__t_resolv_path = conf2;
    CHECK_RESOLVE_FAILS("x.y", AF_INET, 0, EAI_NONAME);
    CHECK_LOG(&s, "x.y.s1.test/1 x.y.s2.test/1 x.y/1 ");
    CHECK_RESOLVE("a.b.test", AF_INET, 0, "192.0.2.1 192.0.2.2");
    CHECK_LOG(&s, "a.b.test/1 ");
    /* Names that are no DNS names are not asked. */
    CHECK_RESOLVE_FAILS("a..test", AF_INET, 0, EAI_NONAME);
    CHECK_RESOLVE_FAILS("a.0123456789012345678901234567890123456789012345678901234567890123.test", AF_INET, 0,
                        EAI_NONAME);
    CHECK_LOG(&s, "");

    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons(s.port);
    sendto(s.other, "q", 1, 0, (struct sockaddr *)&sa, sizeof sa);
    pthread_join(t, NULL);
    close(s.fd);
    close(s.other);
    pthread_mutex_destroy(&s.mu);
    unlink(conf);
    unlink(conf2);
    unlink(hosts);
    rlk__t_hosts_path = "/etc/hosts";
    rlk__t_resolv_path = "/etc/resolv.conf";
    rlk__t_dns_port = 53;
}

TL_PROGRAM(NULL, NULL,
           TL_TEST(test_malloc_sizes),
           TL_TEST(test_malloc_too_big),
           TL_TEST(test_calloc_zeros),
           TL_TEST(test_realloc_keeps),
           TL_TEST(test_churn),
           TL_TEST(test_reuse),
           TL_TEST(test_threads),
           TL_TEST(test_fork),
           TL_TEST(test_strings),
           TL_TEST(test_strstr),
           TL_TEST(test_strtol),
           TL_TEST(test_qsort),
           TL_TEST(test_strerror),
           TL_TEST(test_inet_ntop),
           TL_TEST(test_inet_pton),
           TL_TEST(test_fstat),
           TL_TEST(test_fcntl),
           TL_TEST(test_syscalls),
           TL_TEST(test_sigaction),
           TL_TEST(test_mutex),
           TL_TEST(test_syscalls2),
           TL_TEST(test_stdio),
           TL_TEST(test_clock_gettime),
           TL_TEST(test_setenv),
           TL_TEST(test_execvp),
           TL_TEST(test_gai_strerror),
           TL_TEST(test_lookup_serv),
           TL_TEST(test_gai_numeric),
           TL_TEST(test_gai_localhost),
           TL_TEST(test_gai_hosts),
           TL_TEST(test_gai_dns),
           TL_TEST(test_utc));
