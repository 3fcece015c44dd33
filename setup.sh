#!/usr/bin/env bash
# Sets up everything kchaos needs, idempotently, on a bare Debian machine or one set up before:
#   1. system packages: docker.io, docker-compose (for kchaos/compose/docker-compose.yml), debootstrap, maven,
#      a Java 17 runtime (for Spark) and compiler (for the Java client worker), iptables, chromium
#      (the report tests load report.html in it), jq (the nightly workflow's scripts, tested here)
#   2. a running Docker engine (dockerd is started in the background if none answers)
#   3. the virtualenv .venv with kchaos installed (reinstalled when pyproject.toml changes)
#   4. the Kafka image kchaos/kafka:<version> and the librdkafka worker's kchaos/rdkafka-client, built
#      locally when missing (nothing is pulled); the Java client's image and the Spark class-data archive
#      are made when first needed
# Every step that cannot be done stops with a message naming the step and the fix.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

say() { printf 'setup: %s\n' "$*" >&2; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "step needs root: '$*'; run ./setup.sh as root or install sudo"; fi
}

# 1. System packages, only those missing.
need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
# Debian's docker.io has no `docker compose` plugin; its docker-compose (v1) runs kchaos/compose/docker-compose.yml.
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
# The Java client worker (kchaos/compose/client/) is compiled here against each release's kafka-clients jar.
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v iptables >/dev/null 2>&1 || need+=(iptables)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v jq >/dev/null 2>&1 || need+=(jq)
# The power-loss fault's sync journal and cutter are compiled here, against this host's glibc (Debian 12's, the
# image's own), when an image is built.
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} from Debian"
  as_root apt-get update -qq || die "apt-get update failed; check the Debian sources in /etc/apt/sources.list*"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null \
    || die "apt-get install ${need[*]} failed; run it by hand to see why"
fi

# 2. A Docker engine that answers.
if ! docker info >/dev/null 2>&1; then
  say "no Docker engine answers; starting dockerd in the background (log: /var/log/kchaos-dockerd.log)"
  # The daemon outlives this script, so it must not keep the caller's descriptors: holding e.g. the fd of
  # a `flock` around the test command would keep that lock taken for as long as dockerd runs.
  # shellcheck disable=SC2016
  as_root bash -c 'for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
    nohup dockerd >/var/log/kchaos-dockerd.log 2>&1 </dev/null &'
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  if ! docker info >/dev/null 2>&1; then
    tail -n 15 /var/log/kchaos-dockerd.log >&2 || true
    die "dockerd did not answer within 60s (log above); fix the engine, then run ./setup.sh again"
  fi
fi

# 3. The virtualenv.
python=${PYTHON:-python3}
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || die "kchaos needs Python >= 3.11 ($python is $("$python" -V 2>&1)); set PYTHON=/path/to/python3.11"
stamp=.venv/.kchaos-installed
want=$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "creating .venv and installing kchaos with its dependencies"
  "$python" -m venv .venv || die "python -m venv failed; install python3-venv"
  # An egg-info left by an earlier install sits on pytest's path (the clone's root) and would keep naming
  # its old entry points (the plugin before the kchaos namespace) next to the new install's.
  rm -rf kchaos.egg-info
  # --no-compile: byte-compiling every installed module (PySpark's thousands) took 19 of the install's 50 s;
  # Python compiles the few a run imports on first use, into the same .venv.
  .venv/bin/pip install -q --no-compile -e '.[dev]' || die "pip install -e '.[dev]' failed (output above)"
  echo "$want" > "$stamp"
fi

# 4. The images a default run starts: the Kafka image and the librdkafka worker's, side by side on the
#    debootstrapped base (a minute or two once per machine; later runs only check labels). The Java client's
#    image is built by the first run with --client java, and the local Spark JVM's class-data archive by the
#    first local `kchaos check`, and the SSH test machines' image (a debootstrap of its own, minutes) by the
#    first test that starts them (tests/cluster/ssh_machines.py), or `kchaos image build --ssh-node`.
.venv/bin/kchaos image build ${KCHAOS_KAFKA_VERSION:+--kafka-version "$KCHAOS_KAFKA_VERSION"} \
  || die "building the Kafka or librdkafka worker image failed (output above)"
say "ready"
