import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

/**
 * The polls of the Java transactional worker's read-write transactions ({@code kchaos.txn.polls}, issue
 * 49): what kchaos/compose/rdkafka/transaction_polls.py does for the librdkafka worker, in the Java client.
 *
 * <p>A transaction polls its topic 0 to {@code kchaos.txn.polls} times, each poll at a slot drawn from
 * {@code kchaos.seed} and the process name by Java's own Random (before its first record, between two, or
 * after its last: the same slots for the same seed in this client, not librdkafka's). Its consumer, made
 * from the worker's {@code kchaos.read.*} arguments (the Java reader's settings, read_committed), is
 * assigned every partition of the topic from where the process got to (from the beginning at first); its
 * positions are the process's own, not committed with the transaction. With {@code
 * kchaos.txn.polls.via=subscribe} it subscribes instead, the only member of a group of its own, and at each
 * assignment the group hands it reads on from those positions as well. A poll takes what the consumer has
 * fetched within 10 ms, as a micro-step of the transaction rather than a drain.
 *
 * <p>Lines: {@code assign PARTITIONS FROM} at each new consumer or assignment, as the reader's; {@code poll TXN PARTITION
 * OFFSET VALUE} for each record a poll of transaction TXN returned. A consumer whose poll fails is closed
 * and a new one reads on from the positions at the next poll.
 */
final class KchaosTxnPolls {
  /** The worker's arguments that hold the consumer's settings. */
  static final String READ_PREFIX = "kchaos.read.";
  /** How long one poll waits for records, in milliseconds. */
  private static final long POLL_WAIT_MS = 10;

  private final int polls;
  private final Properties settings;
  private final String topic;
  private final int partitions;
  private final boolean subscribe;
  private final Random rng;
  private final Map<Integer, Long> positions = new TreeMap<>();
  private Map<Integer, Integer> due = new HashMap<>();
  private KafkaConsumer<String, String> consumer;
  private KchaosGroupMember poller;

  private KchaosTxnPolls(
      int polls, Properties settings, String topic, int partitions, boolean subscribe, Random rng) {
    this.polls = polls;
    this.settings = settings;
    this.topic = topic;
    this.partitions = partitions;
    this.subscribe = subscribe;
    this.rng = rng;
  }

  /** The polls {@code worker}'s arguments ask for; null when its transactions only write. */
  static KchaosTxnPolls of(Properties worker, String process, int partitions) {
    int polls = Integer.parseInt(worker.getProperty("kchaos.txn.polls", "0"));
    if (polls <= 0) {
      return null;
    }
    Properties settings = new Properties();
    for (String name : worker.stringPropertyNames()) {
      if (name.startsWith(READ_PREFIX)) {
        settings.setProperty(name.substring(READ_PREFIX.length()), worker.getProperty(name));
      }
    }
    settings.setProperty("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
    settings.setProperty("value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
    Random rng = new Random((worker.getProperty("kchaos.seed") + ":" + process + ":polls").hashCode());
    String via = worker.getProperty("kchaos.txn.polls.via", "assign");
    if (!via.equals("assign") && !via.equals("subscribe")) {
      throw new IllegalArgumentException("kchaos.txn.polls.via must be assign or subscribe, not " + via);
    }
    return new KchaosTxnPolls(
        polls, settings, worker.getProperty("kchaos.topic"), partitions, via.equals("subscribe"), rng);
  }

  /** Draws where the next transaction, of {@code records} records, polls. */
  void plan(int records) {
    due = new HashMap<>();
    int count = rng.nextInt(polls + 1);
    for (int i = 0; i < count; i++) {
      due.merge(rng.nextInt(records + 1), 1, Integer::sum);
    }
  }

  /** The polls due before record {@code slot} of {@code txn} (after its last at the record count). */
  void between(String txn, int slot) {
    for (int i = due.getOrDefault(slot, 0); i > 0; i--) {
      poll(txn);
    }
  }

  private void poll(String txn) {
    if (consumer == null) {
      connect();
    }
    ConsumerRecords<String, String> records;
    try {
      records = poller.poll();
    } catch (KafkaException error) {
      System.err.println("txn polls: its consumer failed, a new one reads on: " + error);
      close();
      return;
    }
    for (ConsumerRecord<String, String> record : records) {
      KchaosProducer.written(
          "poll", txn, Integer.toString(record.partition()), Long.toString(record.offset()), record.value());
      positions.put(record.partition(), record.offset() + 1);
    }
    KchaosProducer.flush();
  }

  private void connect() {
    consumer = new KafkaConsumer<>(settings);
    try {
      poller = new KchaosGroupMember(consumer, POLL_WAIT_MS);
    } catch (NoSuchMethodException impossible) {
      throw new IllegalStateException(impossible);
    }
    if (subscribe) {
      final KafkaConsumer<String, String> subscribed = consumer;
      consumer.subscribe(Collections.singletonList(topic), new ConsumerRebalanceListener() {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> revoked) {}

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> handed) {
          KchaosReader.seekFrom(subscribed, handed, positions);
          said(new ArrayList<>(handed));
        }
      });
      return;
    }
    List<TopicPartition> assigned = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      assigned.add(new TopicPartition(topic, p));
    }
    KchaosReader.assignFrom(consumer, assigned, positions);
    said(assigned);
  }

  /** The {@code assign} line of {@code assigned}, from the process's positions. */
  private void said(List<TopicPartition> assigned) {
    assigned.sort(Comparator.comparingInt(TopicPartition::partition));
    StringBuilder from = new StringBuilder();
    for (Map.Entry<Integer, Long> position : positions.entrySet()) { // a TreeMap: by partition
      from.append(from.length() > 0 ? "," : "").append(position.getKey()).append('=').append(position.getValue());
    }
    KchaosGroupMember.emit("assign", KchaosGroupMember.partitions(assigned), from.toString());
  }

  /** Closes the consumer (at the worker's end, or after it failed). */
  void close() {
    if (consumer != null) {
      try {
        consumer.close();
      } catch (RuntimeException error) {
        System.err.println("txn polls: close: " + error);
      }
      consumer = null;
    }
  }
}
