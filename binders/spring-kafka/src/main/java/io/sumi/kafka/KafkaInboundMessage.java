package io.sumi.kafka;

import io.sumi.consumer.Fingerprints;
import io.sumi.consumer.InboundMessage;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.jspecify.annotations.Nullable;

/**
 * A Kafka {@link ConsumerRecord} as an {@link InboundMessage}. Header values are the raw bytes
 * ({@link #header}) or UTF-8 text ({@link #headers}, for SpEL); the fingerprint hashes the record
 * value as the broker delivered it when it is text or bytes.
 */
public final class KafkaInboundMessage implements InboundMessage {

    private final ConsumerRecord<?, ?> record;
    private @Nullable Map<String, @Nullable Object> headers;

    public KafkaInboundMessage(ConsumerRecord<?, ?> record) {
        this.record = record;
    }

    @Override
    public ConsumerRecord<?, ?> source() {
        return record;
    }

    @Override
    public @Nullable Object payload() {
        return record.value();
    }

    @Override
    public byte @Nullable [] header(String name) {
        Header header = record.headers().lastHeader(name);
        return header == null ? null : header.value();
    }

    @Override
    public Map<String, @Nullable Object> headers() {
        if (headers == null) {
            Map<String, @Nullable Object> map = new LinkedHashMap<>();
            for (Header header : record.headers()) {
                // Lossless: bytes that are not UTF-8 stay bytes (a key made of them is rejected).
                map.put(header.key(), InboundMessage.headerValue(header.value()));
            }
            headers = Collections.unmodifiableMap(map);
        }
        return headers;
    }

    @Override
    public @Nullable String fingerprint() {
        return Fingerprints.of(record.value());
    }

    @Override
    public String toString() {
        return record.topic() + "-" + record.partition() + "@" + record.offset();
    }
}
