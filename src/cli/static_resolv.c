/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The static command's getaddrinfo and freeaddrinfo
 * (--enable-static-binary): linked before the C library, they replace
 * its resolver (musl's is some 12 KB with its reader of resolv.conf, its
 * query builder and parser and its sender to several servers at once)
 * by one that does what the command needs: the host of a URL to the
 * addresses to connect to.  The default build keeps the C library's.
 *
 * A host is looked up, in this order, as
 * - a numeric address: IPv4 in inet_aton's forms (four parts, or fewer
 *   with the last one filling the remaining bytes; decimal, octal with a
 *   leading 0, hexadecimal with 0x), IPv6 in inet_pton's, with a numeric
 *   scope after '%' (an interface's name there is not known); with
 *   AI_NUMERICHOST nothing else is tried (EAI_NONAME);
 * - "localhost" (any case, a final '.' allowed): ::1 and 127.0.0.1,
 *   without reading a file;
 * - each line of /etc/hosts that names it (any case), every one of them;
 * - DNS: queries over UDP to the nameservers of /etc/resolv.conf (three
 *   at most; none: 127.0.0.1), with its "search" (or "domain": the last
 *   line of either wins) and "options ndots:N timeout:N attempts:N"
 *   (defaults 1, 5 s and 2).  A name with a final '.' or at least ndots
 *   dots is asked as it is; another one with each search domain after
 *   it in turn and then as it is, until one has an address: a name that
 *   does not exist (NXDOMAIN) or has no address of the family asked
 *   moves on to the next, any other failure ends the lookup with it.
 *
 * AF_UNSPEC asks for A and AAAA at once, AF_INET for A, AF_INET6 for
 * AAAA.  Each query goes to every nameserver, once an attempt; an
 * attempt waits timeout seconds for the answers still missing.  An
 * answer counts when it comes from the nameserver it was sent to (each
 * has a socket connected to it), has the query's random id, is a reply
 * and asks the query's question (others are dropped, and the wait goes
 * on); the first such one is the query's: NXDOMAIN is EAI_NONAME,
 * SERVFAIL EAI_AGAIN, another error EAI_FAIL, a truncated one (TC: the
 * answer would not fit in UDP, and the TCP that would carry it is not
 * spoken) EAI_AGAIN, one that cannot be read whole (a name past the end
 * or following more than 64 pointers, a record's data past the
 * end) EAI_FAIL.  Without an answer after every attempt it is
 * EAI_AGAIN, sooner when every nameserver refused (ICMP: nobody on
 * its port), as it is asked no more.  The answer section's CNAME records are followed from the
 * name asked (in any order, ten steps at most), and its A or AAAA
 * records of the last name are the addresses.  When one query of two
 * gives addresses, the other's failure does not matter.
 *
 * The addresses are ordered as the C libraries' destination address
 * selection (RFC 6724) orders the usual ones, when there are both
 * IPv4 and IPv6 ones: first those a UDP socket can be connected to (a
 * route to them exists), then by the table's precedence: ::1, other
 * IPv6, IPv4, 6to4, Teredo, unique local, then site-local and the
 * old forms; the order found is kept among equals.  The rules on
 * scopes, labels and source addresses are left out.
 *
 * The service must be a number (with AI_NUMERICSERV or without, as the
 * command passes it): musl's __lookup_serv (src/cli/static_libc.c)
 * checks it against the socket type and protocol asked and gives one
 * result per socket type (SOCK_STREAM and SOCK_DGRAM for none); a name
 * is EAI_NONAME, /etc/services is not read.  No host: AI_PASSIVE's
 * wildcard or the loopback address.  ai_canonname is always NULL;
 * AI_CANONNAME, AI_V4MAPPED, AI_ALL and AI_ADDRCONFIG are accepted and
 * do nothing.  The list is one allocation: freeaddrinfo frees it from
 * its first entry, as getaddrinfo returned it.
 *
 * The unit test compiles this file with RLK_LIBC_NAME(f) naming the
 * functions otherwise and RLK_RESOLV_PATHS, which makes the files read
 * and the nameservers' port variables it sets.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "random.h"

#ifndef RLK_LIBC_NAME
#define RLK_LIBC_NAME(f) f
#endif

