/* SPDX-License-Identifier: BSD-3-Clause */
/* TLS over a TCP transport, with OpenSSL.
 *
 * Each connection owns its SSL_CTX (no global state, and the CA and
 * client certificate of one connection never leak into another).  The
 * SSL object talks to the socket through a small BIO of our own rather
 * than OpenSSL's socket BIO, because that one writes with write(2) and a
 * peer that went away would raise SIGPIPE in the host process; ours uses
 * send(MSG_NOSIGNAL).  OpenSSL's error queue is cleared before each call
 * and drained after it, so a message always describes this connection's
 * failure and nothing is left behind for the next one. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "transport.h"
#include "clock.h"

#include <stdio.h>
#include <string.h>

#ifndef RLK_HAVE_OPENSSL

int rlk__tls_connect_start(rlk__transport *t, const char *host, int port,
                           const rlk_tls_config *cfg, int64_t deadline)
{
    if (t->fd >= 0 || t->ops || t->cs.step) rlk__transport_close(t);
    rlk__transport_seterr(t, "TLS support not compiled in");
    t->lasting = 1;
    return RLK_ERR_TLS;
}

const char *rlk__tls_version(const rlk__transport *t)
{
    return NULL;
}
const char *rlk__tls_cipher(const rlk__transport *t)
{
    return NULL;
}

const char *rlk_tls_library(void)
{
    return NULL;
}

#else

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/* ---- the socket BIO ---- */

static int bio_fd(BIO *b)
{
    return (int)(intptr_t)BIO_get_data(b);
}

