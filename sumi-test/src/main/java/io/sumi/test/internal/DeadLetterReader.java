package io.sumi.test.internal;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.jspecify.annotations.Nullable;
import org.springframework.kafka.support.KafkaHeaders;

/**
 * Reads a dead-letter topic from its beginning to its end, without a consumer group (nothing is
 * committed, no listener's offsets move), and counts the records that Spring Kafka's
 * {@code DeadLetterPublishingRecoverer} published for given consumer groups. A topic that does
 * not exist has none (it is not created).
 */
public final class DeadLetterReader implements AutoCloseable {

    private final Map<String, Object> connection;
    private @Nullable AdminClient admin;

    public DeadLetterReader(Map<String, Object> connection) {
        this.connection = connection;
    }

    /** Records in {@code topic} from any of {@code groups} with {@code key} (any if null), published at or after {@code since}. */
    public synchronized int count(String topic, Set<String> groups, @Nullable String key, Instant since) {
        int count = 0;
        for (ConsumerRecord<byte[], byte[]> record : read(topic)) {
            String group = header(record, KafkaHeaders.DLT_ORIGINAL_CONSUMER_GROUP);
            if (record.timestamp() < since.toEpochMilli() || (group != null && !groups.contains(group))) {
                continue;
            }
            if (key == null || key.equals(RecordKeys.keyOf(record))) {
                count++;
            }
        }
        return count;
    }

    private List<ConsumerRecord<byte[], byte[]>> read(String topic) {
        try {
            if (!admin().listTopics().names().get(10, TimeUnit.SECONDS).contains(topic)) {
                return List.of();
            }
        } catch (Exception ex) {
            throw new IllegalStateException("Could not list the topics: " + ex.getMessage(), ex);
        }
        Map<String, Object> config = new HashMap<>(connection);
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false);
        config.remove(ConsumerConfig.GROUP_ID_CONFIG);
        List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config)) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (PartitionInfo info : consumer.partitionsFor(topic, Duration.ofSeconds(10))) {
                partitions.add(new TopicPartition(topic, info.partition()));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions, Duration.ofSeconds(10));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!reached(consumer, ends) && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(100)).forEach(records::add);
            }
        }
        return records;
    }

    private static boolean reached(KafkaConsumer<?, ?> consumer, Map<TopicPartition, Long> ends) {
        for (Map.Entry<TopicPartition, Long> end : ends.entrySet()) {
            if (consumer.position(end.getKey()) < end.getValue()) {
                return false;
            }
        }
        return true;
    }

    private static @Nullable String header(ConsumerRecord<?, ?> record, String name) {
        Header header = record.headers().lastHeader(name);
        return header == null || header.value() == null
                ? null
                : new String(header.value(), java.nio.charset.StandardCharsets.UTF_8);
    }

    private AdminClient admin() {
        if (admin == null) {
            admin = AdminClient.create(connection);
        }
        return admin;
    }

    @Override
    public synchronized void close() {
        if (admin != null) {
            admin.close(Duration.ofSeconds(5));
            admin = null;
        }
    }
}
