import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Set;
import java.util.TreeSet;

/**
 * Prints, one a line and sorted, the names of the broker's ConfigDef in the Kafka jars on the classpath:
 * every property a broker of that release knows (its log and topic defaults included). Where the
 * definitions live moved over the releases, so each place is tried in turn:
 * 4.x AbstractKafkaConfig.CONFIG_DEF, then KafkaConfig's (Scala object) configDef.
 */
public class BrokerConfigNames {
    public static void main(String[] args) throws Exception {
        Object configDef = fromStaticField("kafka.server.AbstractKafkaConfig", "CONFIG_DEF");
        if (configDef == null) {
            configDef = fromScalaObject("kafka.server.KafkaConfig$", "configDef");
        }
        if (configDef == null) {
            throw new IllegalStateException("no broker ConfigDef found on the classpath");
        }
        @SuppressWarnings("unchecked")
        Set<String> names = (Set<String>) configDef.getClass().getMethod("names").invoke(configDef);
        for (String name : new TreeSet<>(names)) {
            System.out.println(name);
        }
    }

    private static Object fromStaticField(String className, String field) throws Exception {
        Class<?> type;
        try {
            type = Class.forName(className);
        } catch (ClassNotFoundException absent) {
            return null;
        }
        Field found = type.getDeclaredField(field);
        found.setAccessible(true);
        return found.get(null);
    }

    private static Object fromScalaObject(String className, String member) throws Exception {
        Class<?> type = Class.forName(className);
        Object module = type.getField("MODULE$").get(null);
        // Scala names a private member used by the class beside it kafka$server$KafkaConfig$$configDef.
        for (Method method : type.getDeclaredMethods()) {
            if (method.getName().endsWith(member) && method.getParameterCount() == 0) {
                method.setAccessible(true);
                return method.invoke(module);
            }
        }
        Field found = type.getDeclaredField(member);
        found.setAccessible(true);
        return found.get(module);
    }
}
