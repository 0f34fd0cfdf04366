package io.sumi.faults.driver;

import io.sumi.outbox.OutboxHeaders;
import io.sumi.testing.KafkaBrokerProcess;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jspecify.annotations.Nullable;

/**
 * The Kafka mode's broker: a real broker as a JVM of its own ({@link KafkaBrokerProcess}), so that
 * it can be killed with SIGKILL and started again on the same ports and data.
 */
final class KafkaBroker implements Broker {

    private static final Duration READY = Duration.ofSeconds(90);

    private final KafkaBrokerProcess process;
    private final String topic;
    private final int partitions;
    private @Nullable KafkaProducer<String, String> publishing;

    KafkaBroker(Path dir, String classpath, String topic, int partitions) {
        // A small, quickly started JVM beside the application instances; started again if it
        // exits while the driver waits (a killed predecessor's port still held).
        this.process = new KafkaBrokerProcess(
                dir, classpath, "448m", List.of("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"), true);
        this.topic = topic;
        this.partitions = partitions;
    }

    @Override
    public void initAndStart() {
        process.formatAndStart(READY);
        process.createTopic(topic, partitions);
    }

    @Override
    public void crash() {
        process.kill9();
        process.start();
        process.awaitReady(READY);
    }

    @Override
    public void restart() {
        throw new UnsupportedOperationException("The Kafka mode crashes its broker; it has no graceful restart");
    }

    @Override
    public String address() {
        return process.bootstrapServers();
    }

    @Override
    public List<String> appArguments() {
        return List.of(
                "--spring.kafka.bootstrap-servers=" + process.bootstrapServers(),
                // The RabbitMQ mode's client stays off: no connection to anyone's RabbitMQ.
                "--spring.autoconfigure.exclude=org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration");
    }

    /**
     * The {@code outbox-id} header of every record in the topic, read from the beginning to the end
     * offsets of now: what the broker holds, to compare with the rows the outbox marked dispatched.
     */
    Set<String> outboxIdsInTopic() {
        Map<String, Object> config = Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                process.bootstrapServers(),
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
                false,
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG,
                5000);
        Set<String> ids = new HashSet<>();
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(info -> new TopicPartition(topic, info.partition()))
                    .toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofSeconds(30));
            long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
            while (partitions.stream().anyMatch(p -> consumer.position(p) < end.get(p))) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("Could not read topic " + topic + " to its end offsets " + end);
                }
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    Header header = record.headers().lastHeader(OutboxHeaders.OUTBOX_ID);
                    if (header != null) {
                        ids.add(new String(header.value(), StandardCharsets.UTF_8));
                    }
                }
            }
        }
        return ids;
    }

    /** The record the outbox's Kafka publisher sent for the order: key and payload the order id. */
    @Override
    public synchronized boolean publishDuplicate(String outboxId, String orderId) {
        try {
            if (publishing == null) {
                publishing = new KafkaProducer<>(
                        Map.of(
                                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, process.bootstrapServers(),
                                ProducerConfig.ACKS_CONFIG, "all",
                                ProducerConfig.MAX_BLOCK_MS_CONFIG, 5000,
                                ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 4000,
                                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 5000),
                        new StringSerializer(),
                        new StringSerializer());
            }
            ProducerRecord<String, String> record = new ProducerRecord<>(topic, orderId, orderId);
            record.headers().add(OutboxHeaders.OUTBOX_ID, outboxId.getBytes(StandardCharsets.UTF_8));
            publishing.send(record).get(10, TimeUnit.SECONDS);
            return true;
        } catch (Exception ex) {
            if (ex instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            closePublishing();
            return false;
        }
    }

    private synchronized void closePublishing() {
        if (publishing != null) {
            publishing.close(Duration.ofSeconds(1));
            publishing = null;
        }
    }

    @Override
    public void start() {
        process.start();
    }

    @Override
    public boolean alive() {
        return process.alive();
    }

    @Override
    public void stop() {
        closePublishing();
        process.kill9();
    }

    @Override
    public int starts() {
        return process.starts();
    }
}
