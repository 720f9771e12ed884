/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Redlock: one lock over N independent servers (members), each turned
 * by a one-server client of its own in the event loop's way (its
 * _async calls, its watch and handle), all in one poll.
 *
 * An acquire sends the same token to every member at once (the first
 * member's handle draws it, the others are given it): a plain SET NX PX
 * where the lock is free, resplock's script where not, as for any simple
 * lock.  It succeeds once a majority (quorum = N / 2 + 1) took it, within
 * the attempt's deadline (one command timeout, and the lock's validity),
 * with validity = TTL - (time since the attempt began) - drift, drift =
 * 1% of the TTL + drift_ms: counted from the start of the attempt that
 * succeeded.  It fails as soon as no majority can be had; then what it
 * took is released on every member at once, and with a wait it tries
 * again after a random pause (100 to 300 ms), until the wait runs out.
 * The lock is busy (RLK_LOCK_BUSY) when the members that answered make
 * a majority and someone else holds it on enough of them; a failure of
 * members to answer is the members' connection status (no quorum), its
 * message naming each.
 *
 * A held lock's members each renew their part (a watchdog lock) and
 * report its loss; the lock is known held until the time by which a
 * majority of its parts are known held (the quorum-th latest of their
 * validities: before a part is renewed, at most the attempt's own), and
 * lost when fewer than a majority hold it.  While a majority holds it, a
 * part that was lost (a member restarted empty, a member that was down
 * at the acquire) is taken again with the same token, one try a renewal
 * period.  Extends and releases go to every member at once and need a
 * majority.  The fence is the largest of the members' fences (their
 * clocks, microseconds) among those that took the lock by the time the
 * acquire succeeded: it grows from one holder to the next while the
 * members' clocks agree within the time between two acquisitions.
 *
 * A lock whose handle went while a member's call on it is under way
 * stays (on rl->locks, dead) until the last of them ends, and anything
 * such a late call took is given back.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "redlock.h"
#include "clock.h"
#include "defaults.h"
#include "internal.h"
#include "lock.h"
#include "random.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

/* Pauses between the attempts of a wait: at random in this range. */
#define RETRY_MIN_MS 100
#define RETRY_SPAN_MS 200
#define LAST_TRY_MS 250
/* Watch entries a member may have (its connections). */
#define WATCH_MAX 8

enum { P_NONE, P_TRYING, P_HELD, P_LOST, P_RELEASING };
/* A part's status before its try answered. */
#define PENDING 1

typedef struct member {
    rlk_client *cl;
    char name[128];           /* its URL, without a password            */
    int fail;                 /* a connection failure since the last look */
    int down;                 /* failed since it was last connected     */
    char why[200];
    rlk_watch w[WATCH_MAX];
    size_t nw;
} member;

struct rlk__rl {
    const rlk__rl_api *api;
    rlk_client_config cfg;    /* timing and timeouts (no strings kept)  */
    int64_t timeout;          /* the command timeout (-1: none)         */
    size_t n, quorum;
    member m[RLK__RL_MAX];
    rlk__rl_lock *locks;      /* the live ones and the dead ones        */
    int epfd;                 /* rlk__rl_fd: readable when a member is  */
    int reg[RLK__RL_MAX * WATCH_MAX];
    size_t nreg;
    int ticking;              /* tick or the event loop renews          */
    int closing;              /* rlk__rl_free's last turns: no sweep     */
    char err[600];
};

typedef struct part {
    rlk__rl_lock *lk;
    size_t i;                 /* its member                              */
    rlk_lock *h;              /* the member's handle (NULL: none)       */
    int state;                /* P_*                                     */
    int status;               /* the last try's or extend's (PENDING: none yet) */
    int rel_status;           /* the last release's                     */
    int giving_back;          /* a release of what it held is under way */
    int calling_off;          /* a release of a try under way           */
    int calls;                /* member calls on it under way           */
    int ext;                  /* an extend under way                    */
    int capped;               /* not renewed since taken: at most until */
    int64_t first_until;      /* its validity's end when taken          */
    int64_t retry_at;         /* a try again, not before                */
    char why[200];
} part;

struct rlk__rl_lock {
    rlk__rl *rl;
    rlk__rl_lock *next;
    void *user;
    char *name;
    char token[RLK__TOKEN_MAX];
    rlk_lock_options o;       /* ttl, watchdog, margins, replicas       */
    void (*on_lost)(void *ctx, rlk_lock *l);
    void *ctx;
    int64_t ttl, until;       /* until: the attempt's validity's end    */
    uint64_t fence;
    int held;                 /* handed to the caller                   */
    int lost;                 /* atomic: found lost                     */
    int told;                 /* on_lost called                         */
    int dead;                 /* its handle gone                        */
    part p[RLK__RL_MAX];
};

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(rlk__rl *rl, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rl->err, sizeof rl->err, fmt, ap);
    va_end(ap);
    return status;
}

const char *rlk__rl_errmsg(const rlk__rl *rl) { return rl->err; }
size_t rlk__rl_servers(const rlk__rl *rl) { return rl->n; }
rlk_client *rlk__rl_member(rlk__rl *rl, size_t i) { return rl->m[i].cl; }
const char *rlk__rl_member_name(const rlk__rl *rl, size_t i) { return rl->m[i].name; }

int rlk__rl_refuse(rlk__rl *rl, const char *what)
{
    return fail(rl, RLK_ERR_INVALID, "%s: not offered under Redlock", what);
}

/* url without "user:password@" (for messages). */
static void public_name(char *out, size_t n, const char *url)
{
    const char *at = strrchr(url, '@'), *sep = strstr(url, "://");
    if (at && sep && at > sep) snprintf(out, n, "%.*s%s", (int)(sep + 3 - url), url, at + 1);
    else snprintf(out, n, "%s", url);
}

