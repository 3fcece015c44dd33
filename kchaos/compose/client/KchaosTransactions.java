import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * kchaos's transactional producer as a process of its own ({@code kchaos.mode=txn}): the Java client's
 * side of {@code --workload txn}, writing what the librdkafka transactional workload writes
 * (kchaos/workloads/transactions.py) so the same checks judge it.
 *
 * <p>Each transaction writes 1 to {@code kchaos.txn.records} records to consecutive partitions from a random
 * first one, the n-th transaction is {@code <process>-txn-<n>}, its i-th record's value {@code <txn>-<i>}
 * and every record's key the transaction id; it is planned to abort with probability {@code
 * kchaos.txn.abort.ratio}. The plan is drawn from {@code kchaos.seed} and the process name by Java's own
 * Random: the same seed plans the same transactions for this client, not the same as librdkafka's.
 * Transactions start {@code kchaos.interval.us} apart; {@code kchaos.drain.ms} bounds how long a SIGTERM
 * waits for the transaction under way to end.
 *
 * <p>Errors are handled as the KafkaProducer javadoc says: ProducerFencedException,
 * OutOfOrderSequenceException and AuthorizationException are fatal (as are UnsupportedVersionException and
 * an IllegalStateException, the client refusing the call in its state): the producer is closed and a new
 * one's initTransactions fences it and aborts what it left open; any other KafkaException aborts the
 * transaction. A commit that timed out may have happened: it is asked again, as the javadoc allows, and
 * after the last attempt the producer is replaced, since the client refuses to abort a commit it has not
 * finished. A transaction planned to commit whose records were not all acknowledged is aborted without
 * asking to commit, so its fate is definite.
 *
 * <p>{@code kchaos.txn.on.timeout} ({@code --txn-on-timeout}) says what the application does when its
 * commit times out: {@code retry}, as above; or {@code restart}, the javadoc's other option: "It is safe to
 * retry in either case, but it is not possible to attempt a different operation (such as abortTransaction)
 * since the commit may already be in the progress of completing. If not retrying, the only option is to
 * close the producer." So the producer is closed at once and a new one with the same transactional.id
 * starts, as an application's supervisor would; its initTransactions fences the old one and aborts what it
 * left open, and the worker goes on with the next transaction. An abort that timed out replaces the
 * producer under every policy; the {@code restart} line's message then begins {@code
 * txn-on-timeout=restart after the commit (or abort) of TXN timed out}, so the history says the application
 * chose it. {@code abort} is refused before a worker starts (kchaos/model/txn_on_timeout.py); any value but
 * these two ends the worker with exit status 2.
 *
 * <p>Lines, tab-separated, beside KchaosProducer's {@code started}: {@code begun TXN TRANSACTIONAL_ID},
 * {@code begin-failed TXN EXCEPTION MESSAGE}, {@code invoke TXN VALUE PARTITION}, {@code ok TXN VALUE
 * PARTITION OFFSET}, {@code error TXN VALUE PARTITION EXCEPTION MESSAGE}, {@code refused TXN VALUE
 * PARTITION EXCEPTION MESSAGE}, {@code commit TXN PROTOCOL} and {@code abort TXN PROTOCOL} (before the
 * call; PROTOCOL is the transaction protocol the client's EndTxn will use, see {@link #protocol}), {@code
 * committed TXN}, {@code aborted TXN}, {@code commit-error TXN EXCEPTION MESSAGE}, {@code abort-error TXN
 * EXCEPTION MESSAGE}, {@code restart EXCEPTION MESSAGE} (a new producer replaces a failed one), {@code
 * stopped BEGUN COMMITTED}; with {@code kchaos.txn.polls}, a read-write transaction's {@code assign
 * PARTITIONS FROM} and {@code poll TXN PARTITION OFFSET VALUE} ({@link KchaosTxnPolls}).
 *
 * <p>Only calls every kafka-clients from 0.11 to 4.3 has (initTransactions, beginTransaction, send, flush,
 * commitTransaction, abortTransaction, close); the protocol is read by reflection so a client without it
 * still compiles and runs.
 */
final class KchaosTransactions {

  private final Properties settings;
  private final String process;
  private final String topic;
  private final String transactionalId;
  private final long closeMs;
  /** Times a commit is asked for ({@code kchaos.commit.attempts}), as the librdkafka workload does. */
  private final int commitAttempts;
  /** Whether a commit or abort that timed out replaces the producer at once ({@code kchaos.txn.on.timeout}). */
  private final boolean restartOnTimeout;
  private KafkaProducer<String, String> producer;
  /** What its read-write transactions read ({@code kchaos.txn.polls}); null when they only write. */
  private KchaosTxnPolls polls;
  /** Why the producer must be replaced before the next transaction; null while it is usable. */
  private RuntimeException unusable;