static int bio_write(BIO *b, const char *buf, int len)
{
    ssize_t r;
    BIO_clear_retry_flags(b);
    do r = send(bio_fd(b), buf, (size_t)len, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_write(b);
    return (int)r;
}

static int bio_read(BIO *b, char *buf, int len)
{
    ssize_t r;
    BIO_clear_retry_flags(b);
    do r = recv(bio_fd(b), buf, (size_t)len, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_read(b);
#ifdef BIO_FLAGS_IN_EOF
    /* OpenSSL 3 asks BIO_eof() to tell an orderly end of stream from an
     * error; without the flag an EOF would look like a failed syscall. */
    if (r == 0) BIO_set_flags(b, BIO_FLAGS_IN_EOF);
#endif
    return (int)r;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    switch (cmd) {
    case BIO_CTRL_FLUSH:
        return 1;
#ifdef BIO_FLAGS_IN_EOF
    case BIO_CTRL_EOF:
        return BIO_test_flags(b, BIO_FLAGS_IN_EOF) != 0;
#endif
    case BIO_C_GET_FD:
        if (ptr) *(int *)ptr = bio_fd(b);
        return bio_fd(b);
    default:
        return 0;
    }
}

static int bio_create(BIO *b)
{
    BIO_set_data(b, (void *)(intptr_t)-1);
    BIO_set_init(b, 1);
    return 1;
}

/* The descriptor belongs to the transport, which closes it. */
static int bio_destroy(BIO *b)
{
    return 1;
}

static BIO_METHOD *bio_method_new(void)
{
    /* Not a registered type index: BIO_get_new_index() would use up one
     * process-wide number per connection.  The descriptor flag lets
     * SSL_get_fd() find the socket. */
    BIO_METHOD *m = BIO_meth_new(BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "resplock socket");
    if (!m) return NULL;
    if (!BIO_meth_set_write(m, bio_write) || !BIO_meth_set_read(m, bio_read) ||
        !BIO_meth_set_ctrl(m, bio_ctrl) || !BIO_meth_set_create(m, bio_create) ||
        !BIO_meth_set_destroy(m, bio_destroy)) {
        BIO_meth_free(m);
        return NULL;
    }
    return m;
}

/* ---- errors ---- */

/* The earliest queued error is the root cause (later ones are wrappers
 * added on the way out); the rest is dropped. */
static unsigned long take_error(void)
{
    unsigned long e = ERR_get_error();
    ERR_clear_error();
    return e;
}

static const char *reason_text(unsigned long e, char *buf, size_t n)
{
    const char *r;
    if (!e) return "unknown error";
#ifdef ERR_SYSTEM_ERROR
    if (ERR_SYSTEM_ERROR(e)) return strerror((int)ERR_GET_REASON(e));
#endif
    r = ERR_reason_error_string(e);
    if (r) return r;
    snprintf(buf, n, "OpenSSL error %lx", e);
    return buf;
}

static void free_tls(SSL *ssl, SSL_CTX *ctx)
{
    BIO_METHOD *m = ctx ? SSL_CTX_get_app_data(ctx) : NULL;
    if (ssl) SSL_free(ssl); /* frees the BIO, which needs the method: first */
    if (ctx) SSL_CTX_free(ctx);
    if (m) BIO_meth_free(m);
}

/* After SSL_ERROR_SSL or SSL_ERROR_SYSCALL, OpenSSL forbids SSL_shutdown;
 * marking the SSL object as already shut down makes close skip it. */
static void mark_dead(SSL *ssl)
{
    SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
}

/* A hint for the alerts that say the server did not like our identity. */
static const char *alert_hint(unsigned long e)
{
    switch (ERR_GET_REASON(e)) {
#ifdef SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
        return " (the server requires a client certificate)";
#endif
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
        return " (the server rejected the client certificate)";
    default:
        return "";
    }
}

/* ---- the transport operations ---- */

/* A write refused because the server already closed: under TLS 1.3 a
 * server that rejects the client certificate sends its alert after our
 * side of the handshake, then closes, so the reason may be waiting
 * unread.  1 with t->err set when it was there. */
static int alert_after_write(rlk__transport *t)
{
    char scratch[512], buf[64];
    unsigned long err;
    int r;
    ERR_clear_error();
    r = SSL_read(t->tls, scratch, sizeof scratch);
    if (r > 0 || SSL_get_error(t->tls, r) != SSL_ERROR_SSL) {
        ERR_clear_error();
        return 0;
    }
    err = take_error();
    if (!*alert_hint(err)) return 0;
    rlk__transport_seterr(t, "TLS: write %s: %s%s", t->peer, reason_text(err, buf, sizeof buf),
                          alert_hint(err));
    return 1;
}

/* Maps a failed SSL_read (reading) or SSL_write to the transport's
 * results.  An end of stream is 0 for a read and an error for a write. */
static ssize_t tls_io_error(rlk__transport *t, int ret, int sys_errno, int reading)
{
    SSL *ssl = t->tls;
    int e = SSL_get_error(ssl, ret);
    const char *what = reading ? "read" : "write";
    unsigned long err;
    char buf[64];

    switch (e) {
    case SSL_ERROR_WANT_READ:
        ERR_clear_error();
        return RLK__WANT_READ;
    case SSL_ERROR_WANT_WRITE:
        ERR_clear_error();
        return RLK__WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN: /* close_notify */
        ERR_clear_error();
        if (reading) return 0;
        rlk__transport_seterr(t, "write %s: the server ended the TLS connection", t->peer);
        return RLK_ERR_IO;
    case SSL_ERROR_SYSCALL:
        err = take_error();
        if (!reading && err == 0 && (sys_errno == ECONNRESET || sys_errno == EPIPE) &&
            alert_after_write(t)) {
            mark_dead(ssl);
            t->lasting = 1; /* our certificate refused */
            return RLK_ERR_TLS;
        }
        mark_dead(ssl);
        if (err == 0 && sys_errno == 0) { /* EOF without close_notify */
            if (reading) return 0;
            rlk__transport_seterr(t, "write %s: connection closed", t->peer);
        } else {
            rlk__transport_seterr(t, "%s %s: %s", what, t->peer,
                                  err ? reason_text(err, buf, sizeof buf) : strerror(sys_errno));
        }
        return RLK_ERR_IO;
    default:
        err = take_error();
        mark_dead(ssl);
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
        if (ERR_GET_REASON(err) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
            /* RESP frames itself: a close without close_notify can only
             * cut a reply short, which the layer above detects. */
            if (reading) return 0;
            rlk__transport_seterr(t, "write %s: connection closed", t->peer);
            return RLK_ERR_IO;
        }
#endif
        rlk__transport_seterr(t, "TLS: %s %s: %s%s", what, t->peer,
                              reason_text(err, buf, sizeof buf), alert_hint(err));
        t->lasting = *alert_hint(err) != '\0';
        return RLK_ERR_TLS;
    }
}

static ssize_t tls_read(rlk__transport *t, void *buf, size_t n)
{
    int r, saved;
    ERR_clear_error();
    errno = 0;
    r = SSL_read(t->tls, buf, n > INT_MAX ? INT_MAX : (int)n);
    saved = errno;
    if (r > 0) return r;
    return tls_io_error(t, r, saved, 1);
}

static ssize_t tls_write(rlk__transport *t, const void *buf, size_t n)
{
    int r, saved;
    if (n == 0) return 0;
    ERR_clear_error();
    errno = 0;
    r = SSL_write(t->tls, buf, n > INT_MAX ? INT_MAX : (int)n);
    saved = errno;
    if (r > 0) return r;
    return tls_io_error(t, r, saved, 0);
}

static size_t tls_pending(rlk__transport *t)
{
    int n = t->tls ? SSL_pending(t->tls) : 0;
    return n > 0 ? (size_t)n : 0;
}

static void tls_close(rlk__transport *t)
{
    SSL *ssl = t->tls;
    if (ssl) {
        ERR_clear_error();
        /* One non-blocking close_notify, best effort: the server does not
         * need it, and nothing here may wait. */
        if (SSL_is_init_finished(ssl) && !(SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN))
            (void)SSL_shutdown(ssl);
        ERR_clear_error();
    }
    free_tls(ssl, t->tls_ctx);
    t->tls = NULL;
    t->tls_ctx = NULL;
    if (t->fd >= 0) close(t->fd);
    t->fd = -1;
}

static const rlk__transport_ops tls_ops = {tls_read, tls_write, tls_pending, tls_close};

/* ---- setting up ---- */

/* A library must never prompt on the terminal for a key's passphrase. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
    return 0;
}

static int is_ip_literal(const char *name)
{
    unsigned char a[16];
    /* DNS names never contain ':'; this also catches scoped IPv6
     * addresses (fe80::1%eth0) that inet_pton refuses. */
    return strchr(name, ':') != NULL || inet_pton(AF_INET, name, a) == 1;
}

static int load_error(rlk__transport *t, const char *what, const char *file)
{
    char buf[64];
    unsigned long e = take_error();
    const char *hint = "";
    int lib = ERR_GET_LIB(e);
    /* OpenSSL's own words for the two usual mistakes are cryptic. */
#ifdef ERR_LIB_PROV
    if (lib == ERR_LIB_PROV) lib = ERR_LIB_EVP; /* where OpenSSL 3 decrypts */
#endif
    if (lib == ERR_LIB_EVP && ERR_GET_REASON(e) == EVP_R_BAD_DECRYPT)
        hint = " (encrypted keys are not supported)";
#ifdef ERR_LIB_OSSL_DECODER
    else if (ERR_GET_LIB(e) == ERR_LIB_OSSL_DECODER)
        hint = " (no usable PEM key found in it)";
#endif
    rlk__transport_seterr(t, "TLS: cannot load %s %s: %s%s", what, file,
                          reason_text(e, buf, sizeof buf), hint);
    return RLK_ERR_TLS;
}

/* Whether the PEM file at path holds an encrypted key.  OpenSSL's answer
 * for one, without a passphrase, depends on the key's random salt: the
 * padding of the wrong decryption is usually bad ("bad decrypt"), but
 * about once in 256 keys it passes and the garbage fails to decode
 * instead.  The file's own header says it plainly. */
static int pem_is_encrypted(const char *path)
{
    char buf[8192];
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, "-----BEGIN ENCRYPTED PRIVATE KEY-----") != NULL ||
           strstr(buf, "Proc-Type: 4,ENCRYPTED") != NULL;
}