rlk__rl *rlk__rl_new(const rlk__rl_api *api, const rlk_client_config *cfg)
{
    size_t n = 1 + (cfg->seeds ? cfg->nseeds : 0);
    if (n < 3 || n % 2 == 0 || n > RLK__RL_MAX) return NULL;
    rlk__rl *rl = rlk__malloc(sizeof *rl);
    if (!rl) return NULL;
    memset(rl, 0, sizeof *rl);
    rl->api = api;
    rl->cfg = *cfg;
    rl->cfg.seeds = NULL;
    rl->cfg.nseeds = 0;
    rl->cfg.redlock = 0;
    rl->cfg.conn.url = NULL;
    if (!rl->cfg.drift_ms) rl->cfg.drift_ms = RLK__DEFAULT_DRIFT_MS;
    if (rl->cfg.renew_divisor <= 0) rl->cfg.renew_divisor = 3;
    int t = cfg->conn.command_timeout_ms;
    rl->timeout = t == 0 ? RLK__DEFAULT_TIMEOUT_MS : t < 0 ? -1 : t;
    rl->n = n;
    rl->quorum = n / 2 + 1;
    rl->epfd = epoll_create1(EPOLL_CLOEXEC);
    int ok = rl->epfd >= 0;
    for (size_t i = 0; ok && i < n; i++) {
        rlk_client_config mc = *cfg;
        mc.conn.url = i == 0 ? cfg->conn.url : cfg->seeds[i - 1];
        mc.seeds = NULL;
        mc.nseeds = 0;
        mc.redlock = 0;
        public_name(rl->m[i].name, sizeof rl->m[i].name, mc.conn.url ? mc.conn.url : "");
        ok = (rl->m[i].cl = api->client_new(&mc)) != NULL;
    }
    if (!ok) {
        rlk__rl_free(rl);
        return NULL;
    }
    return rl;
}

static void lock_free(rlk__rl_lock *l)
{
    rlk__free(l->name);
    rlk__free(l);
}

static void turn(rlk__rl *rl, int64_t until);

/* Whether a release (or call-off) of some lock is under way on a server
 * that is up. */
static int releasing(rlk__rl *rl)
{
    for (rlk__rl_lock *l = rl->locks; l; l = l->next)
        for (size_t i = 0; i < rl->n; i++)
            if (l->p[i].state == P_RELEASING && !(rl->m[i].down && !rl->api->info(rl->m[i].cl)))
                return 1;
    return 0;
}

void rlk__rl_free(rlk__rl *rl)
{
    if (!rl) return;
    /* The releases still under way (a release returns once a majority
     * released, and a server's may need its script loaded first) get up
     * to the command timeout, at most 1 s, to end. */
    int64_t end = rlk__now_ms() + (rl->timeout >= 0 && rl->timeout < 1000 ? rl->timeout : 1000);
    rl->closing = 1; /* no part taken again, no on_lost */
    while (releasing(rl) && rlk__now_ms() < end) turn(rl, end);
    for (size_t i = 0; i < rl->n; i++) rl->api->client_free(rl->m[i].cl);
    while (rl->locks) {
        rlk__rl_lock *l = rl->locks;
        rl->locks = l->next;
        lock_free(l);
    }
    if (rl->epfd >= 0) close(rl->epfd);
    rlk__free(rl);
}

/* ------------------------------------------------------------------ */
/* Turning the members                                                  */

static void note_failure(rlk__rl *rl, size_t i, int r)
{
    member *m = &rl->m[i];
    m->down = 1;
    if (m->fail) return;
    m->fail = r;
    snprintf(m->why, sizeof m->why, "%s", rl->api->errmsg(m->cl));
}

/* What each member waits for (into m->w), and the soonest deadline of
 * them all and until (-1: none). */
static int64_t prepare(rlk__rl *rl, int64_t until)
{
    int64_t dl = until;
    for (size_t i = 0; i < rl->n; i++) {
        member *m = &rl->m[i];
        int64_t d = -1;
        int c = rl->api->watch(m->cl, m->w, WATCH_MAX, &d);
        if (c < 0) {
            note_failure(rl, i, c);
            c = 0;
        }
        m->nw = (size_t)c > WATCH_MAX ? WATCH_MAX : (size_t)c;
        if (d >= 0 && (dl < 0 || d < dl)) dl = d;
    }
    return dl;
}

static void sweep(rlk__rl *rl);

/* Each member takes what came (revents set in m->w), then the locks'
 * parts are looked at. */
static void take(rlk__rl *rl)
{
    for (size_t i = 0; i < rl->n; i++) {
        int r = rl->api->handle(rl->m[i].cl, rl->m[i].w, rl->m[i].nw);
        if (r != RLK_OK) note_failure(rl, i, r);
    }
    sweep(rl);
}

/* One turn: waits for the members up to until (-1: their own deadlines
 * alone; now or earlier: no wait). */
static void turn(rlk__rl *rl, int64_t until)
{
    int64_t dl = prepare(rl, until);
    struct pollfd p[RLK__RL_MAX * WATCH_MAX];
    size_t np = 0;
    for (size_t i = 0; i < rl->n; i++)
        for (size_t k = 0; k < rl->m[i].nw; k++) {
            rlk_watch *w = &rl->m[i].w[k];
            p[np].fd = w->fd;
            p[np].events = (short)((w->events & RLK_EV_READ ? POLLIN : 0) |
                                   (w->events & RLK_EV_WRITE ? POLLOUT : 0));
            p[np++].revents = 0;
        }
    int64_t now = rlk__now_ms();
    int64_t wait = dl < 0 ? 1000 : dl - now;
    if (wait < 0) wait = 0;
    if (wait > 1000) wait = 1000;
    if (poll(p, np, (int)wait) < 0)
        for (size_t k = 0; k < np; k++) p[k].revents = 0;
    np = 0;
    for (size_t i = 0; i < rl->n; i++)
        for (size_t k = 0; k < rl->m[i].nw; k++, np++) {
            short re = p[np].revents;
            rl->m[i].w[k].revents = (re & (POLLIN | POLLERR | POLLHUP) ? RLK_EV_READ : 0u) |
                                    (re & POLLOUT ? RLK_EV_WRITE : 0u);
        }
    take(rl);
}

