#!/usr/bin/env bash
# Proves, without a Docker engine, that the compose image can run its programs: builds them as
# the Dockerfile's build stage does, then runs them with chroot in a Debian root file system
# that holds only what the runtime stage installs (debootstrap's minbase, close to
# debian:*-slim, plus the runtime stage's packages). A library the binaries load but the image
# lacks makes them exit 127 here, as it would in the container.
#
# Usage: Scripts/image-check.sh   (root, or sudo; `make test` runs it)
set -euo pipefail

root_dir=$(cd "$(dirname "$0")/.." && pwd)
dockerfile="$root_dir/Dockerfile"
work="$root_dir/.build-image"
SWIFT=${SWIFT:-swift}
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

fail() { echo "image-check: $*" >&2; exit 1; }

# What the Dockerfile does, read from it so that this check follows its changes.
runtime_stage=$(awk '/^FROM /{stage=""} {stage=stage $0 "\n"} END{printf "%s", stage}' "$dockerfile")
runtime_image=$(printf '%s' "$runtime_stage" | awk '/^FROM /{print $2; exit}')
suite=${runtime_image#debian:}
suite=${suite%-slim}
[[ "$runtime_image" == debian:* && -n "$suite" ]] || fail "the runtime stage is not a Debian image: $runtime_image"
runtime_packages=$(printf '%s' "$runtime_stage" | tr -d '\\' | tr '\n' ' ' \
  | grep -o 'apt-get install [^&]*' | head -1 | tr ' ' '\n' | grep -v '^-' | tail -n +3 | xargs)
build_flags=$(grep -o 'swift build [^&]*--product' "$dockerfile" | head -1 \
  | sed 's/^swift build //; s/ *--product$//')
products=$(grep -o -- '--product [A-Za-z0-9_-]*' "$dockerfile" | awk '{print $2}' | xargs)
# The build stage's environment (ENV NAME=value lines before the runtime stage).
build_env=$(awk '/^FROM /{stage++} stage == 1 && /^ENV /{print $2}' "$dockerfile" | xargs)
[[ -n "$runtime_packages" && -n "$build_flags" && -n "$products" ]] \
  || fail "cannot read the runtime packages, build flags or products from $dockerfile"
echo "image-check: $runtime_image + $runtime_packages; ${build_env:+$build_env }swift build $build_flags for $products"

# The Debian mirror this machine's apt uses (never a hard-coded host).
mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
  | awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' \
  || true)
if [[ -z "$mirror" ]]; then
  mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | awk '/^URIs:/ && $2 ~ /debian\/?$/ && $2 !~ /security/ {print $2; exit}' || true)
fi
[[ -n "$mirror" ]] || fail "no Debian mirror in /etc/apt/sources.list*"

(cd "$root_dir" && for product in $products; do
  env $build_env $SWIFT build $build_flags --product "$product"
done)
bin=$(cd "$root_dir" && env $build_env $SWIFT build $build_flags --show-bin-path)

# The root file system, kept between runs while the suite and packages stay the same.
rootfs="$work/rootfs-$suite-$(echo "$runtime_packages" | md5sum | cut -c1-8)"
if [[ ! -e "$rootfs/.complete" ]]; then
  $SUDO rm -rf "$rootfs"
  mkdir -p "$work"
  $SUDO debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" > "$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log"; fail "debootstrap failed"; }
  $SUDO cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
  $SUDO chroot "$rootfs" apt-get update -qq
  $SUDO chroot "$rootfs" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends $runtime_packages > /dev/null
  $SUDO chroot "$rootfs" apt-get clean
  $SUDO touch "$rootfs/.complete"
fi
for product in $products; do $SUDO cp "$bin/$product" "$rootfs/usr/local/bin/"; done
grep -q '^COPY Scripts/etcd_certificates.sh /usr/local/bin/etcd-certificates$' "$dockerfile" \
  || fail "the Dockerfile no longer copies etcd_certificates.sh as etcd-certificates"
$SUDO cp "$root_dir/Scripts/etcd_certificates.sh" "$rootfs/usr/local/bin/etcd-certificates"

