#!/usr/bin/env bash
# Builds the Debian bookworm root filesystem every kchaos image starts from and imports it into Docker.
# Nothing can be pulled from a container registry here, so the base comes from Debian's own packages via
# debootstrap. It carries a Java 17 runtime for Kafka and iptables/iproute2 (tc) for the network sidecar.
#
# usage: build-rootfs.sh TAG [RECIPE_LABEL]
set -euo pipefail

tag=${1:?usage: build-rootfs.sh TAG [RECIPE_LABEL]}
recipe=${2:-unknown}
mirror=${KCHAOS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=openjdk-17-jre-headless,iptables,iproute2,procps,ca-certificates,netbase

for tool in debootstrap docker tar; do
  command -v "$tool" >/dev/null || { echo "build-rootfs: '$tool' is missing; run ./setup.sh (it installs it)" >&2; exit 2; }
done

work=$(mktemp -d /var/tmp/kchaos-rootfs.XXXXXX)
trap 'rm -rf "$work"' EXIT
root="$work/root"

echo "build-rootfs: debootstrap bookworm (minbase) from $mirror into $root" >&2
if ! debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
  tail -n 30 "$work/debootstrap.log" >&2
  echo "build-rootfs: debootstrap failed; check that $mirror answers (set KCHAOS_DEBIAN_MIRROR to another Debian mirror)" >&2
  exit 1
fi

# Keep the image small: package caches and lists are not needed at run time.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* "$root"/usr/share/man/*

java_home=$(dirname "$(dirname "$(readlink -f "$root/usr/bin/java" | sed "s|^$root||")")")
echo "build-rootfs: importing as $tag (JAVA_HOME=$java_home)" >&2
tar -C "$root" -c . | docker import \
  --change "ENV JAVA_HOME=$java_home" \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change "LABEL kchaos.recipe=$recipe" \
  --change 'CMD ["/bin/bash"]' \
  - "$tag" >/dev/null
echo "build-rootfs: done: $tag" >&2
