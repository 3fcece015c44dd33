#!/usr/bin/env bash
# Builds the Debian bookworm root filesystem every kchaos image starts from and imports it into Docker.
# Nothing can be pulled from a container registry here, so the base comes from Debian's own packages via
# debootstrap. It carries a Java 17 runtime for Kafka and iptables/iproute2 (tc) for the network sidecar.
#
# usage: build-rootfs.sh TAG [RECIPE_LABEL]
#   KCHAOS_DEBIAN_MIRROR  the Debian mirror to debootstrap from; by default the main Debian archive this
#                         host's own apt sources name (/etc/apt/sources.list, sources.list.d/*.list|*.sources)
#
# Sourcing the file defines its functions without building anything (tests/test_image_recipe.py does).
set -euo pipefail

# python3 runs the librdkafka worker (kchaos/compose/rdkafka/): in the base, its image is a copy of files and
# needs no package download of its own.
packages=openjdk-17-jre-headless,iptables,iproute2,procps,ca-certificates,netbase,python3

# Suite names a main Debian archive entry carries; bookworm-security, -updates and -backports are not one.
debian_suites=" oldoldstable oldstable stable testing unstable sid stretch buster bullseye bookworm trixie forky duke "

# The apt entries of one sources file, one "URI SUITE COMPONENT..." line per URI and suite of each enabled
# `deb` entry (deb-src is skipped), from either the one-line format (*.list) or deb822 (*.sources).
apt_entries() {
  local file=$1
  case $file in
    *.sources)
      awk '
        function flush(   nu, ns, i, j, u, s) {
          if (f["types"] ~ /(^|[ \t])deb([ \t]|$)/ && tolower(f["enabled"]) !~ /^[ \t]*no[ \t]*$/) {
            nu = split(f["uris"], u, /[ \t]+/)
            ns = split(f["suites"], s, /[ \t]+/)
            for (i = 1; i <= nu; i++)
              for (j = 1; j <= ns; j++)
                if (u[i] != "" && s[j] != "") print u[i], s[j], f["components"]
          }
          delete f; key = ""
        }
        /^[ \t]*#/ { next }
        /^[ \t]*$/ { flush(); next }
        /^[ \t]/ { if (key != "") f[key] = f[key] " " $0; next }
        {
          colon = index($0, ":"); if (colon == 0) next
          key = tolower(substr($0, 1, colon - 1)); f[key] = substr($0, colon + 1)
        }
        END { flush() }
      ' "$file"
      ;;
    *)
      awk '
        { sub(/#.*/, "") }
        $1 != "deb" { next }
        {
          line = $0; sub(/^[ \t]*deb[ \t]+/, "", line)
          if (line ~ /^\[/) { if (!sub(/^\[[^]]*\][ \t]*/, "", line)) next }
          if (split(line, w, /[ \t]+/) >= 3) print line
        }
      ' "$file"
      ;;
  esac
}

# The first main Debian archive among the apt sources under APT_DIR (default /etc/apt), in the order apt
# reads them: sources.list, then sources.list.d/ by name. Fails (quietly) when there is none.
host_debian_mirror() {
  local apt_dir=${1:-/etc/apt} file uri suite components
  for file in "$apt_dir/sources.list" "$apt_dir"/sources.list.d/*; do
    [[ -f $file && ($file == *.list || $file == *.sources) ]] || continue
    while read -r uri suite components; do
      [[ $uri =~ ^(https?|ftp|file): && $uri != *security* ]] || continue
      [[ $debian_suites == *" ${suite%/} "* ]] || continue
      [[ " $components " == *" main "* ]] || continue
      printf '%s\n' "$uri"
      return 0
    done < <(apt_entries "$file")
  done
  return 1
}

# The mirror to debootstrap from: KCHAOS_DEBIAN_MIRROR, else the host's own (see host_debian_mirror).
debian_mirror() {
  if [[ -n ${KCHAOS_DEBIAN_MIRROR:-} ]]; then
    printf '%s\n' "$KCHAOS_DEBIAN_MIRROR"
  elif ! host_debian_mirror "${1:-/etc/apt}"; then
    echo "build-rootfs: no Debian main archive in the apt sources under ${1:-/etc/apt} (sources.list," \
      "sources.list.d/*.list, *.sources); set KCHAOS_DEBIAN_MIRROR to a Debian mirror," \
      "e.g. KCHAOS_DEBIAN_MIRROR=http://deb.debian.org/debian" >&2
    return 1
  fi
}

main() {
  local tag=${1:?usage: build-rootfs.sh TAG [RECIPE_LABEL]}
  local recipe=${2:-unknown} tool mirror java_home

  for tool in debootstrap docker tar awk; do
    command -v "$tool" >/dev/null || { echo "build-rootfs: '$tool' is missing; run ./setup.sh (it installs it)" >&2; exit 2; }
  done
  mirror=$(debian_mirror) || exit 2

  work=$(mktemp -d /var/tmp/kchaos-rootfs.XXXXXX)  # global: the EXIT trap removes it
  trap 'rm -rf "$work"' EXIT
  local root="$work/root"

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
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  main "$@"
fi