static void clear_failures(rlk__rl *rl)
{
    for (size_t i = 0; i < rl->n; i++) rl->m[i].fail = 0;
}

/* ------------------------------------------------------------------ */
/* The parts of a lock                                                  */

static void part_lost(void *ctx, rlk_lock *h)
{
    part *p = ctx;
    (void)h;
    if (p->state == P_HELD) p->state = P_LOST;
}

static void part_taken(void *ctx, rlk_lock *h, int status)
{
    part *p = ctx;
    rlk__rl *rl = p->lk->rl;
    p->calls--;
    p->status = status;
    if (status != RLK_OK) {
        p->h = NULL;
        p->state = P_NONE;
        snprintf(p->why, sizeof p->why, "%s", rl->api->errmsg(rl->m[p->i].cl));
        return;
    }
    p->h = h;
    p->state = P_HELD;
    p->capped = 1;
    p->first_until = rlk__now_ms() + rl->api->remaining(h);
}

static void part_released(void *ctx, rlk_lock *h, int status)
{
    part *p = ctx;
    (void)h;
    p->calls--;
    p->rel_status = status;
    p->giving_back = p->calling_off = 0;
    p->h = NULL;
    p->state = P_NONE;
}

static void part_extended(void *ctx, rlk_lock *h, int status)
{
    part *p = ctx;
    (void)h;
    p->calls--;
    p->ext = 0;
    p->status = status;
    if (status == RLK_OK) p->capped = 0;
    else snprintf(p->why, sizeof p->why, "%s", p->lk->rl->api->errmsg(p->lk->rl->m[p->i].cl));
}

/* Member i's try for the lock (token NULL: drawn by it). */
static int part_try(rlk__rl_lock *l, size_t i, const char *token)
{
    part *p = &l->p[i];
    rlk_lock_options o = l->o;
    o.wait_ms = 0;
    o.on_lost = part_lost;
    o.ctx = p;
    /* The command is in the facts of the token the first draws. */
    if (token) o.holder_cmd = NULL;
    rlk_lock *h = NULL;
    int r = l->rl->api->acquire_async(l->rl->m[i].cl, l->name, &o, token, part_taken, p, &h);
    if (r != RLK_OK) {
        p->status = r;
        snprintf(p->why, sizeof p->why, "%s", l->rl->api->errmsg(l->rl->m[i].cl));
        return r;
    }
    p->h = h;
    p->state = P_TRYING;
    p->calls++;
    return RLK_OK;
}

/* Gives back what part holds, or calls off its try. */
static void part_release(part *p)
{
    if (!p->h || p->state == P_RELEASING || p->state == P_NONE) return;
    rlk__rl *rl = p->lk->rl;
    if (p->ext) {
        /* An extend under way: the release waits; the handle goes. */
        rl->api->forget(p->h);
        p->h = NULL;
        p->state = P_NONE;
        return;
    }
    int was_trying = p->state == P_TRYING;
    p->rel_status = RLK_ERR_TIMEOUT;
    if (rl->api->release_async(p->h, part_released, p) == RLK_OK) {
        p->giving_back = !was_trying;
        p->calling_off = was_trying;
        if (was_trying) p->calls--; /* the try's done never comes */
        p->calls++;
        p->state = P_RELEASING;
    } else {
        rl->api->forget(p->h);
        if (was_trying) p->calls--;
        p->h = NULL;
        p->state = P_NONE;
    }
}

/* The end of part's validity by the monotonic clock (-1: not held). */
static int64_t part_until(const rlk__rl_lock *l, const part *p, int64_t now)
{
    if (p->state != P_HELD || !p->h || l->rl->api->is_lost(p->h)) return -1;
    int64_t u = now + l->rl->api->remaining(p->h);
    if (p->capped && u > p->first_until + 1) ((part *)p)->capped = 0; /* renewed */
    if (p->capped && u > l->until) u = l->until;
    return u;
}

/* The quorum-th latest of the parts' validities (-1: fewer hold it). */
static int64_t lock_until(const rlk__rl_lock *l, int64_t now)
{
    int64_t u[RLK__RL_MAX];
    size_t k = 0;
    for (size_t i = 0; i < l->rl->n; i++) {
        int64_t v = part_until(l, &l->p[i], now);
        if (v > now) u[k++] = v;
    }
    if (k < l->rl->quorum) return -1;
    /* The quorum-th largest: a few elements, sorted by insertion. */
    for (size_t a = 1; a < k; a++)
        for (size_t b = a; b > 0 && u[b] > u[b - 1]; b--) {
            int64_t t = u[b];
            u[b] = u[b - 1];
            u[b - 1] = t;
        }
    return u[l->rl->quorum - 1];
}

static int calls_of(const rlk__rl_lock *l)
{
    int c = 0;
    for (size_t i = 0; i < l->rl->n; i++) c += l->p[i].calls;
    return c;
}

static void unlink_lock(rlk__rl *rl, rlk__rl_lock *l)
{
    for (rlk__rl_lock **pp = &rl->locks; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            return;
        }
}

/* After a turn: a dead lock gives back what a late try took and goes
 * once no call is left; a held one is found lost, or takes its lost
 * parts again while a majority holds it. */
