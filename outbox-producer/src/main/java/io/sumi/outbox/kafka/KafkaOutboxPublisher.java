package io.sumi.outbox.kafka;

import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxRecord;
import io.sumi.outbox.PublishResult;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes outbox rows to Kafka: topic = the row's topic, key = its aggregate id (so the rows of
 * one aggregate share a partition and keep their order), value = its payload (UTF-8), headers =
 * {@code outbox-id} and the appended headers (UTF-8 values).
 *
 * <p>The producer is idempotent with {@code acks=all}, whatever the given configuration says
 * ({@code enable.idempotence=true}, {@code acks=all}, at most 5 requests in flight, String
 * serializers; a Spring Cloud Stream binder's ByteArray defaults cannot leak in).
 *
 * <p>Deadline. {@link #publish(List, Duration)} returns within its timeout (and within
 * {@code sendTimeout}): it hands records to the producer, then waits for every acknowledgement
 * until the deadline. A {@code send()} blocks while the topic's metadata is missing (unknown
 * topic, broker down, a new producer) for up to {@code max.block.ms}, which is set to half the
 * send timeout (or less, if configured so); a record is handed over only while at least that much
 * is left, so no send can overrun the deadline, and records whose turn comes later are reported as
 * failed without being sent. {@code delivery.timeout.ms} is the send timeout, so a record handed
 * over is acknowledged or failed by the producer within it. After a batch with records left
 * without an answer the producer is closed at once (its buffered records are dropped, so they are
 * not sent after their rows were recorded as failed) and a new one is made for the next batch. A
 * record reported as failed may still have reached Kafka (a request already on the wire): it is
 * sent again later, and consumers dedup it by its {@code outbox-id}.
 *
 * <p>The producer is created on the first publish. After an error that leaves a producer unusable
 * (fenced, out-of-order sequence, authentication or authorization, closed) it is closed and a new
 * one is created for the next batch. Thread-safe; {@link #close()} closes the producer.
 */
public final class KafkaOutboxPublisher implements OutboxPublisher, AutoCloseable {

    /** Default bound on waiting for a batch's acknowledgements. */
    public static final Duration DEFAULT_SEND_TIMEOUT = Duration.ofSeconds(30);

    private static final Logger log = LoggerFactory.getLogger(KafkaOutboxPublisher.class);

    private final Supplier<Producer<String, String>> producerFactory;
    private final Duration sendTimeout;
    private final Duration maxBlock;
    private @Nullable Producer<String, String> producer;
    private boolean closed;

    private KafkaOutboxPublisher(
            Supplier<Producer<String, String>> producerFactory, Duration sendTimeout, Duration maxBlock) {
        this.producerFactory = producerFactory;
        this.sendTimeout = sendTimeout;
        this.maxBlock = maxBlock;
    }

    /**
     * A publisher with a producer built from {@code producerConfig} (bootstrap servers, security,
     * client id, linger, ...), with the settings above forced.
     *
     * @throws IllegalArgumentException if the configuration asks for more than 5 requests in flight
     *     (the idempotent producer keeps order only up to 5)
     */
    public static KafkaOutboxPublisher create(Map<String, ?> producerConfig, Duration sendTimeout) {
        Map<String, Object> config = producerConfig(producerConfig, sendTimeout);
        // producerConfig always sets max.block.ms (from the send timeout).
        Number maxBlockMs = (Number) Objects.requireNonNull(config.get(ProducerConfig.MAX_BLOCK_MS_CONFIG));
        Duration maxBlock = Duration.ofMillis(maxBlockMs.longValue());
        return new KafkaOutboxPublisher(() -> new KafkaProducer<>(config), sendTimeout, maxBlock);
    }

    /** A publisher with {@link #DEFAULT_SEND_TIMEOUT}. */
    public static KafkaOutboxPublisher create(Map<String, ?> producerConfig) {
        return create(producerConfig, DEFAULT_SEND_TIMEOUT);
    }

    /**
     * A publisher on producers made by {@code producers} (for tests, or a producer configured by
     * other means); the caller answers for their idempotence, {@code acks=all} and a
     * {@code max.block.ms} well below the send timeout (records are handed over until the deadline).
     */
    public static KafkaOutboxPublisher of(Supplier<Producer<String, String>> producers, Duration sendTimeout) {
        return new KafkaOutboxPublisher(
                Objects.requireNonNull(producers, "producers"), positive(sendTimeout), Duration.ZERO);
    }

    /** The configuration {@link #create} gives the producer. */
    public static Map<String, Object> producerConfig(Map<String, ?> producerConfig, Duration sendTimeout) {
        positive(sendTimeout);
        Map<String, Object> config = new HashMap<>(producerConfig);
        Object inFlight = config.get(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION);
        if (inFlight != null && Integer.parseInt(inFlight.toString()) > 5) {
            throw new IllegalArgumentException("max.in.flight.requests.per.connection is " + inFlight
                    + "; the outbox's idempotent producer keeps per-aggregate order only with at most 5");
        }
        config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        // The dispatcher hands over a whole batch and then waits for every ack: lingering only adds
        // latency (measured: p95 lag halved and drain +5 % with 0 instead of Kafka's default 5 ms).
        config.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 0);
        config.remove(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
        // The application's producer interceptors (Sumi's key passthrough among them) are for its own
        // sends: an outbox record carries exactly the headers that were appended.
        config.remove(ProducerConfig.INTERCEPTOR_CLASSES_CONFIG);
        int timeoutMs = (int) Math.min(Integer.MAX_VALUE, sendTimeout.toMillis());
        int lingerMs = Integer.parseInt(String.valueOf(config.getOrDefault(ProducerConfig.LINGER_MS_CONFIG, 5)));
        int requestTimeoutMs =
                Integer.parseInt(String.valueOf(config.getOrDefault(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000)));
        // The producer refuses delivery.timeout.ms < linger.ms + request.timeout.ms.
        int maxRequestTimeout = Math.max(1, timeoutMs - lingerMs);
        config.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Math.min(requestTimeoutMs, maxRequestTimeout));
        config.put(
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG,
                Math.max(timeoutMs, lingerMs + Math.min(requestTimeoutMs, maxRequestTimeout)));
        // A send() blocks up to max.block.ms for missing metadata; records are handed over only while
        // that much of the batch's deadline is left, so half the send timeout leaves the other half
        // for handing over the batch. A smaller configured value is kept.
        long maxBlockMs = Math.max(1, timeoutMs / 2);
        Object configuredMaxBlock = producerConfig.get(ProducerConfig.MAX_BLOCK_MS_CONFIG);
        if (configuredMaxBlock != null) {
            maxBlockMs = Math.min(maxBlockMs, Long.parseLong(configuredMaxBlock.toString()));
        }
        config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, maxBlockMs);
        return config;
    }

    private static Duration positive(Duration timeout) {
        Objects.requireNonNull(timeout, "sendTimeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("The send timeout must be positive, was " + timeout);
        }
        return timeout;
    }

    /** {@link #publish(List, Duration)} with the whole send timeout. */
    @Override
    public PublishResult publish(List<OutboxRecord> records) {
        return publish(records, sendTimeout);
    }

    @Override
    public PublishResult publish(List<OutboxRecord> records, Duration timeout) {
        Duration budget = timeout.compareTo(sendTimeout) < 0 ? timeout : sendTimeout;
        Producer<String, String> current = producer();
        long deadline = System.nanoTime() + budget.toNanos();
        // A record is handed over only while a send blocked for max.block.ms would still end by
        // the deadline (when the budget is shorter than max.block.ms, while any time is left).
        long lastHandOver = budget.compareTo(maxBlock) > 0 ? deadline - maxBlock.toNanos() : deadline;
        Map<Long, CompletableFuture<Void>> acks = new LinkedHashMap<>();
        Map<Long, Throwable> failures = new LinkedHashMap<>();
        boolean unanswered = false;
        for (OutboxRecord record : records) {
            if (System.nanoTime() - lastHandOver >= 0) {
                failures.put(
                        record.id(),
                        new TimeoutException(
                                "Not sent: the batch's send timeout (" + budget + ") ran out before its turn"));
                unanswered = true;
                continue;
            }
            CompletableFuture<Void> ack = new CompletableFuture<>();
            try {
                // The callback settles ack, failures included; the returned future adds nothing.
                Future<RecordMetadata> unused = current.send(toProducerRecord(record), (metadata, exception) -> {
                    if (exception != null) {
                        ack.completeExceptionally(exception);
                    } else {
                        ack.complete(null);
                    }
                });
                acks.put(record.id(), ack);
            } catch (RuntimeException ex) {
                // Serialization, metadata or buffer space missing for max.block.ms, a closed or failed producer.
                failures.put(record.id(), ex);
            }
        }
        for (Map.Entry<Long, CompletableFuture<Void>> entry : acks.entrySet()) {
            try {
                entry.getValue().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (ExecutionException ex) {
                failures.put(entry.getKey(), ex.getCause() != null ? ex.getCause() : ex);
            } catch (TimeoutException ex) {
                failures.put(entry.getKey(), new TimeoutException("No acknowledgement from Kafka within " + budget));
                unanswered = true;
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                failures.put(entry.getKey(), ex);
                unanswered = true;
            }
        }
        if (unanswered || failures.values().stream().anyMatch(KafkaOutboxPublisher::breaksProducer)) {
            // Unanswered records must not be sent after their rows are recorded as failed: drop them.
            discard(current);
        }
        return failures.isEmpty() ? PublishResult.allSent() : PublishResult.failed(failures);
    }

    static ProducerRecord<String, String> toProducerRecord(OutboxRecord record) {
        List<org.apache.kafka.common.header.Header> headers = new ArrayList<>();
        record.brokerHeaders()
                .forEach((name, value) -> headers.add(new RecordHeader(name, value.getBytes(StandardCharsets.UTF_8))));
        return new ProducerRecord<>(record.topic(), null, record.aggregateId(), record.payload(), headers);
    }

    private static boolean breaksProducer(Throwable failure) {
        return failure instanceof ProducerFencedException
                || failure instanceof OutOfOrderSequenceException
                || failure instanceof AuthenticationException
                || failure instanceof AuthorizationException
                || failure instanceof UnsupportedVersionException
                || failure instanceof IllegalStateException
                || (failure instanceof KafkaException
                        && failure.getMessage() != null
                        && failure.getMessage().contains("closed"));
    }

    private synchronized Producer<String, String> producer() {
        if (closed) {
            throw new IllegalStateException("The Kafka outbox publisher is closed");
        }
        if (producer == null) {
            producer = producerFactory.get();
        }
        return producer;
    }

    private synchronized void discard(Producer<String, String> broken) {
        if (producer == broken) {
            producer = null;
            log.warn(
                    "Closing the outbox's Kafka producer after a batch with unanswered records or an error that leaves it"
                            + " unusable; the next batch gets a new one");
            try {
                broken.close(Duration.ZERO);
            } catch (RuntimeException ex) {
                log.debug("Closing the broken producer failed", ex);
            }
        }
    }

    /** The bound on sending one batch. */
    public Duration sendTimeout() {
        return sendTimeout;
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (producer != null) {
            producer.close(sendTimeout);
            producer = null;
        }
    }
}
