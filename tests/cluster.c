/* SPDX-License-Identifier: BSD-3-Clause */
/* A Redis Cluster of real processes for tests: see cluster.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cluster.h"
#include "resplock.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CREATE_TIMEOUT_MS 60000
#define POLL_MS 20
#define MIGRATE_BATCH 100

/* Why the last call failed, or why the cluster was not ready yet: printed
 * when a function gives up. */
static char why[512];

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void because(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
}

static int give_up(const char *what)
{
    fprintf(stderr, "test cluster: %s: %s\n", what, why);
    return -1;
}

int tc_port(const tc_cluster *c, int i)
{
    return c->node[i].srv ? c->node[i].srv->port : -1;
}

void tc_url(const tc_cluster *c, int i, char *out, size_t n)
{
    snprintf(out, n, "redis://127.0.0.1:%d", tc_port(c, i));
}

int tc_node_of_port(const tc_cluster *c, int port)
{
    for (int i = 0; i < TC_NODES; i++)
        if (tc_port(c, i) == port) return i;
    return -1;
}

int tc_alive(const tc_cluster *c, int i)
{
    return i >= 0 && i < TC_NODES && c->node[i].srv && c->node[i].srv->pid > 0 &&
           !c->node[i].paused;
}

/* ------------------------------------------------------------------ */
/* Talking to one node                                                  */

/* A RESP2 connection to node i that never reconnects by itself (a node
 * that went away must fail the call, not be waited for). */
static rlk_conn *open_node(const tc_cluster *c, int i)
{
    rlk_conn_config cfg;
    char url[64];
    rlk_conn *k;
    if (!tc_alive(c, i)) {
        because("node %d is not running", i);
        return NULL;
    }
    tc_url(c, i, url, sizeof url);
    rlk_conn_config_init(&cfg);
    cfg.url = url;
    cfg.protocol = 2;
    cfg.connect_timeout_ms = 2000;
    cfg.command_timeout_ms = 5000;
    cfg.reconnect_attempts = -1;
    k = rlk_conn_new(&cfg);
    if (!k) {
        because("out of memory");
        return NULL;
    }
    if (rlk_conn_connect(k) != RLK_OK) {
        because("node %d (port %d): %s", i, tc_port(c, i), rlk_conn_errmsg(k));
        rlk_conn_free(k);
        return NULL;
    }
    return k;
}

static int is_err(const rlk_resp_value *v)
{
    return v->type == RLK_RESP_ERROR || v->type == RLK_RESP_BLOB_ERROR;
}

/* A command of argc words on node i's connection k: its reply (valid
 * until the next call on k), or NULL when the call failed or, with
 * !errors_ok, the server answered an error. */
static rlk_resp_value *callv(rlk_conn *k, int i, int errors_ok, int argc, const char **argv)
{
    rlk_resp_value *v = NULL;
    int rc = rlk_conn_command(k, &v, argc, argv, NULL);
    if (rc != RLK_OK || !v) {
        because("node %d: %s: %s", i, argv[0], rlk_conn_errmsg(k));
        return NULL;
    }
    if (!errors_ok && is_err(v)) {
        because("node %d: %s %s: %.*s", i, argv[0], argc > 1 ? argv[1] : "", (int)v->len,
                v->str);
        return NULL;
    }
    return v;
}

/* The same with the words NULL-terminated. */
static rlk_resp_value *call(rlk_conn *k, int i, ...)
{
    const char *argv[16];
    int argc = 0;
    va_list ap;
    va_start(ap, i);
    while (argc < 15 && (argv[argc] = va_arg(ap, const char *)) != NULL) argc++;
    va_end(ap);
    return callv(k, i, 0, argc, argv);
}

/* A reply's text NUL-terminated in a new string (the caller frees it), or
 * NULL for a reply that is not a string. */
static char *text_of(const rlk_resp_value *v, int i)
{
    char *s;
    if (!v) return NULL;
    if (v->type != RLK_RESP_BULK && v->type != RLK_RESP_SIMPLE && v->type != RLK_RESP_VERBATIM) {
        because("node %d: a reply of type %c where text was expected", i, v->type);
        return NULL;
    }
    s = malloc(v->len + 1);
    if (!s) {
        because("out of memory");
        return NULL;
    }
    memcpy(s, v->str, v->len);
    s[v->len] = '\0';
    return s;
}

