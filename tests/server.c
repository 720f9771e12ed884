/* SPDX-License-Identifier: BSD-3-Clause */
/* redis-server processes for tests: see server.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "server.h"
#include "testlib.h"
#include "transport.h"
#include "clock.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define START_TIMEOUT_MS 15000 /* generous: CI machines under valgrind are slow */
#define STOP_TIMEOUT_MS 5000
#define MAX_SERVERS 64

static ts_server *live[MAX_SERVERS];
static int atexit_done;
static char certs_dir[512];
static char *cert_paths[64];
static int ncert_paths;

void ts_pause_ms(int ms)
{
    poll(NULL, 0, ms);
}

int64_t ts_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ts_contains(const char *s, const char *needle)
{
    return s && strstr(s, needle) != NULL;
}

socklen_t ts_loopback(int ipv6, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (ipv6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        return sizeof *a;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return sizeof *a;
}

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    char sub[1024];
    struct stat st;
    if (d) {
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode))
                remove_tree(sub);
            else
                unlink(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

static void cleanup_at_exit(void)
{
    int i;
    for (i = 0; i < MAX_SERVERS; i++)
        if (live[i]) ts_stop(live[i]);
    for (i = 0; i < ncert_paths; i++) free(cert_paths[i]);
    ncert_paths = 0;
    if (certs_dir[0]) remove_tree(certs_dir);
    certs_dir[0] = '\0';
}

static void register_atexit(void)
{
    if (!atexit_done) {
        atexit(cleanup_at_exit);
        atexit_done = 1;
    }
}

static int make_tmpdir(char *out, size_t n, const char *what)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    snprintf(out, n, "%s/resplock-%s-XXXXXX", tmp, what);
    if (!mkdtemp(out)) {
        fprintf(stderr, "test server: mkdtemp %s: %s\n", out, strerror(errno));
        out[0] = '\0';
        return -1;
    }
    return 0;
}

int ts_free_port(int ipv6)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd, port = -1;

    len = ts_loopback(ipv6, &ss);
    fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (bind(fd, (struct sockaddr *)&ss, len) == 0 &&
        getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
        port = ntohs(ipv6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                          : ((struct sockaddr_in *)&ss)->sin_port);
    close(fd);
    return port;
}

int ts_have_ipv6(void)
{
    return ts_free_port(1) > 0;
}

/* A listener on 127.0.0.1 with the given backlog, its address in *sa. */
static int listener(int backlog, struct sockaddr_in *sa)
{
    socklen_t len = sizeof *sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(sa, 0, sizeof *sa);
    sa->sin_family = AF_INET;
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd >= 0 && bind(fd, (struct sockaddr *)sa, sizeof *sa) == 0 && listen(fd, backlog) == 0 &&
        getsockname(fd, (struct sockaddr *)sa, &len) == 0)
        return fd;
    if (fd >= 0) close(fd);
    return -1;
}

int ts_hole_open(ts_hole *h)
{
    struct sockaddr_in sa;
    int pending = 0;
    memset(h, 0, sizeof *h);
    h->lfd = listener(0, &sa);
    if (h->lfd < 0) {
        fprintf(stderr, "ts_hole_open: listen: %s\n", strerror(errno));
        return -1;
    }
    h->port = ntohs(sa.sin_port);
    /* Fill the queue until a connect stays pending. */
    while (h->nfill < 8 && !pending) {
        struct pollfd p;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) break;
        h->fillers[h->nfill++] = fd;
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) continue;
        p.fd = fd;
        p.events = POLLOUT;
        pending = poll(&p, 1, 300) == 0;
    }
    if (pending) return 0;
    fprintf(stderr, "ts_hole_open: the listen queue never filled\n");
    ts_hole_close(h);
    return -1;
}

void ts_hole_close(ts_hole *h)
{
    for (int i = 0; i < h->nfill; i++) close(h->fillers[i]);
    h->nfill = 0;
    if (h->lfd >= 0) close(h->lfd);
    h->lfd = -1;
}