/* Builds the per-connection context; loads every file before any
 * network traffic. */
static int make_ctx(rlk__transport *t, const rlk_tls_config *cfg, SSL_CTX **out)
{
    SSL_CTX *ctx;
    BIO_METHOD *m;
    const char *key;
    char buf[64];
    struct stat st;

    *out = NULL;
    ERR_clear_error();
    ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        rlk__transport_seterr(t, "TLS: cannot create a context: %s",
                              reason_text(take_error(), buf, sizeof buf));
        return RLK_ERR_TLS;
    }
    m = bio_method_new();
    if (!m) {
        SSL_CTX_free(ctx);
        ERR_clear_error();
        rlk__transport_seterr(t, "TLS: out of memory");
        return RLK_ERR_NOMEM;
    }
    /* The context is ours alone, so its app-data slot can carry the BIO
     * method to close time without any global index. */
    SSL_CTX_set_app_data(ctx, m);
    *out = ctx;

    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* Partial writes let write_all count progress record by record; a
     * moving buffer lets the layer above retry a write from a buffer it
     * has reallocated meanwhile. */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_default_passwd_cb(ctx, no_password);

    if (cfg->insecure) {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
        if (cfg->ca_file && *cfg->ca_file &&
            SSL_CTX_load_verify_locations(ctx, cfg->ca_file, NULL) != 1)
            return load_error(t, "CA file", cfg->ca_file);
        if (cfg->ca_dir && *cfg->ca_dir) {
            /* OpenSSL only looks into the directory during verification,
             * where a missing one would read as an unknown issuer. */
            if (stat(cfg->ca_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
                rlk__transport_seterr(t, "TLS: cannot load CA directory %s: %s", cfg->ca_dir,
                                      strerror(errno ? errno : ENOTDIR));
                return RLK_ERR_TLS;
            }
            if (SSL_CTX_load_verify_locations(ctx, NULL, cfg->ca_dir) != 1)
                return load_error(t, "CA directory", cfg->ca_dir);
        }
        if ((!cfg->ca_file || !*cfg->ca_file) && (!cfg->ca_dir || !*cfg->ca_dir) &&
            SSL_CTX_set_default_verify_paths(ctx) != 1)
            return load_error(t, "the system CA store", "");
    }

    if (cfg->cert_file && *cfg->cert_file) {
        key = cfg->key_file && *cfg->key_file ? cfg->key_file : cfg->cert_file;
        if (SSL_CTX_use_certificate_chain_file(ctx, cfg->cert_file) != 1)
            return load_error(t, "client certificate", cfg->cert_file);
        if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
            if (ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
                if (pem_is_encrypted(key)) {
                    ERR_clear_error();
                    rlk__transport_seterr(t,
                                          "TLS: cannot load private key %s: it is encrypted "
                                          "(encrypted keys are not supported)",
                                          key);
                    return RLK_ERR_TLS;
                }
                return load_error(t, "private key", key);
            }
            goto mismatch; /* found by loading already */
        }
        if (SSL_CTX_check_private_key(ctx) != 1) {
        mismatch:
            ERR_clear_error();
            rlk__transport_seterr(t, "TLS: private key %s does not match certificate %s", key,
                                  cfg->cert_file);
            return RLK_ERR_TLS;
        }
    } else if (cfg->key_file && *cfg->key_file) {
        rlk__transport_seterr(t, "TLS: key_file %s given without cert_file", cfg->key_file);
        return RLK_ERR_TLS;
    }
    ERR_clear_error();
    return RLK_OK;
}