/* INFO-style text has the line "name:want". */
static int has_field(const char *text, const char *name, const char *want)
{
    char line[128];
    size_t n = (size_t)snprintf(line, sizeof line, "%s:%s", name, want);
    for (const char *p = strstr(text, line); p; p = strstr(p + 1, line))
        if ((p == text || p[-1] == '\n') && (p[n] == '\r' || p[n] == '\n' || p[n] == '\0'))
            return 1;
    return 0;
}

/* One command whose text reply is checked for the line name:want.  1
 * yes, 0 no (why says what it was), -1 the call failed. */
static int field_is(rlk_conn *k, int i, const char *cmd, const char *sub, const char *name,
                    const char *want)
{
    char *t = text_of(call(k, i, cmd, sub, (const char *)NULL), i);
    int r;
    if (!t) return -1;
    r = has_field(t, name, want);
    if (!r) {
        const char *p = strstr(t, name);
        because("node %d: %s %s: no %s:%s (%.40s)", i, cmd, sub, name, want, p ? p : "absent");
    }
    free(t);
    return r;
}

/* ------------------------------------------------------------------ */
/* A node's view of the cluster: CLUSTER NODES                          */

typedef struct view {
    signed char owner[TC_SLOTS]; /* index of the node serving it, -1     */
    int known[TC_NODES];         /* listed                               */
    int primary[TC_NODES];       /* flagged master                       */
    int failing[TC_NODES];       /* flagged fail or fail? (pfail)        */
    int master_of[TC_NODES];     /* a replica's primary, -1              */
} view;

static int index_of_id(const tc_cluster *c, const char *id, size_t n)
{
    for (int i = 0; i < TC_NODES; i++)
        if (strlen(c->node[i].id) == n && memcmp(c->node[i].id, id, n) == 0) return i;
    return -1;
}

/* flags (comma-separated) has the flag f. */
static int has_flag(const char *flags, const char *f)
{
    size_t n = strlen(f);
    for (const char *p = flags; p; p = strchr(p, ',')) {
        if (*p == ',') p++;
        if (strncmp(p, f, n) == 0 && (p[n] == ',' || p[n] == '\0')) return 1;
    }
    return 0;
}

/* Parses one line of CLUSTER NODES into v.  0 or -1 (why says). */
static int view_line(const tc_cluster *c, int self, char *line, view *v)
{
    char *save = NULL, *tok[8];
    int k, who;
    for (k = 0; k < 8; k++) {
        tok[k] = strtok_r(k ? NULL : line, " ", &save);
        if (!tok[k]) {
            because("node %d: CLUSTER NODES line with %d fields", self, k);
            return -1;
        }
    }
    who = index_of_id(c, tok[0], strlen(tok[0]));
    if (who < 0) {
        because("node %d: CLUSTER NODES names %s, not one of ours", self, tok[0]);
        return -1;
    }
    v->known[who] = 1;
    v->primary[who] = has_flag(tok[2], "master");
    v->failing[who] = has_flag(tok[2], "fail") || has_flag(tok[2], "fail?");
    v->master_of[who] = strcmp(tok[3], "-") ? index_of_id(c, tok[3], strlen(tok[3])) : -1;
    for (char *s = strtok_r(NULL, " ", &save); s; s = strtok_r(NULL, " ", &save)) {
        long lo, hi;
        char *end;
        if (s[0] == '[') continue; /* "[slot->-id]": a migration, not an owner */
        lo = strtol(s, &end, 10);
        hi = *end == '-' ? strtol(end + 1, &end, 10) : lo;
        if (*end || lo < 0 || hi < lo || hi >= TC_SLOTS) {
            because("node %d: slot range \"%s\" in CLUSTER NODES", self, s);
            return -1;
        }
        for (long slot = lo; slot <= hi; slot++) {
            if (v->owner[slot] >= 0 && v->owner[slot] != who) {
                because("node %d: slot %ld served by nodes %d and %d", self, slot,
                        v->owner[slot], who);
                return -1;
            }
            v->owner[slot] = (signed char)who;
        }
    }
    return 0;
}