int ts_steps_to_handshake(rlk__transport *t, int rc)
{
    int64_t end = rlk__now_ms() + 10000;
    while (rc == RLK__IN_PROGRESS && !t->cs.upper && rlk__now_ms() < end) {
        struct pollfd p = {t->cs.events ? t->fd : -1, t->cs.events, 0};
        int r = poll(&p, 1, rlk__ms_left(t->cs.wake < 0 || t->cs.wake > end ? end : t->cs.wake));
        rc = rlk__connect_step(t, r > 0 ? p.revents : 0);
    }
    return rc;
}

int ts_silent_listener(int *port)
{
    struct sockaddr_in sa;
    int fd = listener(16, &sa);
    if (fd >= 0) *port = ntohs(sa.sin_port);
    return fd;
}

void ts_show_file_tail(const char *path)
{
    char buf[4096];
    FILE *f = fopen(path, "r");
    long size;
    size_t n;
    if (!f) return;
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0, SEEK_SET);
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    fprintf(stderr, "---- %s (end)\n%s\n----\n", path, buf);
}

static int file_contains(const char *path, const char *needle)
{
    char buf[65536];
    FILE *f = fopen(path, "r");
    size_t n;
    if (!f) return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strstr(buf, needle) != NULL;
}

static void close_from(int lowfd)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0u, 0) == 0) return;
#endif
    {
        long max = sysconf(_SC_OPEN_MAX), fd;
        if (max < 0 || max > 65536) max = 65536;
        for (fd = lowfd; fd < max; fd++) close((int)fd);
    }
}

pid_t ts_spawn(const char *prog, char *const argv[], const char *outpath)
{
    pid_t parent = getpid(), pid;
    /* The parent-death signal fires when the forking THREAD ends, not the
     * process: a server started from a helper thread would die with it. */
    int main_thread = (pid_t)syscall(SYS_gettid) == parent;
    int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int out = open(outpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (in < 0 || out < 0) {
        fprintf(stderr, "test server: open: %s\n", strerror(errno));
        if (in >= 0) close(in);
        if (out >= 0) close(out);
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        /* Only async-signal-safe calls from here to exec: the test may
         * have other threads (fake servers). */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        setpgid(0, 0);
#ifdef __linux__
        /* A crashed test (no atexit) must not leave servers behind. */
        if (main_thread) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127);
#endif
        dup2(in, 0);
        dup2(out, 1);
        dup2(out, 2);
        close_from(3);
        execvp(prog, argv);
        _exit(127);
    }
    close(in);
    close(out);
    if (pid < 0) {
        fprintf(stderr, "test server: fork: %s\n", strerror(errno));
        return -1;
    }
    setpgid(pid, pid); /* also here: whichever runs first */
    return pid;
}

/* $RLK_REDIS_SERVER, else redis-server (looked up in $PATH). */
static const char *server_prog(void)
{
    const char *prog = getenv("RLK_REDIS_SERVER");
    return prog && *prog ? prog : "redis-server";
}

static pid_t spawn(char *const argv[], const char *outpath)
{
    return ts_spawn(server_prog(), argv, outpath);
}

/* 1 when prog (a path, or a name looked up in $PATH as execvp does) is an
 * executable file. */
static int executable(const char *prog)
{
    const char *path = getenv("PATH"), *p, *end;
    char buf[PATH_MAX];
    struct stat st;
    if (strchr(prog, '/')) return stat(prog, &st) == 0 && S_ISREG(st.st_mode) && access(prog, X_OK) == 0;
    for (p = path && *path ? path : "/usr/local/bin:/usr/bin:/bin"; ; p = end + 1) {
        end = strchr(p, ':');
        if (!end) end = p + strlen(p);
        snprintf(buf, sizeof buf, "%.*s/%s", end > p ? (int)(end - p) : 1, end > p ? p : ".", prog);
        if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0) return 1;
        if (!*end) return 0;
    }
}

