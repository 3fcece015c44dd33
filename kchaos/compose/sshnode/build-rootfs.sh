#!/usr/bin/env bash
# Builds the root filesystem of kchaos's test SSH nodes: the Debian base's packages plus OpenSSH's server,
# sudo and systemd (a machine can boot it as init, to run a Kafka the way an operator's service does), by
# debootstrap as the base is (kchaos/compose/base/build-rootfs.sh, whose steps this reuses), imported
# as TAG. The Dockerfile beside it adds the start script. A test node holds no Kafka: kchaos installs that over
# SSH, as on a user's machine.
#
# usage: build-rootfs.sh TAG [RECIPE_LABEL]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../base/build-rootfs.sh
source "$here/../base/build-rootfs.sh"
packages="$packages,openssh-server,sudo,systemd,systemd-sysv,dbus"
main "$@"
