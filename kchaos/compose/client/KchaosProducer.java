import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * kchaos's producer as a process of its own: the Java client a run's `--client java` writes with.
 *
 * <p>Why a worker and not Kafka's VerifiableProducer: that tool prints an outcome per send but never the
 * send itself (no invoke before the client takes the record), so a record in flight when the process
 * dies leaves no trace; kchaos needs every send recorded before it is made, to call it indeterminate.
 *
 * <p>Arguments are {@code name=value}: {@code kchaos.process}, {@code kchaos.topic}, {@code
 * kchaos.partitions}, {@code kchaos.interval.us} (microseconds between sends, 0: as fast as the client
 * takes them), {@code kchaos.limit} (sends to make at most; absent: until stopped) and {@code
 * kchaos.drain.ms} (how long to wait for outstanding sends once stopped); every other pair is a producer
 * property. The value of the n-th send is {@code <process>-<n>}, its key the same, its partition n modulo
 * the partitions.
 *
 * <p>Stdout is one tab-separated line per event, so what the process printed before it died is what the
 * harness records: every invoke is flushed before its send is made (those due together in one write), an
 * outcome within {@link #FLUSH_MS} ({@link #heard}). A line ends with the ASCII record separator ({@link
 * #END}, which the harness splits on as on a newline), and each hand-over ({@link #flush}) with one newline
 * after its lines: when stdout went through Docker's log stream, which costs its engine a JSON record and a
 * write per newline, two lines a send took a core of the two from the brokers and the worker (0.53x against
 * 0.91x of Kafka's ProducerPerformance, measured alone). Stdout is now a file the harness reads (its
 * container's mount, kchaos/harness/client_container.py), and one write per hand-over is still the
 * cheapest. Each is its kind, the clock ({@link #line}), then its
 * fields: {@code started VERSION}, {@code invoke VALUE PARTITION} (before send()), {@code ok VALUE PARTITION OFFSET}, {@code error VALUE PARTITION EXCEPTION MESSAGE} (the
 * callback's exception), {@code refused VALUE PARTITION EXCEPTION MESSAGE} (thrown by send() itself: the
 * record never reached the client's buffer), {@code stopped SENT OUTSTANDING}. The client's own logging goes
 * to stderr.
 *
 * <p>{@code kchaos.mode=txn} makes it the transactional worker instead ({@link KchaosTransactions}), {@code
 * kchaos.mode=reader} the assigned reader ({@link KchaosReader}).
 *
 * <p>Only producer calls every kafka-clients from 0.11 to 4.3 has are used (the constructor taking
 * Properties, send with a Callback), so the same source compiles against each release's jar.
 */
public final class KchaosProducer {
  private static final String PREFIX = "kchaos.";
  /** How far behind schedule sends may fall and still be made up (as the librdkafka producer's Pacer). */
  private static final long MAX_LAG_NS = TimeUnit.MILLISECONDS.toNanos(100);
  /** Most sends made per write of their invokes: all that are due, up to this (unpaced: this many). */
  private static final int BATCH = 64;

  private static final PrintStream OUT =
      new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16), false);

  /** Set by SIGTERM (`stopOnSigterm`): the worker, of either mode, ends what it is doing and exits. */
  static volatile boolean stopping;

  private KchaosProducer() {}

  /**
   * One event line, handed over at once: its kind, then System.nanoTime() (the host's CLOCK_MONOTONIC, the
   * harness's clock too, so it orders this event against other processes' by when it happened, not when
   * the line arrived), then the fields. Synchronized so lines never interleave.
   */
  static synchronized void line(String kind, String... fields) {
    written(kind, fields);
    flush();
  }

  /** A line written after every outcome heard so far, and handed over by the next {@link #flush}. */
  static synchronized void written(String kind, String... fields) {
    drain();
    OUT.print(text(kind, fields));
    unended = true;
  }

  /** Hands every line so far to the harness, outcomes heard included, ended by a newline ({@link #END}). */
  static synchronized void flush() {
    drain();
    if (unended) {
      OUT.print('\n');
      unended = false;
    }
    OUT.flush();
  }

  /** What ends a line: the ASCII record separator; a newline ends each hand-over ({@link #flush}). */
  static final char END = '\u001e';

  /** Lines written since the last newline: the next {@link #flush} ends them with one. */
  private static boolean unended;

  /**
   * A send's outcome, heard on the client's I/O thread: stamped now, queued without a lock, and written by
   * the next {@link #written} or {@link #flush}, or by the flusher ({@link #flushEvery}) within {@link
   * #FLUSH_MS}. A worker killed meanwhile loses it, and the send stays indeterminate, never wrong. A write
   * and a flush per outcome, under a lock the sending thread also took, held the I/O thread up.
   */
  static void heard(String kind, String... fields) {
    HEARD.add(text(kind, fields));
  }

  private static String text(String kind, String... fields) {
    StringBuilder text = new StringBuilder(kind).append('\t').append(System.nanoTime());
    for (String field : fields) {
      text.append('\t').append(field);
    }
    return text.append(END).toString();
  }

  private static void drain() {
    for (String heard = HEARD.poll(); heard != null; heard = HEARD.poll()) {
      OUT.print(heard);
      unended = true;
    }
  }

  /** Outcome lines heard and not yet written ({@link #heard}). */
  private static final ConcurrentLinkedQueue<String> HEARD = new ConcurrentLinkedQueue<>();

  /** Longest an outcome line waits to be handed over. */
  static final long FLUSH_MS = 5;

  /** Starts the daemon that hands outcome lines over every {@link #FLUSH_MS} while nothing else does. */
  static void flushEvery() {
    Thread flusher =
        new Thread(
            () -> {
              while (true) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(FLUSH_MS));
                if (!HEARD.isEmpty()) {
                  flush();
                }
              }
            },
            "kchaos-flusher");
    flusher.setDaemon(true);
    flusher.start();
  }

  /**
   * An exception's words on one line: a tab, newline or record separator in a message would break the line
   * protocol.
   */
  static String[] described(Throwable error) {
    String message = error.getMessage() == null ? "" : error.getMessage();
    return new String[] {
      error.getClass().getSimpleName(), message.replaceAll("[\\t\\r\\n\\u001e]+", " ")
    };
  }

  /** Keys and values are text: a value is its process's name and sequence number. */
  static void useStrings(Properties settings) {
    settings.setProperty("key.serializer", "org.apache.kafka.common.serialization.StringSerializer");
    settings.setProperty("value.serializer", "org.apache.kafka.common.serialization.StringSerializer");
  }

  /**
   * On SIGTERM, sets {@link #stopping}, wakes the calling (main) thread and holds the JVM until the returned
   * latch is counted down (the worker has ended its sends or its transaction) or {@code holdMs} passed.
   */
  static CountDownLatch stopOnSigterm(long holdMs) {
    CountDownLatch done = new CountDownLatch(1);
    Thread main = Thread.currentThread();
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  stopping = true;
                  LockSupport.unpark(main);
                  try {
                    done.await(holdMs, TimeUnit.MILLISECONDS);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                  }
                }));
    return done;
  }

  /** Sends one record, its outcome printed by the client's callback (or at once, if send() throws). */
  private static void send(
      KafkaProducer<String, String> producer,
      String topic,
      String value,
      int target,
      AtomicLong outstanding) {
    String partition = Integer.toString(target);
    outstanding.incrementAndGet();
    try {
      producer.send(
          new ProducerRecord<>(topic, target, value, value),
          (metadata, error) -> {
            if (error == null) {
              heard("ok", value, partition, Long.toString(metadata.offset()));
            } else {
              String[] what = described(error);
              heard("error", value, partition, what[0], what[1]);
            }
            outstanding.decrementAndGet();
          });
    } catch (RuntimeException error) {
      outstanding.decrementAndGet();
      String[] what = described(error);
      heard("refused", value, partition, what[0], what[1]);
    }
  }

  public static void main(String[] args) throws InterruptedException {
    Properties settings = new Properties();
    Properties worker = new Properties();
    for (String arg : args) {
      int equals = arg.indexOf('=');
      if (equals <= 0) {
        System.err.println("kchaos producer: argument " + arg + " is not name=value");
        System.exit(2);
      }
      String name = arg.substring(0, equals);
      String value = arg.substring(equals + 1);
      (name.startsWith(PREFIX) ? worker : settings).setProperty(name, value);
    }
    if ("txn".equals(worker.getProperty("kchaos.mode"))) {
      KchaosTransactions.run(worker, settings); // the image has one entrypoint; a mode picks the worker
      return;
    }
    if ("reader".equals(worker.getProperty("kchaos.mode"))) {
      KchaosReader.run(worker, settings);
      return;
    }
    String process = worker.getProperty("kchaos.process");
    String topic = worker.getProperty("kchaos.topic");
    int partitions = Integer.parseInt(worker.getProperty("kchaos.partitions"));
    long intervalNs = TimeUnit.MICROSECONDS.toNanos(Long.parseLong(worker.getProperty("kchaos.interval.us")));
    long limit = Long.parseLong(worker.getProperty("kchaos.limit", "-1"));
    long drainMs = Long.parseLong(worker.getProperty("kchaos.drain.ms"));
    useStrings(settings);
    // SIGTERM: stop sending, then give the main thread its drain before the JVM goes.
    CountDownLatch drained = stopOnSigterm(drainMs + 2000);

    KafkaProducer<String, String> producer = new KafkaProducer<>(settings);
    line("started", AppInfoParser.getVersion());
    flushEvery();
    AtomicLong outstanding = new AtomicLong();
    long sent = 0;
    long nextAt = System.nanoTime();
    String[] values = new String[BATCH];
    while (!stopping && (limit < 0 || sent < limit)) {
      int due = BATCH;
      if (intervalNs > 0) {
        long now = System.nanoTime();
        if (nextAt < now - MAX_LAG_NS) {
          nextAt = now; // behind schedule (a stalled client): carry on from now
        }
        if (nextAt > now) {
          LockSupport.parkNanos(nextAt - now);
          continue;
        }
        due = (int) Math.min(BATCH, 1 + (now - nextAt) / intervalNs);
        nextAt += due * intervalNs;
      }
      if (limit >= 0) {
        due = (int) Math.min(due, limit - sent);
      }
      // Every send's invoke is handed over before the send is made, the batch's in one write.
      for (int i = 0; i < due; i++) {
        values[i] = process + "-" + (sent + i);
        written("invoke", values[i], Long.toString((sent + i) % partitions));
      }
      flush();
      for (int i = 0; i < due; i++, sent++) {
        send(producer, topic, values[i], (int) (sent % partitions), outstanding);
      }
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(drainMs);
    while (outstanding.get() > 0 && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    line("stopped", Long.toString(sent), Long.toString(outstanding.get()));
    drained.countDown();
    // Not close(): it would wait for sends the drain gave up on; the harness records those as indeterminate.
    Runtime.getRuntime().halt(0);
  }
}