static void sweep(rlk__rl *rl)
{
    int64_t now = rlk__now_ms();
    if (rl->closing) return;
    for (rlk__rl_lock *l = rl->locks, *next; l; l = next) {
        next = l->next;
        if (l->dead) {
            for (size_t i = 0; i < rl->n; i++)
                if (l->p[i].state == P_HELD || l->p[i].state == P_LOST) part_release(&l->p[i]);
            if (!calls_of(l)) {
                unlink_lock(rl, l);
                lock_free(l);
            }
            continue;
        }
        if (!l->held || __atomic_load_n(&l->lost, __ATOMIC_RELAXED)) continue;
        if (lock_until(l, now) < 0) {
            __atomic_store_n(&l->lost, 1, __ATOMIC_RELAXED);
            continue;
        }
        if (!l->o.watchdog) continue;
        int64_t period = rlk_plan_renew_period_ms(&rl->cfg, l->ttl);
        for (size_t i = 0; i < rl->n; i++) {
            part *p = &l->p[i];
            if (p->state == P_LOST && p->h) {
                rl->api->forget(p->h);
                p->h = NULL;
                p->state = P_NONE;
            }
            if (p->state == P_NONE && now >= p->retry_at) {
                p->retry_at = now + period;
                part_try(l, i, l->token);
            }
        }
    }
}

/* on_lost of the held locks found lost, each once (after the turn, so
 * that it may call the client). */
static void tell_lost(rlk__rl *rl)
{
    for (int again = 1; again;) {
        again = 0;
        for (rlk__rl_lock *l = rl->locks; l; l = l->next) {
            if (l->dead || !l->held || l->told || !rlk__rl_is_lost(l)) continue;
            __atomic_store_n(&l->lost, 1, __ATOMIC_RELAXED);
            l->told = 1;
            if (l->on_lost) {
                l->on_lost(l->ctx, (rlk_lock *)l->user);
                again = 1; /* the list may have changed */
                break;
            }
        }
    }
}

/* ------------------------------------------------------------------ */
/* The client's calls                                                   */

static int64_t after(const rlk__rl *rl, int64_t from, int64_t ms)
{
    return ms < 0 ? -1 : from + ms;
}

static int past(int64_t deadline, int64_t now) { return deadline >= 0 && now >= deadline; }

int rlk__rl_connect(rlk__rl *rl)
{
    /* Each member in turn (each within its connect timeout). */
    size_t up = 0;
    int r[RLK__RL_MAX], first = RLK_OK;
    for (size_t i = 0; i < rl->n; i++) {
        r[i] = rl->api->connect(rl->m[i].cl);
        if (r[i] == RLK_OK) up++;
        else if (first == RLK_OK) first = r[i];
    }
    if (up >= rl->quorum) return RLK_OK;
    size_t n = (size_t)snprintf(rl->err, sizeof rl->err,
                                "Redlock: %zu of %zu servers connected, %zu needed", up, rl->n,
                                rl->quorum);
    for (size_t i = 0; i < rl->n && n < sizeof rl->err; i++)
        if (r[i] != RLK_OK)
            n += (size_t)snprintf(rl->err + n, sizeof rl->err - n, "; %s: %s", rl->m[i].name,
                                  rl->api->errmsg(rl->m[i].cl));
    return first;
}

const rlk_conn_info *rlk__rl_info(rlk__rl *rl)
{
    for (size_t i = 0; i < rl->n; i++) {
        const rlk_conn_info *in = rl->api->info(rl->m[i].cl);
        if (in) return in;
    }
    return NULL;
}

uint64_t rlk__rl_generation(rlk__rl *rl)
{
    uint64_t g = 0;
    for (size_t i = 0; i < rl->n; i++) g += rl->api->generation(rl->m[i].cl);
    return g;
}

/* The epoll set: the fds the members wait on now. */
static void register_fds(rlk__rl *rl)
{
    for (size_t k = 0; k < rl->nreg; k++) epoll_ctl(rl->epfd, EPOLL_CTL_DEL, rl->reg[k], NULL);
    rl->nreg = 0;
    for (size_t i = 0; i < rl->n; i++)
        for (size_t k = 0; k < rl->m[i].nw; k++) {
            rlk_watch *w = &rl->m[i].w[k];
            struct epoll_event ev;
            memset(&ev, 0, sizeof ev);
            ev.events = (w->events & RLK_EV_READ ? EPOLLIN : 0u) |
                        (w->events & RLK_EV_WRITE ? EPOLLOUT : 0u);
            ev.data.fd = w->fd;
            if (epoll_ctl(rl->epfd, EPOLL_CTL_ADD, w->fd, &ev) == 0) rl->reg[rl->nreg++] = w->fd;
        }
}

/* One turn that waits for nothing; the members' next deadline. */
static int64_t tick_turn(rlk__rl *rl)
{
    int64_t now = rlk__now_ms();
    turn(rl, now);
    tell_lost(rl);
    int64_t dl = prepare(rl, -1);
    register_fds(rl);
    return dl;
}

int rlk__rl_tick(rlk__rl *rl, int64_t *next_ms)
{
    rl->ticking = 1;
    if (!rl->locks) {
        if (next_ms) *next_ms = -1;
        return RLK_OK;
    }
    int64_t dl = tick_turn(rl);
    int r = RLK_OK;
    for (size_t i = 0; i < rl->n; i++)
        if (rl->m[i].fail && r == RLK_OK) r = fail(rl, rl->m[i].fail, "%s: %s", rl->m[i].name,
                                                   rl->m[i].why);
    clear_failures(rl);
    if (next_ms) {
        int64_t now = rlk__now_ms();
        /* Parts taken again and waits for replies: soon. */
        *next_ms = dl < 0 ? 1000 : dl <= now ? 0 : dl - now;
        if (*next_ms > 1000) *next_ms = 1000;
    }
    return r;
}

int rlk__rl_fd(const rlk__rl *rl) { return rl->epfd; }

