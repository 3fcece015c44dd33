#!/usr/bin/env bash
# Starts one Kafka node under the same environment contract as the upstream apache/kafka image, so a
# hand-written compose file or a user's --kafka-image apache/kafka:<version> behave alike:
#   KAFKA_FOO_BAR=x     -> foo.bar=x    (a double underscore becomes '_', a triple one '-')
#   CLUSTER_ID          -> the KRaft cluster id used to format storage on the first start only
#   KCHAOS_ROLE=zookeeper -> run a standalone ZooKeeper (from the jars of releases that ship it) instead of
#                          Kafka, on ZOOKEEPER_CLIENT_PORT (2181); a broker given KAFKA_ZOOKEEPER_CONNECT
#                          runs in ZooKeeper mode: no KRaft storage to format
#   KCHAOS_STATE_DIR    -> where the node keeps its log dirs and the notes below (default /var/lib/kafka)
#   KCHAOS_CONF_FILE    -> where server.properties is written (default /etc/kafka/server.properties); an
#                          installation kchaos makes on a machine (kchaos/harness/ssh_install.py) sets both
#                          under a directory of its own, beside KAFKA_HOME
# Storage lives in the container's own filesystem, so a killed and restarted container keeps its log.
#
# Power loss (the `power-loss` fault): every java process here runs with libsyncjournal.so preloaded, which
# journals what was made durable under the log dirs to $sync_journal (outside them); what the log dirs hold
# when the broker starts counts as durable (powercut settle). The fault SIGKILLs the
# container and leaves $power_cut_pending in it; the next start cuts every file back to what the journal
# says was durable (powercut) before the broker runs, and leaves what it dropped in $power_cut_report.
#
# Clock faults (the `clock` fault): libclockshift.so, preloaded beside the journal, adds the offset the
# harness writes to $clock_shift to the wall clock the JVM reads; the monotonic clock is left alone. A full
# disk (the `disk-full` fault): libdiskfull.so, preloaded too, fails writes under the log dirs with ENOSPC
# while the harness's $disk_full says so. A slow disk (the `slow-disk` fault): libslowdisk.so, preloaded
# too, sleeps before each sync (or write) under the log dirs while the harness's $slow_disk says so.
#
# A replaced disk (the `replace-disk` fault): the harness kills the container and leaves $disk_swap_pending
# in it; the next start empties the log dirs (all of them, or all but the KRaft metadata log and the
# storage's own identity with `data`) before anything reads them, as a new disk is, and leaves what it
# removed in $disk_swap_report; a KRaft node's emptied storage is then formatted again, as an operator
# formats a new disk, with the cluster's id.
#
# Sourcing the file defines its functions without starting anything (tests/test_image_recipe.py does).
set -euo pipefail

# JVM settings, not broker properties (the upstream image treats them the same way).
not_properties=" KAFKA_HEAP_OPTS KAFKA_LOG4J_CONFIG KAFKA_OPTS KAFKA_JVM_PERFORMANCE_OPTS KAFKA_GC_LOG_OPTS KAFKA_JMX_OPTS \
KAFKA_LOG4J_OPTS KAFKA_LOG4J_ROOT_LOGLEVEL KAFKA_LOG4J_LOGGERS KAFKA_TOOLS_LOG4J_LOGLEVEL KAFKA_VERSION KAFKA_HOME "

# The cluster id when CLUSTER_ID is unset: 16 bytes in URL-safe base64 without padding, and without '-', as
# Kafka's own Uuid.randomUuid draws them (an id starting with '-' reads as an option to many tools).
default_cluster_id=qBhbNIVGS0mL1KTo0xRvUw