/* Sets SNI and the name the certificate must carry. */
static int set_names(rlk__transport *t, SSL *ssl, const char *name, int insecure)
{
    char ip[64];
    const char *pct;
    size_t len;

    if (!is_ip_literal(name)) {
        /* RFC 6066 forbids IP literals in SNI, so they get none. */
        if (SSL_set_tlsext_host_name(ssl, name) != 1) goto fail;
        if (insecure) return RLK_OK;
        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        if (SSL_set1_host(ssl, name) != 1) goto fail;
        return RLK_OK;
    }
    if (insecure) return RLK_OK;
    /* OpenSSL 3.0's SSL_set1_host() compares only DNS names, so an IP
     * literal goes through the IP-address check instead (without a zone
     * suffix, which certificates cannot carry). */
    pct = strchr(name, '%');
    len = pct ? (size_t)(pct - name) : strlen(name);
    if (len >= sizeof ip) goto fail;
    memcpy(ip, name, len);
    ip[len] = '\0';
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), ip) != 1) goto fail;
    return RLK_OK;
fail:
    ERR_clear_error();
    rlk__transport_seterr(t, "TLS: cannot use '%s' as the server name", name);
    return RLK_ERR_TLS;
}

static int handshake_error(rlk__transport *t, SSL *ssl, int ret, int sys_errno, int insecure)
{
    int e = SSL_get_error(ssl, ret);
    unsigned long err = take_error();
    long vr = SSL_get_verify_result(ssl);
    char buf[64];

    if (!insecure && vr != X509_V_OK) {
        rlk__transport_seterr(t, "TLS: certificate verify failed: %s",
                              X509_verify_cert_error_string(vr));
        t->lasting = 1;
        return RLK_ERR_TLS;
    }
    if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && err == 0 && sys_errno == 0)
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
        || ERR_GET_REASON(err) == SSL_R_UNEXPECTED_EOF_WHILE_READING
