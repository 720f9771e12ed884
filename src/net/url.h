/* SPDX-License-Identifier: BSD-3-Clause */
/* Connection URLs (url.c).  Internal to the library (rlk__ prefix, not
 * installed). */
#ifndef RESPLOCK_URL_H
#define RESPLOCK_URL_H

#include <stddef.h>

#include "resplock.h"

typedef struct rlk__url {
    int kind;              /* RLK__URL_TCP, RLK__URL_TLS, RLK__URL_UNIX */
    char *user;            /* NULL when absent; percent-decoded          */
    char *password;        /* NULL when absent; percent-decoded          */
    char *host;            /* without [] for IPv6 literals               */
    int port;              /* default 6379                               */
    char *path;            /* unix socket path                           */
    int db;                /* default 0                                  */
} rlk__url;

#define RLK__URL_TCP 1
#define RLK__URL_TLS 2
#define RLK__URL_UNIX 3

/*
 * Parses redis://[user[:password]@]host[:port][/db], rediss://... (TLS),
 * unix:///path/to/socket[?db=N] (also unix://[user[:password]@]/path),
 * IPv6 literals in brackets, percent-encoding in user, password, host
 * and path.  The scheme is case-insensitive; an empty user or password
 * counts as absent; the only query parameter is db=N (not together with
 * a /db path); a fragment, another parameter, %00 or a bad %XX escape is
 * an error.  A URL of "" or NULL means: $REDIS_URL when set and not
 * empty, else redis://127.0.0.1:6379.  RLK_OK, RLK_ERR_URL (reason in
 * err, never the password), RLK_ERR_NOMEM.  On failure *u holds nothing
 * (rlk__url_free is still allowed).  Free with rlk__url_free.
 */
int rlk__url_parse(rlk__url *u, const char *url, char *err, size_t errlen);
void rlk__url_free(rlk__url *u);

/* A Sentinel URL, redis+sentinel://[user[:password]@]host[:port][,host
 * [:port]...]/NAME[/db][?sentinel_user=U&sentinel_password=P] (rediss+
 * sentinel:// for TLS to the sentinels and the data nodes alike), split
 * into plain URLs: each sentinel's (port 26379 by default; the
 * credentials of the query, still percent-encoded as given), and the
 * data nodes' (the URL's own credentials and db, at the first
 * sentinel's address until a sentinel names the primary).  NAME is the
 * primary's name as the sentinels know it, taken as it stands (no '%'
 * or space). */
#define RLK__SENTINELS_MAX 16
typedef struct rlk__sentinel_url {
    char *block;           /* the strings below point into it */
    const char *master;
    const char *data;
    size_t n;
    const char *sentinels[RLK__SENTINELS_MAX];
} rlk__sentinel_url;
/* Whether url (NULL or "": $REDIS_URL) is a Sentinel URL. */
int rlk__url_is_sentinel(const char *url);
/* RLK_OK, RLK_ERR_URL (the reason in err), RLK_ERR_NOMEM; free with
 * rlk__sentinel_url_free (allowed after a failure too). */
int rlk__sentinel_url_split(rlk__sentinel_url *s, const char *url, char *err, size_t errlen);
void rlk__sentinel_url_free(rlk__sentinel_url *s);

/* Copies cfg's strings (URL, client name, TLS files) into one block,
 * *strings, and points cfg at the copies, so that whoever keeps a
 * configuration does not depend on the caller's strings living on; the
 * caller frees *strings (NULL when there were none).  RLK_OK or
 * RLK_ERR_NOMEM (*strings NULL, cfg as it was). */
int rlk__conn_config_copy(rlk_conn_config *cfg, char **strings);

#endif