int rlk__rl_watch(rlk__rl *rl, rlk_watch *w, size_t max, int64_t *deadline_ms)
{
    rl->ticking = 1;
    int64_t dl = prepare(rl, -1);
    register_fds(rl);
    if (deadline_ms) *deadline_ms = dl < 0 ? rlk__now_ms() + 1000 : dl;
    if (max > 0) {
        w[0].fd = rl->epfd;
        w[0].events = RLK_EV_READ;
        w[0].revents = 0;
    }
    return 1;
}

int rlk__rl_handle(rlk__rl *rl, const rlk_watch *w, size_t n)
{
    (void)w;
    (void)n;
    rl->ticking = 1;
    tick_turn(rl);
    int r = RLK_OK;
    for (size_t i = 0; i < rl->n; i++)
        if (rl->m[i].fail && r == RLK_OK) r = fail(rl, rl->m[i].fail, "%s: %s", rl->m[i].name,
                                                   rl->m[i].why);
    clear_failures(rl);
    return r;
}

/* Acquire */

/* What the parts' last results say, after an attempt that failed:
 * RLK_LOCK_BUSY when the members that answered make a majority (others
 * hold the lock), a key that is no lock at once, else the members'
 * most common failure (no quorum), with a message naming each. */
static int attempt_failure(rlk__rl_lock *l, size_t ok)
{
    rlk__rl *rl = l->rl;
    size_t busy = 0;
    int common = RLK_ERR_CONNECT, count[8] = {0};
    static const int kinds[8] = {RLK_ERR_CONNECT, RLK_ERR_TIMEOUT, RLK_ERR_IO, RLK_ERR_CLOSED,
                                 RLK_ERR_SERVER, RLK_ERR_AUTH, RLK_ERR_TLS, RLK_ERR_PROTO};
    for (size_t i = 0; i < rl->n; i++) {
        int s = l->p[i].status;
        if (s == RLK_LOCK_NOT_A_LOCK)
            return fail(rl, s, "Redlock: %s: %s", rl->m[i].name, l->p[i].why);
        if (s == RLK_LOCK_BUSY) busy++;
        for (int k = 0; k < 8; k++)
            if (s == kinds[k] && ++count[k] > count[0] && count[k] >= 1) common = kinds[k];
    }
    if (busy && ok + busy >= rl->quorum)
        return fail(rl, RLK_LOCK_BUSY, "Redlock: '%s' is held by someone else on %zu of %zu servers",
                    l->name, busy, rl->n);
    size_t n = (size_t)snprintf(rl->err, sizeof rl->err,
                                "Redlock: no quorum for '%s': %zu of %zu servers took it, %zu "
                                "needed",
                                l->name, ok, rl->n, rl->quorum);
    for (size_t i = 0; i < rl->n && n < sizeof rl->err; i++) {
        int s = l->p[i].status;
        if (s == RLK_OK || (s == PENDING && !rl->m[i].down)) continue;
        if (s == PENDING) {
            n += (size_t)snprintf(rl->err + n, sizeof rl->err - n, "; %s: %s", rl->m[i].name,
                                  rl->m[i].why[0] ? rl->m[i].why : "down");
            continue;
        }
        n += (size_t)snprintf(rl->err + n, sizeof rl->err - n, "; %s: %s", rl->m[i].name,
                              s == RLK_LOCK_BUSY ? "held by someone else"
                              : l->p[i].why[0]   ? l->p[i].why
                                                 : rlk_strerror(s));
    }
    return common;
}

/* Turns until every release (or call-off) of l's parts has ended, or
 * until, or (majority_enough) a majority released it and no try is
 * being called off: the others' releases were written with theirs, and
 * their answers are read by the turns after, if any.  A server that failed and is not connected is not waited for;
 * once a majority of the servers are done, the others get as long again
 * as that took (at least 10 ms), and a slower one (frozen) goes on
 * unheard. */
static void drain(rlk__rl *rl, rlk__rl_lock *l, int64_t until, int majority_enough)
{
    int64_t start = rlk__now_ms(), stop = -1;
    for (;;) {
        size_t left = 0, ok = 0, off = 0;
        int64_t now = rlk__now_ms();
        for (size_t i = 0; i < rl->n; i++) {
            int up = !(rl->m[i].down && !rl->api->info(rl->m[i].cl));
            left += l->p[i].state == P_RELEASING && up;
            off += l->p[i].state == P_RELEASING && l->p[i].calling_off && up;
            ok += l->p[i].state != P_RELEASING && l->p[i].rel_status == RLK_OK;
        }
        /* A try called off gives back what it took only once its answer
         * came: waited for (within the grace below). */
        if (majority_enough && ok >= rl->quorum && !off) return;
        if (stop < 0 && rl->n - left >= rl->quorum)
            stop = now + (now - start > 5 ? 2 * (now - start) : 10);
        if (!left || past(until, now) || past(stop, now)) return;
        turn(rl, stop >= 0 && (until < 0 || stop < until) ? stop : until);
    }
}

/* One attempt: RLK_OK with l held, or its failure (what it took given
 * back, or being given back). */
