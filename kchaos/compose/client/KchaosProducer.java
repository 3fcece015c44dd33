import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
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
 * <p>Stdout is one tab-separated line per event, flushed as it is written, so what the process printed
 * before it died is what the harness records; each is its kind, the clock ({@link #line}), then its fields:
 * {@code started VERSION}, {@code invoke VALUE PARTITION}
 * (before send()), {@code ok VALUE PARTITION OFFSET}, {@code error VALUE PARTITION EXCEPTION MESSAGE} (the
 * callback's exception), {@code refused VALUE PARTITION EXCEPTION MESSAGE} (thrown by send() itself: the
 * record never reached the client's buffer), {@code stopped SENT OUTSTANDING}. The client's own logging goes
 * to stderr.
 *
 * <p>{@code kchaos.mode=txn} makes it the transactional worker instead ({@link KchaosTransactions}).
 *
 * <p>Only producer calls every kafka-clients from 0.11 to 4.3 has are used (the constructor taking
 * Properties, send with a Callback), so the same source compiles against each release's jar.
 */
public final class KchaosProducer {
  private static final String PREFIX = "kchaos.";
  /** How far behind schedule sends may fall and still be made up (as the librdkafka producer's Pacer). */
  private static final long MAX_LAG_NS = TimeUnit.MILLISECONDS.toNanos(100);

  private static final PrintStream OUT =
      new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), 1 << 16), false);

  /** Set by SIGTERM (`stopOnSigterm`): the worker, of either mode, ends what it is doing and exits. */
  static volatile boolean stopping;

  private KchaosProducer() {}

  /**
   * One event line: its kind, then System.nanoTime() (the host's CLOCK_MONOTONIC, the harness's clock too,
   * so it orders this event against other processes' by when it happened, not when the line arrived),
   * then the fields. Synchronized so the main thread's invokes and the client's callbacks never interleave.
   */
  static synchronized void line(String kind, String... fields) {
    StringBuilder text = new StringBuilder(kind).append('\t').append(System.nanoTime());
    for (String field : fields) {
      text.append('\t').append(field);
    }
    OUT.print(text.append('\n'));
    OUT.flush();
  }

  /** An exception's words on one line: a tab or newline in a message would break the line protocol. */
  static String[] described(Throwable error) {
    String message = error.getMessage() == null ? "" : error.getMessage();
    return new String[] {error.getClass().getSimpleName(), message.replaceAll("[\\t\\r\\n]+", " ")};
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
    AtomicLong outstanding = new AtomicLong();
    long sent = 0;
    long nextAt = System.nanoTime();
    while (!stopping && (limit < 0 || sent < limit)) {
      if (intervalNs > 0) {
        long now = System.nanoTime();
        if (nextAt < now - MAX_LAG_NS) {
          nextAt = now; // behind schedule (a stalled client): carry on from now
        }
        if (nextAt > now) {
          LockSupport.parkNanos(nextAt - now);
          continue;
        }
        nextAt += intervalNs;
      }
      String value = process + "-" + sent;
      int target = (int) (sent % partitions);
      String partition = Integer.toString(target);
      sent++;
      line("invoke", value, partition);
      outstanding.incrementAndGet();
      try {
        producer.send(
            new ProducerRecord<>(topic, target, value, value),
            (metadata, error) -> {
              if (error == null) {
                line("ok", value, partition, Long.toString(metadata.offset()));
              } else {
                String[] what = described(error);
                line("error", value, partition, what[0], what[1]);
              }
              outstanding.decrementAndGet();
            });
      } catch (RuntimeException error) {
        outstanding.decrementAndGet();
        String[] what = described(error);
        line("refused", value, partition, what[0], what[1]);
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
