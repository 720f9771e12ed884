/* SPDX-License-Identifier: BSD-3-Clause */
/* SHA1 of script bodies, which name them on the server (EVALSHA).  SHA1
 * is what the server uses there; nothing here relies on its collision
 * resistance.
 *
 * The internal implementation follows FIPS 180-4, section 6.1; it keeps
 * builds without OpenSSL self-contained, and is compiled in every build
 * so that the tests compare it with OpenSSL's. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "sha1.h"

#include <stdint.h>
#include <string.h>

#ifdef RLK_HAVE_OPENSSL
#include <openssl/err.h>
#include <openssl/evp.h>
#endif

#define ROTL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))

static void sha1_block(uint32_t h[5], const unsigned char *p)
{
    uint32_t w[80], a, b, c, d, e, f, k, tmp;
    int i;

    for (i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (i = 16; i < 80; i++) w[i] = ROTL(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);

    a = h[0];
    b = h[1];
    c = h[2];
    d = h[3];
    e = h[4];
    for (i = 0; i < 80; i++) {
        if (i < 20) {
            f = (b & c) ^ (~b & d); /* Ch */
            k = 0x5a827999u;
        } else if (i < 40) {
            f = b ^ c ^ d; /* Parity */
            k = 0x6ed9eba1u;
        } else if (i < 60) {
            f = (b & c) ^ (b & d) ^ (c & d); /* Maj */
            k = 0x8f1bbcdcu;
        } else {
            f = b ^ c ^ d;
            k = 0xca62c1d6u;
        }
        tmp = ROTL(a, 5) + f + e + k + w[i];
        e = d;
        d = c;
        c = ROTL(b, 30);
        b = a;
        a = tmp;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

static void to_hex(const unsigned char digest[20], char out[41])
{
    static const char hex[] = "0123456789abcdef";
    int i;
    for (i = 0; i < 20; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    out[40] = '\0';
}

void rlk__sha1_internal_hex(const void *data, size_t len, char out[41])
{
    uint32_t h[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u, 0xc3d2e1f0u};
    const unsigned char *p = data;
    unsigned char tail[128], digest[20];
    uint64_t bits = (uint64_t)len * 8;
    size_t rest, n;
    int i;

    for (rest = len; rest >= 64; rest -= 64, p += 64) sha1_block(h, p);

    /* Padding: a 1 bit, zeros, then the length in bits as 64 big-endian
     * bits, filling one block, or two when fewer than 9 bytes are left. */
    memset(tail, 0, sizeof tail);
    if (rest) memcpy(tail, p, rest);
    tail[rest] = 0x80;
    n = rest + 1 + 8 <= 64 ? 64 : 128;
    for (i = 0; i < 8; i++) tail[n - 1 - i] = (unsigned char)(bits >> (8 * i));
    sha1_block(h, tail);
    if (n == 128) sha1_block(h, tail + 64);

    for (i = 0; i < 5; i++) {
        digest[4 * i] = (unsigned char)(h[i] >> 24);
        digest[4 * i + 1] = (unsigned char)(h[i] >> 16);
        digest[4 * i + 2] = (unsigned char)(h[i] >> 8);
        digest[4 * i + 3] = (unsigned char)h[i];
    }
    to_hex(digest, out);
}

void rlk__sha1_hex(const void *data, size_t len, char out[41])
{
#ifdef RLK_HAVE_OPENSSL
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    ERR_clear_error();
    if (EVP_Digest(data, len, digest, &dlen, EVP_sha1(), NULL) == 1 && dlen == 20) {
        to_hex(digest, out);
        return;
    }
    ERR_clear_error();
#endif
    rlk__sha1_internal_hex(data, len, out);
}