static int attempt(rlk__rl_lock *l, int64_t deadline)
{
    rlk__rl *rl = l->rl;
    int64_t start = rlk__now_ms();
    int64_t valid = rlk_plan_valid_ms(&rl->cfg, l->ttl);
    l->until = start + valid;
    int64_t end = l->until;
    int64_t t = after(rl, start, rl->timeout);
    if (t >= 0 && t < end) end = t;
    if (deadline >= 0 && deadline < end) end = deadline;
    clear_failures(rl);
    for (size_t i = 0; i < rl->n; i++) {
        part *p = &l->p[i];
        p->status = p->rel_status = PENDING;
        p->why[0] = '\0';
        if (p->state != P_NONE) {
            p->status = RLK_ERR_TIMEOUT;
            snprintf(p->why, sizeof p->why, "its last release has not ended");
            continue;
        }
        const char *token = l->token[0] ? l->token : NULL;
        if (part_try(l, i, token) == RLK_OK && !l->token[0]) {
            const char *tk = rl->api->pending_token(p->h);
            snprintf(l->token, sizeof l->token, "%s", tk ? tk : "");
        }
    }
    size_t ok;
    int64_t grace = -1;
    for (;;) {
        ok = 0;
        size_t failed = 0;
        int64_t now = rlk__now_ms();
        for (size_t i = 0; i < rl->n; i++) {
            part *p = &l->p[i];
            if (p->state == P_TRYING && rl->m[i].fail) {
                /* Its connection failed: no answer from it this time. */
                p->status = rl->m[i].fail;
                snprintf(p->why, sizeof p->why, "%s", rl->m[i].why);
                part_release(p);
            }
            if (p->state == P_HELD) ok++;
            /* A server that failed since it was last connected, and is
             * not connected now, counts as failed while its try waits. */
            else if (p->state != P_TRYING || (rl->m[i].down && !rl->api->info(rl->m[i].cl)))
                failed++;
            if (rl->m[i].down && rl->api->info(rl->m[i].cl)) rl->m[i].down = 0;
        }
        clear_failures(rl);
        if (ok >= rl->quorum && now < l->until) {
            /* Held.  The servers still to answer get as long again as the
             * majority took (at least 10 ms), within the deadline: a lock
             * on more than a majority survives the loss of more servers,
             * and a caller that ends at once (resplock acquire) would
             * leave a try not yet written unsent. */
            if (grace < 0) grace = now + (now - start > 5 ? now - start : 10);
            size_t trying = 0;
            for (size_t i = 0; i < rl->n; i++)
                trying += l->p[i].state == P_TRYING && !(rl->m[i].down && !rl->api->info(rl->m[i].cl));
            if (!trying || now >= grace || now >= end) break;
            turn(rl, grace < end ? grace : end);
            continue;
        }
        if (failed > rl->n - rl->quorum || now >= end) {
            if (now >= end)
                for (size_t i = 0; i < rl->n; i++)
                    if (l->p[i].state == P_TRYING) {
                        l->p[i].status = RLK_ERR_TIMEOUT;
                        snprintf(l->p[i].why, sizeof l->p[i].why, "no answer in time");
                    }
            int r = attempt_failure(l, ok);
            for (size_t i = 0; i < rl->n; i++) part_release(&l->p[i]);
            return r;
        }
        turn(rl, end);
    }
    l->fence = 0;
    for (size_t i = 0; i < rl->n; i++) {
        part *p = &l->p[i];
        if (p->state != P_HELD) continue;
        uint64_t f = rl->api->fence(p->h);
        if (f > l->fence) l->fence = f;
    }
    return RLK_OK;
}

int rlk__rl_acquire(rlk__rl *rl, const char *name, const rlk_lock_options *o, void *user,
                    rlk__rl_lock **out)
{
    rlk_lock_options d;
    *out = NULL;
    if (!o) {
        rlk_lock_options_init(&d);
        o = &d;
    }
    if (!name || !*name) return fail(rl, RLK_ERR_INVALID, "acquire: an empty name");
    if (o->kind != RLK_LOCK_SIMPLE)
        return fail(rl, RLK_ERR_INVALID, "acquire: Redlock takes simple locks only");
    int64_t ttl = o->ttl_ms > 0 ? o->ttl_ms : RLK_DEFAULT_TTL_MS;
    if (rlk_plan_valid_ms(&rl->cfg, ttl) <= 0)
        return fail(rl, RLK_ERR_INVALID, "acquire: a TTL of %lld ms leaves no validity",
                    (long long)ttl);
    if (o->watchdog && !rl->ticking)
        return fail(rl, RLK_ERR_INVALID,
                    "acquire: a watchdog lock needs something to renew it: under Redlock, call "
                    "rlk_client_tick first (tick mode), or turn the client by an event loop "
                    "(rlk_client_watch)");
    rlk__rl_lock *l = rlk__malloc(sizeof *l);
    if (!l) return fail(rl, RLK_ERR_NOMEM, "out of memory");
    memset(l, 0, sizeof *l);
    size_t nl = strlen(name) + 1;
    if (!(l->name = rlk__malloc(nl))) {
        rlk__free(l);
        return fail(rl, RLK_ERR_NOMEM, "out of memory");
    }
    memcpy(l->name, name, nl);
    l->rl = rl;
    l->user = user;
    l->o = *o;
    l->o.holder = NULL; /* holder_cmd: the caller's, until this call returns */
    l->on_lost = o->on_lost;
    l->ctx = o->ctx;
    l->ttl = ttl;
    for (size_t i = 0; i < rl->n; i++) {
        l->p[i].lk = l;
        l->p[i].i = i;
    }
    l->next = rl->locks;
    rl->locks = l;
    int64_t start = rlk__now_ms();
    int64_t deadline = o->wait_ms < 0 ? -1 : start + o->wait_ms;
    int r, last = o->wait_ms == 0;
    for (;;) {
        /* An attempt may end up to LAST_TRY_MS past the wait (its last
         * one starts at the wait's end). */
        r = attempt(l, deadline < 0 || o->wait_ms == 0 ? -1 : deadline + LAST_TRY_MS);
        if (r == RLK_OK || r == RLK_LOCK_NOT_A_LOCK || r == RLK_ERR_INVALID || r == RLK_ERR_NOMEM ||
            r == RLK_ERR_AUTH || r == RLK_ERR_URL || r == RLK_ERR_TLS)
            break;
        int64_t now = rlk__now_ms();
        unsigned char b[2] = {0, 0};
        rlk__random_bytes(b, sizeof b);
        int64_t resume = now + RETRY_MIN_MS + (b[0] | b[1] << 8) % RETRY_SPAN_MS;
        if (last) break;
        /* The last attempt at the wait's end. */
        if (past(deadline, resume)) resume = deadline, last = 1;
        char why[sizeof rl->err];
        memcpy(why, rl->err, sizeof why);
        /* The pause: what was given back goes out, the other locks are
         * renewed. */
        while (!past(resume, rlk__now_ms())) {
            turn(rl, resume);
            tell_lost(rl);
        }
        memcpy(rl->err, why, sizeof why);
    }
    l->o.holder_cmd = NULL;
    if (r != RLK_OK) {
        char why[sizeof rl->err];
        memcpy(why, rl->err, sizeof why);
        drain(rl, l, after(rl, rlk__now_ms(), rl->timeout), 0);
        memcpy(rl->err, why, sizeof why);
        l->dead = 1;
        sweep(rl);
        return r;
    }
    l->held = 1;
    *out = l;
    return RLK_OK;
}

