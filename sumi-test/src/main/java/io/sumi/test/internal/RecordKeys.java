package io.sumi.test.internal;

import io.sumi.consumer.HandlerDefinition;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.jspecify.annotations.Nullable;

/**
 * The key the kit files a Kafka record under, the same for a delivery it watched and for a record
 * it finds on a dead-letter topic.
 */
public final class RecordKeys {

    private RecordKeys() {}

    /** Sumi's default key: the {@code outbox-id} header, then {@code idempotency-key}, else the record's key. */
    public static String keyOf(ConsumerRecord<?, ?> record) {
        for (String name : HandlerDefinition.DEFAULT_KEY_HEADERS) {
            Header header = record.headers().lastHeader(name);
            if (header != null && header.value() != null) {
                return new String(header.value(), StandardCharsets.UTF_8);
            }
        }
        return String.valueOf(text(record.key()));
    }

    private static @Nullable String text(@Nullable Object value) {
        return value instanceof byte[] bytes
                ? new String(bytes, StandardCharsets.UTF_8)
                : (value == null ? null : value.toString());
    }
}
