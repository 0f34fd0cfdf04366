package io.sumi.outbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.sumi.outbox.OutboxRecord;
import io.sumi.outbox.PublishResult;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

class KafkaOutboxPublisherTests {

    static OutboxRecord record(long id, String aggregateId, String payload) {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("trace-id", "t-" + id);
        headers.put("tenant-id", "acme");
        return new OutboxRecord(
                id, aggregateId, "orders", payload, headers, Instant.EPOCH, Instant.EPOCH, null, 0, null, null, null);
    }

    static String header(ProducerRecord<String, String> record, String name) {
        return new String(record.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
    }

    @Test
    void theProducerIsIdempotentAndDropsTheApplicationsInterceptors() {
        java.util.Map<String, Object> config = KafkaOutboxPublisher.producerConfig(
                java.util.Map.of(
                        "bootstrap.servers", "127.0.0.1:9092",
                        "interceptor.classes", "io.sumi.kafka.IdempotencyKeyProducerInterceptor",
                        "acks", "1"),
                Duration.ofSeconds(10));

        org.assertj.core.api.Assertions.assertThat(config)
                .doesNotContainKey("interceptor.classes")
                .containsEntry("acks", "all")
                .containsEntry("enable.idempotence", true);
    }

    @Test
    void recordsCarryTheAggregateIdAsKeyAndTheOutboxIdAndAppendedHeaders() {
        MockProducer<String, String> producer =
                new MockProducer<>(true, null, new StringSerializer(), new StringSerializer());
        KafkaOutboxPublisher publisher = KafkaOutboxPublisher.of(() -> producer, Duration.ofSeconds(5));

        PublishResult result =
                publisher.publish(List.of(record(7, "order-1", "{\"a\":1}"), record(8, "order-1", "{\"a\":2}")));

        assertThat(result.failures()).isEmpty();
        List<ProducerRecord<String, String>> sent = producer.history();
        assertThat(sent).extracting(ProducerRecord::topic).containsOnly("orders");
        assertThat(sent).extracting(ProducerRecord::key).containsOnly("order-1");
        assertThat(sent).extracting(ProducerRecord::value).containsExactly("{\"a\":1}", "{\"a\":2}");
        assertThat(header(sent.get(0), "outbox-id")).isEqualTo("7");
        assertThat(header(sent.get(1), "outbox-id")).isEqualTo("8");
        assertThat(header(sent.get(0), "trace-id")).isEqualTo("t-7");
        assertThat(header(sent.get(0), "tenant-id")).isEqualTo("acme");
    }

    @Test
    void publishWaitsForEveryAcknowledgementAndReportsTheFailedRecords() throws Exception {
        MockProducer<String, String> producer =
                new MockProducer<>(false, null, new StringSerializer(), new StringSerializer());
        KafkaOutboxPublisher publisher = KafkaOutboxPublisher.of(() -> producer, Duration.ofSeconds(10));

        CompletableFuture<PublishResult> result = CompletableFuture.supplyAsync(
                () -> publisher.publish(List.of(record(1, "a", "1"), record(2, "b", "2"), record(3, "c", "3"))));
        org.awaitility.Awaitility.await().until(() -> producer.history().size() == 3);
        producer.completeNext();
        assertThat(result).as("still waiting for the other acknowledgements").isNotDone();
        producer.errorNext(new RecordTooLargeException("too large"));
        assertThat(result).isNotDone();
        producer.completeNext();

        PublishResult published = result.get();
        assertThat(published.failures()).containsOnlyKeys(2L);
        assertThat(published.failures().get(2L)).isInstanceOf(RecordTooLargeException.class);
        assertThat(published.sent(1)).isTrue();
        assertThat(published.sent(3)).isTrue();
    }

    @Test
    void aRecordWithoutAcknowledgementWithinTheTimeoutCountsAsFailed() {
        MockProducer<String, String> producer =
                new MockProducer<>(false, null, new StringSerializer(), new StringSerializer());
        KafkaOutboxPublisher publisher = KafkaOutboxPublisher.of(() -> producer, Duration.ofMillis(200));

        PublishResult result = publisher.publish(List.of(record(1, "a", "1")));

        assertThat(result.failures().get(1L))
                .isInstanceOf(TimeoutException.class)
                .hasMessageContaining("No acknowledgement");
    }

    @Test
    void aFencedProducerIsReplacedForTheNextBatch() {
        List<MockProducer<String, String>> producers = new ArrayList<>();
        KafkaOutboxPublisher publisher = KafkaOutboxPublisher.of(
                () -> {
                    MockProducer<String, String> producer =
                            new MockProducer<>(true, null, new StringSerializer(), new StringSerializer());
                    producers.add(producer);
                    return producer;
                },
                Duration.ofSeconds(5));
        producers.clear();
        publisher.publish(List.of(record(1, "a", "1")));
        producers.get(0).sendException = new ProducerFencedException("fenced by a newer instance");

        PublishResult fenced = publisher.publish(List.of(record(2, "a", "2")));
        assertThat(fenced.failures().get(2L)).isInstanceOf(ProducerFencedException.class);

        assertThat(publisher.publish(List.of(record(3, "a", "3"))).failures()).isEmpty();
        assertThat(producers).hasSize(2);
        assertThat(producers.get(0).closed()).isTrue();
        publisher.close();
        assertThat(producers.get(1).closed()).isTrue();
    }

    /**
     * Issue 8, defect 5: with no broker to fetch metadata from, every send() blocked for
     * max.block.ms (the whole send timeout) one after the other, so a batch took batch size times
     * the send timeout.
     */
    @Test
    void anUnreachableBrokerDoesNotHoldABatchPastItsSendTimeout() throws Exception {
        int closedPort;
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0)) {
            closedPort = socket.getLocalPort();
        }
        List<OutboxRecord> batch = new ArrayList<>();
        for (long id = 1; id <= 10; id++) {
            batch.add(record(id, "agg-" + id, "p" + id));
        }
        try (KafkaOutboxPublisher publisher = KafkaOutboxPublisher.create(
                Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + closedPort), Duration.ofSeconds(1))) {
            PublishResult result = CompletableFuture.supplyAsync(() -> publisher.publish(batch))
                    .get(60, java.util.concurrent.TimeUnit.SECONDS);

            assertThat(result.failures())
                    .containsOnlyKeys(batch.stream().map(OutboxRecord::id).toList());
            // Bounded by the send timeout, not by 10 x max.block.ms: a send() blocks up to max.block.ms
            // (half the 1 s timeout), so at most two records are handed over; the others fail at their
            // turn without a send.
            assertThat(result.failures().values())
                    .filteredOn(failure -> String.valueOf(failure.getMessage()).contains("ran out before its turn"))
                    .hasSizeGreaterThanOrEqualTo(8);
        }
    }

    @Test
    void theProducerIsAlwaysIdempotentWithAcksAllAndStringSerializers() {
        Map<String, Object> config = KafkaOutboxPublisher.producerConfig(
                Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092",
                        ProducerConfig.ACKS_CONFIG, "1",
                        ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false",
                        ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
                                "org.apache.kafka.common.serialization.ByteArraySerializer",
                        ProducerConfig.TRANSACTIONAL_ID_CONFIG, "tx-"),
                Duration.ofSeconds(20));

        assertThat(config)
                .containsEntry(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092")
                .containsEntry(ProducerConfig.ACKS_CONFIG, "all")
                .containsEntry(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true)
                .containsEntry(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class)
                .containsEntry(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class)
                .containsEntry(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20_000)
                .containsEntry(ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000L)
                .doesNotContainKey(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
        // No linger by default (the dispatcher waits for every ack anyway); an explicit one is kept
        // and the request timeout leaves room for it within the delivery timeout.
        assertThat(config).containsEntry(ProducerConfig.LINGER_MS_CONFIG, 0);
        assertThat((Integer) config.get(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG))
                .isLessThanOrEqualTo(20_000);
        Map<String, Object> lingering =
                KafkaOutboxPublisher.producerConfig(Map.of(ProducerConfig.LINGER_MS_CONFIG, 5), Duration.ofSeconds(20));
        assertThat(lingering).containsEntry(ProducerConfig.LINGER_MS_CONFIG, 5);
        assertThat((Integer) lingering.get(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG))
                .isLessThanOrEqualTo(20_000 - 5);
        assertThatIllegalArgumentException()
                .isThrownBy(() -> KafkaOutboxPublisher.producerConfig(
                        Map.of(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 10), Duration.ofSeconds(20)))
                .withMessageContaining("at most 5");
        KafkaOutboxPublisher.create(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092"))
                .close();
    }
}