#ifdef RLK_RESOLV_PATHS
const char *rlk__t_hosts_path = "/etc/hosts", *rlk__t_resolv_path = "/etc/resolv.conf";
unsigned short rlk__t_dns_port = 53;
#define HOSTS_PATH rlk__t_hosts_path
#define RESOLV_PATH rlk__t_resolv_path
#define DNS_PORT rlk__t_dns_port
#else
#define HOSTS_PATH "/etc/hosts"
#define RESOLV_PATH "/etc/resolv.conf"
#define DNS_PORT 53
#endif

int RLK_LIBC_NAME(getaddrinfo)(const char *restrict host, const char *restrict serv,
                               const struct addrinfo *restrict hints, struct addrinfo **restrict res);
void RLK_LIBC_NAME(freeaddrinfo)(struct addrinfo *ai);

/* musl's struct service, as src/cli/static_libc.c's __lookup_serv fills it. */
struct rlk_musl_service {
    unsigned short port;
    unsigned char proto, socktype;
};
int RLK_LIBC_NAME(__lookup_serv)(struct rlk_musl_service *buf, const char *name, int proto, int socktype,
                                 int flags);

/* For the steps whose code is shorter left out of line (measured: each
 * inlined into its one caller makes a bigger frame, and longer code to
 * reach it). */
#define NOINLINE __attribute__((noinline))

#define MAX_ADDRS 48

struct addr {
    int family;
    unsigned scope;
    unsigned char a[16];
};

struct found {
    int n;
    struct addr a[MAX_ADDRS];
};

static void add(struct found *f, int family, const void *a, unsigned scope)
{
    if (f->n == MAX_ADDRS) return;
    struct addr *d = &f->a[f->n++];
    d->family = family;
    d->scope = scope;
    memcpy(d->a, a, family == AF_INET ? 4 : 16);
}

/* inet_aton's forms of an IPv4 address: 1 and a filled, else 0. */
static int aton(const char *s, unsigned char *a)
{
    unsigned long v[4];
    int i = 0;
    for (;; s++) {
        char *z;
        if ((unsigned)(*s - '0') > 9) return 0;
        v[i] = strtoul(s, &z, 0);
        s = z;
        if (!*s) break;
        if (*s != '.' || ++i > 3) return 0;
    }
    /* The last part fills the bytes the others leave. */
    uint32_t x = (uint32_t)v[i];
    if (v[i] > 0xffffffffUL >> (8 * i)) return 0;
    for (int j = 0; j < i; j++) {
        if (v[j] > 255) return 0;
        x |= (uint32_t)v[j] << (24 - 8 * j);
    }
    for (int j = 0; j < 4; j++) a[j] = (unsigned char)(x >> (24 - 8 * j));
    return 1;
}

/* s as a numeric address of family (AF_UNSPEC: either) into f: 1 when
 * s is one (of any family), else 0. */
static int numeric(const char *s, int family, struct found *f)
{
    unsigned char a[16];
    char b[64];
    unsigned long scope = 0;
    if (aton(s, a)) {
        if (family != AF_INET6) add(f, AF_INET, a, 0);
        return 1;
    }
    size_t l = strcspn(s, "%");
    if (l >= sizeof b) return 0;
    memcpy(b, s, l);
    b[l] = '\0';
    if (s[l]) {
        char *z;
        if ((unsigned)(s[l + 1] - '0') > 9) return 0;
        scope = strtoul(s + l + 1, &z, 10);
        if (*z || scope > 0xffffffffUL) return 0;
    }
    if (inet_pton(AF_INET6, b, a) <= 0) return 0;
    if (family != AF_INET) add(f, AF_INET6, a, (unsigned)scope);
    return 1;
}

/* A file read a line at a time. */
struct lines {
    int fd;
    size_t at, have;
    char buf[512];
};

/* The next line of r into l (the first n - 1 bytes, NUL-ended, from
 * '#' or ';' on dropped); 0 at the end of the file. */