static int get_view(const tc_cluster *c, rlk_conn *k, int i, view *v)
{
    char *t = text_of(call(k, i, "CLUSTER", "NODES", (const char *)NULL), i), *save = NULL;
    int r = 0;
    memset(v->owner, -1, sizeof v->owner);
    for (int j = 0; j < TC_NODES; j++) {
        v->known[j] = v->primary[j] = v->failing[j] = 0;
        v->master_of[j] = -1;
    }
    if (!t) return -1;
    for (char *line = strtok_r(t, "\n", &save); line && r == 0;
         line = strtok_r(NULL, "\n", &save)) {
        size_t n = strlen(line);
        if (n && line[n - 1] == '\r') line[n - 1] = '\0';
        if (*line) r = view_line(c, i, line, v);
    }
    free(t);
    return r;
}

/* The view of the first live node that answers, or -1. */
static int any_view(const tc_cluster *c, view *v)
{
    for (int i = 0; i < TC_NODES; i++) {
        rlk_conn *k;
        int r;
        if (!tc_alive(c, i) || !(k = open_node(c, i))) continue;
        r = get_view(c, k, i, v);
        rlk_conn_free(k);
        if (r == 0) return 0;
    }
    return -1;
}

/* ------------------------------------------------------------------ */
/* Readiness                                                            */

/* Node i's CLUSTER SLOTS lists every live node, primaries and replicas
 * (a replica it sees as failing or still loading is left out): 1 yes, 0
 * no. */
static int slots_list_all(const tc_cluster *c, rlk_conn *k, int i)
{
    rlk_resp_value *v = call(k, i, "CLUSTER", "SLOTS", (const char *)NULL);
    int listed[TC_NODES] = {0};
    if (!v) return 0;
    for (const rlk_resp_value *r = v->type == RLK_RESP_ARRAY ? v->child : NULL; r; r = r->next) {
        const rlk_resp_value *e = rlk_resp_value_at(r, 2);
        for (; e; e = e->next) {
            const rlk_resp_value *port = rlk_resp_value_at(e, 1);
            int j = port && port->type == RLK_RESP_INTEGER ? tc_node_of_port(c, (int)port->integer)
                                                           : -1;
            if (j >= 0) listed[j] = 1;
        }
    }
    for (int j = 0; j < TC_NODES; j++)
        if (tc_alive(c, j) && !listed[j]) {
            because("node %d: CLUSTER SLOTS leaves out node %d", i, j);
            return 0;
        }
    return 1;
}

/* Node i's own checks (its view in v): 1 ready, 0 not yet. */
static int node_ready(const tc_cluster *c, rlk_conn *k, int i, const view *v)
{
    int r, j;
    if ((r = field_is(k, i, "CLUSTER", "INFO", "cluster_state", "ok")) != 1 ||
        (r = field_is(k, i, "CLUSTER", "INFO", "cluster_slots_assigned", "16384")) != 1 ||
        (r = field_is(k, i, "CLUSTER", "INFO", "cluster_slots_ok", "16384")) != 1)
        return 0;
    for (int slot = 0; slot < TC_SLOTS; slot++) {
        int o = v->owner[slot];
        if (o < 0 || !tc_alive(c, o) || !v->primary[o] || v->failing[o]) {
            because("node %d: slot %d served by %d (%s)", i, slot, o,
                    o < 0 ? "nobody" : !tc_alive(c, o) ? "not running" :
                    !v->primary[o] ? "not a primary" : "failing");
            return 0;
        }
    }
    for (j = 0; j < TC_NODES; j++)
        if (tc_alive(c, j) && (!v->known[j] || v->failing[j])) {
            because("node %d: sees node %d as %s", i, j, v->known[j] ? "failing" : "unknown");
            return 0;
        }
    if (!v->primary[i]) {
        if (v->master_of[i] < 0 || !tc_alive(c, v->master_of[i])) {
            because("node %d: a replica of %d, which is not running", i, v->master_of[i]);
            return 0;
        }
        if (field_is(k, i, "INFO", "replication", "master_link_status", "up") != 1) return 0;
    }
    return slots_list_all(c, k, i);
}

