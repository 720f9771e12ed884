#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Writes the certificates the TLS tests use into DIR (created if needed):
#
#   ca.crt ca.key                  the test CA
#   server.crt server.key          for 127.0.0.1, ::1 and redis.resplock.test
#   wrong-host.crt wrong-host.key  for wrong.example only
#   expired.crt expired.key        like server.crt, but expired in 2020
#   client.crt client.key          a client certificate from the CA
#   client-encrypted.key           client.key under the passphrase "secret"
#   other-ca.crt other-ca.key      an unrelated CA
#   other-client.crt other-client.key   a client certificate from other-ca
#   cadir/                         ca.crt as a hashed CA directory
#
# Needs only the openssl command (1.1.1 or 3.x).  The expired certificate
# is issued with "openssl ca -startdate/-enddate", since "openssl x509"
# before 3.4 can only date a certificate from now on.
#
# The DNS name is in the reserved .test domain and resolves nowhere: a test
# checks it by giving it as the server name (--tls-server-name,
# tls.server_name) while connecting to 127.0.0.1, so that no test depends
# on a name resolving (a minimal root has no /etc/hosts, not even for
# localhost).
#
#   usage: gen-certs.sh DIR
set -euo pipefail
dir=${1:?usage: gen-certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
log=gen-certs.log
: >"$log"
trap 'echo "gen-certs.sh: failed; openssl said:" >&2; cat "$log" >&2' ERR

days=3650
export RLK_SAN=DNS:redis.resplock.test # the configuration below needs it defined

cat >openssl.cnf <<'EOF'
[ req ]
distinguished_name = dn
prompt = no
[ dn ]
CN = unused

[ ca_ext ]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash

[ server_ext ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = $ENV::RLK_SAN
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid

[ client_ext ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid

[ ca ]
default_ca = test_ca
[ test_ca ]
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = any_name
unique_subject = no
copy_extensions = none
[ any_name ]
commonName = supplied
EOF

key() { # FILE: a P-256 key (fast to make, and what servers commonly use)
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>>"$log"
  chmod 600 "$1"
}

ca() { # NAME CN
  key "$1.key"
  openssl req -config openssl.cnf -x509 -new -sha256 -key "$1.key" -subj "/CN=$2" \
    -days "$days" -extensions ca_ext -out "$1.crt" 2>>"$log"
}

csr() { # NAME CN
  key "$1.key"
  openssl req -config openssl.cnf -new -sha256 -key "$1.key" -subj "/CN=$2" \
    -out "$1.csr" 2>>"$log"
}

issue() { # NAME CN EXTENSIONS [SAN]
  csr "$1" "$2"
  RLK_SAN=${4:-DNS:redis.resplock.test} openssl x509 -req -sha256 -in "$1.csr" -CA ca.crt -CAkey ca.key \
    -set_serial "0x$(openssl rand -hex 8)" -days "$days" \
    -extfile openssl.cnf -extensions "$3" -out "$1.crt" 2>>"$log"
  rm -f "$1.csr"
}

ca ca "resplock test CA"
ca other-ca "resplock unrelated test CA"
issue server redis.resplock.test server_ext "IP:127.0.0.1,IP:::1,DNS:redis.resplock.test"
issue wrong-host wrong.example server_ext "DNS:wrong.example"
issue client "resplock test client" client_ext
openssl pkey -in client.key -aes256 -passout pass:secret -out client-encrypted.key 2>>"$log"

# The unrelated CA's client certificate (the same steps, another issuer).
csr other-client "resplock unrelated client"
openssl x509 -req -sha256 -in other-client.csr -CA other-ca.crt -CAkey other-ca.key \
  -set_serial "0x$(openssl rand -hex 8)" -days "$days" \
  -extfile openssl.cnf -extensions client_ext -out other-client.crt 2>>"$log"
rm -f other-client.csr

# A CA directory is looked up by subject hash (what c_rehash makes).
mkdir -p cadir
cp ca.crt "cadir/$(openssl x509 -hash -noout -in ca.crt).0"

# The expired one: valid for one day in January 2020.
: >index.txt
openssl rand -hex 8 >serial
csr expired redis.resplock.test
RLK_SAN="IP:127.0.0.1,IP:::1,DNS:redis.resplock.test" openssl ca -config openssl.cnf -batch -notext \
  -cert ca.crt -keyfile ca.key -extensions server_ext \
  -startdate 200101000000Z -enddate 200102000000Z \
  -in expired.csr -out expired.crt 2>>"$log"
# What "openssl ca" keeps besides the certificate.
rm -f expired.csr index.txt* serial* ./*.pem

trap - ERR
rm -f "$log"
