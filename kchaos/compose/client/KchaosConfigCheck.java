import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Asks the release's own client whether it takes a run's producer and consumer settings, before any
 * broker starts: a user's {@code --producer-config} or {@code --consumer-config} the client would refuse
 * (or, for a name it does not know, ignore with a warning) is refused then, in the client's own words,
 * instead of failing every worker of a started cluster.
 *
 * <p>Arguments are {@code producer.name=value} and {@code consumer.name=value}: the settings kchaos's
 * workers would run with, the user's among them. For each side given it prints one line: {@code ok SIDE},
 * {@code unknown SIDE NAME} for a name the client does not know, or {@code refused SIDE MESSAGE} with the
 * message of what the client threw as it was built. Nothing connects: the container has no network, and
 * building a client only checks its settings; the JVM exits without closing what it built.
 */
public final class KchaosConfigCheck {
  private KchaosConfigCheck() {}

  public static void main(String[] args) {
    Properties producer = new Properties();
    Properties consumer = new Properties();
    for (String arg : args) {
      int equals = arg.indexOf('=');
      String name = arg.substring(0, equals);
      String value = arg.substring(equals + 1);
      if (name.startsWith("producer.")) {
        producer.setProperty(name.substring("producer.".length()), value);
      } else if (name.startsWith("consumer.")) {
        consumer.setProperty(name.substring("consumer.".length()), value);
      }
    }
    if (!producer.isEmpty()) {
      System.out.println(check("producer", producer, ProducerConfig.configNames()));
    }
    if (!consumer.isEmpty()) {
      System.out.println(check("consumer", consumer, ConsumerConfig.configNames()));
    }
    System.out.flush();
    System.exit(0);
  }

  /** The line for one side: its first unknown name, else whether its client could be built. */
  static String check(String side, Properties settings, Set<String> known) {
    List<String> unknown = new ArrayList<>();
    for (String name : settings.stringPropertyNames()) {
      if (!known.contains(name)) {
        unknown.add(name);
      }
    }
    if (!unknown.isEmpty()) {
      java.util.Collections.sort(unknown);
      return "unknown " + side + " " + unknown.get(0);
    }
    try {
      if (side.equals("producer")) {
        new KafkaProducer<>(settings, new StringSerializer(), new StringSerializer());
      } else {
        new KafkaConsumer<>(settings, new StringDeserializer(), new StringDeserializer());
      }
      return "ok " + side;
    } catch (RuntimeException error) {
      Throwable cause = error;
      while (cause.getCause() != null && cause.getCause() != cause) {
        cause = cause.getCause();
      }
      String message = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
      return "refused " + side + " " + message.replaceAll("[\\t\\r\\n]+", " ");
    }
  }
}