static int views_agree(const tc_cluster *c, int i, const view *a, const view *b)
{
    for (int slot = 0; slot < TC_SLOTS; slot++)
        if (a->owner[slot] != b->owner[slot]) {
            because("slot %d: node %d says node %d serves it, another says %d", slot, i,
                    b->owner[slot], a->owner[slot]);
            return 0;
        }
    for (int j = 0; j < TC_NODES; j++)
        if (tc_alive(c, j) && (a->primary[j] != b->primary[j] ||
                               (!a->primary[j] && a->master_of[j] != b->master_of[j]))) {
            because("node %d: node %d sees node %d differently", i, j, j);
            return 0;
        }
    return 1;
}

/* One look at every live node: 1 ready, 0 not yet. */
static int ready_once(const tc_cluster *c, view *first, view *other)
{
    int base = -1;
    for (int i = 0; i < TC_NODES; i++) {
        view *v = base < 0 ? first : other;
        rlk_conn *k;
        int ok;
        if (!tc_alive(c, i)) continue;
        if (!(k = open_node(c, i))) return 0;
        ok = get_view(c, k, i, v) == 0 && node_ready(c, k, i, v) &&
             (base < 0 || views_agree(c, i, first, v));
        rlk_conn_free(k);
        if (!ok) return 0;
        if (base < 0) base = i;
    }
    if (base < 0) {
        because("no node is running");
        return 0;
    }
    return 1;
}

int tc_wait_ready(tc_cluster *c, int timeout_ms)
{
    int64_t deadline = ts_now_ms() + timeout_ms;
    view *v = malloc(2 * sizeof *v);
    int r = -1;
    if (!v) return -1;
    for (;;) {
        if (ready_once(c, v, v + 1)) {
            r = 0;
            break;
        }
        if (ts_now_ms() >= deadline) {
            give_up("not ready in time");
            break;
        }
        ts_pause_ms(POLL_MS);
    }
    free(v);
    return r;
}

int tc_owner(tc_cluster *c, unsigned slot)
{
    view *v = malloc(sizeof *v);
    int o = -1;
    if (v && slot < TC_SLOTS && any_view(c, v) == 0) o = v->owner[slot];
    free(v);
    return o;
}

int tc_replica_of(tc_cluster *c, int p)
{
    view *v = malloc(sizeof *v);
    int r = -1;
    if (v && any_view(c, v) == 0)
        for (int j = 0; j < TC_NODES && r < 0; j++)
            if (!v->primary[j] && v->master_of[j] == p) r = j;
    free(v);
    return r;
}

int tc_is_primary(tc_cluster *c, int i)
{
    rlk_conn *k = open_node(c, i);
    int r;
    if (!k) return -1;
    r = field_is(k, i, "INFO", "replication", "role", "master");
    rlk_conn_free(k);
    return r;
}

/* ------------------------------------------------------------------ */
/* Start and stop                                                       */

/* The redis-cli to run: $RLK_REDIS_CLI; else the one beside the server
 * when $RLK_REDIS_SERVER names it by a path (scripts/servers' bin
 * directories hold both); else redis-cli on $PATH.  Into out (n bytes). */
static const char *cli_program(char *out, size_t n)
{
    const char *cli = getenv("RLK_REDIS_CLI"), *srv = getenv("RLK_REDIS_SERVER"), *slash;
    if (cli && *cli) return cli;
    slash = srv ? strrchr(srv, '/') : NULL;
    if (slash && (size_t)(slash - srv) + sizeof "/redis-cli" <= n) {
        snprintf(out, n, "%.*s/redis-cli", (int)(slash - srv), srv);
        return out;
    }
    return "redis-cli";
}

