package io.sumi.test;

import io.sumi.test.internal.DeadLetterReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.awaitility.Awaitility;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;

/**
 * Duplicate delivery on Kafka, in one line:
 *
 * <pre>{@code
 * sumi.kafka().send("mail.send", "key-1", payload).times(3).concurrently().acrossPartitions().andAwait();
 * }</pre>
 *
 * The copies are identical records (same key, payload and headers); the message key goes in the
 * {@code idempotency-key} header (Sumi's default key header; {@link Send#keyHeader} changes it) and
 * is the record key. They are sent with a producer of the kit's own, on the connection settings of
 * the application's {@code KafkaAdmin}, as bytes (a {@code String} payload as UTF-8). Settlement is
 * read from what the listeners did, never waited out: see {@link Sent#awaitSettled()}.
 */
public final class KafkaDuplicates implements AutoCloseable {

    private final Map<String, Object> connection;
    private final KafkaListenerEndpointRegistry listeners;
    private final String deadLetterSuffix;
    private final DeadLetterReader deadLetters;
    private @Nullable KafkaProducer<byte[], byte[]> producer;
    private @Nullable SumiTest sumi;

    /**
     * @param connection the application's Kafka client settings (bootstrap servers, security)
     * @param listeners the application's listener containers: who listens to a topic
     * @param deadLetterSuffix the dead-letter topic of topic {@code t} is {@code t + deadLetterSuffix}
     *     ({@code -dlt}, Spring Kafka's default)
     */
    public KafkaDuplicates(
            Map<String, Object> connection, KafkaListenerEndpointRegistry listeners, String deadLetterSuffix) {
        this.connection = Map.copyOf(connection);
        this.listeners = listeners;
        this.deadLetterSuffix = deadLetterSuffix;
        this.deadLetters = new DeadLetterReader(this.connection);
    }

    void attach(SumiTest sumi) {
        this.sumi = sumi;
    }

    private SumiTest sumi() {
        return Objects.requireNonNull(sumi, "not attached to a SumiTest");
    }

    /** A message to send: to {@code topic}, under the message key {@code key}. */
    public Send send(String topic, String key, @Nullable Object payload) {
        return new Send(topic, key, bytes(payload));
    }

    private static byte @Nullable [] bytes(@Nullable Object payload) {
        if (payload == null || payload instanceof byte[]) {
            return (byte[]) payload;
        }
        if (payload instanceof CharSequence text) {
            return text.toString().getBytes(StandardCharsets.UTF_8);
        }
        throw new IllegalArgumentException("The kit sends String or byte[] payloads; serialize "
                + payload.getClass().getName() + " first (to JSON, say), as your producer would");
    }

    private synchronized KafkaProducer<byte[], byte[]> producer() {
        if (producer == null) {
            Map<String, Object> config = new HashMap<>(connection);
            config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
            config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
            config.put(ProducerConfig.ACKS_CONFIG, "all");
            config.put(ProducerConfig.LINGER_MS_CONFIG, 0);
            config.put(ProducerConfig.CLIENT_ID_CONFIG, "sumi-test-duplicates");
            producer = new KafkaProducer<>(config);
        }
        return producer;
    }

    /** Records dead-lettered since the test began by any of {@code groups}, for {@code key} (every key if null). */
    int deadLettered(Set<String> groups, @Nullable String key) {
        int count = 0;
        for (String topic : topicsOf(groups)) {
            count += deadLetters.count(topic + deadLetterSuffix, groups, key, sumi().testStart());
        }
        return count;
    }

    /** The topics the containers of {@code groups} (group or listener ids) listen to. */
    private List<String> topicsOf(Set<String> groups) {
        List<String> topics = new ArrayList<>();
        for (MessageListenerContainer container : listeners.getAllListenerContainers()) {
            if (groups.contains(container.getGroupId()) || groups.contains(container.getListenerId())) {
                String[] names = container.getContainerProperties().getTopics();
                if (names != null) {
                    topics.addAll(List.of(names));
                }
            }
        }
        return topics;
    }

    /** The consumer groups that listen to {@code topic}. */
    private List<String> groupsOf(String topic) {
        List<String> groups = new ArrayList<>();
        for (MessageListenerContainer container : listeners.getAllListenerContainers()) {
            String[] topics = container.getContainerProperties().getTopics();
            Pattern pattern = container.getContainerProperties().getTopicPattern();
            boolean listens = (topics != null && List.of(topics).contains(topic))
                    || (pattern != null && pattern.matcher(topic).matches());
            if (listens && container.getGroupId() != null) {
                groups.add(container.getGroupId());
            }
        }
        return groups;
    }

    @Override
    public synchronized void close() {
        if (producer != null) {
            producer.close(Duration.ofSeconds(5));
            producer = null;
        }
        deadLetters.close();
    }

    /** One message, to be sent one or more times. Not thread-safe; use it from the test's thread. */
    public final class Send {
        private final String topic;
        private final String key;
        private final byte @Nullable [] payload;
        private final Map<String, String> headers = new LinkedHashMap<>();
        private String keyHeader = "idempotency-key";
        private int copies = 1;
        private boolean concurrently;
        private boolean acrossPartitions;

        Send(String topic, String key, byte @Nullable [] payload) {
            this.topic = Objects.requireNonNull(topic, "topic");
            this.key = Objects.requireNonNull(key, "key");
            this.payload = payload;
        }

        /** Sends {@code copies} identical copies (at least 1). */
        public Send times(int copies) {
            if (copies < 1) {
                throw new IllegalArgumentException("copies must be at least 1: " + copies);
            }
            this.copies = copies;
            return this;
        }