int ts_need_server(void)
{
    static int said;
    const char *env = getenv("RLK_REDIS_SERVER"), *req = getenv("RLK_REQUIRE_SERVER");
    char why[PATH_MAX + 200], what[PATH_MAX + 40];
    if (executable(server_prog())) return 0;
    if (env && *env) snprintf(what, sizeof what, "RLK_REDIS_SERVER=%s", env);
    else snprintf(what, sizeof what, "RLK_REDIS_SERVER unset, none on PATH");
    if (!req || !*req || !strcmp(req, "0")) {
        snprintf(why, sizeof why, "redis-server not found (%s); install it: scripts/install-deps, "
                 "or set RLK_REQUIRE_SERVER=1 to make this a failure", what);
        tl_skip(why);
    }
    if (!said)
        fprintf(stderr, "test server: redis-server not found (%s), and RLK_REQUIRE_SERVER is set: "
                "a failure; install it: scripts/install-deps\n", what);
    said = 1;
    return -1;
}

/* Connects, sends (AUTH and) PING, expects +PONG.  0 yes, -1 not yet. */
static int ping_once(const ts_server *s, int ms)
{
    rlk__transport t;
    int64_t deadline = rlk__now_ms() + ms;
    char cmd[512], buf[512];
    size_t have = 0;
    int rc, ok = -1;

    rlk__transport_init(&t);
    if (s->opt.tls_cert) {
        rlk_tls_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.insecure = 1;
        cfg.cert_file = s->opt.tls_client_cert;
        cfg.key_file = s->opt.tls_client_key;
        rc = rlk__tls_connect(&t, s->host, s->port, &cfg, deadline);
    } else {
        rc = rlk__tcp_connect(&t, s->host, s->port, deadline);
    }
    if (rc != RLK_OK) return -1;
    if (s->opt.password)
        snprintf(cmd, sizeof cmd, "*2\r\n$4\r\nAUTH\r\n$%zu\r\n%s\r\n*1\r\n$4\r\nPING\r\n",
                 strlen(s->opt.password), s->opt.password);
    else
        snprintf(cmd, sizeof cmd, "*1\r\n$4\r\nPING\r\n");
    if (rlk__transport_write_all(&t, cmd, strlen(cmd), deadline) == RLK_OK) {
        while (have < sizeof buf - 1) {
            ssize_t r = rlk__transport_read_some(&t, buf + have, sizeof buf - 1 - have, deadline);
            if (r <= 0) break;
            have += (size_t)r;
            buf[have] = '\0';
            if (strstr(buf, "+PONG\r\n")) {
                ok = 0;
                break;
            }
            if (buf[0] == '-') break; /* LOADING, or a bad password */
        }
    }
    rlk__transport_close(&t);
    return ok;
}

/* DIR/sentinel.conf into path, written from opt.sentinel_conf when it is
 * not there yet.  0 or -1. */