state_dir=${KCHAOS_STATE_DIR:-/var/lib/kafka}
sync_journal=$state_dir/sync-journal
power_cut_pending=$state_dir/power-cut-pending
power_cut_report=$state_dir/power-cut-report.jsonl
# The clock fault: libclockshift.so (preloaded too) reads the shift from $clock_shift and writes the
# generation it took to $clock_applied (see clockshift.c). Outside the log dirs, like the journal.
clock_shift=$state_dir/clock-shift
clock_applied=$state_dir/clock-applied
# The disk-full fault: libdiskfull.so fails writes under the log dirs with ENOSPC while $disk_full holds
# '1', and notes the first write it failed in $disk_full_hit (see diskfull.c).
disk_full=$state_dir/disk-full
disk_full_hit=$state_dir/disk-full-hit
# The slow-disk fault: libslowdisk.so delays syncs (or writes) under the log dirs as $slow_disk says
# (`MODE MS TAIL_MS TAIL_PERCENT`), and writes how many it delayed to $slow_disk_hit (see slowdisk.c).
slow_disk=$state_dir/slow-disk
slow_disk_hit=$state_dir/slow-disk-hit
# The replace-disk fault: a pending swap (`all` or `data`) and what the last swap removed.
disk_swap_pending=$state_dir/disk-swap-pending
disk_swap_report=$state_dir/disk-swap-report
# JVM options that map the image's class-data archive, where it has one (set in main).
class_archive=()

