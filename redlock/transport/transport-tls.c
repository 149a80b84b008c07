/* transport-tls.c - TLS to masters: one SSL_CTX per client, one SSL per connection.
 *
 * Only with hiredis >= 1.0 and its hiredis_ssl (RL_HAVE_TLS); on 0.14 asking
 * for TLS is an EINVAL at configuration time. Holds the context, the SSL
 * object handed to redisInitiateSSL(), and the reason a handshake failed.
 * Why the reason is read here: docs/transport.md, the table's TLS row.
 */
#include "transport/transport-tls.h"
#include "transport/transport-private.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if RL_HAVE_TLS
#include <arpa/inet.h>
#include <hiredis/hiredis_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#endif

struct rl_tls {
#if RL_HAVE_TLS
    SSL_CTX *ctx;
#endif
    bool verify;
    char server_name[RL_HOST_MAX]; /* "" : each master's own host */
};

static bool tls_wanted(const redlock_config *cfg, const rl_addr *addrs, uint32_t n)
{
    bool any = cfg->tls;
    for (uint32_t i = 0; i < n; i++)
        any = any || addrs[i].tls;
    return any;
}

#if RL_HAVE_TLS
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_init_once(void)
{
    redisInitOpenSSL();
}

static const char *ssl_err(void)
{
    unsigned long e = ERR_peek_last_error();
    return e ? ERR_reason_error_string(e) : "unknown reason";
}

/* Load the CA, the client certificate and its key into @t. NULL, or what
 * did not load (the config field); @file is set to its value. */
static const char *tls_load(rl_tls *t, const redlock_config *cfg, const char **file)
{
    if (cfg->tls_ca_file || cfg->tls_ca_dir) {
        *file = cfg->tls_ca_file ? cfg->tls_ca_file : cfg->tls_ca_dir;
        if (SSL_CTX_load_verify_locations(t->ctx, cfg->tls_ca_file, cfg->tls_ca_dir) != 1)
            return cfg->tls_ca_file ? "config.tls_ca_file" : "config.tls_ca_dir";
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        *file = "(default paths)";
        return "the system CA store";
    }
    *file = cfg->tls_cert_file;
    if (cfg->tls_cert_file && SSL_CTX_use_certificate_chain_file(t->ctx, cfg->tls_cert_file) != 1)
        return "config.tls_cert_file";
    *file = cfg->tls_key_file;
    if (cfg->tls_key_file &&
        (SSL_CTX_use_PrivateKey_file(t->ctx, cfg->tls_key_file, SSL_FILETYPE_PEM) != 1 ||
         SSL_CTX_check_private_key(t->ctx) != 1))
        return "config.tls_key_file";
    return NULL;
}

/* The master asked for a client certificate and we have none: we go on
 * without one (it may be optional), and remember it, because a master
 * that requires one does not always get its alert to us before it resets
 * the connection. */
static int on_cert_request(SSL *ssl, X509 **x509, EVP_PKEY **pkey)
{
    (void)x509;
    (void)pkey;
    rl_conn *c = SSL_get_app_data(ssl);
    if (c)
        c->cert_asked = true;
    return 0;
}