/* redis-cli --cluster create over the six nodes, under a deadline. */
static int create_cluster(tc_cluster *c)
{
    const char *prog, *argv[TC_NODES + 8];
    char addr[TC_NODES][32], log[320], cli[1024];
    int argc = 0, status;
    int64_t deadline = ts_now_ms() + CREATE_TIMEOUT_MS;
    pid_t pid;
    argv[argc++] = "redis-cli";
    argv[argc++] = "--cluster";
    argv[argc++] = "create";
    for (int i = 0; i < TC_NODES; i++) {
        snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", tc_port(c, i));
        argv[argc++] = addr[i];
    }
    argv[argc++] = "--cluster-replicas";
    argv[argc++] = "1";
    argv[argc++] = "--cluster-yes";
    argv[argc] = NULL;
    snprintf(log, sizeof log, "%s/cluster-create.log", c->node[0].srv->dir);
    prog = cli_program(cli, sizeof cli);
    pid = ts_spawn(prog, (char *const *)argv, log);
    if (pid < 0) return -1;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) {
            fprintf(stderr, "test cluster: waitpid: %s\n", strerror(errno));
            return -1;
        }
        if (ts_now_ms() >= deadline) {
            kill(-pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            fprintf(stderr, "test cluster: redis-cli --cluster create took over %d ms\n",
                    CREATE_TIMEOUT_MS);
            ts_show_file_tail(log);
            return -1;
        }
        ts_pause_ms(POLL_MS);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "test cluster: redis-cli --cluster create failed (status %d)\n", status);
        ts_show_file_tail(log);
        return -1;
    }
    return 0;
}

static int start_node(tc_cluster *c, int i)
{
    tc_node *n = &c->node[i];
    ts_options opt;
    int k = 0;
    snprintf(n->timeout_arg, sizeof n->timeout_arg, "%d", c->node_timeout_ms);
    n->extra[k++] = "--cluster-enabled";
    n->extra[k++] = "yes";
    n->extra[k++] = "--cluster-config-file";
    n->extra[k++] = "nodes.conf"; /* in the node's own --dir */
    n->extra[k++] = "--cluster-node-timeout";
    n->extra[k++] = n->timeout_arg;
    /* The bus port is chosen too: the default (port + 10000) may be
     * taken, or past 65535 for a port from the ephemeral range. */
    n->extra[k++] = "--cluster-port";
    n->extra[k++] = n->bus_arg;
    /* A replica takes over however long its link was down (tests pause
     * nodes), and replicas stay with their primary. */
    n->extra[k++] = "--cluster-replica-validity-factor";
    n->extra[k++] = "0";
    n->extra[k++] = "--cluster-allow-replica-migration";
    n->extra[k++] = "no";
    /* A replica's first sync starts at once, not after the 5 s a primary
     * waits for more replicas to share a diskless transfer; and its
     * primary pings it every second, so that its replication offset
     * moves and every node soon sees it as online (a replica at offset 0
     * is "loading", left out of CLUSTER SLOTS). */
    n->extra[k++] = "--repl-diskless-sync-delay";
    n->extra[k++] = "0";
    n->extra[k++] = "--repl-ping-replica-period";
    n->extra[k++] = "1";
    n->extra[k] = NULL;
    memset(&opt, 0, sizeof opt);
    opt.extra = n->extra;
    /* A bus port taken meanwhile fails every try of ts_start: choose
     * another one and start again. */
    for (int attempt = 0; attempt < 4 && !n->srv; attempt++) {
        n->bus_port = ts_free_port(0);
        if (n->bus_port < 0) break;
        snprintf(n->bus_arg, sizeof n->bus_arg, "%d", n->bus_port);
        n->srv = ts_start(&opt);
    }
    return n->srv ? 0 : -1;
}