  private KchaosTransactions(
      Properties settings, String process, String topic, int commitAttempts, boolean restartOnTimeout) {
    this.settings = settings;
    this.process = process;
    this.topic = topic;
    this.transactionalId = settings.getProperty("transactional.id");
    this.closeMs = Long.parseLong(settings.getProperty("max.block.ms", "60000"));
    this.commitAttempts = commitAttempts;
    this.restartOnTimeout = restartOnTimeout;
  }

  /** Whether {@code kchaos.txn.on.timeout} is {@code restart} ({@code retry}: false); any other value ends the
   * worker with exit status 2, as a bad argument does. Shared with KchaosEosProcessor. */
  static boolean restartOnTimeout(Properties worker) {
    String policy = worker.getProperty("kchaos.txn.on.timeout");
    if ("restart".equals(policy) || "retry".equals(policy)) {
      return "restart".equals(policy);
    }
    System.err.println("kchaos: bad arguments: kchaos.txn.on.timeout must be retry or restart, not " + policy);
    System.exit(2);
    return false;
  }

  /** Why a producer whose commit or abort ({@code call}) of {@code txn} timed out is replaced under {@code
   * restart}: a TimeoutException whose message names the policy, for the {@code restart} line. */
  static RuntimeException restartAfter(String call, String txn, RuntimeException error) {
    return new TimeoutException(
        "txn-on-timeout=restart after the " + call + " of " + txn + " timed out: " + error.getMessage());
  }

  static void run(Properties worker, Properties settings) throws InterruptedException {
    boolean restart = restartOnTimeout(worker); // checked before the SIGTERM hook could hold an exit
    String process = worker.getProperty("kchaos.process");
    int partitions = Integer.parseInt(worker.getProperty("kchaos.partitions"));
    int maxRecords = Integer.parseInt(worker.getProperty("kchaos.txn.records"));
    double abortRatio = Double.parseDouble(worker.getProperty("kchaos.txn.abort.ratio"));
    long intervalNs = TimeUnit.MICROSECONDS.toNanos(Long.parseLong(worker.getProperty("kchaos.interval.us")));
    long drainMs = Long.parseLong(worker.getProperty("kchaos.drain.ms"));
    Random plan = new Random((worker.getProperty("kchaos.seed") + ":" + process).hashCode());
    KchaosProducer.useStrings(settings);
    // SIGTERM: end the transaction under way (commit or abort), then let the JVM go.
    CountDownLatch ended = KchaosProducer.stopOnSigterm(drainMs + 2000);

    int attempts = Integer.parseInt(worker.getProperty("kchaos.commit.attempts"));
    KchaosTransactions writer = new KchaosTransactions(
        settings, process, worker.getProperty("kchaos.topic"), attempts, restart);
    writer.polls = KchaosTxnPolls.of(worker, process, partitions);
    KchaosProducer.line("started", AppInfoParser.getVersion());
    long begun = 0;
    long committed = 0;
    long due = System.nanoTime();
    while (!KchaosProducer.stopping) {
      if (writer.producer == null || writer.unusable != null) {
        writer.replace();
        continue;
      }
      long now = System.nanoTime();
      if (due > now) {
        LockSupport.parkNanos(due - now);
        continue;
      }
      due = Math.max(due + intervalNs, now - intervalNs);
      int count = 1 + plan.nextInt(maxRecords);
      int first = plan.nextInt(partitions);
      boolean commit = plan.nextDouble() >= abortRatio;
      String txn = process + "-txn-" + begun;
      begun++;
      if (writer.transaction(txn, count, first, partitions, commit)) {
        committed++;
      }
    }
    if (writer.producer != null && writer.unusable != null) {
      writer.fence(); // a failed producer may have left its transaction open, holding read_committed readers
    }
    if (writer.polls != null) {
      writer.polls.close();
    }
    KchaosProducer.line("stopped", Long.toString(begun), Long.toString(committed));
    ended.countDown();
    // Not close(): every transaction has ended, and a close could wait on a coordinator that is gone.
    Runtime.getRuntime().halt(0);
  }

  /** A new producer with its transactions initialised, fencing the one it replaces; init retried until
   * it succeeds or the worker stops. */
  private void replace() {
    if (producer != null) {
      String[] why = KchaosProducer.described(unusable);
      KchaosProducer.line("restart", why[0], why[1]);
      closeQuietly(producer);
      producer = null;
    }
    unusable = null;
    while (!KchaosProducer.stopping) {
      KafkaProducer<String, String> fresh = new KafkaProducer<>(settings);
      try {
        fresh.initTransactions();
        producer = fresh;
        return;
      } catch (RuntimeException error) {
        System.err.println(process + ": initTransactions: " + error);
        closeQuietly(fresh);
      }
    }
  }

