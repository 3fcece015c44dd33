import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.utils.AppInfoParser;

import sun.misc.Signal;

/**
 * kchaos's assigned reader as a Java client process of its own: what {@code --client java} reads {@code
 * --workload sends} and {@code txn} with ({@code consumer-N}), so the nemesis can kill, freeze or cut off a
 * reader of the Java client as it does its producers. It does what the librdkafka reader worker does
 * (kchaos/workloads/rdkafka_reader_worker.py) and prints the same lines, which the same recorder turns into
 * the same history rows.
 *
 * <p>It assigns every partition of {@code kchaos.topic} ({@code kchaos.partitions} of them) from {@code
 * kchaos.from} ({@code partition=offset}, comma-separated; a partition not named starts from the
 * beginning) and prints every record it is handed: {@code started NS VERSION}, {@code assign NS PARTITIONS
 * FROM}, {@code poll NS PARTITION OFFSET KEY VALUE}, {@code poll-error NS EXCEPTION MESSAGE PARTITION}
 * (PARTITION empty: the Java client's errors name none), {@code hold NS}, {@code release NS}, {@code
 * stopped NS POLLED}.
 *
 * <p>Held back on request (a scenario's lagging reader): SIGUSR1 holds it, SIGHUP releases it (HotSpot
 * keeps SIGUSR2 for itself; the librdkafka reader worker takes the same pair). Held, it pauses its partitions and stops polling, so it fetches nothing until released. {@code
 * kchaos.hold=true} starts it held. At SIGTERM it stops polling and closes its client.
 */
public final class KchaosReader {
  /** How long a SIGTERM waits for the close before the JVM goes. */
  private static final long CLOSE_HOLD_MS = 10_000;
  /** How long a held reader sleeps between looks at whether it was released. */
  private static final long HELD_SLEEP_MS = 200;

  private static volatile boolean held;

  private KchaosReader() {}

  /** {@code kchaos.from}'s {@code 0=12,2=7} as next offsets by partition. */
  static Map<Integer, Long> positions(String text) {
    Map<Integer, Long> positions = new HashMap<>();
    for (String pair : text.split(",")) {
      if (pair.isEmpty()) {
        continue;
      }
      int equals = pair.indexOf('=');
      if (equals <= 0) {
        throw new IllegalArgumentException("kchaos.from: " + pair + " is not partition=offset");
      }
      positions.put(Integer.parseInt(pair.substring(0, equals)), Long.parseLong(pair.substring(equals + 1)));
    }
    return positions;
  }

  /** Assigns {@code consumer} the partitions {@code assigned}, each from its next offset in {@code positions}
   * (from the beginning where it has none): a reader's start, and a read-write transaction's consumer's. */
  static void assignFrom(
      KafkaConsumer<String, String> consumer, List<TopicPartition> assigned, Map<Integer, Long> positions) {
    consumer.assign(assigned);
    seekFrom(consumer, assigned, positions);
  }

  /** Seeks each of {@code partitions}, assigned to {@code consumer} already (by hand, or by its group in a
   * rebalance listener), to its next offset in {@code positions}, or to the beginning where it has none. */
  static void seekFrom(
      KafkaConsumer<String, String> consumer, Collection<TopicPartition> partitions, Map<Integer, Long> positions) {
    for (TopicPartition tp : partitions) {
      Long offset = positions.get(tp.partition());
      if (offset == null) {
        consumer.seekToBeginning(Collections.singletonList(tp));
      } else {
        consumer.seek(tp, offset);
      }
    }
  }

  static void run(Properties worker, Properties settings) {
    String topic = worker.getProperty("kchaos.topic");
    int partitions = Integer.parseInt(worker.getProperty("kchaos.partitions"));
    String from = worker.getProperty("kchaos.from", "");
    Map<Integer, Long> positions = positions(from);
    held = "true".equals(worker.getProperty("kchaos.hold"));
    Signal.handle(new Signal("USR1"), signal -> held = true);
    Signal.handle(new Signal("HUP"), signal -> held = false);
    CountDownLatch done = KchaosProducer.stopOnSigterm(CLOSE_HOLD_MS);
    settings.setProperty("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
    settings.setProperty("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");

    KafkaConsumer<String, String> consumer = new KafkaConsumer<>(settings);
    List<TopicPartition> assigned = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      assigned.add(new TopicPartition(topic, p));
    }
    assignFrom(consumer, assigned, positions);
    KchaosGroupMember.emit("started", AppInfoParser.getVersion());
    KchaosGroupMember.emit("assign", KchaosGroupMember.partitions(assigned), from);
    KchaosGroupMember poller;
    try {
      poller = new KchaosGroupMember(consumer);
    } catch (NoSuchMethodException impossible) {
      throw new IllegalStateException(impossible);
    }
    boolean paused = false;
    long polled = 0;
    while (!KchaosProducer.stopping) {
      if (held != paused) {
        paused = held;
        if (paused) {
          consumer.pause(assigned);
        } else {
          consumer.resume(assigned);
        }
        KchaosGroupMember.emit(paused ? "hold" : "release");
        continue;
      }
      if (paused) {
        try {
          Thread.sleep(HELD_SLEEP_MS);
        } catch (InterruptedException interrupted) {
          break;
        }
        continue;
      }
      ConsumerRecords<String, String> records;
      try {
        records = poller.poll();
      } catch (WakeupException woken) {
        break;
      } catch (KafkaException error) {
        String[] what = KchaosProducer.described(error);
        KchaosGroupMember.emit("poll-error", what[0], what[1], "");
        continue;
      }
      for (ConsumerRecord<String, String> record : records) {
        KchaosProducer.written( // the batch's lines in one write, as the librdkafka reader's
            "poll",
            Integer.toString(record.partition()),
            Long.toString(record.offset()),
            KchaosGroupMember.text(record.key()),
            KchaosGroupMember.text(record.value()));
        polled++;
      }
      KchaosProducer.flush();
    }
    try {
      consumer.close();
    } catch (KafkaException error) {
      System.err.println("kchaos reader: close failed: " + error);
    }
    KchaosGroupMember.emit("stopped", Long.toString(polled));
    done.countDown();
    Runtime.getRuntime().halt(0);
  }
}