static int write_sentinel_conf(const ts_server *s, char *path, size_t n)
{
    FILE *f;
    snprintf(path, n, "%s/sentinel.conf", s->dir);
    if (access(path, F_OK) == 0) return 0;
    f = fopen(path, "w");
    if (f && fputs(s->opt.sentinel_conf, f) < 0) {
        fclose(f);
        f = NULL;
    }
    if (!f || fclose(f) != 0) {
        fprintf(stderr, "test server: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Runs redis-server on s->port; waits until it answers.  1 ready, 0 the
 * port was taken (try another), -1 failure. */
static int launch(ts_server *s)
{
    char port[16], log[300], out[300], conf[300];
    const char *argv[64];
    int n = 0, i, status;
    int64_t deadline;
    const ts_options *o = &s->opt;

    snprintf(port, sizeof port, "%d", s->port);
    snprintf(log, sizeof log, "%s/redis.log", s->dir);
    snprintf(out, sizeof out, "%s/stdout.log", s->dir);
    argv[n++] = "redis-server";
    if (o->sentinel_conf) {
        if (write_sentinel_conf(s, conf, sizeof conf) != 0) return -1;
        argv[n++] = conf;
        argv[n++] = "--sentinel";
    }
    if (o->tls_cert) {
        argv[n++] = "--port";
        argv[n++] = "0";
        argv[n++] = "--tls-port";
        argv[n++] = port;
        argv[n++] = "--tls-cert-file";
        argv[n++] = o->tls_cert;
        argv[n++] = "--tls-key-file";
        argv[n++] = o->tls_key ? o->tls_key : o->tls_cert;
        if (o->tls_ca) {
            argv[n++] = "--tls-ca-cert-file";
            argv[n++] = o->tls_ca;
        }
        argv[n++] = "--tls-auth-clients";
        argv[n++] = o->tls_auth_clients ? "yes" : "no";
    } else {
        argv[n++] = "--port";
        argv[n++] = port;
    }
    argv[n++] = "--bind";
    argv[n++] = s->host;
    argv[n++] = "--save";
    argv[n++] = "";
    argv[n++] = "--appendonly";
    argv[n++] = "no";
    argv[n++] = "--dir";
    argv[n++] = s->dir;
    argv[n++] = "--logfile";
    argv[n++] = log;
    if (o->unix_socket) {
        argv[n++] = "--unixsocket";
        argv[n++] = s->unix_path;
        argv[n++] = "--unixsocketperm";
        argv[n++] = "700";
    }
    if (o->password) {
        argv[n++] = "--requirepass";
        argv[n++] = o->password;
    }
    for (i = 0; o->extra && o->extra[i]; i++) {
        if (n >= 62) {
            fprintf(stderr, "test server: too many extra arguments\n");
            return -1;
        }
        argv[n++] = o->extra[i];
    }
    argv[n] = NULL;

    s->pid = spawn((char *const *)argv, out);
    if (s->pid < 0) return -1;
    deadline = rlk__now_ms() + START_TIMEOUT_MS;
    while (rlk__now_ms() < deadline) {
        pid_t w = waitpid(s->pid, &status, WNOHANG);
        if (w == s->pid) {
            s->pid = -1;
            if (file_contains(log, "Address already in use") ||
                file_contains(out, "Address already in use"))
                return 0;
            fprintf(stderr, "test server: redis-server exited (status %d) on port %d\n",
                    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), s->port);
            ts_show_file_tail(out);
            ts_show_file_tail(log);
            return -1;
        }
        if (ping_once(s, 1000) == 0) return 1;
        ts_pause_ms(10);
    }
    fprintf(stderr, "test server: redis-server on port %d did not answer PING within %d ms\n",
            s->port, START_TIMEOUT_MS);
    ts_show_file_tail(log);
    ts_halt(s);
    return -1;
}

static void forget(ts_server *s)
{
    int i;
    for (i = 0; i < MAX_SERVERS; i++)
        if (live[i] == s) live[i] = NULL;
}

ts_server *ts_start(const ts_options *opt)
{
    static const ts_options defaults;
    ts_server *s;
    int attempt, r, slot;

    if (!opt) opt = &defaults;
    if (ts_need_server() != 0) return NULL;
#ifndef RLK_HAVE_OPENSSL
    if (opt->tls_cert) {
        fprintf(stderr, "test server: TLS needs a build with OpenSSL\n");
        return NULL;
    }
#endif
    for (slot = 0; slot < MAX_SERVERS && live[slot]; slot++)
        ;
    if (slot == MAX_SERVERS) {
        fprintf(stderr, "test server: too many servers\n");
        return NULL;
    }
    s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->pid = -1;
    s->opt = *opt;
    snprintf(s->host, sizeof s->host, "%s", opt->ipv6 ? "::1" : "127.0.0.1");
    if (make_tmpdir(s->dir, sizeof s->dir, "redis") != 0) {
        free(s);
        return NULL;
    }
    if (opt->unix_socket) snprintf(s->unix_path, sizeof s->unix_path, "%s/redis.sock", s->dir);
    register_atexit();
    live[slot] = s;

    for (attempt = 0; attempt < 8; attempt++) {
        s->port = ts_free_port(opt->ipv6);
        if (s->port < 0) {
            fprintf(stderr, "test server: no free port on %s\n", s->host);
            break;
        }
        r = launch(s);
        if (r == 1) return s;
        if (r < 0) break;
    }
    ts_stop(s);
    return NULL;
}

int ts_halt(ts_server *s)
{
    int64_t deadline;
    int status;
    if (!s || s->pid <= 0) return 0;
    /* The whole group, in case the server forked (a save). */
    if (kill(-s->pid, SIGTERM) != 0) kill(s->pid, SIGTERM);
    deadline = rlk__now_ms() + STOP_TIMEOUT_MS;
    for (;;) {
        pid_t w = waitpid(s->pid, &status, WNOHANG);
        if (w == s->pid || (w < 0 && errno == ECHILD)) break;
        if (rlk__now_ms() >= deadline) {
            fprintf(stderr, "test server: pid %d ignored SIGTERM; killing it\n", (int)s->pid);
            if (kill(-s->pid, SIGKILL) != 0) kill(s->pid, SIGKILL);
            while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
                ;
            break;
        }
        ts_pause_ms(5);
    }
    s->pid = -1;
    return 0;
}

int ts_start_again(ts_server *s)
{
    int64_t deadline = rlk__now_ms() + START_TIMEOUT_MS;
    if (!s) return -1;
    if (s->pid > 0) return 0;
    /* The port is ours by right, but a client's TIME_WAIT or a slow
     * kernel can hold it a moment: try until the deadline. */
    while (rlk__now_ms() < deadline) {
        int r = launch(s);
        if (r == 1) return 0;
        if (r < 0) return -1;
        ts_pause_ms(20);
    }
    fprintf(stderr, "test server: port %d stayed taken\n", s->port);
    return -1;
}

int ts_restart(ts_server *s)
{
    if (ts_halt(s) != 0) return -1;
    return ts_start_again(s);
}

void ts_stop(ts_server *s)
{
    if (!s) return;
    ts_halt(s);
    forget(s);
    if (s->dir[0]) remove_tree(s->dir);
    free(s);
}

static const char *find_script(char *buf, size_t n)
{
    const char *top = getenv("top_srcdir");
    const char *here = __FILE__, *slash;
    if (top && *top) {
        snprintf(buf, n, "%s/tests/gen-certs.sh", top);
        if (access(buf, R_OK) == 0) return buf;
    }
    slash = strrchr(here, '/');
    if (slash)
        snprintf(buf, n, "%.*s/gen-certs.sh", (int)(slash - here), here);
    else
        snprintf(buf, n, "gen-certs.sh");
    return access(buf, R_OK) == 0 ? buf : NULL;
}

const char *ts_certs_dir(void)
{
    static int failed;
    char script[600], cmd[1400];
    int rc;
    if (certs_dir[0]) return certs_dir;
    if (failed) return NULL;
    failed = 1;
    if (!find_script(script, sizeof script)) {
        fprintf(stderr, "test server: tests/gen-certs.sh not found (set top_srcdir)\n");
        return NULL;
    }
    register_atexit();
    if (make_tmpdir(certs_dir, sizeof certs_dir, "certs") != 0) return NULL;
    snprintf(cmd, sizeof cmd, "bash '%s' '%s'", script, certs_dir);
    rc = system(cmd);
    if (rc != 0) {
        fprintf(stderr, "test server: %s failed (%d)\n", cmd, rc);
        remove_tree(certs_dir);
        certs_dir[0] = '\0';
        return NULL;
    }
    failed = 0;
    return certs_dir;
}

const char *ts_cert(const char *name)
{
    const char *dir = ts_certs_dir();
    char *p;
    size_t n;
    int i;
    if (!dir) return NULL;
    n = strlen(dir);
    for (i = 0; i < ncert_paths; i++)
        if (!strcmp(cert_paths[i] + n + 1, name)) return cert_paths[i];
    if (ncert_paths == (int)(sizeof cert_paths / sizeof cert_paths[0])) return NULL;
    n = strlen(dir) + strlen(name) + 2;
    p = malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%s/%s", dir, name);
    cert_paths[ncert_paths++] = p;
    return p;
}
