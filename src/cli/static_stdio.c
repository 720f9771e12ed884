/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The static command's stdio (--enable-static-binary): stdout, stderr,
 * fwrite, fputs, fputc, putchar, puts, fflush, ferror, flockfile,
 * funlockfile, printf and musl's __stdio_exit, linked before the C
 * library so that none of musl's stdio is linked: its FILE with its read
 * side, seeking and closing, its list of open files, its locks (a
 * thread's count of them, the waits on them), its writev and its flush
 * at exit were 3.2 KB of the command; the command is 2,900 bytes smaller
 * with these.  The command only ever writes, and only to its standard
 * output and error (its files are read with open and read:
 * src/cli/config.c).  Its vfprintf is src/cli/static_printf.c's, over
 * fwrite; musl's fprintf stays (it passes its FILE on to vfprintf),
 * where musl's printf would name musl's own stdout.  The default build
 * keeps the C library's.
 *
 * As the C library's (musl's and GNU libc's): stdout is buffered, a line
 * at a time when it is a terminal (known at its first write), else
 * fully, and written at fflush, when its buffer is full and at exit;
 * stderr is not buffered, each call is written at once.  A failed write
 * (write's error, EINTR tried again) sets the stream's error flag
 * (ferror), the bytes buffered are dropped and the call fails; the flag
 * stays.  fflush(NULL) is stdout's.  The buffer is 4 KiB (in .bss: no
 * byte of the file), GNU libc's for a pipe, so that the default build's
 * and this one's stdout and stderr, read through one pipe, interleave
 * alike.
 *
 * flockfile and funlockfile lock nothing: the command writes from its
 * main thread only (the library writes nothing; its watchdog thread,
 * never started by the command, neither).
 *
 * The unit test compiles this file with RLK_LIBC_NAME(f) naming the
 * functions (and stdout, stderr) otherwise, on a FILE of its own.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#ifndef RLK_LIBC_NAME
#define RLK_LIBC_NAME(f) f
/* musl's FILE is struct _IO_FILE, which its headers declare and never
 * define: this file defines it. */
#define RLK_FILE_TAG _IO_FILE
#define RLK_STDIO_COMMAND 1 /* the command's: vfprintf is src/cli/static_printf.c's */
#else
#define RLK_FILE_TAG rlk_file
#endif

typedef struct RLK_FILE_TAG rlk_file;

enum { BUF_UNKNOWN, BUF_LINE, BUF_FULL, BUF_NONE };

struct RLK_FILE_TAG {
    int fd;
    int how;    /* BUF_*: stdout's is known at its first write */
    int err;    /* a write failed: ferror */
    size_t n;   /* bytes in buf */
    size_t cap; /* buf's size, 0 when not buffered */
    char *buf;
};

static char out_buf[4096];
static rlk_file out_file = {1, BUF_UNKNOWN, 0, 0, sizeof out_buf, out_buf};
static rlk_file err_file = {2, BUF_NONE, 0, 0, 0, NULL};
rlk_file *const RLK_LIBC_NAME(stdout) = &out_file;
rlk_file *const RLK_LIBC_NAME(stderr) = &err_file;

size_t RLK_LIBC_NAME(fwrite)(const void *restrict p, size_t size, size_t n, rlk_file *restrict f);
int RLK_LIBC_NAME(fputs)(const char *restrict s, rlk_file *restrict f);
int RLK_LIBC_NAME(fputc)(int c, rlk_file *f);
int RLK_LIBC_NAME(putchar)(int c);
int RLK_LIBC_NAME(puts)(const char *s);
int RLK_LIBC_NAME(fflush)(rlk_file *f);
int RLK_LIBC_NAME(ferror)(rlk_file *f);
void RLK_LIBC_NAME(flockfile)(rlk_file *f);
void RLK_LIBC_NAME(funlockfile)(rlk_file *f);

/* s to f's descriptor, all of it unless a write fails (then the error
 * flag); the bytes written. */
static size_t write_all(rlk_file *f, const char *s, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(f->fd, s + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { /* 0 for a non-empty write: no progress, taken as a failure */
            f->err = 1;
            break;
        }
        done += (size_t)w;
    }
    return done;
}

/* The bytes buffered written: 0, or EOF when that failed (dropped). */
static int drain(rlk_file *f)
{
    size_t n = f->n;
    f->n = 0;
    return write_all(f, f->buf, n) == n ? 0 : EOF;
}

/* len bytes of s into f: the bytes taken (len, unless a write failed). */
static size_t put(rlk_file *f, const char *s, size_t len)
{
    if (f->how == BUF_UNKNOWN) f->how = isatty(f->fd) ? BUF_LINE : BUF_FULL;
    if (f->how == BUF_NONE) return write_all(f, s, len);
    if (len > f->cap - f->n) {
        if (drain(f)) return 0;
        if (len >= f->cap) return write_all(f, s, len); /* no use copying it */
    }
    memcpy(f->buf + f->n, s, len);
    f->n += len;
    if (f->how == BUF_LINE && memchr(s, '\n', len) && drain(f)) return 0;
    return len;
}

size_t RLK_LIBC_NAME(fwrite)(const void *restrict p, size_t size, size_t n, rlk_file *restrict f)
{
    /* size * n fits: the caller's bytes are in memory. */
    return size ? put(f, p, size * n) / size : 0;
}

int RLK_LIBC_NAME(fputs)(const char *restrict s, rlk_file *restrict f)
{
    size_t len = strlen(s);
    return put(f, s, len) == len ? 0 : EOF;
}

int RLK_LIBC_NAME(fputc)(int c, rlk_file *f)
{
    unsigned char b = (unsigned char)c;
    return put(f, (const char *)&b, 1) ? b : EOF;
}

int RLK_LIBC_NAME(putchar)(int c)
{
    return RLK_LIBC_NAME(fputc)(c, &out_file);
}

int RLK_LIBC_NAME(puts)(const char *s)
{
    return -(RLK_LIBC_NAME(fputs)(s, &out_file) || RLK_LIBC_NAME(fputc)('\n', &out_file) < 0);
}

/* NULL: every stream with bytes buffered, that is stdout. */
int RLK_LIBC_NAME(fflush)(rlk_file *f)
{
    return drain(f ? f : &out_file);
}

int RLK_LIBC_NAME(ferror)(rlk_file *f)
{
    return f->err;
}

void RLK_LIBC_NAME(flockfile)(rlk_file *f)
{
    (void)f;
}

void RLK_LIBC_NAME(funlockfile)(rlk_file *f)
{
    (void)f;
}

#if RLK_STDIO_COMMAND
/* musl's printf names its own stdout (its FILE, and with it the rest of
 * its stdio), where this one is the command's. */
int printf(const char *restrict fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(&out_file, fmt, ap);
    va_end(ap);
    return r;
}
#endif

#if RLK_STDIO_COMMAND
/* At exit (and at the return from main) musl's exit calls its stdio's
 * __stdio_exit, after the atexit functions and the destructors, when
 * one is linked (else a stub of its own): this one writes what stdout
 * has buffered.  A child that ends with _exit does not.  Named so too,
 * __stdio_exit_needed is what musl's readers (__toread, linked with
 * strtod though none of it is used) link musl's __stdio_exit with. */
void __stdio_exit(void);
void __stdio_exit_needed(void);
void __stdio_exit(void)
{
    drain(&out_file);
}
void __stdio_exit_needed(void) __attribute__((alias("__stdio_exit")));
#endif