tc_cluster *tc_start(int node_timeout_ms)
{
    tc_cluster *c;
    int i;
    if (ts_need_server() != 0) return NULL; /* or skipped, before anything is made */
    c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->node_timeout_ms = node_timeout_ms > 0 ? node_timeout_ms : 2000;
    c->mig_slot = c->mig_from = c->mig_to = -1;
    for (i = 0; i < TC_NODES; i++) {
        rlk_conn *k;
        char *id;
        if (start_node(c, i) != 0) {
            fprintf(stderr, "test cluster: node %d did not start\n", i);
            goto fail;
        }
        if (!(k = open_node(c, i))) goto why;
        id = text_of(call(k, i, "CLUSTER", "MYID", (const char *)NULL), i);
        rlk_conn_free(k);
        if (!id || strlen(id) != 40) {
            free(id);
            goto why;
        }
        memcpy(c->node[i].id, id, 41);
        free(id);
    }
    if (create_cluster(c) != 0 || tc_wait_ready(c, TC_READY_MS) != 0) goto fail;
    /* Each primary has exactly one replica, for the failover tests. */
    {
        view *v = malloc(sizeof *v);
        int bad = !v || any_view(c, v) != 0;
        for (i = 0; i < TC_NODES && !bad; i++) {
            int replicas = 0;
            for (int j = 0; j < TC_NODES; j++) replicas += !v->primary[j] && v->master_of[j] == i;
            if (v->primary[i] != (replicas == 1)) {
                because("node %d: %s with %d replicas", i, v->primary[i] ? "primary" : "replica",
                        replicas);
                bad = 1;
            }
        }
        free(v);
        if (bad) goto why;
    }
    return c;
why:
    give_up("start");
fail:
    tc_stop(c);
    return NULL;
}

/* SIGKILL to node i's process group, reaped. */
static void kill_node(tc_node *n)
{
    pid_t pid = n->srv->pid;
    int status;
    if (pid <= 0) return;
    if (kill(-pid, SIGKILL) != 0) kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    n->srv->pid = -1;
    n->paused = 0;
}

void tc_stop(tc_cluster *c)
{
    if (!c) return;
    for (int i = 0; i < TC_NODES; i++) {
        if (!c->node[i].srv) continue;
        kill_node(&c->node[i]);
        ts_stop(c->node[i].srv);
        c->node[i].srv = NULL;
    }
    free(c);
}

/* ------------------------------------------------------------------ */
/* Faults                                                               */

int tc_kill(tc_cluster *c, int i)
{
    if (i < 0 || i >= TC_NODES || !c->node[i].srv || c->node[i].srv->pid <= 0) return -1;
    kill_node(&c->node[i]);
    return 0;
}

int tc_restart(tc_cluster *c, int i)
{
    if (i < 0 || i >= TC_NODES || !c->node[i].srv || c->node[i].srv->pid > 0) return -1;
    return ts_start_again(c->node[i].srv);
}

/* Sends sig to node i and waits for the state change it makes. */
static int signal_node(tc_cluster *c, int i, int sig, int stop)
{
    pid_t pid;
    int status;
    if (i < 0 || i >= TC_NODES || !c->node[i].srv || (pid = c->node[i].srv->pid) <= 0 ||
        c->node[i].paused == stop)
        return -1;
    if (kill(pid, sig) != 0) return -1;
    for (;;) {
        pid_t w = waitpid(pid, &status, stop ? WUNTRACED : WCONTINUED);
        if (w < 0 && errno == EINTR) continue;
        if (w != pid) return -1;
        if (stop ? WIFSTOPPED(status) : WIFCONTINUED(status)) break;
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            c->node[i].srv->pid = -1;
            return -1;
        }
    }
    c->node[i].paused = stop;
    return 0;
}

int tc_pause(tc_cluster *c, int i) { return signal_node(c, i, SIGSTOP, 1); }
int tc_resume(tc_cluster *c, int i) { return signal_node(c, i, SIGCONT, 0); }