# The broker property a KAFKA_* variable carries: KAFKA_LISTENER_NAME_MY___LISTENER_X -> listener.name.my-listener.x.
# The inverse of harness.node_env.broker_env_name: '___' -> '-', then '__' -> '_', then '_' -> '.'.
property_name() {
  local name=${1#KAFKA_}
  name=${name,,}
  name=${name//___/-}
  name=${name//__/@}  # variable names hold no '@', so it can stand in for '_' while '_' becomes '.'
  name=${name//_/.}
  printf '%s\n' "${name//@/_}"
}

# server.properties lines for every KAFKA_* variable in the environment that is a broker property.
properties_from_env() {
  local var
  for var in $(compgen -e | sort); do
    [[ $var == KAFKA_* ]] || continue
    [[ $not_properties == *" $var "* ]] && continue
    printf '%s=%s\n' "$(property_name "$var")" "${!var}"
  done
}

# zoo.cfg lines for a standalone ZooKeeper keeping its data under /var/lib/zookeeper.
zookeeper_config() {
  printf '%s\n' "dataDir=/var/lib/zookeeper" "clientPort=${ZOOKEEPER_CLIENT_PORT:-2181}" "maxClientCnxns=0" \
    "admin.enableServer=false" "4lw.commands.whitelist=*"
}

# Runs ZooKeeper in the foreground; the image has its jars exactly when the release still uses it.
run_zookeeper() {
  mkdir -p /var/lib/zookeeper /etc/zookeeper
  zookeeper_config > /etc/zookeeper/zoo.cfg
  exec java ${KAFKA_HEAP_OPTS:--Xmx128m} "$log4j" "$log4j1" -cp "$classpath" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain /etc/zookeeper/zoo.cfg
}

# CLUSTER_ID, or the default.
cluster_id() {
  printf '%s\n' "${CLUSTER_ID:-$default_cluster_id}"
}

# The directories Kafka writes its logs to, colon-separated: log.dirs, and metadata.log.dir when set apart.
data_dirs() {
  local conf=$1 dirs
  dirs=$(sed -n 's/^log\.dirs=//p' "$conf" | tr ',' ':')
  local metadata
  metadata=$(sed -n 's/^metadata\.log\.dir=//p' "$conf")
  [[ -n $metadata && :$dirs: != *:$metadata:* ]] && dirs="$dirs:$metadata"
  printf '%s\n' "$dirs"
}

# Applies a pending power loss: cuts the log dirs back to what was durable, before anything reads them.
apply_power_cut() {
  local dirs=$1
  [[ -f $power_cut_pending ]] || return 0
  # The mark holds the cut's options (tear=..., dirents=...; see powercut.c), one word each.
  local -a options=()
  read -r -a options < "$power_cut_pending" || true
  env -u LD_PRELOAD "$KAFKA_HOME/bin/powercut" cut "$sync_journal" "$power_cut_report" "$dirs" "${options[@]}"
  rm -f "$power_cut_pending"
}

# Applies a pending disk swap: empties the log dirs, before anything reads them. `all` takes everything; `data`
# keeps the KRaft metadata log (__cluster_metadata-0), the storage's identity (meta.properties) and its
# bootstrap checkpoint, as a swap of the data disk alone leaves a metadata.log.dir kept apart. The report
# says the mode, then the files and bytes removed.
apply_disk_swap() {
  local dirs=$1 mode dir files=0 bytes=0 entry
  [[ -f $disk_swap_pending ]] || return 0
  read -r mode < "$disk_swap_pending" || mode=all
  local IFS=:
  for dir in $dirs; do
    [[ -d $dir ]] || continue
    for entry in "$dir"/* "$dir"/.[!.]*; do
      [[ -e $entry ]] || continue
      if [[ $mode == data ]]; then
        case ${entry##*/} in
          __cluster_metadata-*|meta.properties|bootstrap.checkpoint) continue ;;
        esac
      fi
      files=$((files + $(find "$entry" -type f | wc -l)))
      bytes=$((bytes + $(du -sb "$entry" | cut -f1)))
      rm -rf "$entry"
    done
  done
  printf '%s %s %s\n' "$mode" "$files" "$bytes" > "$disk_swap_report"
  rm -f "$disk_swap_pending"
}

# Formats the log dirs named in CONF for cluster ID, unless already formatted. The id is joined to its option
# (--cluster-id=ID) so that one starting with '-' is still taken as the value, not as another option. A
# controller that joins a running dynamic quorum (KIP-853: it knows the quorum by
# controller.quorum.bootstrap.servers, not by a static controller.quorum.voters) is formatted as no initial
# voter: it starts as an observer, until `kafka-metadata-quorum add-controller` makes it a voter. A voter of a
# quorum formed dynamic is formatted with KCHAOS_INITIAL_CONTROLLERS (id@host:port:directory-id, ...), the same
# list on every voter.
format_storage() {
  local conf=$1 id=$2 quorum=()
  if grep -q '^process\.roles=.*controller' "$conf"; then
    if [[ -n ${KCHAOS_INITIAL_CONTROLLERS:-} ]]; then
      quorum=(--initial-controllers "$KCHAOS_INITIAL_CONTROLLERS")
    elif grep -q '^controller\.quorum\.bootstrap\.servers=' "$conf" \
      && ! grep -q '^controller\.quorum\.voters=' "$conf"; then
      quorum=(--no-initial-controllers)
    fi
  fi
  # A one-off tool, started on every node at once on a small machine: the quick compiler and the serial
  # collector, as kafka-class gives every tool.
  java -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC "${class_archive[@]}" "$log4j" -cp "$classpath" \
    kafka.tools.StorageTool format \
    --cluster-id="$id" --config "$conf" --ignore-formatted "${quorum[@]}"
}

main() {
  KAFKA_HOME=${KAFKA_HOME:-/opt/kafka}
  classpath="$KAFKA_HOME/libs/*"
  log4j="-Dlog4j2.configurationFile=${KAFKA_LOG4J_CONFIG:-$KAFKA_HOME/config/log4j2.properties}"
  # Releases before 3.x log through log4j 1 directly, which reads its own file.
  log4j1="-Dlog4j.configuration=file:$KAFKA_HOME/config/log4j.properties"
  # The classes a broker loads as it starts, archived when the image was built (class-archive), where
  # they could be; a JVM that cannot map the archive starts without it.
  [[ -f $KAFKA_HOME/kafka.jsa ]] && class_archive=(-XX:SharedArchiveFile="$KAFKA_HOME/kafka.jsa")
  if [[ ${KCHAOS_ROLE:-kafka} == zookeeper ]]; then
    run_zookeeper
  fi
  local conf=${KCHAOS_CONF_FILE:-/etc/kafka/server.properties} id kv log_dir
  mkdir -p "$(dirname "$conf")" "$state_dir"
  id=$(cluster_id)

  {
    echo "# generated by entrypoint.sh from KAFKA_* environment variables"
    properties_from_env
  } > "$conf"

  # Defaults fill only what the environment left unset. Without node.id (or a ZooKeeper-mode broker.id or
  # zookeeper.connect) they describe a single combined node, like the upstream image's default; with a
  # cluster configuration only log.dirs is defaulted.
  local defaults=(log.dirs="$state_dir/data")
  if ! grep -qE '^(node\.id|broker\.id|zookeeper\.connect)=' "$conf"; then
    defaults+=(
      node.id=1
      process.roles=broker,controller
      controller.quorum.voters=1@localhost:9093
      listeners=PLAINTEXT://:9092,CONTROLLER://:9093
      advertised.listeners=PLAINTEXT://localhost:9092
      controller.listener.names=CONTROLLER
      listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
      offsets.topic.replication.factor=1
      transaction.state.log.replication.factor=1
      transaction.state.log.min.isr=1
    )
  fi
  for kv in "${defaults[@]}"; do
    grep -q "^${kv%%=*}=" "$conf" || echo "$kv" >> "$conf"
  done

  local dirs
  dirs=$(data_dirs "$conf")
  apply_power_cut "$dirs"
  apply_disk_swap "$dirs"
  local preload=()
  if [[ -f $KAFKA_HOME/lib/libsyncjournal.so ]]; then
    preload+=("$KAFKA_HOME/lib/libsyncjournal.so")
    export KCHAOS_SYNC_DIRS=$dirs KCHAOS_SYNC_JOURNAL=$sync_journal
  fi
  if [[ -f $KAFKA_HOME/lib/libclockshift.so ]]; then
    preload+=("$KAFKA_HOME/lib/libclockshift.so")
    export KCHAOS_CLOCK_SHIFT=$clock_shift KCHAOS_CLOCK_APPLIED=$clock_applied
  fi
  if [[ -f $KAFKA_HOME/lib/libdiskfull.so ]]; then
    preload+=("$KAFKA_HOME/lib/libdiskfull.so")
    export KCHAOS_DISK_DIRS=$dirs KCHAOS_DISK_FULL=$disk_full KCHAOS_DISK_FULL_HIT=$disk_full_hit
  fi
  if [[ -f $KAFKA_HOME/lib/libslowdisk.so ]]; then
    preload+=("$KAFKA_HOME/lib/libslowdisk.so")
    export KCHAOS_DISK_DIRS=$dirs KCHAOS_SLOW_DISK=$slow_disk KCHAOS_SLOW_DISK_HIT=$slow_disk_hit
  fi
  if ((${#preload[@]})); then
    LD_PRELOAD=$(IFS=:; printf '%s' "${preload[*]}")
    export LD_PRELOAD
  fi

  # Format only on the first start: a restarted container must keep (and recover) its existing log. A
  # ZooKeeper-mode broker has no storage to format: it writes meta.properties itself.
  log_dir=$(sed -n 's/^log\.dirs=//p' "$conf" | cut -d, -f1)
  if [[ ! -f "$log_dir/meta.properties" ]] && ! grep -q '^zookeeper\.connect=' "$conf"; then
    format_storage "$conf" "$id"
  fi

  # What the log dirs hold as the broker starts counts as durable (see powercut.c); only what it writes from
  # here on is judged by its own syncs.
  if [[ -x $KAFKA_HOME/bin/powercut ]]; then
    env -u LD_PRELOAD "$KAFKA_HOME/bin/powercut" settle "$sync_journal" "$dirs"
  fi

  # shellcheck disable=SC2086  # the *_OPTS hold several JVM options each
  exec java ${KAFKA_HEAP_OPTS:--Xms256m -Xmx256m} \
    ${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true} \
    "${class_archive[@]}" ${KAFKA_OPTS:-} "$log4j" "$log4j1" -cp "$classpath" kafka.Kafka "$conf"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  main "$@"
fi