  /** One attempt to fence a failed producer's open transaction before the worker exits. */
  private void fence() {
    String[] why = KchaosProducer.described(unusable);
    KchaosProducer.line("restart", why[0], why[1]);
    closeQuietly(producer);
    producer = new KafkaProducer<>(settings);
    try {
      producer.initTransactions();
    } catch (RuntimeException error) {
      System.err.println(process + ": could not fence its last transaction: " + error);
    }
  }

  /** Begins, writes and ends one transaction, printing each step; true if it committed. */
  private boolean transaction(String txn, int count, int first, int partitions, boolean commit) {
    try {
      producer.beginTransaction();
    } catch (RuntimeException error) {
      unusable = error;
      String[] what = KchaosProducer.described(error);
      KchaosProducer.line("begin-failed", txn, what[0], what[1]);
      return false;
    }
    KchaosProducer.line("begun", txn, transactionalId);
    Map<String, Boolean> acknowledged = new ConcurrentHashMap<>();
    if (polls != null) {
      polls.plan(count);
    }
    for (int i = 0; i < count; i++) {
      if (polls != null) {
        polls.between(txn, i);
      }
      String value = txn + "-" + i;
      int target = (first + i) % partitions;
      String partition = Integer.toString(target);
      KchaosProducer.line("invoke", txn, value, partition);
      acknowledged.put(value, false);
      try {
        producer.send(
            new ProducerRecord<>(topic, target, txn, value),
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
    if (polls != null) {
      polls.between(txn, count);
    }
    try {
      producer.flush(); // every callback has run once it returns
    } catch (RuntimeException error) {
      System.err.println(process + ": flush: " + error);
    }
    if (unusable != null) {
      return false; // fatal: the next producer's initTransactions aborts this transaction
    }
    if (commit && !acknowledged.containsValue(false)) {
      return commit(txn);
    }
    abort(txn);
    return false;
  }

  /** Asks to commit, again after a timeout (it may have happened, and asking again is how the client finds
   * out); aborts after any other non-fatal error. */
  private boolean commit(String txn) {
    RuntimeException last = null;
    for (int attempt = 0; attempt < commitAttempts; attempt++) {
      KchaosProducer.line("commit", txn, protocol(producer));
      try {
        producer.commitTransaction();
        KchaosProducer.line("committed", txn);
        return true;
      } catch (RuntimeException error) {
        last = error;
        String[] what = KchaosProducer.described(error);
        KchaosProducer.line("commit-error", txn, what[0], what[1]);
        if (fatal(error)) {
          unusable = error;
          return false;
        }
        if (!(error instanceof TimeoutException)) {
          abort(txn);
          return false;
        }
        if (restartOnTimeout) {
          unusable = restartAfter("commit", txn, error); // the javadoc's other option: close the producer
          return false;
        }
      }
    }
    unusable = last; // a commit that timed out may only be retried, never aborted: a new producer aborts it
    return false;
  }

  private void abort(String txn) {
    KchaosProducer.line("abort", txn, protocol(producer));
    try {
      producer.abortTransaction();
      KchaosProducer.line("aborted", txn);
    } catch (RuntimeException error) {
      unusable = restartOnTimeout && error instanceof TimeoutException ? restartAfter("abort", txn, error) : error;
      String[] what = KchaosProducer.described(error);
      KchaosProducer.line("abort-error", txn, what[0], what[1]);
    }
  }

  /** The javadoc's fatal errors, anywhere in the cause chain (a client may wrap them). */
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

  /**
   * The transaction protocol the client's next EndTxn uses, as its own state says: {@code 2} or {@code 1}
   * from TransactionManager.isTransactionV2Enabled() (kafka-clients 4.0+, where that flag, read when
   * commit or abort begins, is what lifts the EndTxn request's cap of version 4 to the version 5 of
   * KIP-890's epoch bump per transaction); {@code none} for a client whose TransactionManager has no such
   * method (before 4.0: protocol 1 only); {@code unknown} if it cannot be read.
   */
  static String protocol(KafkaProducer<?, ?> client) {
    try {
      Field field = KafkaProducer.class.getDeclaredField("transactionManager");
      field.setAccessible(true);
      Object manager = field.get(client);
      Method enabled;
      try {
        enabled = manager.getClass().getMethod("isTransactionV2Enabled");
      } catch (NoSuchMethodException absent) {
        return "none";
      }
      return Boolean.TRUE.equals(enabled.invoke(manager)) ? "2" : "1";
    } catch (ReflectiveOperationException | RuntimeException error) {
      return "unknown";
    }
  }

  /** Closes a producer being replaced, giving up after max.block.ms: a close that hangs on a coordinator
   * that is gone must not stop the worker. */
  private void closeQuietly(KafkaProducer<String, String> old) {
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
      closing.join(closeMs);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