int tc_aof_on(tc_cluster *c, int i)
{
    static const char *const more[] = {"--appendonly", "yes", "--appendfsync", "always"};
    const size_t cap = sizeof c->node[0].extra / sizeof c->node[0].extra[0];
    int64_t deadline = ts_now_ms() + 10000;
    size_t n = 0;
    rlk_conn *k;
    int ok;
    if (i < 0 || i >= TC_NODES) return -1;
    while (c->node[i].extra[n]) n++;
    if (n + 4 >= cap) return -1;
    if (!(k = open_node(c, i))) return give_up("AOF");
    ok = call(k, i, "CONFIG", "SET", "appendfsync", "always", (const char *)NULL) &&
         call(k, i, "CONFIG", "SET", "appendonly", "yes", (const char *)NULL);
    /* On once the first rewrite has ended: the AOF then holds the data. */
    while (ok) {
        int r = field_is(k, i, "INFO", "persistence", "aof_rewrite_in_progress", "0");
        if (r == 1) r = field_is(k, i, "INFO", "persistence", "aof_rewrite_scheduled", "0");
        if (r == 1) r = field_is(k, i, "INFO", "persistence", "aof_enabled", "1");
        if (r == 1) break;
        if (r < 0 || ts_now_ms() >= deadline) ok = 0;
        else ts_pause_ms(POLL_MS);
    }
    rlk_conn_free(k);
    if (!ok) return give_up("AOF");
    for (size_t j = 0; j < 4; j++) c->node[i].extra[n + j] = more[j];
    c->node[i].extra[n + 4] = NULL;
    return 0;
}

int tc_failover(tc_cluster *c, int r, const char *mode)
{
    rlk_conn *k = open_node(c, r);
    rlk_resp_value *v;
    if (!k) return give_up("failover");
    v = call(k, r, "CLUSTER", "FAILOVER", mode, (const char *)NULL);
    rlk_conn_free(k);
    return v ? 0 : give_up("failover");
}

int tc_wait_primary(tc_cluster *c, int i, int timeout_ms)
{
    int64_t t0 = ts_now_ms(), deadline = t0 + timeout_ms;
    view *v = malloc(sizeof *v);
    int r = -1;
    if (!v) return -1;
    for (;;) {
        rlk_conn *k = open_node(c, i);
        int serves = 0;
        if (k && get_view(c, k, i, v) == 0 && v->primary[i]) {
            for (int slot = 0; slot < TC_SLOTS && !serves; slot++) serves = v->owner[slot] == i;
            if (!serves) because("node %d: a primary serving no slot", i);
        } else if (k) {
            because("node %d: not a primary yet", i);
        }
        rlk_conn_free(k);
        if (serves) break;
        if (ts_now_ms() >= deadline) {
            give_up("promotion");
            free(v);
            return -1;
        }
        ts_pause_ms(POLL_MS);
    }
    free(v);
    if (tc_wait_ready(c, (int)(deadline > ts_now_ms() ? deadline - ts_now_ms() : 0)) == 0)
        r = (int)(ts_now_ms() - t0);
    return r;
}

/* ------------------------------------------------------------------ */
/* Slot migration                                                       */

int tc_migrate_begin(tc_cluster *c, unsigned slot, int to)
{
    char s[8];
    int from = tc_owner(c, slot);
    rlk_conn *k;
    if (c->mig_slot >= 0 || from < 0 || to < 0 || to >= TC_NODES || from == to) {
        because("slot %u from %d to %d (a migration of slot %d under way)", slot, from, to,
                c->mig_slot);
        return give_up("migrate");
    }
    snprintf(s, sizeof s, "%u", slot);
    /* The target first: a client sent there by ASK is then accepted. */
    if (!(k = open_node(c, to))) return give_up("migrate");
    if (!call(k, to, "CLUSTER", "SETSLOT", s, "IMPORTING", c->node[from].id, (const char *)NULL)) {
        rlk_conn_free(k);
        return give_up("migrate");
    }
    rlk_conn_free(k);
    if (!(k = open_node(c, from))) return give_up("migrate");
    if (!call(k, from, "CLUSTER", "SETSLOT", s, "MIGRATING", c->node[to].id, (const char *)NULL)) {
        rlk_conn_free(k);
        return give_up("migrate");
    }
    rlk_conn_free(k);
    c->mig_slot = (int)slot;
    c->mig_from = from;
    c->mig_to = to;
    return 0;
}

