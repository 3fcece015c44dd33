import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * kchaos's consumer-group member as a process of its own: the Java client's side of {@code --client java
 * --workload group}, doing what the librdkafka group members do (kchaos/workloads/group_consumer.py) so its
 * lines become the same history rows and the same group checks judge it.
 *
 * <p>Why a worker and not Kafka's VerifiableConsumer: that tool prints each rebalance and each commit's
 * offsets, but of the records it polls only a count per partition and the offset range
 * ({@code records_consumed}), never a record's value; the group checks need every record handed to a
 * member, by value, to say which acknowledged write no member received.
 *
 * <p>It subscribes to {@code kchaos.topic} with a rebalance listener and polls; every record handed over is
 * printed before anything is committed. {@code kchaos.commit=sync} commits, after each batch, the offsets
 * after the batch's records and waits for the answer; {@code auto} does what the Java client's own automatic
 * commit does (an asynchronous commit of the consumed positions every {@code kchaos.auto.commit.ms}, from
 * the polling thread) but through {@code commitAsync} with a callback, since the client's built-in
 * auto-commit reports its outcome to no one. At SIGTERM it stops polling, in {@code auto} commits what it
 * consumed (as the client's close does with auto-commit on), closes the consumer (leaving the group) and
 * exits.
 *
 * <p>Stdout is one tab-separated line per event, its second field the JVM's {@code System.nanoTime()} (the
 * host's CLOCK_MONOTONIC: the harness orders rows by when they happened, not when lines arrived): {@code
 * started NS VERSION PROTOCOL}, {@code assign NS PARTITIONS MEMBER GENERATION} ({@code
 * onPartitionsAssigned}: what was added, all of it under an eager assignor), {@code revoke NS PARTITIONS},
 * {@code lost NS PARTITIONS} ({@code onPartitionsLost}, 2.4+), {@code poll NS PARTITION OFFSET KEY VALUE},
 * {@code poll-error NS EXCEPTION MESSAGE}, {@code commit NS ID OFFSETS} (before the call), {@code committed
 * NS ID OFFSETS}, {@code commit-error NS ID OFFSETS EXCEPTION MESSAGE}, {@code stopped NS POLLED COMMITS}.
 * PARTITIONS is comma-separated; OFFSETS is {@code partition=next offset} pairs, comma-separated; a KEY or
 * VALUE is {@code =} and its text, or empty for none (null); MEMBER and GENERATION are empty when the
 * client cannot say (before 2.5). Empty assignments and revocations are not printed.
 *
 * <p>Compiled against every release's jar from 0.11 on: poll takes a Duration from 2.0 and a long before
 * (and 4.0 dropped the long), and the group's metadata came in 2.5, so both are found by reflection.
 */
public final class KchaosGroupMember {
  /** How long a SIGTERM waits for the final commit and the close (LeaveGroup) before the JVM goes. */
  private static final long CLOSE_HOLD_MS = 40_000;

  private final KafkaConsumer<String, String> consumer;
  private final Method poll;
  private final Object pollTimeout;
  /** Next offset to commit per partition: what was printed and not yet committed. */
  private final Map<TopicPartition, OffsetAndMetadata> pending = new HashMap<>();

  private long commits;

  KchaosGroupMember(KafkaConsumer<String, String> consumer) throws NoSuchMethodException {
    this(consumer, 500);
  }

  /** A poller of {@code consumer} whose polls wait up to {@code pollMs} (a read-write transaction's: 10). */
  KchaosGroupMember(KafkaConsumer<String, String> consumer, long pollMs) throws NoSuchMethodException {
    this.consumer = consumer;
    Method chosen;
    Object timeout;
    try {
      chosen = KafkaConsumer.class.getMethod("poll", Duration.class);
      timeout = Duration.ofMillis(pollMs);
    } catch (NoSuchMethodException before20) {
      chosen = KafkaConsumer.class.getMethod("poll", long.class);
      timeout = pollMs;
    }
    this.poll = chosen;
    this.pollTimeout = timeout;
  }

  /** One event line: the kind, the monotonic time ({@link KchaosProducer#line} stamps it), the fields. */
  static void emit(String kind, String... fields) {
    KchaosProducer.line(kind, fields);
  }

  /**
   * A key or value as a field: {@code =text}, or empty for null; tabs, newlines and record separators would
   * break the line.
   */
  static String text(String value) {
    return value == null ? "" : "=" + value.replaceAll("[\\t\\r\\n\\u001e]", " ");
  }

  static String partitions(Collection<TopicPartition> partitions) {
    StringBuilder text = new StringBuilder();
    for (TopicPartition tp : partitions) {
      text.append(text.length() > 0 ? "," : "").append(tp.partition());
    }
    return text.toString();
  }

  static String offsets(Map<TopicPartition, OffsetAndMetadata> offsets) {
    StringBuilder text = new StringBuilder();
    Map<Integer, Long> sorted = new TreeMap<>();
    for (Map.Entry<TopicPartition, OffsetAndMetadata> entry : offsets.entrySet()) {
      sorted.put(entry.getKey().partition(), entry.getValue().offset());
    }
    for (Map.Entry<Integer, Long> entry : sorted.entrySet()) {
      text.append(text.length() > 0 ? "," : "").append(entry.getKey()).append('=').append(entry.getValue());
    }
    return text.toString();
  }

