import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * kchaos's consume-transform-produce processor as a process of its own: the Java client's side of {@code
 * --client java --workload eos}, doing what the librdkafka processors do (kchaos/workloads/eos.py) so its
 * lines become the same rows and the same exactly-once checks judge it.
 *
 * <p>A member of the input topic's group (read_committed; the rebalance listener and polling of {@link
 * KchaosGroupMember}) and a transactional producer ({@code transactional.id} fixed per processor). Per
 * polled batch: begin a transaction ({@code <process>-txn-<n>}), write one output record per input record to
 * the same partition of {@code kchaos.output} (value {@code <input value>@<txn>}, key the transaction id),
 * flush, add the consumer's positions to the transaction with the group's metadata
 * ({@code sendOffsetsToTransaction}, KIP-447, so the group's generation or member epoch fences a zombie),
 * and commit. A transaction that did not commit is aborted where it can be, and the consumer seeks back to
 * the group's committed offsets, so its inputs are processed again. Errors are the KafkaProducer javadoc's,
 * as in {@link KchaosTransactions}: a fatal one replaces the producer (the new one's initTransactions fences
 * the old and aborts what it left open), a commit that timed out is asked again, or, with {@code
 * kchaos.txn.on.timeout=restart}, the producer is replaced at once (a {@code restart} line naming the
 * policy; {@link KchaosTransactions}'s javadoc cites why those are the two options).
 *
 * <p>Lines (each kind, then the JVM's nanoTime, then its fields): {@link KchaosGroupMember}'s {@code started},
 * {@code assign}, {@code revoke}, {@code lost}, {@code poll}, {@code poll-error}; {@link
 * KchaosTransactions}'s {@code begun}, {@code begin-failed}, {@code invoke}, {@code ok}, {@code error},
 * {@code refused}, {@code commit}, {@code committed}, {@code commit-error}, {@code abort}, {@code aborted},
 * {@code abort-error}, {@code restart}; and {@code offsets TXN OFFSETS} (before sendOffsetsToTransaction),
 * {@code offsets-error TXN EXCEPTION MESSAGE}, {@code fate TXN ok|fail|info} (committed; definitely not;
 * asked to commit and not confirmed), {@code rewind PARTITIONS FROM MEMBER} (FROM: {@code partition=offset}
 * pairs, the offset empty where the group has none), {@code stopped NS TRANSACTIONS COMMITTED}.
 *
 * <p>Compiles against every release from 0.11 (the image builds all workers); the group metadata, the
 * committed offsets of a set and sendOffsetsToTransaction with metadata came in 2.4-2.5 and are found by
 * reflection. kchaos runs eos only from 2.5 on.
 */
public final class KchaosEosProcessor {
  private static final long CLOSE_HOLD_MS = 60_000;

  private final Properties producerSettings;
  private final String process;
  private final String output;
  private final String transactionalId;
  private final int commitAttempts;
  /** Whether a commit or abort that timed out replaces the producer at once ({@code kchaos.txn.on.timeout}). */
  private final boolean restartOnTimeout;
  private KafkaConsumer<String, String> consumer;
  private final Properties consumerSettings;
  private KchaosGroupMember member;
  private KafkaProducer<String, String> producer;
  private RuntimeException unusable;

  private KchaosEosProcessor(
      Properties consumerSettings,
      Properties producerSettings,
      String process,
      String output,
      int attempts,
      boolean restartOnTimeout) {
    this.consumerSettings = consumerSettings;
    this.producerSettings = producerSettings;
    this.process = process;
    this.output = output;
    this.transactionalId = producerSettings.getProperty("transactional.id");
    this.commitAttempts = attempts;
    this.restartOnTimeout = restartOnTimeout;
  }

  private void join(String topic) throws NoSuchMethodException {
    consumer = new KafkaConsumer<>(consumerSettings);
    member = new KchaosGroupMember(consumer);
    consumer.subscribe(java.util.Collections.singletonList(topic), member.listener());
  }

  private static RuntimeException unwrapped(ReflectiveOperationException error) {
    Throwable cause = error instanceof InvocationTargetException ? error.getCause() : error;
    return cause instanceof RuntimeException ? (RuntimeException) cause : new IllegalStateException(cause);
  }

  private void sendOffsets(Map<TopicPartition, OffsetAndMetadata> offsets) {
    try {
      Class<?> metadataClass = Class.forName("org.apache.kafka.clients.consumer.ConsumerGroupMetadata");
      Object metadata = KafkaConsumer.class.getMethod("groupMetadata").invoke(consumer);
      KafkaProducer.class
          .getMethod("sendOffsetsToTransaction", Map.class, metadataClass)
          .invoke(producer, offsets, metadata);
    } catch (ReflectiveOperationException error) {
      throw unwrapped(error);
    }
  }

  @SuppressWarnings("unchecked")
  private Map<TopicPartition, OffsetAndMetadata> committed(Set<TopicPartition> partitions) {
    try {
      return (Map<TopicPartition, OffsetAndMetadata>)
          KafkaConsumer.class.getMethod("committed", Set.class).invoke(consumer, partitions);
    } catch (ReflectiveOperationException error) {
      throw unwrapped(error);
    }
  }

  private static boolean fatal(Throwable error) {
    for (Throwable cause = error; cause != null; cause = cause.getCause() == cause ? null : cause.getCause()) {
      if (cause instanceof ProducerFencedException
          || cause instanceof OutOfOrderSequenceException
          || cause instanceof AuthorizationException
          || cause instanceof UnsupportedVersionException
          || cause instanceof IllegalStateException) {
        return true;
      }
    }
    return false;
  }

  private void closeProducer() {
    if (producer == null) {
      return;
    }
    KafkaProducer<String, String> old = producer;
    producer = null;
    Thread closing = new Thread(() -> {
      try {
        old.close();
      } catch (RuntimeException error) {
        System.err.println(process + ": close: " + error);
      }
    }, "close");
    closing.setDaemon(true);
    closing.start();
    try {
      closing.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** A new producer with its transactions initialised, fencing the one it replaces. */
  private void replace() {
    if (producer != null) {
      String[] why = KchaosProducer.described(unusable);
      KchaosProducer.line("restart", why[0], why[1]);
      closeProducer();
    }
    unusable = null;
    while (!KchaosProducer.stopping) {
      KafkaProducer<String, String> fresh = new KafkaProducer<>(producerSettings);
      try {
        fresh.initTransactions();
        producer = fresh;
        return;
      } catch (RuntimeException error) {
        System.err.println(process + ": initTransactions: " + error);
        producer = fresh;
        closeProducer();
      }
    }
  }

  /** One attempt to fence a failed producer's open transaction before the worker exits: it would hold
   * read_committed readers until it timed out. */
  private void fence() {
    String[] why = KchaosProducer.described(unusable);
    KchaosProducer.line("restart", why[0], why[1]);
    closeProducer();
    producer = new KafkaProducer<>(producerSettings);
    try {
      producer.initTransactions();
    } catch (RuntimeException error) {
      System.err.println(process + ": could not fence its last transaction: " + error);
    }
  }

  /** One transaction of one batch; returns its fate: ok, fail or info. */
  private String transaction(String txn, List<ConsumerRecord<String, String>> inputs) {
    try {
      producer.beginTransaction();
    } catch (RuntimeException error) {
      unusable = error;
      String[] what = KchaosProducer.described(error);
      KchaosProducer.line("begin-failed", txn, what[0], what[1]);
      return "fail";
    }
    KchaosProducer.line("begun", txn, transactionalId);
    Map<String, Boolean> acknowledged = new ConcurrentHashMap<>();
    for (ConsumerRecord<String, String> input : inputs) {
      String value = input.value() + "@" + txn;
      String partition = Integer.toString(input.partition());
      KchaosProducer.line("invoke", txn, value, partition);
      acknowledged.put(value, false);
      try {
        producer.send(
            new ProducerRecord<>(output, input.partition(), txn, value),
            (metadata, error) -> {
              if (error == null) {
                acknowledged.put(value, true);
                KchaosProducer.line("ok", txn, value, partition, Long.toString(metadata.offset()));
              } else {
                String[] what = KchaosProducer.described(error);
                KchaosProducer.line("error", txn, value, partition, what[0], what[1]);
              }
            });
      } catch (RuntimeException error) {
        String[] what = KchaosProducer.described(error);
        KchaosProducer.line("refused", txn, value, partition, what[0], what[1]);
        if (fatal(error)) {
          unusable = error;
        }
      }
    }
    try {
      producer.flush();
    } catch (RuntimeException error) {
      System.err.println(process + ": flush: " + error);
    }
    if (unusable != null) {
      return "fail"; // never asked to commit: the next producer's initTransactions aborts it
    }
    if (acknowledged.containsValue(false)) {
      abort(txn); // never asked to commit: not committed, whatever the abort says
      return "fail";
    }
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    try {
      for (TopicPartition tp : consumer.assignment()) {
        offsets.put(tp, new OffsetAndMetadata(consumer.position(tp)));
      }
      KchaosProducer.line("offsets", txn, KchaosGroupMember.offsets(offsets));
      sendOffsets(offsets);
    } catch (RuntimeException error) {
      String[] what = KchaosProducer.described(error);
      KchaosProducer.line("offsets-error", txn, what[0], what[1]);
      if (fatal(error)) {
        unusable = error;
        return "fail";
      }
      abort(txn);
      return "fail";
    }
    return commit(txn);
  }

  private String commit(String txn) {
    RuntimeException last = null;
    for (int attempt = 0; attempt < commitAttempts; attempt++) {
      KchaosProducer.line("commit", txn, KchaosTransactions.protocol(producer));
      try {
        producer.commitTransaction();
        KchaosProducer.line("committed", txn);
        return "ok";
      } catch (RuntimeException error) {
        last = error;
        String[] what = KchaosProducer.described(error);
        KchaosProducer.line("commit-error", txn, what[0], what[1]);
        if (fatal(error)) {
          unusable = error;
          return "info";
        }
        if (!(error instanceof TimeoutException)) {
          return abort(txn) ? "fail" : "info";
        }
        if (restartOnTimeout) {
          unusable = KchaosTransactions.restartAfter("commit", txn, error);
          return "info";
        }
      }
    }
    unusable = last; // a commit that timed out may only be retried; a new producer aborts it if it did not happen
    return "info";
  }

  private boolean abort(String txn) {
    KchaosProducer.line("abort", txn, KchaosTransactions.protocol(producer));
    try {
      producer.abortTransaction();
      KchaosProducer.line("aborted", txn);
      return true;
    } catch (RuntimeException error) {
      unusable = restartOnTimeout && error instanceof TimeoutException
          ? KchaosTransactions.restartAfter("abort", txn, error)
          : error;
      String[] what = KchaosProducer.described(error);
      KchaosProducer.line("abort-error", txn, what[0], what[1]);
      return false;
    }
  }

  /** Seeks back to the group's committed offsets; a consumer that cannot say rejoins as a new member. */
  private void rewind(String topic) throws NoSuchMethodException {
    Set<TopicPartition> assignment = consumer.assignment();
    try {
      Map<TopicPartition, OffsetAndMetadata> committed = committed(assignment);
      Map<Integer, String> from = new TreeMap<>();
      for (TopicPartition tp : assignment) {
        OffsetAndMetadata at = committed == null ? null : committed.get(tp);
        if (at != null) {
          consumer.seek(tp, at.offset());
          from.put(tp.partition(), Long.toString(at.offset()));
        } else {
          consumer.seekToBeginning(java.util.Collections.singletonList(tp));
          from.put(tp.partition(), "");
        }
      }
      StringBuilder text = new StringBuilder();
      for (Map.Entry<Integer, String> entry : from.entrySet()) {
        text.append(text.length() > 0 ? "," : "").append(entry.getKey()).append('=').append(entry.getValue());
      }
      KchaosProducer.line("rewind", KchaosGroupMember.partitions(assignment), text.toString(),
          member.groupMetadata()[0]);
    } catch (KafkaException error) {
      String[] what = KchaosProducer.described(error);
      KchaosProducer.line("poll-error", what[0], "cannot seek back to the committed offsets, rejoining: "
          + what[1]);
      try {
        consumer.close();
      } catch (KafkaException ignored) {
        // a new member takes its place either way
      }
      join(topic);
    }
  }

  /**
   * Arguments are {@code name=value}: {@code kchaos.process}, {@code kchaos.txn.prefix} (its transactions' names,
   * {@code <prefix>-txn-N}; default the process), {@code kchaos.topic}, {@code kchaos.output},
   * {@code kchaos.commit.attempts}, {@code kchaos.txn.on.timeout} ({@code retry} or {@code restart});
   * {@code consumer.X} and {@code producer.X} are the clients' properties.
   */
  public static void main(String[] args) throws NoSuchMethodException {
    Properties worker = new Properties();
    Properties consumerSettings = new Properties();
    Properties producerSettings = new Properties();
    for (String arg : args) {
      int equals = arg.indexOf('=');
      String name = equals > 0 ? arg.substring(0, equals) : "";
      String value = arg.substring(equals + 1);
      if (name.startsWith("kchaos.")) {
        worker.setProperty(name, value);
      } else if (name.startsWith("consumer.")) {
        consumerSettings.setProperty(name.substring("consumer.".length()), value);
      } else if (name.startsWith("producer.")) {
        producerSettings.setProperty(name.substring("producer.".length()), value);
      } else {
        System.err.println("kchaos eos processor: argument " + arg + " is not kchaos., consumer. or producer.");
        System.exit(2);
      }
    }
    consumerSettings.setProperty("key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
    consumerSettings.setProperty(
        "value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
    KchaosProducer.useStrings(producerSettings);
    boolean restart = KchaosTransactions.restartOnTimeout(worker); // before the SIGTERM hook could hold an exit
    CountDownLatch done = KchaosProducer.stopOnSigterm(CLOSE_HOLD_MS);
    String process = worker.getProperty("kchaos.process");
    // A restarted processor's transactions must not take its predecessor's names: the checks judge a
    // transaction by its name, and two of one name would merge an aborted one into a committed one.
    String txnPrefix = worker.getProperty("kchaos.txn.prefix", process);
    String topic = worker.getProperty("kchaos.topic");
    KchaosEosProcessor processor = new KchaosEosProcessor(
        consumerSettings, producerSettings, process, worker.getProperty("kchaos.output"),
        Integer.parseInt(worker.getProperty("kchaos.commit.attempts")),
        restart);
    processor.replace();
    processor.join(topic);
    KchaosProducer.line(
        "started", AppInfoParser.getVersion(), consumerSettings.getProperty("group.protocol", "classic"));
    long transactions = 0;
    long committed = 0;
    while (!KchaosProducer.stopping) {
      if (processor.producer == null || processor.unusable != null) {
        processor.replace();
        continue;
      }
      ConsumerRecords<String, String> records;
      try {
        records = processor.member.poll();
      } catch (KafkaException error) {
        String[] what = KchaosProducer.described(error);
        KchaosProducer.line("poll-error", what[0], what[1]);
        continue;
      }
      List<ConsumerRecord<String, String>> inputs = new ArrayList<>();
      for (ConsumerRecord<String, String> record : records) {
        KchaosProducer.line("poll", Integer.toString(record.partition()), Long.toString(record.offset()),
            KchaosGroupMember.text(record.key()), KchaosGroupMember.text(record.value()));
        inputs.add(record);
      }
      if (inputs.isEmpty()) {
        continue;
      }
      String txn = txnPrefix + "-txn-" + transactions;
      transactions++;
      String fate = processor.transaction(txn, inputs);
      KchaosProducer.line("fate", txn, fate);
      if ("ok".equals(fate)) {
        committed++;
      } else {
        processor.rewind(topic);
      }
    }
    if (processor.producer != null && processor.unusable != null) {
      processor.fence();
    }
    try {
      processor.consumer.close();
    } catch (KafkaException error) {
      System.err.println(process + ": consumer close: " + error);
    }
    KchaosProducer.line("stopped", Long.toString(transactions), Long.toString(committed));
    done.countDown();
    Runtime.getRuntime().halt(0);
  }
}