/* Release, extend, forget */

/* The most common status of st[0..n) other than RLK_OK (the first of
 * equals); RLK_ERR_TIMEOUT when all are RLK_OK. */
static int most_common_failure(const int *st, size_t n)
{
    int best = RLK_ERR_TIMEOUT, bestn = 0;
    for (size_t i = 0; i < n; i++) {
        int c = 0;
        if (st[i] == RLK_OK) continue;
        for (size_t k = 0; k < n; k++) c += st[k] == st[i];
        if (c > bestn) best = st[i], bestn = c;
    }
    return best;
}

/* The members' results of a release or extend: RLK_OK with a majority,
 * else the most common other. */
static int majority_of(rlk__rl_lock *l, const char *doing, size_t ok)
{
    rlk__rl *rl = l->rl;
    if (ok >= rl->quorum) return RLK_OK;
    int st[RLK__RL_MAX];
    for (size_t i = 0; i < rl->n; i++) st[i] = l->p[i].status;
    int best = most_common_failure(st, rl->n);
    size_t n = (size_t)snprintf(rl->err, sizeof rl->err, "Redlock: %s '%s': %zu of %zu servers, %zu needed",
                                doing, l->name, ok, rl->n, rl->quorum);
    for (size_t i = 0; i < rl->n && n < sizeof rl->err; i++)
        if (l->p[i].status != RLK_OK)
            n += (size_t)snprintf(rl->err + n, sizeof rl->err - n, "; %s: %s", rl->m[i].name,
                                  l->p[i].why[0] ? l->p[i].why : rlk_strerror(l->p[i].status));
    return best;
}

int rlk__rl_release(rlk__rl_lock *l)
{
    rlk__rl *rl = l->rl;
    int was_lost = rlk__rl_is_lost(l);
    tell_lost(rl);
    clear_failures(rl);
    for (size_t i = 0; i < rl->n; i++) {
        part *p = &l->p[i];
        p->rel_status = RLK_LOCK_NOT_HELD;
        part_release(p);
    }
    drain(rl, l, after(rl, rlk__now_ms(), rl->timeout), 1);
    size_t ok = 0;
    for (size_t i = 0; i < rl->n; i++) {
        part *p = &l->p[i];
        ok += p->rel_status == RLK_OK;
        p->status = p->rel_status;
        snprintf(p->why, sizeof p->why, "%s",
                 p->giving_back ? "no answer in time"
                 : p->rel_status == RLK_OK ? ""
                 : p->rel_status == RLK_LOCK_NOT_HELD ? "not held there"
                 : p->rel_status == RLK_LOCK_NOT_OWNER ? "held by someone else there"
                                                       : rl->api->errmsg(rl->m[i].cl));
    }
    int r = majority_of(l, "release of", ok);
    if (was_lost) {
        if (r == RLK_OK) fail(rl, RLK_LOCK_LOST, "Redlock: '%s' was lost before its release (released "
                              "on %zu of %zu servers)", l->name, ok, rl->n);
        r = RLK_LOCK_LOST;
    }
    l->dead = 1;
    sweep(rl);
    return r;
}

void rlk__rl_forget(rlk__rl_lock *l)
{
    rlk__rl *rl = l->rl;
    for (size_t i = 0; i < rl->n; i++) {
        part *p = &l->p[i];
        if (p->h && p->state != P_RELEASING && !p->ext) {
            rl->api->forget(p->h);
            if (p->state == P_TRYING) p->calls--;
            p->h = NULL;
            p->state = P_NONE;
        }
    }
    l->dead = 1;
    if (!calls_of(l)) {
        unlink_lock(rl, l);
        lock_free(l);
    }
}

int rlk__rl_extend(rlk__rl_lock *l, int64_t ms, int how)
{
    rlk__rl *rl = l->rl;
    if (ms < 1 || (how != RLK_EXTEND_ADD && how != RLK_EXTEND_SET))
        return fail(rl, RLK_ERR_INVALID, "extend: ms must be 1 or more, how ADD or SET");
    if (rlk__rl_is_lost(l)) {
        tell_lost(rl);
        return fail(rl, RLK_LOCK_LOST, "Redlock: '%s' was lost", l->name);
    }
    int64_t until = after(rl, rlk__now_ms(), rl->timeout);
    for (size_t i = 0; i < rl->n; i++) {
        part *p = &l->p[i];
        p->status = RLK_LOCK_NOT_HELD;
        snprintf(p->why, sizeof p->why, "not held there");
        if (p->state != P_HELD || p->ext) continue;
        if (rl->api->extend_async(p->h, ms, how, part_extended, p) == RLK_OK) {
            p->ext = 1;
            p->calls++;
            p->status = RLK_ERR_TIMEOUT;
            snprintf(p->why, sizeof p->why, "no answer in time");
        } else {
            p->status = RLK_ERR_CLOSED;
            snprintf(p->why, sizeof p->why, "%s", rl->api->errmsg(rl->m[i].cl));
        }
    }
    for (;;) {
        int left = 0;
        for (size_t i = 0; i < rl->n; i++) left += l->p[i].ext;
        if (!left || past(until, rlk__now_ms())) break;
        turn(rl, until);
    }
    size_t ok = 0;
    for (size_t i = 0; i < rl->n; i++) ok += l->p[i].status == RLK_OK;
    if (how == RLK_EXTEND_SET && ok >= rl->quorum) l->ttl = ms;
    int r = majority_of(l, "extend of", ok);
    if (r == RLK_LOCK_NOT_HELD || r == RLK_LOCK_NOT_OWNER) {
        __atomic_store_n(&l->lost, 1, __ATOMIC_RELAXED);
        char why[sizeof rl->err];
        memcpy(why, rl->err, sizeof why);
        tell_lost(rl);
        memcpy(rl->err, why, sizeof why);
    }
    return r;
}

