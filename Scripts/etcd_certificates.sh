#!/bin/sh
# Makes the certificates of an etcd cluster that speaks TLS and checks its clients: a
# certificate authority, one server certificate for every member (HOSTS, comma-separated, as
# names or IP addresses), and a client certificate for the brokers.
#
# Usage: etcd_certificates.sh DIRECTORY [HOSTS]
#   writes ca.pem, ca-key.pem, server.pem, server-key.pem, broker.pem, broker-key.pem;
#   does nothing when DIRECTORY/ca.pem exists already (the cluster keeps its certificates).
set -eu
directory=$1
hosts=${2:-localhost,127.0.0.1}
[ -f "$directory/ca.pem" ] && exit 0
mkdir -p "$directory"
cd "$directory"
names=""
for host in $(echo "$hosts" | tr ',' ' '); do
  case $host in
    *[!0-9.]*) names="$names,DNS:$host" ;;
    *) names="$names,IP:$host" ;;
  esac
done
openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=sharedmirror etcd CA" \
  -keyout ca-key.pem -out ca.pem 2>/dev/null
sign() {
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$2" -keyout "$1-key.pem" -out "$1.csr" 2>/dev/null
  printf 'extendedKeyUsage=%s\n%s\n' "$3" "${4:-}" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 3650 \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm "$1.csr" "$1.ext"
}
sign server "etcd" serverAuth,clientAuth "subjectAltName=${names#,}"
sign broker "sharedmirror broker" clientAuth
chmod 600 ./*-key.pem