#endif
    ) {
        rlk__transport_seterr(t, "TLS: peer closed the connection during the handshake "
                                 "(is it a TLS port?)");
        return RLK_ERR_TLS;
    }
    if (e == SSL_ERROR_SYSCALL && err == 0) {
        rlk__transport_seterr(t, "TLS: handshake with %s: %s", t->peer, strerror(sys_errno));
        return RLK_ERR_TLS;
    }
    if (ERR_GET_REASON(err) == SSL_R_WRONG_VERSION_NUMBER) {
        rlk__transport_seterr(t, "TLS: wrong version number (is it a plaintext port?)");
        return RLK_ERR_TLS;
    }
    rlk__transport_seterr(t, "TLS: handshake with %s failed: %s%s", t->peer,
                          reason_text(err, buf, sizeof buf), alert_hint(err));
    t->lasting = *alert_hint(err) != '\0'; /* our certificate refused */
    return RLK_ERR_TLS;
}

/* ---- connecting, in steps ---- */

/* Frees the handshake's SSL and context: the connect is given up. */
static void tls_drop(rlk__transport *t)
{
    free_tls(t->tls, t->tls_ctx);
    t->tls = NULL;
    t->tls_ctx = NULL;
}

/* The connect failed (rc, the reason in t->err): nothing is left of it
 * but the message. */
static int tls_fail(rlk__transport *t, int rc)
{
    ERR_clear_error();
    tls_drop(t);
    rlk__transport_close(t);
    return rc;
}

/* One SSL_connect: done, or what it waits for, or its failure. */
static int handshake(rlk__transport *t)
{
    SSL *ssl = t->tls;
    int r, saved;
    ERR_clear_error();
    errno = 0;
    r = SSL_connect(ssl);
    saved = errno;
    if (r == 1) {
        ERR_clear_error();
        t->ops = &tls_ops;
        memset(&t->cs, 0, sizeof t->cs);
        return RLK_OK;
    }
    switch (SSL_get_error(ssl, r)) {
    case SSL_ERROR_WANT_READ:
        t->cs.events = POLLIN;
        break;
    case SSL_ERROR_WANT_WRITE:
        t->cs.events = POLLOUT;
        break;
    default:
        mark_dead(ssl);
        return tls_fail(t, handshake_error(t, ssl, r, saved,
                                           SSL_get_verify_mode(ssl) == SSL_VERIFY_NONE));
    }
    ERR_clear_error();
    t->cs.wake = t->cs.deadline;
    return RLK__IN_PROGRESS;
}

/* The socket is connected: the handshake begins over it. */
static int handshake_begin(rlk__transport *t)
{
    t->ops = NULL; /* not usable before the handshake is done */
    t->cs.upper = 1;
    BIO_set_data(SSL_get_rbio(t->tls), (void *)(intptr_t)t->fd);
    return handshake(t);
}

