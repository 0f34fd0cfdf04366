package io.sumi.kafka;

import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotencyContext;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * A Kafka {@link ProducerInterceptor} that carries the key of the message being handled on to the
 * records the handler produces, as the {@code idempotency-key} header (which Sumi's consumers read
 * when there is no {@code outbox-id}), so chained consumers deduplicate too.
 *
 * <p>Kafka calls {@code onSend} on the thread that calls {@code send}, so inside an idempotent
 * handler the current {@link IdempotencyContext} is there; outside one nothing is added. A record
 * that already has the header keeps its own. <strong>A handler that produces several distinct
 * messages to one consumer must give each its own key header</strong> (e.g. {@code key + ":" +
 * itemId}): with the inherited key, the downstream consumer would take the second for a duplicate
 * of the first.
 *
 * <p>Register it with the producer property {@code interceptor.classes} (the starter does, see
 * {@code sumi.kafka.passthrough.*}); the header name can be changed with the producer property
 * {@value #HEADER_CONFIG}.
 */
public class IdempotencyKeyProducerInterceptor implements ProducerInterceptor<Object, Object> {

    /** Producer property naming the header; default {@code idempotency-key}. */
    public static final String HEADER_CONFIG = "sumi.idempotency-key.header";

    private String headerName = HandlerDefinition.IDEMPOTENCY_KEY_HEADER;

    @Override
    public void configure(Map<String, ?> configs) {
        Object header = configs.get(HEADER_CONFIG);
        if (header != null && !header.toString().isBlank()) {
            headerName = header.toString();
        }
    }

    @Override
    public ProducerRecord<Object, Object> onSend(ProducerRecord<Object, Object> record) {
        IdempotencyContext.find().ifPresent(context -> {
            if (record.headers().lastHeader(headerName) == null) {
                record.headers().add(headerName, context.key().getBytes(StandardCharsets.UTF_8));
            }
        });
        return record;
    }

    @Override
    public void onAcknowledgement(RecordMetadata metadata, Exception exception) {}

    @Override
    public void close() {}
}