int tc_migrate_keys(tc_cluster *c, unsigned slot, int max)
{
    char s[8], cnt[12], port[8];
    const char *argv[8 + MIGRATE_BATCH];
    rlk_resp_value *v;
    rlk_conn *k;
    int n = 0, argc = 0;
    if (c->mig_slot != (int)slot || max < 1) {
        because("slot %u is not being migrated", slot);
        return give_up("migrate keys");
    }
    if (max > MIGRATE_BATCH) max = MIGRATE_BATCH;
    snprintf(s, sizeof s, "%u", slot);
    snprintf(cnt, sizeof cnt, "%d", max);
    snprintf(port, sizeof port, "%d", tc_port(c, c->mig_to));
    if (!(k = open_node(c, c->mig_from))) return give_up("migrate keys");
    v = call(k, c->mig_from, "CLUSTER", "GETKEYSINSLOT", s, cnt, (const char *)NULL);
    if (v && v->type != RLK_RESP_ARRAY) {
        because("node %d: GETKEYSINSLOT answered type %c", c->mig_from, v->type);
        v = NULL;
    }
    if (!v) {
        rlk_conn_free(k);
        return give_up("migrate keys");
    }
    argv[argc++] = "MIGRATE";
    argv[argc++] = "127.0.0.1";
    argv[argc++] = port;
    argv[argc++] = "";
    argv[argc++] = "0";
    argv[argc++] = "5000";
    argv[argc++] = "KEYS";
    /* The keys' views live in the reply until the next call on k: copied. */
    char *keys[MIGRATE_BATCH];
    for (const rlk_resp_value *e = v->child; e && n < max; e = e->next) {
        if (!(keys[n] = text_of(e, c->mig_from))) break;
        argv[argc++] = keys[n++];
    }
    if (n > 0 && !callv(k, c->mig_from, 0, argc, argv)) n = -1;
    for (int j = 0; j < (n > 0 ? n : 0); j++) free(keys[j]);
    rlk_conn_free(k);
    return n < 0 ? give_up("migrate keys") : n;
}

/* The live primaries, the target first and the source second: the order
 * in which SETSLOT NODE closes a migration. */
static int closing_order(tc_cluster *c, int *order)
{
    view *v = malloc(sizeof *v);
    int n = 0;
    if (!v || any_view(c, v) != 0) {
        free(v);
        return -1;
    }
    order[n++] = c->mig_to;
    if (tc_alive(c, c->mig_from)) order[n++] = c->mig_from;
    for (int j = 0; j < TC_NODES; j++)
        if (j != c->mig_to && j != c->mig_from && tc_alive(c, j) && v->primary[j]) order[n++] = j;
    free(v);
    return n;
}

int tc_migrate_end(tc_cluster *c, unsigned slot)
{
    char s[8];
    int order[TC_NODES], n, r;
    int64_t deadline = ts_now_ms() + TC_READY_MS;
    while ((r = tc_migrate_keys(c, slot, MIGRATE_BATCH)) > 0)
        if (ts_now_ms() >= deadline) {
            because("slot %u: keys still left on node %d", slot, c->mig_from);
            return give_up("migrate end");
        }
    if (r < 0) return -1;
    if ((n = closing_order(c, order)) < 0) return give_up("migrate end");
    snprintf(s, sizeof s, "%u", slot);
    for (int j = 0; j < n; j++) {
        rlk_conn *k = open_node(c, order[j]);
        rlk_resp_value *v = k ? call(k, order[j], "CLUSTER", "SETSLOT", s, "NODE",
                                     c->node[c->mig_to].id, (const char *)NULL)
                              : NULL;
        rlk_conn_free(k);
        if (!v) return give_up("migrate end");
    }
    /* Until every live node says the target serves it. */
    for (;;) {
        if (tc_wait_ready(c, (int)(deadline > ts_now_ms() ? deadline - ts_now_ms() : 0)) != 0)
            return -1;
        if (tc_owner(c, slot) == c->mig_to) break;
        if (ts_now_ms() >= deadline) {
            because("slot %u still served by %d", slot, tc_owner(c, slot));
            return give_up("migrate end");
        }
        ts_pause_ms(POLL_MS);
    }
    c->mig_slot = c->mig_from = c->mig_to = -1;
    return 0;
}

int tc_migrate(tc_cluster *c, unsigned slot, int to)
{
    if (tc_migrate_begin(c, slot, to) != 0) return -1;
    return tc_migrate_end(c, slot);
}