  /** The member id and generation (member epoch under the consumer protocol), when the client says (2.5+). */
  String[] groupMetadata() {
    try {
      Object metadata = KafkaConsumer.class.getMethod("groupMetadata").invoke(consumer);
      Object member = metadata.getClass().getMethod("memberId").invoke(metadata);
      Object generation = metadata.getClass().getMethod("generationId").invoke(metadata);
      return new String[] {String.valueOf(member), String.valueOf(generation)};
    } catch (ReflectiveOperationException | RuntimeException unknown) {
      return new String[] {"", ""};
    }
  }

  @SuppressWarnings("unchecked")
  ConsumerRecords<String, String> poll() {
    try {
      return (ConsumerRecords<String, String>) poll.invoke(consumer, pollTimeout);
    } catch (InvocationTargetException thrown) {
      Throwable cause = thrown.getCause();
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      throw new IllegalStateException(cause);
    } catch (IllegalAccessException impossible) {
      throw new IllegalStateException(impossible);
    }
  }

  private void commitSync(Map<TopicPartition, OffsetAndMetadata> offsets) {
    String id = Long.toString(commits++);
    String said = offsets(offsets);
    emit("commit", id, said);
    try {
      consumer.commitSync(offsets);
      emit("committed", id, said);
    } catch (KafkaException error) {
      String[] what = KchaosProducer.described(error);
      emit("commit-error", id, said, what[0], what[1]);
    }
  }

  private void commitAsync(Map<TopicPartition, OffsetAndMetadata> offsets) {
    String id = Long.toString(commits++);
    String said = offsets(offsets);
    emit("commit", id, said);
    consumer.commitAsync(
        offsets,
        (done, error) -> {
          if (error == null) {
            emit("committed", id, said);
          } else {
            String[] what = KchaosProducer.described(error);
            emit("commit-error", id, said, what[0], what[1]);
          }
        });
  }

  ConsumerRebalanceListener listener() {
    return new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        if (!partitions.isEmpty()) {
          String[] group = groupMetadata();
          emit("assign", partitions(partitions), group[0], group[1]);
        }
      }

      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        forget(partitions);
        if (!partitions.isEmpty()) {
          emit("revoke", partitions(partitions));
        }
      }

      /** 2.4+ (KIP-429); an ordinary method to an older client, which never calls it. */
      public void onPartitionsLost(Collection<TopicPartition> partitions) {
        forget(partitions);
        if (!partitions.isEmpty()) {
          emit("lost", partitions(partitions));
        }
      }
    };
  }

  /** A member commits nothing more for partitions it no longer holds, as the librdkafka member. */
  private void forget(Collection<TopicPartition> partitions) {
    for (TopicPartition tp : partitions) {
      pending.remove(tp);
    }
  }

  private void run(String topic, boolean auto, long autoCommitMs, CountDownLatch done) {
    consumer.subscribe(Collections.singletonList(topic), listener());
    long polled = 0;
    long nextCommit = System.nanoTime() + autoCommitMs * 1_000_000L;
    while (!KchaosProducer.stopping) {
      ConsumerRecords<String, String> records;
      try {
        records = poll();
      } catch (WakeupException woken) {
        break;
      } catch (KafkaException error) {
        String[] what = KchaosProducer.described(error);
        emit("poll-error", what[0], what[1]);
        continue;
      }
      for (ConsumerRecord<String, String> record : records) {
        emit(
            "poll",
            Integer.toString(record.partition()),
            Long.toString(record.offset()),
            text(record.key()),
            text(record.value()));
        pending.put(
            new TopicPartition(record.topic(), record.partition()), new OffsetAndMetadata(record.offset() + 1));
        polled++;
      }
      if (!auto && !pending.isEmpty()) {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>(pending);
        pending.clear();
        commitSync(offsets);
      } else if (auto && System.nanoTime() >= nextCommit) {
        nextCommit = System.nanoTime() + autoCommitMs * 1_000_000L;
        if (!pending.isEmpty()) {
          Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>(pending);
          pending.clear();
          commitAsync(offsets);
        }
      }
    }
    if (auto && !pending.isEmpty()) {
      commitSync(new HashMap<>(pending)); // as the client's close() commits with auto-commit on
    }
    try {
      consumer.close();
    } catch (KafkaException error) {
      System.err.println("kchaos group member: close failed: " + error);
    }
    emit("stopped", Long.toString(polled), Long.toString(commits));
    done.countDown();
    Runtime.getRuntime().halt(0);
  }

  /**
   * Arguments are {@code name=value}: {@code kchaos.topic}, {@code kchaos.commit} ({@code sync} or {@code
   * auto}), {@code kchaos.auto.commit.ms}; every other pair is a consumer property.
   */
  public static void main(String[] args) throws NoSuchMethodException {
    Properties settings = new Properties();
    Properties worker = new Properties();
    for (String arg : args) {
      int equals = arg.indexOf('=');
      if (equals <= 0) {
        System.err.println("kchaos group member: argument " + arg + " is not name=value");
        System.exit(2);
      }
      String name = arg.substring(0, equals);
      (name.startsWith("kchaos.") ? worker : settings).setProperty(name, arg.substring(equals + 1));
    }
    settings.setProperty("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
    settings.setProperty("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
    CountDownLatch done = KchaosProducer.stopOnSigterm(CLOSE_HOLD_MS);
    KchaosGroupMember member = new KchaosGroupMember(new KafkaConsumer<>(settings));
    emit("started", AppInfoParser.getVersion(), settings.getProperty("group.protocol", "classic"));
    member.run(
        worker.getProperty("kchaos.topic"),
        "auto".equals(worker.getProperty("kchaos.commit")),
        Long.parseLong(worker.getProperty("kchaos.auto.commit.ms", "1000")),
        done);
  }
}