int64_t rlk__rl_remaining(const rlk__rl_lock *l)
{
    if (__atomic_load_n(&l->lost, __ATOMIC_RELAXED)) return 0;
    int64_t now = rlk__now_ms(), u = lock_until(l, now);
    return u < 0 ? 0 : u - now;
}

int rlk__rl_is_lost(const rlk__rl_lock *l) { return rlk__rl_remaining(l) == 0; }
uint64_t rlk__rl_fence(const rlk__rl_lock *l) { return l->fence; }
const char *rlk__rl_token(const rlk__rl_lock *l) { return l->token; }
int64_t rlk__rl_ttl(const rlk__rl_lock *l) { return l->ttl; }

/* Calls without a handle: each member in turn. */

int rlk__rl_get_status(rlk__rl *rl, const char *name, rlk_lock_status *st)
{
    rlk_lock_status s[RLK__RL_MAX];
    size_t answered = 0, best = RLK__RL_MAX, bestn = 0;
    int r = RLK_OK;
    char why[sizeof rl->err] = "";
    size_t n = 0;
    for (size_t i = 0; i < rl->n; i++) {
        int ri = rl->api->get_status(rl->m[i].cl, name, &s[i]);
        if (ri != RLK_OK) {
            s[i].held = -1;
            if (r == RLK_OK) r = ri;
            if (n < sizeof why)
                n += (size_t)snprintf(why + n, sizeof why - n, "; %s: %s", rl->m[i].name,
                                      rl->api->errmsg(rl->m[i].cl));
            continue;
        }
        answered++;
    }
    /* The holder most servers agree on: same host, pid and start. */
    for (size_t i = 0; i < rl->n; i++) {
        if (s[i].held != 1) continue;
        size_t c = 0;
        for (size_t k = 0; k < rl->n; k++)
            c += s[k].held == 1 && s[k].has_facts == s[i].has_facts && s[k].pid == s[i].pid &&
                 s[k].since_ms == s[i].since_ms && strcmp(s[k].host, s[i].host) == 0;
        if (c > bestn) best = i, bestn = c;
    }
    if (answered < rl->quorum) {
        snprintf(rl->err, sizeof rl->err, "Redlock: %zu of %zu servers answered, %zu needed%s",
                 answered, rl->n, rl->quorum, why);
        memset(st, 0, sizeof *st);
        return r;
    }
    if (best < RLK__RL_MAX) {
        *st = s[best];
    } else {
        for (size_t i = 0; i < rl->n; i++)
            if (s[i].held == 0) {
                *st = s[i];
                break;
            }
    }
    /* Held: by one holder on a majority. */
    st->held = bestn >= rl->quorum;
    st->servers = (int)rl->n;
    st->held_on = (int)bestn;
    st->answered = (int)answered;
    return RLK_OK;
}

/* Each member's call by token, and the majority of their results. */
static int by_token(rlk__rl *rl, const char *name, const char *token, int64_t ms, int how,
                    int64_t *ttl_ms_after, const char *doing)
{
    int st[RLK__RL_MAX];
    size_t ok = 0;
    int64_t after_ms = -1;
    for (size_t i = 0; i < rl->n; i++) {
        int64_t t = -1;
        st[i] = ms ? rl->api->extend_token(rl->m[i].cl, name, token, ms, how, &t)
                   : rl->api->release_token(rl->m[i].cl, name, token);
        if (st[i] == RLK_OK) {
            ok++;
            if (after_ms < 0 || t < after_ms) after_ms = t;
        }
    }
    if (ttl_ms_after) *ttl_ms_after = after_ms;
    if (ok >= rl->quorum) return RLK_OK;
    int best = most_common_failure(st, rl->n);
    size_t n = (size_t)snprintf(rl->err, sizeof rl->err,
                                "Redlock: %s '%s': %zu of %zu servers, %zu needed", doing, name,
                                ok, rl->n, rl->quorum);
    for (size_t i = 0; i < rl->n && n < sizeof rl->err; i++)
        if (st[i] != RLK_OK)
            n += (size_t)snprintf(rl->err + n, sizeof rl->err - n, "; %s: %s", rl->m[i].name,
                                  rl->api->errmsg(rl->m[i].cl));
    return best;
}

int rlk__rl_release_token(rlk__rl *rl, const char *name, const char *token)
{
    return by_token(rl, name, token, 0, 0, NULL, "release of");
}

int rlk__rl_extend_token(rlk__rl *rl, const char *name, const char *token, int64_t ms, int how,
                         int64_t *ttl_ms_after)
{
    if (ms < 1) return fail(rl, RLK_ERR_INVALID, "extend: ms must be 1 or more");
    return by_token(rl, name, token, ms, how, ttl_ms_after, "extend of");
}