        /** Sends the copies at the same moment, from a thread each (to partitions of their own with {@link #acrossPartitions()}). */
        public Send concurrently() {
            this.concurrently = true;
            return this;
        }

        /**
         * Sends copy {@code i} to partition {@code i % partitions}: the copies reach different
         * consumer threads (with listener concurrency above 1), as a producer retry after a
         * repartitioning, or a replay, can do. Without it every copy goes where the key hashes to.
         */
        public Send acrossPartitions() {
            this.acrossPartitions = true;
            return this;
        }

        /** The header the message key goes in ({@code idempotency-key} by default; {@code outbox-id} as the outbox writes it). */
        public Send keyHeader(String name) {
            this.keyHeader = Objects.requireNonNull(name, "name");
            return this;
        }

        /** An extra header on every copy. */
        public Send header(String name, String value) {
            headers.put(name, value);
            return this;
        }

        /** Sends the copies and waits until the broker has acknowledged each. */
        public Sent send() {
            KafkaProducer<byte[], byte[]> producer = producer();
            int partitions = acrossPartitions ? producer.partitionsFor(topic).size() : 0;
            List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>(copies);
            for (int i = 0; i < copies; i++) {
                ProducerRecord<byte[], byte[]> record = new ProducerRecord<>(
                        topic, acrossPartitions ? i % partitions : null, key.getBytes(StandardCharsets.UTF_8), payload);
                record.headers().add(keyHeader, key.getBytes(StandardCharsets.UTF_8));
                headers.forEach((name, value) -> record.headers().add(name, value.getBytes(StandardCharsets.UTF_8)));
                records.add(record);
            }
            try {
                if (concurrently && copies > 1) {
                    sendConcurrently(producer, records);
                } else {
                    for (ProducerRecord<byte[], byte[]> record : records) {
                        producer.send(record).get(30, TimeUnit.SECONDS);
                    }
                }
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("Interrupted while sending to " + topic, ex);
            } catch (ExecutionException | TimeoutException ex) {
                throw new IllegalStateException("Could not send to " + topic + ": " + ex.getMessage(), ex);
            }
            return new Sent(topic, key, copies);
        }

        /** Sends the copies and waits until they are settled ({@link Sent#awaitSettled()}). */
        public Sent andAwait() {
            return send().awaitSettled();
        }

        private void sendConcurrently(
                KafkaProducer<byte[], byte[]> producer, List<ProducerRecord<byte[], byte[]>> records)
                throws InterruptedException, ExecutionException, TimeoutException {
            ExecutorService threads = Executors.newFixedThreadPool(records.size());
            try {
                CountDownLatch start = new CountDownLatch(1);
                List<Future<?>> sends = new ArrayList<>();
                for (ProducerRecord<byte[], byte[]> record : records) {
                    sends.add(threads.submit(() -> {
                        start.await();
                        return producer.send(record).get(30, TimeUnit.SECONDS);
                    }));
                }
                start.countDown();
                for (Future<?> send : sends) {
                    send.get(60, TimeUnit.SECONDS);
                }
            } finally {
                threads.shutdownNow();
            }
        }
    }

    /** Copies that were sent. */
    public final class Sent {
        private final String topic;
        private final String key;
        private final int copies;

        Sent(String topic, String key, int copies) {
            this.topic = topic;
            this.key = key;
            this.copies = copies;
        }

        /** Waits up to {@link SumiTest#DEFAULT_TIMEOUT}; see {@link #awaitSettled(Duration)}. */
        public Sent awaitSettled() {
            return awaitSettled(SumiTest.DEFAULT_TIMEOUT);
        }

        /**
         * Waits until every listener of the topic has settled every copy: its listener call
         * returned (processed, or acknowledged as a duplicate) or the copy is in the dead-letter
         * topic, for as many deliveries as copies were sent; and the ledger holds no claim in
         * progress on the key for a consumer Sumi guards. Polls what the kit records and the
         * ledger; never sleeps a fixed time.
         *
         * @throws org.awaitility.core.ConditionTimeoutException if that does not happen in time
         *     (the message says what is missing)
         */
        public Sent awaitSettled(Duration timeout) {
            List<String> groups = groupsOf(topic);
            if (groups.isEmpty()) {
                throw new IllegalStateException("No @KafkaListener container listens to " + topic);
            }
            Awaitility.await("the " + copies + " copies of key " + key + " on " + topic + " settled by " + groups)
                    .atMost(timeout)
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> groups.stream().allMatch(this::settled));
            return this;
        }

        private boolean settled(String group) {
            SumiTest sumi = sumi();
            String consumer = sumi.log().resolve(group);
            DeliveryLog.ConsumerStats stats = sumi.log().find(consumer);
            int acknowledged = stats == null ? 0 : stats.key(key).acknowledged();
            if (acknowledged >= copies) {
                return noClaimInProgress(stats);
            }
            int deadLettered = deadLettered(Set.of(group), key);
            return acknowledged + deadLettered >= copies && noClaimInProgress(stats);
        }

        private boolean noClaimInProgress(DeliveryLog.@Nullable ConsumerStats stats) {
            if (stats == null || !stats.guarded()) {
                return true;
            }
            return sumi().ledgerRow(stats.name(), key)
                    .map(row -> !ConsumerAssert.isLiveClaim(row))
                    .orElse(true);
        }

        public String key() {
            return key;
        }

        public int copies() {
            return copies;
        }
    }
}
