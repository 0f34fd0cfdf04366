package io.sumi.jms;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;

/**
 * How Sumi's header names ({@code outbox-id}, {@code idempotency-key}, the configured
 * {@code sumi.consumer.key-headers}) are read from JMS message properties. The JMS specification
 * wants property names that are Java identifiers, so {@code outbox-id} is not one: a JMS client
 * refuses to set it (Artemis's does), though a message put on the broker by another protocol (AMQP
 * 1.0, Artemis core, a bridge from Kafka) may carry it. A header {@code a-b} is therefore looked
 * up, in order, as:
 * <ol>
 *   <li>{@code a-b}, the name itself (a message from a non-JMS producer or a bridge);</li>
 *   <li>{@code a_b}, every {@code -} replaced by {@code _}: the JMS-valid name, the one to send;</li>
 *   <li>{@code a_HYPHEN_b}, Apache Camel's JMS encoding of {@code -} (its default
 *   {@code JmsKeyFormatStrategy}), for messages bridged by Camel.</li>
 * </ol>
 * Sumi's own JMS sends (the key passthrough) write the JMS-valid name {@code idempotency_key}.
 */
public final class JmsPropertyNames {

    private JmsPropertyNames() {}

    /** The JMS-valid property name of a header name: {@code -} replaced by {@code _}. */
    public static String jmsName(String headerName) {
        return headerName.replace('-', '_');
    }

    /** The property names {@code headerName} is looked up as, in order. */
    public static List<String> candidates(String headerName) {
        List<String> names = new ArrayList<>(3);
        names.add(headerName);
        if (headerName.indexOf('-') >= 0) {
            names.add(jmsName(headerName));
            names.add(headerName.replace("-", "_HYPHEN_"));
        }
        return names;
    }

    /** The first non-null value of {@code headerName}'s {@link #candidates} in {@code properties}. */
    public static @Nullable Object lookup(String headerName, Function<String, @Nullable Object> properties) {
        for (String name : candidates(headerName)) {
            Object value = properties.apply(name);
            if (value != null) {
                return value;
            }
        }
        return null;
    }
}