int rl_tls_new(const redlock_config *cfg, const rl_addr *addrs, uint32_t n, rl_tls **ret,
               redlock_error *e)
{
    *ret = NULL;
    if (!tls_wanted(cfg, addrs, n))
        return 0;
    pthread_once(&tls_once, tls_init_once);
    rl_tls *t = calloc(1, sizeof(*t));
    if (!t || !(t->ctx = SSL_CTX_new(TLS_client_method()))) {
        free(t);
        rl_seterr(e, REDLOCK_ENOMEM, -1, "cannot create a TLS context: %s", ssl_err());
        return REDLOCK_ENOMEM;
    }
    ERR_clear_error();
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    t->verify = cfg->tls_verify;
    SSL_CTX_set_verify(t->ctx, t->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    const char *file = NULL;
    const char *what = tls_load(t, cfg, &file);
    if (what) {
        /* OpenSSL says "system lib" for a file it cannot open: say why.
         * As the effective user, the one it opened the file as (setuid,
         * sudo -u); access() would ask for the real one. */
        int err = file && file[0] != '(' && faccessat(AT_FDCWD, file, R_OK, AT_EACCESS) != 0 ? errno
                                                                                             : 0;
        rl_seterr(e, REDLOCK_EINVAL, -1, "%s \"%s\": cannot %s it: %s", what, RL_QUOTE(file, 80),
                  err ? "read" : "load", err ? strerror(err) : ssl_err());
        rl_tls_free(t);
        return REDLOCK_EINVAL;
    }
    if (!cfg->tls_cert_file)
        SSL_CTX_set_client_cert_cb(t->ctx, on_cert_request);
    if (cfg->tls_server_name)
        snprintf(t->server_name, sizeof(t->server_name), "%s", cfg->tls_server_name);
    *ret = t;
    return 0;
}

void rl_tls_free(rl_tls *t)
{
    if (!t)
        return;
    if (t->ctx)
        SSL_CTX_free(t->ctx);
    free(t);
}

static int ssl_reason(SSL *ssl, const rl_conn *c, char *out, size_t len);

/* An SSL object for one master: the name it must prove (SNI too, unless it
 * is an address), handed to hiredis, which drives the handshake and owns
 * the object once it accepted it. */
int rl_tls_attach(rl_conn *c, const rl_tls *t, const rl_addr *a, char *why, size_t len)
{
    SSL *ssl = SSL_new(t->ctx);
    if (!ssl) {
        snprintf(why, len, "cannot start TLS: %s", ssl_err());
        return REDLOCK_ENOMEM;
    }
    SSL_set_app_data(ssl, c);
    const char *name = t->server_name[0] ? t->server_name : a->host;
    unsigned char ip[sizeof(struct in6_addr)];
    bool is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
    if (!is_ip)
        SSL_set_tlsext_host_name(ssl, name);
    if (t->verify) {
        if (is_ip)
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name);
        else
            SSL_set1_host(ssl, name);
    }
    /* The socket is still connecting: the handshake starts here and goes
     * on in hiredis' handlers. HIREDIS_MAJOR >= 1 only. */
    if (redisInitiateSSL(&c->ac->c, ssl) != REDIS_OK) {
        /* On loopback the handshake can fail right here, verification
         * included: the same words as when it fails later. */
        const char *e = c->ac->c.errstr;
        int code = REDLOCK_ECONNECT;
        if (strstr(e, "refused"))
            snprintf(why, len, "connection refused (is redis-server running?)");
        else if (!(code = ssl_reason(ssl, c, why, len)))
            snprintf(why, len, "TLS: %.100s", e[0] ? e : ssl_err());
        SSL_free(ssl);
        return code ? code : REDLOCK_ECONNECT;
    }
    c->ssl = ssl;
    c->tls = true;
    return 0;
}

bool rl_tls_handshake_done(const rl_conn *c)
{
    return c->ssl && SSL_is_init_finished(c->ssl);
}

void rl_tls_clear_errors(void)
{
    ERR_clear_error();
}

/* What to do about a handshake OpenSSL says failed for @reason, or NULL.
 * Votes keep 95 characters of a reason: the advice is short. @code: EAUTH
 * when one side does not accept the other (waiting will not fix it),
 * EPROTO when the other end does not speak TLS, else ECONNECT. For a
 * connection that never answered only: see ssl_reason. */
static const char *tls_advice(int reason, bool cert_asked, int *code)
{
    *code = REDLOCK_EAUTH;
    switch (reason) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED: return "set tls_cert_file and tls_key_file";
    case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
        /* TLS 1.2's word for a client certificate missing, and for no
         * version or cipher in common: only the first case asks for one. */
        return cert_asked ? "set tls_cert_file and tls_key_file"
                          : "client certificate? TLS version?";
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN: return "the master does not trust our certificate";
    }
    *code = REDLOCK_EPROTO;
    switch (reason) {
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
    case SSL_R_UNKNOWN_PROTOCOL:
    case SSL_R_RECORD_TOO_SMALL: return "is this the master's plain port?";
    }
    *code = REDLOCK_ECONNECT;
    return NULL;
}

/* A certificate out of its dates (v: the verify result) is fixed where it
 * lives, never with tls_ca_file: the master's own (the first it sent) and
 * the CAs it sent with it on the master, ours in tls_ca_file. Says which,
 * and when it expired (or begins), into @out; false for other results. */