static int tls_step(rlk__transport *t, short revents)
{
    int rc;
    if (!t->cs.upper) {
        rc = rlk__socket_step(t, revents);
        if (rc == RLK__IN_PROGRESS) return rc;
        if (rc != RLK_OK) return tls_fail(t, rc);
        return handshake_begin(t);
    }
    /* Something came: SSL_connect goes on.  Else only the clock can
     * have moved. */
    if (revents) {
        rc = handshake(t);
        if (rc != RLK__IN_PROGRESS) return rc;
    }
    if (t->cs.deadline >= 0 && rlk__now_ms() >= t->cs.deadline) {
        int64_t took = t->cs.deadline > t->cs.began ? t->cs.deadline - t->cs.began : 0;
        rlk__transport_seterr(t, "TLS: handshake with %s timed out after %lld ms", t->peer,
                              (long long)took);
        return tls_fail(t, RLK_ERR_TIMEOUT);
    }
    return RLK__IN_PROGRESS;
}

int rlk__tls_connect_start(rlk__transport *t, const char *host, int port,
                           const rlk_tls_config *cfg, int64_t deadline)
{
    static const rlk_tls_config defaults; /* verify against the system store */
    int64_t began = rlk__now_ms();
    SSL_CTX *ctx = NULL;
    SSL *ssl;
    BIO *bio;
    const char *name;
    int rc;

    if (t->fd >= 0 || t->ops || t->cs.step) rlk__transport_close(t);
    t->err[0] = '\0';
    t->peer[0] = '\0';
    t->lasting = 0;
    if (!cfg) cfg = &defaults;
    if (!host || !*host || port < 1 || port > 65535) {
        rlk__transport_seterr(t, "connect: %s", !host || !*host ? "no host" : "port out of range");
        return RLK_ERR_INVALID;
    }
    /* The files and the names first: no try mends them, and they need
     * no network traffic. */
    rc = make_ctx(t, cfg, &ctx);
    t->tls_ctx = ctx;
    t->lasting = rc == RLK_ERR_TLS;
    if (rc != RLK_OK) return tls_fail(t, rc);
    ssl = SSL_new(ctx);
    t->tls = ssl;
    bio = ssl ? BIO_new(SSL_CTX_get_app_data(ctx)) : NULL;
    if (!bio) {
        rlk__transport_seterr(t, "TLS: out of memory");
        return tls_fail(t, RLK_ERR_NOMEM);
    }
    SSL_set_bio(ssl, bio, bio);
    name = cfg->server_name && *cfg->server_name ? cfg->server_name : host;
    rc = set_names(t, ssl, name, cfg->insecure);
    t->lasting = rc == RLK_ERR_TLS;
    if (rc != RLK_OK) return tls_fail(t, rc);

    rc = rlk__tcp_connect_start(t, host, port, deadline);
    if (rc != RLK_OK && rc != RLK__IN_PROGRESS) return tls_fail(t, rc);
    /* The connect is TLS's from here: its step, and what to free when it
     * is given up. */
    if (rc == RLK_OK) {
        memset(&t->cs, 0, sizeof t->cs);
        t->cs.deadline = deadline;
    }
    t->cs.step = tls_step;
    t->cs.drop = tls_drop;
    t->cs.began = began;
    return rc == RLK_OK ? handshake_begin(t) : rc;
}

const char *rlk__tls_version(const rlk__transport *t)
{
    return t && t->tls && t->ops ? SSL_get_version(t->tls) : NULL;
}

const char *rlk__tls_cipher(const rlk__transport *t)
{
    return t && t->tls && t->ops ? SSL_CIPHER_get_name(SSL_get_current_cipher(t->tls)) : NULL;
}

#endif /* RLK_HAVE_OPENSSL */

int rlk__tls_connect(rlk__transport *t, const char *host, int port, const rlk_tls_config *cfg,
                     int64_t deadline)
{
    return rlk__connect_finish(t, rlk__tls_connect_start(t, host, port, cfg, deadline));
}

#ifdef RLK_HAVE_OPENSSL
const char *rlk_tls_library(void)
{
    return OpenSSL_version(OPENSSL_VERSION);
}
#endif
