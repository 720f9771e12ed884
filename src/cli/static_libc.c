/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The static command's strlen, memchr, strcmp, strncmp, strcasecmp,
 * strncasecmp, strcpy, strncpy, strspn, strcspn, strstr, strtol family,
 * qsort, strerror, gai_strerror, inet_ntop, inet_pton, setenv, execvp,
 * fstat, fcntl, clock_gettime, open, pipe2, getrlimit, mmap, munmap,
 * sigaction, signal, socket, signalfd, nanosleep, tcgetpgrp, tcsetpgrp,
 * tcgetattr, tcsetattr, isatty, gethostname, pthread_mutex_lock, trylock, unlock and destroy
 * and pthread_cond_destroy (x86-64), fork, pthread_atfork, musl's
 * __strchrnul and the __lookup_serv of the command's getaddrinfo
 * (src/cli/static_resolv.c)
 * (--enable-static-binary): linked before the C library, they replace
 * the library's, for the command and for the C library's own calls, as
 * small code where the library's is general: its strstr is a two-way
 * search of over a kilobyte, its strtol a scanner shared with scanf.
 * The default build keeps the C library's.
 *
 * strlen, memchr, musl's __strchrnul (its strchr's and getenv's: the
 * first c, else the end), the comparisons (strcasecmp's case is the C
 * locale's: A to Z), strcpy, strncpy (the rest of n zeroed), strspn and
 * strcspn go a byte at a time: the strings are short, where the C
 * library's go a word at a time or through a table of bytes, a few
 * hundred bytes of code each.
 *
 * strstr compares at each place in turn: the strings searched are short
 * (URLs, host names, messages).  strtol, strtoll, strtoul and strtoull
 * are the C standard's: leading white space, a sign, base 0 (0x: 16, 0:
 * 8, else 10) or 2 to 36 (16 takes 0x), the value clamped with ERANGE
 * when it does not fit (an unsigned one negated when it has a '-'), and
 * *end at the first byte not used, or at the start when no digit was.
 * Another base sets EINVAL.
 *
 * qsort is a heapsort: no memory of its own, n log n compares at worst,
 * a few lines where the C library's smoothsort is 2 KiB; like the C
 * library's, it does not keep the order of equal elements (the command
 * sorts round trips, and a renewal round by hash slot).
 *
 * strerror knows the errors a network client meets (its sockets, files,
 * fork and exec), in GNU libc's words, the default build's: the C
 * library's table of every error is 2 KiB; these words are packed with
 * the usage text.  Others are "Unknown error N", as GNU libc says of
 * those it does not know.  gai_strerror is musl's, its words packed so
 * too.
 *
 * inet_ntop writes what musl's does: IPv4 as four decimals, IPv6 as
 * eight hexadecimal groups (the last 32 bits as IPv4 after ::ffff: and
 * five zero groups), the longest run of two or more zero groups (the
 * first of equal ones) written "::"; ENOSPC when it does not fit, and
 * EAFNOSUPPORT for another family.  The C library's is general code
 * over its printf (musl's, with snprintf's own, twice this).
 *
 * inet_pton reads what musl's does (and GNU libc's): IPv4 as four
 * decimals of one to three digits, none above 255 or with a leading 0;
 * IPv6 as eight groups of one to four hexadecimal digits, or fewer and
 * one "::" for one or more zero groups, the last two groups may be an
 * IPv4 address; -1 with EAFNOSUPPORT for another family.  It is two
 * thirds of musl's.
 *
 * setenv is musl's but for one thing: the "NAME=value" it replaces stays
 * allocated, where musl's keeps a list of those it allocated to free
 * them (the command sets a few variables once, before it runs a
 * command).  A NAME that is NULL, empty or with '=' is EINVAL; the
 * first entry of NAME is replaced, else the environment grows (into an
 * array of its own, copied from the first one).
 *
 * execvp runs a FILE with '/' as it is, else looks for it in each
 * directory of PATH in turn (an empty one is the current directory;
 * without PATH, /usr/local/bin:/bin:/usr/bin): the first that execve
 * runs; a directory where it is missing (ENOENT, ENOTDIR) or may not be
 * run (EACCES), or too long a path with FILE, is passed over, and EACCES
 * is the error when one was so and none ran; another error ends the
 * search with it.  A file the kernel will not run (ENOEXEC: no "#!"
 * line) fails so, as musl's does, where GNU libc's hands it to /bin/sh.
 *
 * fstat, on x86-64 (where struct stat is the kernel's), is the system
 * call: musl's goes through its fstatat, which for a descriptor opened
 * with O_PATH on a kernel before 3.6 (fstat's EBADF there) tries again
 * by its name under /proc; the command's one call is on stderr (is it
 * the journal's stream?).  fcntl, on x86-64 too, is the system call
 * with its third argument read as an unsigned long (none is read as
 * what the register holds, which the kernel then ignores): the
 * command's calls are F_GETFL, F_SETFL and F_DUPFD.  musl's also turns
 * F_GETOWN into F_GETOWN_EX, whose answer cannot be mistaken for an
 * error when the owner is a process group, and tries F_DUPFD_CLOEXEC
 * again as F_DUPFD and F_SETFD on a kernel before 2.6.24: this one does
 * neither.  clock_gettime, on x86-64 too, is the system call (and so is
 * musl's internal __clock_gettime, which its own calls name), where
 * musl's first looks for the kernel's vDSO and its symbol (700 bytes of
 * ELF reading) to read the clocks without one: a read costs a system
 * call now, which the command does not feel (its list of 3,000 locks
 * takes as long).  open, pipe2, getrlimit, mmap and munmap, on x86-64
 * too, are the system calls: musl's open sets FD_CLOEXEC again after
 * O_CLOEXEC, which kernels before 2.6.23 ignored, and is a cancellation
 * point (the command cancels no thread); its pipe2 falls back to pipe
 * and fcntl on kernels before 2.6.27; its getrlimit asks prlimit64
 * first and widens the 32-bit limits of old system calls (x86-64's are
 * 64-bit); its mmap checks the offset and size the kernel checks too,
 * waits for a process-shared barrier before MAP_FIXED, and turns an
 * EPERM into ENOMEM; its munmap waits for that barrier too (the
 * command's allocator maps and unmaps anonymous memory, never at a
 * fixed address).  sigaction, on x86-64, is the system call with the
 * kernel's struct sigaction and the code a handler returns to (the
 * rt_sigreturn system call, which the kernel needs there: SA_RESTORER),
 * and as musl's, EINVAL for musl's own signals (32 to 34); musl's also
 * unblocks those before the first handler is set, notes whether a
 * handler interrupts system calls (for its futex waits, which then
 * take an EINTR as a wake-up), and takes a lock around a change of
 * SIGABRT's (for abort, which the command never calls).  signal is
 * sigaction with SA_RESTART.  These made the command 1,440 bytes
 * smaller.  socket, signalfd, nanosleep, tcgetpgrp, tcsetpgrp and
 * isatty, on x86-64, are the system calls too (isatty's error ENOTTY
 * unless EBADF, as musl's): musl's socket and signalfd set the flags
 * again with fcntl on kernels before 2.6.27, which ignored them, and
 * its nanosleep goes through clock_nanosleep; gethostname copies the
 * uname system call's node name as musl's does (cut at the length
 * given, its last byte then NUL, where GNU libc's fails with
 * ENAMETOOLONG).  These made it 1,090 bytes smaller (and fputc, putchar
 * and puts 570 more, now src/cli/static_stdio.c's).  tcgetattr and
 * tcsetattr (x86-64) are the ioctls TCGETS and TCSETS (+ TCSANOW,
 * TCSADRAIN or TCSAFLUSH; another is EINVAL), as musl's, without its
 * ioctl, which they alone called (its conversions of time structures
 * for 32-bit systems).
 *
 * pthread_mutex_lock, trylock and unlock (and musl's internal names of
 * them, which its condition variables call), on x86-64, keep musl's
 * layout of a mutex and its meaning, for musl's condition variables
 * (the watchdog thread's, were it started) read and change it: the type
 * (normal, recursive or error-checking; shared or not), a lock word that
 * is 0 when free and else EBUSY (normal) or the owner's thread id, its
 * top bit set by a waiter (and by a condition variable that moves its
 * waiters onto the mutex) for the unlock to wake one, and a count of
 * waiters.  A locker tries, spins a hundred times while nobody waits,
 * then waits on the lock word (a futex, private unless shared) until
 * it can take it.  Unlike musl's they keep no list of the mutexes a
 * thread holds (musl marks those of a thread that ends holding them,
 * which then stay locked either way), and know no robust or
 * priority-inheriting mutex, which the library never asks for; the
 * owner's thread id is the gettid system call (musl reads its own
 * copy).  pthread_mutex_timedlock, which the library never calls, stays
 * musl's, over these.  The command is 1,470 bytes smaller with them.
 *
 * fork and pthread_atfork (the command's build only: the unit test's
 * C library has no _Fork of musl's kind) run the handlers as musl's do,
 * the prepares last given first, then the parent's or child's in the
 * order given, around musl's own _Fork (the system call, the child's
 * thread made its only one); up to 8 sets of handlers (the command's
 * allocator and random pool give 2), ENOMEM past them.  musl's fork
 * also takes every lock of its own (stdio's list of files, atexit's,
 * the thread list's...) when another thread was ever started, so that a
 * child of a threaded program finds none held: the command starts no
 * thread (its watchdog thread is the library's, which it never starts)
 * and its children exec at once.  Those locks brought musl's
 * reader-writer lock and futex waits: the command is 1,820 bytes
 * smaller without them.
 * Elsewhere the C library's stays.
 *
 * __lookup_serv, named and made as musl's own (its getaddrinfo's, for
 * the service), is the service lookup of the command's getaddrinfo
 * (src/cli/static_resolv.c), as musl 1.2's for a numeric service: the
 * command passes the port as digits with AI_NUMERICSERV, and
 * /etc/services is never read.  A name is EAI_NONAME, as musl says of
 * it with AI_NUMERICSERV.
 *
 * The unit test compiles this file with RLK_LIBC_NAME(f) naming the
 * functions otherwise and compares them with the C library's.
 */
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef RLK_LIBC_NAME
#define RLK_LIBC_NAME(f) f
#define RLK_LIBC_MUSL 1 /* the command's: musl's own internals may be named */
#endif

char *RLK_LIBC_NAME(strstr)(const char *h, const char *n);
long RLK_LIBC_NAME(strtol)(const char *restrict s, char **restrict end, int base);
long long RLK_LIBC_NAME(strtoll)(const char *restrict s, char **restrict end, int base);
unsigned long RLK_LIBC_NAME(strtoul)(const char *restrict s, char **restrict end, int base);
unsigned long long RLK_LIBC_NAME(strtoull)(const char *restrict s, char **restrict end, int base);
void RLK_LIBC_NAME(qsort)(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
char *RLK_LIBC_NAME(strerror)(int e);
const char *RLK_LIBC_NAME(gai_strerror)(int e);
const char *RLK_LIBC_NAME(inet_ntop)(int af, const void *restrict a0, char *restrict s, socklen_t l);
int RLK_LIBC_NAME(setenv)(const char *k, const char *v, int overwrite);
int RLK_LIBC_NAME(inet_pton)(int af, const char *restrict s, void *restrict a0);
int RLK_LIBC_NAME(fstat)(int fd, struct stat *st);
int RLK_LIBC_NAME(fcntl)(int fd, int cmd, ...);
int RLK_LIBC_NAME(clock_gettime)(clockid_t c, struct timespec *ts);
int RLK_LIBC_NAME(__clock_gettime)(clockid_t c, struct timespec *ts);
int RLK_LIBC_NAME(execvp)(const char *file, char *const argv[]);
int RLK_LIBC_NAME(open)(const char *path, int flags, ...);
int RLK_LIBC_NAME(pipe2)(int fd[2], int flags);
int RLK_LIBC_NAME(getrlimit)(int resource, struct rlimit *lim);
void *RLK_LIBC_NAME(mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int RLK_LIBC_NAME(munmap)(void *addr, size_t len);
int RLK_LIBC_NAME(sigaction)(int sig, const struct sigaction *restrict sa, struct sigaction *restrict old);
void (*RLK_LIBC_NAME(signal)(int sig, void (*f)(int)))(int);
int RLK_LIBC_NAME(socket)(int domain, int type, int proto);
int RLK_LIBC_NAME(signalfd)(int fd, const sigset_t *mask, int flags);
int RLK_LIBC_NAME(nanosleep)(const struct timespec *req, struct timespec *rem);
pid_t RLK_LIBC_NAME(tcgetpgrp)(int fd);
int RLK_LIBC_NAME(tcsetpgrp)(int fd, pid_t pg);
int RLK_LIBC_NAME(tcgetattr)(int fd, struct termios *t);
int RLK_LIBC_NAME(tcsetattr)(int fd, int act, const struct termios *t);
int RLK_LIBC_NAME(isatty)(int fd);
int RLK_LIBC_NAME(gethostname)(char *name, size_t len);
int RLK_LIBC_NAME(pthread_mutex_lock)(pthread_mutex_t *m);
int RLK_LIBC_NAME(__pthread_mutex_lock)(pthread_mutex_t *m);
int RLK_LIBC_NAME(pthread_mutex_trylock)(pthread_mutex_t *m);
int RLK_LIBC_NAME(__pthread_mutex_trylock)(pthread_mutex_t *m);
int RLK_LIBC_NAME(pthread_mutex_unlock)(pthread_mutex_t *m);
int RLK_LIBC_NAME(__pthread_mutex_unlock)(pthread_mutex_t *m);
int RLK_LIBC_NAME(pthread_mutex_destroy)(pthread_mutex_t *m);
int RLK_LIBC_NAME(pthread_cond_destroy)(pthread_cond_t *c);

size_t RLK_LIBC_NAME(strlen)(const char *s);
void *RLK_LIBC_NAME(memchr)(const void *s, int c, size_t n);
char *RLK_LIBC_NAME(__strchrnul)(const char *s, int c);
int RLK_LIBC_NAME(strcmp)(const char *a, const char *b);
int RLK_LIBC_NAME(strncmp)(const char *a, const char *b, size_t n);
int RLK_LIBC_NAME(strcasecmp)(const char *a, const char *b);
int RLK_LIBC_NAME(strncasecmp)(const char *a, const char *b, size_t n);
char *RLK_LIBC_NAME(strcpy)(char *restrict d, const char *restrict s);
char *RLK_LIBC_NAME(strncpy)(char *restrict d, const char *restrict s, size_t n);
size_t RLK_LIBC_NAME(strspn)(const char *s, const char *c);
size_t RLK_LIBC_NAME(strcspn)(const char *s, const char *c);

/* A byte at a time: the strings are short, where the C library's read
 * a word at a time (a few hundred bytes of code each). */
size_t RLK_LIBC_NAME(strlen)(const char *s)
{
    const char *p = s;
    while (*p) p++;
    return (size_t)(p - s);
}

void *RLK_LIBC_NAME(memchr)(const void *s, int c, size_t n)
{
    for (const unsigned char *p = s; n; n--, p++)
        if (*p == (unsigned char)c) return (void *)p;
    return NULL;
}

/* musl's own (its strchr's and getenv's): the first c in s, else its end. */
char *RLK_LIBC_NAME(__strchrnul)(const char *s, int c)
{
    while (*s && *s != (char)c) s++;
    return (char *)s;
}

static int ncmp(const char *a, const char *b, size_t n)
{
    for (; n; n--, a++, b++)
        if (*a != *b || !*a) return (unsigned char)*a - (unsigned char)*b;
    return 0;
}

int RLK_LIBC_NAME(strncmp)(const char *a, const char *b, size_t n)
{
    return ncmp(a, b, n);
}

int RLK_LIBC_NAME(strcmp)(const char *a, const char *b)
{
    return ncmp(a, b, (size_t)-1);
}

/* The C locale's: only A to Z are letters with another case. */
static int lower(unsigned char c)
{
    return (unsigned)(c - 'A') < 26 ? c | 32 : c;
}

static int ncasecmp(const char *a, const char *b, size_t n)
{
    for (; n; n--, a++, b++) {
        int d = lower((unsigned char)*a) - lower((unsigned char)*b);
        if (d || !*a) return d;
    }
    return 0;
}

int RLK_LIBC_NAME(strncasecmp)(const char *a, const char *b, size_t n)
{
    return ncasecmp(a, b, n);
}

int RLK_LIBC_NAME(strcasecmp)(const char *a, const char *b)
{
    return ncasecmp(a, b, (size_t)-1);
}

char *RLK_LIBC_NAME(strcpy)(char *restrict d, const char *restrict s)
{
    char *p = d;
    while ((*p++ = *s++)) continue;
    return d;
}

char *RLK_LIBC_NAME(strncpy)(char *restrict d, const char *restrict s, size_t n)
{
    for (size_t i = 0; i < n; i++) d[i] = *s ? *s++ : 0;
    return d;
}

/* The length of s's start of bytes in c (in 1), or not in c (in 0). */
static size_t span(const char *s, const char *c, int in)
{
    size_t i = 0;
    while (s[i] && (*RLK_LIBC_NAME(__strchrnul)(c, s[i]) != 0) == in) i++;
    return i;
}

size_t RLK_LIBC_NAME(strspn)(const char *s, const char *c)
{
    return span(s, c, 1);
}

size_t RLK_LIBC_NAME(strcspn)(const char *s, const char *c)
{
    return span(s, c, 0);
}

char *RLK_LIBC_NAME(strstr)(const char *h, const char *n)
{
    size_t k = strlen(n);
    for (;; h++) {
        if (!strncmp(h, n, k)) return (char *)h;
        if (!*h) return NULL;
    }
}

/* A digit's value in any base up to 36; 36 or more for anything else. */
static unsigned digit(char c)
{
    if (c >= '0' && c <= '9') return (unsigned)(c - '0');
    c = (char)(c | 32);
    if (c >= 'a' && c <= 'z') return (unsigned)(c - 'a' + 10);
    return 36;
}

/* The magnitude of the number at s; *neg when it has a '-'; *over when
 * it does not fit in an unsigned long long. */
static unsigned long long scan(const char *s, char **end, int base, int *neg, int *over)
{
    const char *p = s;
    while (*p == ' ' || (unsigned)(*p - '\t') < 5) p++;
    *neg = *p == '-';
    if (*p == '+' || *p == '-') p++;
    if ((base == 0 || base == 16) && p[0] == '0' && (p[1] | 32) == 'x' && digit(p[2]) < 16) {
        p += 2;
        base = 16;
    } else if (base == 0) {
        base = *p == '0' ? 8 : 10;
    } else if (base < 2 || base > 36) {
        errno = EINVAL;
        base = 0; /* no digit is one */
    }
    unsigned long long v = 0;
    const char *digits = p;
    *over = 0;
    for (unsigned d; (d = digit(*p)) < (unsigned)base; p++) {
        if (v > (ULLONG_MAX - d) / (unsigned)base) *over = 1;
        else v = v * (unsigned)base + d;
    }
    if (end) *end = (char *)(p > digits ? p : s);
    return v;
}

static unsigned long long to_unsigned(const char *s, char **end, int base, unsigned long long max)
{
    int neg, over;
    unsigned long long v = scan(s, end, base, &neg, &over);
    if (over || v > max) {
        errno = ERANGE;
        return max;
    }
    return neg ? (0 - v) & max : v;
}

static long long to_signed(const char *s, char **end, int base, unsigned long long max)
{
    int neg, over;
    unsigned long long v = scan(s, end, base, &neg, &over);
    if (over || v > max + (unsigned)neg) {
        errno = ERANGE;
        return neg ? -(long long)max - 1 : (long long)max;
    }
    return neg ? (long long)(0 - v) : (long long)v;
}

long RLK_LIBC_NAME(strtol)(const char *restrict s, char **restrict end, int base)
{
    return (long)to_signed(s, end, base, LONG_MAX);
}

long long RLK_LIBC_NAME(strtoll)(const char *restrict s, char **restrict end, int base)
{
    return to_signed(s, end, base, LLONG_MAX);
}

unsigned long RLK_LIBC_NAME(strtoul)(const char *restrict s, char **restrict end, int base)
{
    return (unsigned long)to_unsigned(s, end, base, ULONG_MAX);
}

unsigned long long RLK_LIBC_NAME(strtoull)(const char *restrict s, char **restrict end, int base)
{
    return to_unsigned(s, end, base, ULLONG_MAX);
}

static void swap(char *a, char *b, size_t size)
{
    while (size--) {
        char t = *a;
        *a++ = *b;
        *b++ = t;
    }
}

void RLK_LIBC_NAME(qsort)(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    char *b = base;
    /* From n / 2 down to 0 each node is sifted down to make the heap,
     * then the largest is swapped to the end and the new root sifted. */
    for (size_t i = n / 2, end = n, r;;) {
        if (i) r = --i;
        else if (end > 1) swap(b, b + --end * size, size), r = 0;
        else return;
        for (size_t c; (c = 2 * r + 1) < end; r = c) {
            if (c + 1 < end && cmp(b + c * size, b + (c + 1) * size) < 0) c++;
            if (cmp(b + r * size, b + c * size) >= 0) break;
            swap(b + r * size, b + c * size, size);
        }
    }
}

/* The errors known; their words, in the same order, are
 * src/cli/strerror.txt's lines, packed with the usage text (usage.c). */
const char *cli_errors(void);
static const unsigned char codes[] = {
    0,           EPERM,       ENOENT,        EINTR,        EIO,          E2BIG,        ENOEXEC,
    EBADF,       EAGAIN,        ENOMEM,       EACCES,       ENOTDIR,      EISDIR,
    EINVAL,      ENFILE,        EMFILE,       ENOSPC,       EPIPE,        ENAMETOOLONG,
    ELOOP,       EPROTO,        ENOTSOCK,     EAFNOSUPPORT, EADDRINUSE,   EADDRNOTAVAIL,
    ENETDOWN,    ENETUNREACH,   ECONNABORTED, ECONNRESET,   ENOBUFS,      ENOTCONN,
    ETIMEDOUT,   ECONNREFUSED,  EHOSTDOWN,    EHOSTUNREACH, EINPROGRESS};

char *RLK_LIBC_NAME(strerror)(int e)
{
    const char *w = cli_errors();
    for (size_t i = 0; i < sizeof codes; i++, w += strlen(w) + 1)
        if (codes[i] == e) return (char *)w;
    static char unknown[32];
    snprintf(unknown, sizeof unknown, "Unknown error %d", e);
    return unknown;
}

/* musl's: its words (src/cli/gai_strerror.txt's lines, after strerror's)
 * from EAI_BADFLAGS (-1) down, then an empty one and the word of the
 * others. */
const char *RLK_LIBC_NAME(gai_strerror)(int e)
{
    const char *s = cli_errors();
    for (size_t i = 0; i < sizeof codes; i++) s += strlen(s) + 1;
    for (e++; e && *s; e++, s++)
        while (*s) s++;
    return *s ? s : s + 1;
}

const char *RLK_LIBC_NAME(inet_ntop)(int af, const void *restrict a0, char *restrict s, socklen_t l)
{
    const unsigned char *a = a0;
    char buf[48];
    if (af == AF_INET) {
        if (snprintf(s, l, "%d.%d.%d.%d", a[0], a[1], a[2], a[3]) < (int)l) return s;
        errno = ENOSPC;
        return NULL;
    }
    if (af != AF_INET6) {
        errno = EAFNOSUPPORT;
        return NULL;
    }
    int n = 0, mapped = !memcmp(a, "\0\0\0\0\0\0\0\0\0\0\377\377", 12);
    for (int i = 0; i < (mapped ? 12 : 16); i += 2) n += snprintf(buf + n, 6, "%x:", a[i] << 8 | a[i + 1]);
    if (mapped) snprintf(buf + n, 16, "%d.%d.%d.%d", a[12], a[13], a[14], a[15]);
    else buf[n - 1] = '\0';
    /* The longest run of ':' and '0' at the start or from a ':', if it is
     * more than one zero group. */
    size_t best = 0, max = 2, i = 0;
    for (; buf[i]; i++) {
        if (i && buf[i] != ':') continue;
        size_t j = strspn(buf + i, ":0");
        if (j > max) best = i, max = j;
    }
    if (max > 3) {
        buf[best] = buf[best + 1] = ':';
        memmove(buf + best + 2, buf + best + max, i - best - max + 1);
    }
    if (strlen(buf) < l) return strcpy(s, buf);
    errno = ENOSPC;
    return NULL;
}

/* The value of a hexadecimal digit, or -1. */
static int hex(char c)
{
    unsigned d = digit(c);
    return d < 16 ? (int)d : -1;
}

int RLK_LIBC_NAME(inet_pton)(int af, const char *restrict s, void *restrict a0)
{
    unsigned char *a = a0;
    if (af == AF_INET) {
        /* Four decimals of one to three digits, none with a leading 0,
         * none above 255, each written to a as it is read. */
        for (int i = 0;; i++, s++) {
            int v = 0, j = 0;
            for (; j < 3 && (unsigned)(s[j] - '0') < 10; j++) v = v * 10 + s[j] - '0';
            if (!j || (j > 1 && *s == '0') || v > 255) return 0;
            a[i] = (unsigned char)v;
            s += j;
            if (i == 3) return !*s;
            if (*s != '.') return 0;
        }
    }
    if (af != AF_INET6) {
        errno = EAFNOSUPPORT;
        return -1;
    }
    /* Groups of one to four hexadecimal digits; one "::" (at brk) for
     * zero groups, or none there; the last two groups may be an IPv4
     * address. */
    unsigned short ip[8];
    int i = 0, brk = -1, v4 = 0;
    if (*s == ':' && *++s != ':') return 0;
    for (;; i++) {
        if (*s == ':' && brk < 0) {
            brk = i;
            ip[i & 7] = 0;
            if (!*++s) break;
            if (i == 7) return 0;
            continue;
        }
        int v = 0, j = 0, d;
        for (; j < 4 && (d = hex(s[j])) >= 0; j++) v = v * 16 + d;
        if (!j) return 0;
        ip[i & 7] = (unsigned short)v;
        if (!s[j] && (brk >= 0 || i == 7)) break;
        if (i == 7) return 0;
        if (s[j] != ':') {
            if (s[j] != '.' || (i < 6 && brk < 0)) return 0;
            v4 = 1;
            ip[++i & 7] = 0;
            break;
        }
        s += j + 1;
    }
    if (brk >= 0) {
        memmove(ip + brk + 7 - i, ip + brk, 2 * (size_t)(i + 1 - brk));
        memset(ip + brk, 0, 2 * (size_t)(7 - i));
    }
    for (int j = 0; j < 8; j++) {
        a[2 * j] = (unsigned char)(ip[j] >> 8);
        a[2 * j + 1] = (unsigned char)ip[j];
    }
    return !v4 || RLK_LIBC_NAME(inet_pton)(AF_INET, s, a + 12) > 0;
}

int RLK_LIBC_NAME(setenv)(const char *k, const char *v, int overwrite)
{
    extern char **environ;
    static char **own;
    size_t l = k ? strcspn(k, "=") : 0, i = 0;
    if (!l || k[l]) {
        errno = EINVAL;
        return -1;
    }
    if (!overwrite && getenv(k)) return 0;
    size_t n = strlen(v) + 1;
    char *s = malloc(l + 1 + n), **e;
    if (!s) return -1;
    memcpy(s, k, l);
    s[l] = '=';
    memcpy(s + l + 1, v, n);
    for (e = environ; e && *e; e++, i++)
        if (!strncmp(s, *e, l + 1)) {
            *e = s;
            return 0;
        }
    e = realloc(environ == own ? own : NULL, (i + 2) * sizeof *e);
    if (!e) {
        free(s);
        return -1;
    }
    if (environ != own) {
        if (i) memcpy(e, environ, i * sizeof *e);
        free(own);
    }
    e[i] = s;
    e[i + 1] = NULL;
    environ = own = e;
    return 0;
}

int RLK_LIBC_NAME(execvp)(const char *file, char *const argv[])
{
    extern char **environ;
    size_t k = strlen(file);
    if (!k) {
        errno = ENOENT;
        return -1;
    }
    if (*RLK_LIBC_NAME(__strchrnul)(file, '/')) return execve(file, argv, environ);
    const char *p = getenv("PATH");
    if (!p) p = "/usr/local/bin:/bin:/usr/bin";
    int denied = 0;
    for (;; p++) {
        const char *z = RLK_LIBC_NAME(__strchrnul)(p, ':');
        size_t l = (size_t)(z - p);
        char b[PATH_MAX];
        if (l + k + 2 <= sizeof b) {
            memcpy(b, p, l);
            b[l] = '/';
            memcpy(b + l + !!l, file, k + 1);
            execve(b, argv, environ);
            if (errno == EACCES) denied = 1;
            else if (errno != ENOENT && errno != ENOTDIR) return -1;
        }
        p = z;
        if (!*p) break;
    }
    errno = denied ? EACCES : ENOENT;
    return -1;
}

#if defined(__x86_64__)
/* Where struct stat is the kernel's (x86-64), the system call fills it. */
int RLK_LIBC_NAME(fstat)(int fd, struct stat *st)
{
    return (int)syscall(SYS_fstat, fd, st);
}

int RLK_LIBC_NAME(fcntl)(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    unsigned long arg = va_arg(ap, unsigned long);
    va_end(ap);
    return (int)syscall(SYS_fcntl, fd, cmd, arg);
}

int RLK_LIBC_NAME(__clock_gettime)(clockid_t c, struct timespec *ts)
{
    return (int)syscall(SYS_clock_gettime, c, ts);
}

int RLK_LIBC_NAME(clock_gettime)(clockid_t c, struct timespec *ts)
{
    return RLK_LIBC_NAME(__clock_gettime)(c, ts);
}

#ifndef O_TMPFILE /* GNU libc's headers, without _GNU_SOURCE */
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif
int RLK_LIBC_NAME(open)(const char *path, int flags, ...)
{
    unsigned mode = 0;
    if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, unsigned);
        va_end(ap);
    }
    return (int)syscall(SYS_open, path, flags, mode);
}

int RLK_LIBC_NAME(pipe2)(int fd[2], int flags)
{
    return (int)syscall(SYS_pipe2, fd, flags);
}

int RLK_LIBC_NAME(getrlimit)(int resource, struct rlimit *lim)
{
    return (int)syscall(SYS_getrlimit, resource, lim);
}

void *RLK_LIBC_NAME(mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

int RLK_LIBC_NAME(munmap)(void *addr, size_t len)
{
    return (int)syscall(SYS_munmap, addr, len);
}

/* The kernel's struct sigaction (x86-64), and the code a handler returns
 * to (rt_sigreturn), which the kernel asks for there (SA_RESTORER). */
struct rlk_ksigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    unsigned long mask;
};
#define RLK_SA_RESTORER 0x04000000UL
void rlk__sig_return(void);
__asm__(".text\n.globl rlk__sig_return\n.hidden rlk__sig_return\n.type rlk__sig_return,@function\n"
        "rlk__sig_return:\n\tmovl $15, %eax\n\tsyscall\n");

int RLK_LIBC_NAME(sigaction)(int sig, const struct sigaction *restrict sa, struct sigaction *restrict old)
{
    struct rlk_ksigaction k, o;
    /* musl's own signals (32 to 34) may not be changed. */
    if (sig - 32U < 3) {
        errno = EINVAL;
        return -1;
    }
    if (sa) {
        k.handler = sa->sa_handler;
        k.flags = (unsigned long)sa->sa_flags | RLK_SA_RESTORER;
        k.restorer = rlk__sig_return;
        memcpy(&k.mask, &sa->sa_mask, sizeof k.mask);
    }
    int r = (int)syscall(SYS_rt_sigaction, sig, sa ? &k : NULL, old ? &o : NULL, sizeof k.mask);
    if (old && !r) {
        memset(old, 0, sizeof *old);
        old->sa_handler = o.handler;
        old->sa_flags = (int)o.flags;
        memcpy(&old->sa_mask, &o.mask, sizeof o.mask);
    }
    return r;
}

void (*RLK_LIBC_NAME(signal)(int sig, void (*f)(int)))(int)
{
    struct sigaction sa = {.sa_handler = f, .sa_flags = SA_RESTART}, old;
    return RLK_LIBC_NAME(sigaction)(sig, &sa, &old) ? SIG_ERR : old.sa_handler;
}

int RLK_LIBC_NAME(socket)(int domain, int type, int proto)
{
    return (int)syscall(SYS_socket, domain, type, proto);
}

int RLK_LIBC_NAME(signalfd)(int fd, const sigset_t *mask, int flags)
{
    return (int)syscall(SYS_signalfd4, fd, mask, 8, flags);
}

int RLK_LIBC_NAME(nanosleep)(const struct timespec *req, struct timespec *rem)
{
    return (int)syscall(SYS_nanosleep, req, rem);
}

pid_t RLK_LIBC_NAME(tcgetpgrp)(int fd)
{
    int pg;
    return syscall(SYS_ioctl, fd, TIOCGPGRP, &pg) ? -1 : pg;
}

int RLK_LIBC_NAME(tcsetpgrp)(int fd, pid_t pg)
{
    int v = pg;
    return (int)syscall(SYS_ioctl, fd, TIOCSPGRP, &v);
}

/* On x86-64 the kernel's struct termios is the start of the C
 * library's: TCGETS fills it, TCSETS, TCSETSW and TCSETSF (TCSANOW,
 * TCSADRAIN and TCSAFLUSH from TCSETS) read it. */
int RLK_LIBC_NAME(tcgetattr)(int fd, struct termios *t)
{
    return syscall(SYS_ioctl, fd, TCGETS, t) ? -1 : 0;
}

int RLK_LIBC_NAME(tcsetattr)(int fd, int act, const struct termios *t)
{
    if (act < TCSANOW || act > TCSAFLUSH) {
        errno = EINVAL;
        return -1;
    }
    return (int)syscall(SYS_ioctl, fd, TCSETS + act, t);
}

int RLK_LIBC_NAME(isatty)(int fd)
{
    struct winsize w;
    if (!syscall(SYS_ioctl, fd, TIOCGWINSZ, &w)) return 1;
    if (errno != EBADF) errno = ENOTTY;
    return 0;
}

int RLK_LIBC_NAME(gethostname)(char *name, size_t len)
{
    struct utsname u;
    if (syscall(SYS_uname, &u)) return -1;
    size_t i = 0;
    if (len > sizeof u.nodename) len = sizeof u.nodename;
    while (i < len && (name[i] = u.nodename[i])) i++;
    if (i && i == len) name[i - 1] = 0;
    return 0;
}

/* A system call that leaves errno alone (the mutexes' futex waits). */
static long sys4(long n, long a, long b, long c, long d)
{
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return r;
}

/* musl's pthread_mutex_t (src/internal/pthread_impl.h): its condition
 * variables read and change the lock word and the waiters too. */
struct rlk_mutex {
    int type;          /* the attribute's: 0 normal, 1 recursive, 2 error-checking; 128 shared */
    volatile int lock; /* 0 free, else EBUSY (normal) or the owner's thread id; bit 31: wake one */
    volatile int waiters;
    int unused_pad;
    void *unused_prev, *unused_next; /* musl's list of the robust mutexes a thread holds */
    int count;         /* recursive: the times it was locked again */
};
#define RLK_OWNER 0x3fffffff
#define RLK_FUTEX_WAIT 0
#define RLK_FUTEX_WAKE 1

static int self_tid(void) { return (int)sys4(SYS_gettid, 0, 0, 0, 0); }

/* tid: the caller's thread id, or 0 where the type has no owner. */
static int try_lock(struct rlk_mutex *x, int tid)
{
    if (!tid) return __sync_bool_compare_and_swap(&x->lock, 0, EBUSY) ? 0 : EBUSY;
    if ((x->lock & RLK_OWNER) == tid && (x->type & 3) == PTHREAD_MUTEX_RECURSIVE) {
        if ((unsigned)x->count >= INT_MAX) return EAGAIN;
        x->count++;
        return 0;
    }
    return __sync_bool_compare_and_swap(&x->lock, 0, tid) ? 0 : EBUSY;
}

int RLK_LIBC_NAME(__pthread_mutex_trylock)(pthread_mutex_t *m)
{
    struct rlk_mutex *x = (struct rlk_mutex *)m;
    return try_lock(x, x->type & 15 ? self_tid() : 0);
}

int RLK_LIBC_NAME(pthread_mutex_trylock)(pthread_mutex_t *m)
{
    return RLK_LIBC_NAME(__pthread_mutex_trylock)(m);
}

int RLK_LIBC_NAME(__pthread_mutex_lock)(pthread_mutex_t *m)
{
    struct rlk_mutex *x = (struct rlk_mutex *)m;
    int tid = x->type & 15 ? self_tid() : 0, r, spins = 100;
    while ((r = try_lock(x, tid)) == EBUSY) {
        int v = x->lock;
        if (!v) continue;
        if (tid && (v & RLK_OWNER) == tid) return EDEADLK; /* error-checking */
        if (spins && !x->waiters) {
            spins--;
            __asm__ volatile("pause" ::: "memory");
            continue;
        }
        __sync_fetch_and_add(&x->waiters, 1);
        int t = v | INT_MIN;
        __sync_val_compare_and_swap(&x->lock, v, t);
        sys4(SYS_futex, (long)&x->lock, RLK_FUTEX_WAIT | ((x->type & 128) ^ 128), t, 0);
        __sync_fetch_and_sub(&x->waiters, 1);
    }
    return r;
}

int RLK_LIBC_NAME(pthread_mutex_lock)(pthread_mutex_t *m)
{
    return RLK_LIBC_NAME(__pthread_mutex_lock)(m);
}

int RLK_LIBC_NAME(__pthread_mutex_unlock)(pthread_mutex_t *m)
{
    struct rlk_mutex *x = (struct rlk_mutex *)m;
    int waiters = x->waiters;
    if (x->type & 15) {
        if ((x->lock & RLK_OWNER) != self_tid()) return EPERM;
        if ((x->type & 3) == PTHREAD_MUTEX_RECURSIVE && x->count) return x->count--, 0;
    }
    if (__sync_lock_test_and_set(&x->lock, 0) < 0 || waiters)
        sys4(SYS_futex, (long)&x->lock, RLK_FUTEX_WAKE | ((x->type & 128) ^ 128), 1, 0);
    return 0;
}

int RLK_LIBC_NAME(pthread_mutex_unlock)(pthread_mutex_t *m)
{
    return RLK_LIBC_NAME(__pthread_mutex_unlock)(m);
}

/* Nothing to undo for a mutex or a condition variable that is not
 * shared between processes, the library's only kind (it sets no
 * pshared attribute): musl's pthread_mutex_destroy waits for its
 * process-shared robust mutexes' memory barrier, and its
 * pthread_cond_destroy for the waiters of a process-shared one to
 * leave, which brought its futex waits (280 bytes of the command). */
int RLK_LIBC_NAME(pthread_mutex_destroy)(pthread_mutex_t *m)
{
    (void)m;
    return 0;
}

int RLK_LIBC_NAME(pthread_cond_destroy)(pthread_cond_t *c)
{
    (void)c;
    return 0;
}

#if RLK_LIBC_MUSL
/* The handlers of pthread_atfork, in the order given (room for 8: the
 * command gives 2), under a lock that fork holds from the first
 * prepare to the last parent's or child's. */
static void (*atfork[8][3])(void);
static int n_atfork;
static pthread_mutex_t atfork_mu = PTHREAD_MUTEX_INITIALIZER;

int pthread_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void))
{
    int r = ENOMEM;
    pthread_mutex_lock(&atfork_mu);
    if (n_atfork < 8) {
        atfork[n_atfork][0] = prepare;
        atfork[n_atfork][1] = parent;
        atfork[n_atfork++][2] = child;
        r = 0;
    }
    pthread_mutex_unlock(&atfork_mu);
    return r;
}

/* musl's _Fork (src/process/_Fork.c): the fork system call, the child's
 * thread made the only one. */
pid_t _Fork(void);

pid_t fork(void)
{
    pthread_mutex_lock(&atfork_mu);
    for (int i = n_atfork; i--;)
        if (atfork[i][0]) atfork[i][0]();
    pid_t r = _Fork();
    int e = errno;
    for (int i = 0; i < n_atfork; i++)
        if (atfork[i][r ? 1 : 2]) atfork[i][r ? 1 : 2]();
    pthread_mutex_unlock(&atfork_mu); /* a normal one: the child may */
    errno = e;
    return r;
}
#endif
#endif

/* musl's struct service (src/network/lookup.h); buf has room for 2. */
struct rlk_musl_service {
    unsigned short port;
    unsigned char proto, socktype;
};
int RLK_LIBC_NAME(__lookup_serv)(struct rlk_musl_service *buf, const char *name, int proto, int socktype,
                                 int flags);

int RLK_LIBC_NAME(__lookup_serv)(struct rlk_musl_service *buf, const char *name, int proto, int socktype, int flags)
{
    (void)flags;
    if (socktype == SOCK_STREAM || socktype == SOCK_DGRAM) {
        int own = socktype == SOCK_STREAM ? IPPROTO_TCP : IPPROTO_UDP;
        if (proto && proto != own) return EAI_SERVICE;
        proto = own;
    } else if (socktype) {
        if (name) return EAI_SERVICE;
        buf[0].port = 0;
        buf[0].proto = (unsigned char)proto;
        buf[0].socktype = (unsigned char)socktype;
        return 1;
    }
    char *z = "";
    unsigned long port = 0;
    if (name) {
        if (!*name) return EAI_SERVICE;
        port = strtoul(name, &z, 10);
    }
    if (*z) return EAI_NONAME;
    if (port > 65535) return EAI_SERVICE;
    int cnt = 0;
    if (proto != IPPROTO_UDP) buf[cnt++] = (struct rlk_musl_service){(unsigned short)port, IPPROTO_TCP, SOCK_STREAM};
    if (proto != IPPROTO_TCP) buf[cnt++] = (struct rlk_musl_service){(unsigned short)port, IPPROTO_UDP, SOCK_DGRAM};
    return cnt;
}