static bool cert_dates(SSL *ssl, long v, char *out, size_t len)
{
    bool expired = v == X509_V_ERR_CERT_HAS_EXPIRED;
    if (!expired && v != X509_V_ERR_CERT_NOT_YET_VALID)
        return false;
    /* The chain the master sent is kept when its check fails (the master's
     * certificate is not: SSL_get0_peer_certificate() is NULL then). */
    STACK_OF(X509) *chain = SSL_get_peer_cert_chain(ssl);
    for (int i = 0; chain && i < sk_X509_num(chain); i++) {
        X509 *x = sk_X509_value(chain, i);
        const ASN1_TIME *t = expired ? X509_get0_notAfter(x) : X509_get0_notBefore(x);
        if (X509_cmp_current_time(t) != (expired ? -1 : 1))
            continue;
        char day[16] = "?";
        struct tm tm;
        if (ASN1_TIME_to_tm(t, &tm) == 1)
            strftime(day, sizeof(day), "%Y-%m-%d", &tm);
        char whose[48] = "the master's certificate";
        if (i > 0)
            snprintf(whose, sizeof(whose), "the master's CA certificate %d", i);
        if (expired)
            snprintf(out, len, "TLS: %s expired on %s (renew it on the master%s)", whose, day,
                     i == 0 ? ", not tls_ca_file" : "");
        else
            snprintf(out, len, "TLS: %s is not valid before %s (check the clocks)", whose, day);
        return true;
    }
    snprintf(out, len, "TLS: a CA certificate in tls_ca_file %s",
             expired ? "expired (give a current one)" : "is not valid yet (check the clocks)");
    return true;
}

/* Why the TLS connection on @ssl of @c failed: the certificate check, or
 * what OpenSSL queued, or the certificate the master asked for; the error
 * code that says so (tls_advice). 0 when TLS has nothing to say (the socket
 * failed under it: refused, reset).
 *
 * Only a connection that never answered can fail for its setup. Not
 * SSL_is_init_finished(): it turns false again at a fatal error, and a TLS
 * 1.3 master checks our certificate after our side has finished. */
static int ssl_reason(SSL *ssl, const rl_conn *c, char *out, size_t len)
{
    long v = SSL_get_verify_result(ssl);
    if ((SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) && v != X509_V_OK) {
        if (cert_dates(ssl, v, out, len))
            return REDLOCK_EAUTH;
        bool name = v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH;
        snprintf(out, len, "TLS: certificate verify failed: %s (%s)",
                 X509_verify_cert_error_string(v), name ? "see tls_server_name" : "tls_ca_file?");
        return REDLOCK_EAUTH;
    }
    unsigned long e = ERR_peek_last_error();
    if (e && ERR_GET_LIB(e) == ERR_LIB_SSL) {
        const char *reason = ERR_reason_error_string(e);
        reason = reason ? reason : "unknown reason";
        if (c->answered) {
            /* Both ends accepted each other: what TLS says now (an
             * unexpected EOF, most often: the master crashed or was
             * killed) means the master went away, as a reset would. */
            snprintf(out, len, "connection lost: TLS: %.60s", reason);
            return REDLOCK_ECONNECT;
        }
        if (ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
            /* A close without an alert: a master (or a proxy in front of
             * it) going away. A master refusing us sends an alert first,
             * and a plain port answers a ClientHello with an error line,
             * or waits. */
            snprintf(out, len,
                     "TLS handshake cut short: the master closed the connection "
                     "(going down? its TLS port?)");
            return REDLOCK_ECONNECT;
        }
        int code;
        const char *advice = tls_advice(ERR_GET_REASON(e), c->cert_asked, &code);
        snprintf(out, len, "TLS handshake failed: %.60s%s%s%s", reason, advice ? " (" : "",
                 advice ? advice : "", advice ? ")" : "");
        return code;
    }
    if (c->cert_asked && !c->answered) {
        snprintf(out, len,
                 "TLS: the master wants a client certificate (set tls_cert_file and "
                 "tls_key_file)");
        return REDLOCK_EAUTH;
    }
    return 0;
}

int rl_tls_reason(rl_conn *c, char *out, size_t len)
{
    return c->ssl ? ssl_reason(c->ssl, c, out, len) : 0;
}
#else
int rl_tls_new(const redlock_config *cfg, const rl_addr *addrs, uint32_t n, rl_tls **ret,
               redlock_error *e)
{
    *ret = NULL;
    if (!tls_wanted(cfg, addrs, n))
        return 0;
    /* HIREDIS_MAJOR 0 (or a build without hiredis_ssl): config.c refuses
     * this first; this is for a caller that did not ask config.c. */
    rl_seterr(e, REDLOCK_EINVAL, -1,
              "TLS to masters needs libredlock built against hiredis "
              ">= 1.0 with hiredis_ssl; this build has no TLS");
    return REDLOCK_EINVAL;
}

void rl_tls_free(rl_tls *t)
{
    free(t);
}
#endif