static int next_line(struct lines *r, char *l, size_t n)
{
    size_t k = 0;
    for (int any = 0;; any = 1) {
        if (r->at == r->have) {
            ssize_t m = read(r->fd, r->buf, sizeof r->buf);
            if (m <= 0) {
                if (!any) return 0;
                break;
            }
            r->have = (size_t)m;
            r->at = 0;
        }
        char c = r->buf[r->at++];
        if (c == '\n') break;
        if (k + 1 < n) l[k++] = c;
    }
    l[k] = '\0';
    l[strcspn(l, "#;")] = '\0';
    return 1;
}

static int open_lines(struct lines *r, const char *path)
{
    r->at = r->have = 0;
    return (r->fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0;
}

static const char space[] = " \t\r";

/* The next word of *s, NUL-ended in place (*s moved past it), or NULL. */
static char *word(char **s)
{
    char *w = *s + strspn(*s, space);
    if (!*w) return NULL;
    char *e = w + strcspn(w, space);
    *s = e + !!*e;
    *e = '\0';
    return w;
}

/* The addresses /etc/hosts gives name. */
static void from_hosts(const char *name, int family, struct found *f)
{
    struct lines r;
    char l[512];
    if (!open_lines(&r, HOSTS_PATH)) return;
    while (next_line(&r, l, sizeof l)) {
        char *s = l, *a = word(&s), *w;
        while (a && (w = word(&s)))
            if (!strcasecmp(w, name)) {
                numeric(a, family, f);
                break;
            }
    }
    close(r.fd);
}

/* What /etc/resolv.conf says. */
struct conf {
    int nns, ndots, timeout, attempts;
    struct addr ns[3];
    char search[256];
};

/* The number after "name:" in option o, clamped to lo..hi, else v. */
static int option(const char *o, const char *name, int v, int lo, int hi)
{
    size_t l = strlen(name);
    if (strncmp(o, name, l) || o[l] != ':' || (unsigned)(o[l + 1] - '0') > 9) return v;
    unsigned long n = strtoul(o + l + 1, NULL, 10);
    return n < (unsigned long)lo ? lo : n > (unsigned long)hi ? hi : (int)n;
}

static NOINLINE void read_conf(struct conf *c)
{
    struct lines r;
    char l[512];
    memset(c, 0, sizeof *c);
    c->ndots = 1;
    c->timeout = 5;
    c->attempts = 2;
    if (open_lines(&r, RESOLV_PATH)) {
        while (next_line(&r, l, sizeof l)) {
            char *s = l, *k = word(&s), *w;
            if (!k) continue;
            if (!strcmp(k, "nameserver")) {
                struct found f;
                f.n = 0;
                if (c->nns < 3 && (w = word(&s)) && numeric(w, AF_UNSPEC, &f) && f.n)
                    c->ns[c->nns++] = f.a[0];
            } else if (!strcmp(k, "search") || !strcmp(k, "domain")) {
                /* The words, each NUL-ended, an empty one after them. */
                size_t n = 0;
                while ((w = word(&s)) && n + strlen(w) + 2 < sizeof c->search) {
                    strcpy(c->search + n, w);
                    n += strlen(w) + 1;
                }
                c->search[n] = '\0';
            } else if (!strcmp(k, "options")) {
                while ((w = word(&s))) {
                    c->ndots = option(w, "ndots", c->ndots, 0, 15);
                    c->timeout = option(w, "timeout", c->timeout, 1, 60);
                    c->attempts = option(w, "attempts", c->attempts, 1, 10);
                }
            }
        }
        close(r.fd);
    }
    if (!c->nns) {
        c->nns = 1;
        c->ns[0].family = AF_INET;
        memcpy(c->ns[0].a, "\177\0\0\1", 4);
    }
}

/* The socket address of a, port port, into sa; its length. */
static socklen_t sockaddr_of(const struct addr *a, unsigned port, struct sockaddr_in6 *sa)
{
    memset(sa, 0, sizeof *sa);
    sa->sin6_family = (sa_family_t)a->family;
    sa->sin6_port = htons((uint16_t)port);
    if (a->family == AF_INET) {
        memcpy(&((struct sockaddr_in *)(void *)sa)->sin_addr, a->a, 4);
        return sizeof(struct sockaddr_in);
    }
    memcpy(&sa->sin6_addr, a->a, 16);
    sa->sin6_scope_id = a->scope;
    return sizeof *sa;
}

/* A UDP socket of a's family connected to a:port, or -1. */
static int udp_to(const struct addr *a, unsigned port)
{
    struct sockaddr_in6 sa;
    socklen_t l = sockaddr_of(a, port, &sa);
    int fd = socket(a->family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, l) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* One query: its packet, and its outcome. */
struct query {
    int len, type, rc, done;
    unsigned char pkt[280];
};

/* The name at m[p] (m has n bytes) as dotted text into out (256
 * bytes); the offset after it where it is written, or -1 when it cannot
 * be read: past the end, a label type other than 0, too long, or more
 * than 64 compression pointers. */
static int get_name(const unsigned char *m, int n, int p, char *out)
{
    int end = -1, k = 0;
    for (int hops = 0;;) {
        if (p >= n) return -1;
        int c = m[p];
        if (c >= 0xc0) {
            if (p + 1 >= n || ++hops > 64) return -1;
            if (end < 0) end = p + 2;
            p = (c & 0x3f) << 8 | m[p + 1];
            continue;
        }
        if (c > 63 || p + 1 + c > n || k + c + 2 > 256) return -1;
        if (!c) break;
        if (k) out[k++] = '.';
        memcpy(out + k, m + p + 1, (size_t)c);
        k += c;
        p += c + 1;
    }
    out[k] = '\0';
    return end < 0 ? p + 1 : end;
}

static unsigned be16(const unsigned char *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

/* Reads answer m (n bytes) to q, whose name is name, into f: 0 when it
 * is no answer to q (dropped), else 1 with q->rc set. */
static NOINLINE int take_answer(struct query *q, const char *name, const unsigned char *m, int n, struct found *f)
{
    char want[256], owner[256];
    int p;
    if (n < 12 || memcmp(m, q->pkt, 2) || !(m[2] & 0x80) || be16(m + 4) != 1 ||
        (p = get_name(m, n, 12, owner)) < 0 || p + 4 > n || strcasecmp(owner, name) ||
        memcmp(m + p, q->pkt + q->len - 4, 4))
        return 0;
    p += 4;
    q->done = 1;
    int rcode = m[3] & 15;
    q->rc = m[2] & 2 || rcode == 2 ? EAI_AGAIN : rcode == 3 ? EAI_NONAME : rcode ? EAI_FAIL : 0;
    if (q->rc) return 1;
    /* Each pass follows the CNAMEs of want and takes its addresses,
     * until one changes nothing. */
    strcpy(want, name);
    int base = f->n, size = q->type == 1 ? 4 : 16;
    for (int pass = 0, changed = 1; changed; pass++) {
        if (pass > 10) {
            q->rc = EAI_FAIL;
            break;
        }
        changed = 0;
        f->n = base;
        for (int i = (int)be16(m + 6), r = p; i > 0; i--) {
            if ((r = get_name(m, n, r, owner)) < 0 || r + 10 > n) goto bad;
            unsigned type = be16(m + r), len = be16(m + r + 8);
            r += 10;
            if ((unsigned)(n - r) < len) goto bad;
            if (!strcasecmp(owner, want) && be16(m + r - 8) == 1) {
                if (type == 5) {
                    if (get_name(m, n, r, want) < 0) goto bad;
                    changed = 1;
                } else if (type == (unsigned)q->type && len == (unsigned)size) {
                    add(f, size == 4 ? AF_INET : AF_INET6, m + r, 0);
                }
            }
            r += (int)len;
        }
    }
    return 1;
bad:
    f->n = base;
    q->rc = EAI_FAIL;
    return 1;
}

/* The query for name of type into q; 0, or -1 when name is no DNS name
 * (an empty label, one over 63 bytes, over 253 bytes in all). */
static int make_query(struct query *q, const char *name, int type)
{
    unsigned char *p = q->pkt, *e = p + 12;
    if (rlk__random_bytes(p, 2) != 0) return -1;
    memcpy(p + 2, "\1\0\0\1\0\0\0\0\0\0", 10);
    while (*name) {
        size_t l = strcspn(name, ".");
        if (!l || l > 63 || e + l - p > 265) return -1;
        *e = (unsigned char)l;
        memcpy(e + 1, name, l);
        e += l + 1;
        name += l + !!name[l];
    }
    if (e == p + 12) return -1;
    memcpy(e, "\0\0\0\0\1", 5);
    e[2] = (unsigned char)type;
    q->len = (int)(e + 5 - p);
    q->type = type;
    q->done = 0;
    q->rc = EAI_AGAIN;
    return 0;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Asks the nameservers for name's addresses of family: 0 with some in
 * f, else an EAI_ error. */
static NOINLINE int from_dns(const char *name, int family, const struct conf *c, struct found *f)
{
    struct query q[2];
    struct pollfd pf[3];
    int nq = 0, rc = EAI_NONAME;
    if (family != AF_INET6 && make_query(&q[nq++], name, 1)) return EAI_NONAME;
    if (family != AF_INET && make_query(&q[nq++], name, 28)) return EAI_NONAME;
    for (int i = 0; i < c->nns; i++) {
        pf[i].fd = udp_to(&c->ns[i], DNS_PORT);
        pf[i].events = POLLIN;
    }
    for (int t = 0; t < c->attempts; t++) {
        int left = 0;
        for (int i = 0; i < c->nns; i++)
            for (int j = 0; j < nq; j++)
                if (!q[j].done && pf[i].fd >= 0) left |= send(pf[i].fd, q[j].pkt, (size_t)q[j].len, 0) > 0;
        if (!left) break;
        long long end = now_ms() + c->timeout * 1000;
        while (left && !(q[0].done && q[nq - 1].done)) {
            long long ms = end - now_ms();
            if (ms <= 0 || poll(pf, (nfds_t)c->nns, (int)ms) < 0) break;
            left = 0;
            for (int i = 0; i < c->nns; i++) {
                unsigned char m[1232];
                int n = 0;
                /* A server that refuses (recv's error) is asked no more. */
                if (pf[i].revents && (n = (int)recv(pf[i].fd, m, sizeof m, 0)) < 0 && errno != EAGAIN) {
                    close(pf[i].fd);
                    pf[i].fd = -1;
                }
                left |= pf[i].fd >= 0;
                if (n <= 0) continue;
                for (int j = 0; j < nq; j++)
                    if (!q[j].done && take_answer(&q[j], name, m, n, f)) break;
            }
        }
        if (q[0].done && q[nq - 1].done) break;
    }
    for (int i = 0; i < c->nns; i++)
        if (pf[i].fd >= 0) close(pf[i].fd);
    /* Without an address: a timeout, then another failure, before
     * the name or the address not being there. */
    for (int j = 0; j < nq; j++)
        if (q[j].rc == EAI_AGAIN || (q[j].rc == EAI_FAIL && rc != EAI_AGAIN)) rc = q[j].rc;
    return f->n ? 0 : rc;
}

/* name with each search domain after it, then alone, as the header
 * says (asked without its final '.'). */
static int search(const char *name, int family, struct found *f)
{
    struct conf c;
    char b[256];
    size_t l = strlen(name), dots = 0;
    read_conf(&c);
    for (size_t i = 0; i < l; i++) dots += name[i] == '.';
    const char *d = c.search;
    if (!l || name[l - 1] == '.' || dots >= (size_t)c.ndots) d = "";
    if (l && name[l - 1] == '.') l--;
    if (l >= sizeof b) return EAI_NONAME;
    memcpy(b, name, l);
    for (;; d += strlen(d) + 1) {
        b[l] = '\0';
        if (*d) {
            if (l + strlen(d) + 2 > sizeof b) continue;
            b[l] = '.';
            strcpy(b + l + 1, d);
        }
        int rc = from_dns(b, family, &c, f);
        if (rc != EAI_NONAME || !*d) return rc;
    }
}

/* The rank of a in the order the header describes: lower first. */
static int rank(const struct addr *a)
{
    int p = 40;
    if (a->family == AF_INET) {
        p = 35;
    } else {
        const unsigned char *x = a->a;
        static const unsigned char lo[16] = {[15] = 1};
        if (!memcmp(x, lo, 16)) p = 50;
        else if (x[0] == 0x20 && x[1] == 2) p = 30;
        else if (x[0] == 0x20 && x[1] == 1 && !x[2] && !x[3]) p = 5;
        else if ((x[0] & 0xfe) == 0xfc) p = 3;
        else if ((x[0] == 0xfe && (x[1] & 0xc0) == 0xc0) || (x[0] == 0x3f && x[1] == 0xfe) ||
                 !memcmp(x, lo, 12))
            p = 1;
    }
    int fd = udp_to(a, 9);
    if (fd >= 0) close(fd);
    return (fd < 0) * 100 + 100 - p;
}

int RLK_LIBC_NAME(getaddrinfo)(const char *restrict host, const char *restrict serv,
                               const struct addrinfo *restrict hints, struct addrinfo **restrict res)
{
    int family = AF_UNSPEC, flags = 0, socktype = 0, proto = 0;
    if (hints) {
        family = hints->ai_family;
        flags = hints->ai_flags;
        socktype = hints->ai_socktype;
        proto = hints->ai_protocol;
    }
    if (flags & ~(AI_PASSIVE | AI_CANONNAME | AI_NUMERICHOST | AI_V4MAPPED | AI_ALL | AI_ADDRCONFIG |
                  AI_NUMERICSERV))
        return EAI_BADFLAGS;
    if (family != AF_UNSPEC && family != AF_INET && family != AF_INET6) return EAI_FAMILY;
    if (!host && !serv) return EAI_NONAME;
    struct rlk_musl_service sv[2];
    int ns = RLK_LIBC_NAME(__lookup_serv)(sv, serv, proto, socktype, flags);
    if (ns < 0) return ns;

    struct found *f = malloc(sizeof *f);
    if (!f) return EAI_MEMORY;
    f->n = 0;
    int rc = 0;
    size_t l = host ? strlen(host) : 0;
    if (!host) {
        static const unsigned char any[16], lo6[16] = {[15] = 1};
        int passive = flags & AI_PASSIVE;
        if (family != AF_INET) add(f, AF_INET6, passive ? any : lo6, 0);
        if (family != AF_INET6) add(f, AF_INET, passive ? any : (const unsigned char *)"\177\0\0\1", 0);
    } else if (numeric(host, family, f)) {
    } else if (flags & AI_NUMERICHOST) {
        rc = EAI_NONAME;
    } else if (!strncasecmp(host, "localhost", 9) && (l == 9 || (l == 10 && host[9] == '.'))) {
        numeric("::1", family, f);
        numeric("127.0.0.1", family, f);
    } else {
        from_hosts(host, family, f);
        if (!f->n) rc = search(host, family, f);
    }
    if (!rc && !f->n) rc = EAI_NONAME;

    /* Ordered by rank when both families are there (an insertion sort,
     * which keeps the order of equals). */
    int r[MAX_ADDRS], mixed = 0;
    for (int i = 0; i < f->n; i++) mixed |= f->a[i].family == AF_INET ? 1 : 2;
    if (mixed == 3) {
        for (int i = 0; i < f->n; i++) r[i] = rank(&f->a[i]);
        for (int i = 1; i < f->n; i++)
            for (int j = i; j && r[j - 1] > r[j]; j--) {
                int t = r[j];
                r[j] = r[j - 1];
                r[j - 1] = t;
                struct addr a = f->a[j];
                f->a[j] = f->a[j - 1];
                f->a[j - 1] = a;
            }
    }

    struct entry {
        struct addrinfo ai;
        struct sockaddr_in6 sa;
    } *e = NULL;
    if (!rc && !(e = calloc((unsigned)f->n * (unsigned)ns, sizeof *e))) rc = EAI_MEMORY;
    for (int i = 0, k = 0; !rc && i < f->n; i++)
        for (int j = 0; j < ns; j++, k++) {
            struct addrinfo *ai = &e[k].ai;
            ai->ai_family = f->a[i].family;
            ai->ai_socktype = sv[j].socktype;
            ai->ai_protocol = sv[j].proto;
            ai->ai_addr = (struct sockaddr *)&e[k].sa;
            ai->ai_addrlen = sockaddr_of(&f->a[i], sv[j].port, &e[k].sa);
            if (k + 1 < f->n * ns) ai->ai_next = &e[k + 1].ai;
        }
    free(f);
    if (!rc) *res = &e->ai;
    return rc;
}

void RLK_LIBC_NAME(freeaddrinfo)(struct addrinfo *ai)
{
    free(ai);
}