# Runs a command in the root file system with /proc mounted, as a container has it (a static
# Swift program reads its arguments from /proc/self/cmdline). The mount lives in a namespace of
# its own, so it goes away with the command, even if this script is killed.
in_image=($SUDO unshare --mount --propagation private
  sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' "$rootfs")
in_image() { "${in_image[@]}" "$@" < /dev/null; }

# Waits up to 10 s until LOG has a line with TEXT, or PID (if given) has ended.
wait_for() {
  for _ in $(seq 100); do
    grep -q "$2" "$1" && return
    [[ -z "${3:-}" ]] || kill -0 "$3" 2>/dev/null || return
    sleep 0.1
  done
}

for product in $products; do
  version=$(in_image "$product" --version 2>&1) \
    || fail "$product does not start in the image (exit $?): $version"
  echo "image-check: $product --version: $version"
done

# The compose set-up in small: a broker, its health check, a counter and a profile.
log="$work/broker.log"
# Not through the function: $! must be the broker itself (each exec keeps its PID).
"${in_image[@]}" broker --listen 'tcp://127.0.0.1:*' --publish 'tcp://127.0.0.1:*' \
  --metrics 127.0.0.1:0 < /dev/null > "$log" 2>&1 &
broker=$!
trap 'kill $broker 2>/dev/null || true' EXIT
wait_for "$log" "Metrics listening" $broker
router=$(grep -o 'router=[^ ]*' "$log" | head -1 | cut -d= -f2)
[[ -n "$router" ]] || { cat "$log"; fail "the broker did not start in the image"; }
in_image broker ping "$router" || fail "broker ping (the health check) failed in the image"
in_image counter --broker "$router" --script '+x3' || fail "counter failed in the image"
read=$(in_image profile --broker "$router" --once --print json) || fail "profile failed in the image"
[[ "$read" == '{"count":3,"maxCount":3,"minCount":0,"numberOfCounts":3}' ]] \
  || fail "profile read $read, not the 3 taps"
# The web front of the image serves its page, its script and the inspector's figures.
metrics=$(grep -o 'metrics=http://[^ ]*' "$log" | head -1 | sed 's|metrics=http://||; s|/metrics||')
"${in_image[@]}" web --broker "$router" --broker-metrics "$metrics" --listen 127.0.0.1:0 \
  < /dev/null > "$work/web.log" 2>&1 &
web=$!
trap 'kill $broker $web 2>/dev/null || true' EXIT
wait_for "$work/web.log" "Serving the page" $web
page=$(grep -o 'url=[^ ]*' "$work/web.log" | head -1 | cut -d= -f2)
[[ -n "$page" ]] || { cat "$work/web.log"; fail "web did not start in the image"; }
fetch() { /usr/bin/python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' "$1"; }
# Whole, not piped to `grep -q`: its early exit breaks the pipe under pipefail.
served=$(fetch "$page")
[[ "$served" == *"<title>SharedMirror</title>"* ]] || fail "web served no page in the image"
served=$(fetch "${page}shared-mirror.js")
[[ "$served" == *"class SharedMirror"* ]] || fail "web served no client script"
# The broker hands its figures to its metrics a few times a second.
for _ in $(seq 100); do
  figures=$(fetch "${page}inspect")
  [[ "$figures" == *'"keys":1,'* && "$figures" == *'"writesApplied":'[1-9]* ]] && break
  sleep 0.1
done
[[ "$figures" == *'"keys":1,'* && "$figures" == *'"writesApplied":'[1-9]* ]] \
  || fail "web's inspector read $figures from the broker"
kill $web

# A cluster in small: two brokers of the image share one etcd member (this machine's
# etcd-server: etcd runs in an image of its own) over TLS with client certificates, made by the
# image's etcd-certificates as compose's one-shot service makes them, and a counter given both
# moves to the second when the first is killed.
$SUDO rm -rf "$rootfs/certificates"
in_image etcd-certificates /certificates 127.0.0.1 || fail "etcd-certificates failed in the image"
certificates="$rootfs/certificates"
ports=$(/usr/bin/python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
read -r client_port peer_port <<< "$ports"
rm -rf "$work/etcd"
$SUDO etcd --name image-check --data-dir "$work/etcd" \
  --listen-client-urls "https://127.0.0.1:$client_port" --advertise-client-urls "https://127.0.0.1:$client_port" \
  --cert-file "$certificates/server.pem" --key-file "$certificates/server-key.pem" \
  --trusted-ca-file "$certificates/ca.pem" --client-cert-auth \
  --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
  --initial-cluster "image-check=http://127.0.0.1:$peer_port" < /dev/null > "$work/etcd.log" 2>&1 &
etcd_pid=$!
brokers=()
trap 'kill $broker $etcd_pid ${brokers[*]} 2>/dev/null || true' EXIT
wait_for "$work/etcd.log" "ready to serve client requests" $etcd_pid
routers=()
for name in a b; do
  "${in_image[@]}" broker --store "etcd://127.0.0.1:$client_port" --listen 'tcp://127.0.0.1:*' \
    --publish 'tcp://127.0.0.1:*' --seed-window 0 --etcd-cacert /certificates/ca.pem \
    --etcd-cert /certificates/broker.pem --etcd-key /certificates/broker-key.pem \
    < /dev/null > "$work/broker-$name.log" 2>&1 &
  brokers+=($!)
  wait_for "$work/broker-$name.log" "Broker listening" "${brokers[-1]}"
  routers+=("$(grep -o 'router=[^ ]*' "$work/broker-$name.log" | head -1 | cut -d= -f2)")
  [[ -n "${routers[-1]}" ]] || { cat "$work/broker-$name.log" "$work/etcd.log"; fail "a broker of the cluster did not start in the image"; }
done
in_image counter --broker "${routers[0]}" --key cluster --script '+x2' || fail "counter failed on the first broker"
kill -9 "${brokers[0]}"
in_image counter --broker "${routers[0]},${routers[1]}" --key cluster --script '+x3' \
  || fail "counter did not move to the second broker of the cluster"
read=$(in_image profile --broker "${routers[1]}" --key cluster --once --print json) || fail "profile failed on the second broker"
[[ "$read" == '{"count":5,"maxCount":5,"minCount":0,"numberOfCounts":5}' ]] \
  || fail "the second broker of the cluster read $read, not the 5 taps"
kill -TERM "${brokers[1]}"
for _ in $(seq 50); do kill -0 "${brokers[1]}" 2>/dev/null || break; sleep 0.1; done
! kill -0 "${brokers[1]}" 2>/dev/null || fail "a broker of the cluster did not stop on SIGTERM"
echo "image-check: the programs run in $runtime_image + $runtime_packages"
