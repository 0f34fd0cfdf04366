package io.sumi.benchmarks.share;

import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.config.ShareKafkaListenerContainerFactory;
import org.springframework.kafka.core.DefaultShareConsumerFactory;
import org.springframework.transaction.annotation.Transactional;

/**
 * One case's application: one share-group {@code @KafkaListener} of {@code bench.consumers} consumers
 * on {@code bench.topics}, group {@code bench.group}; {@code bench.listener} picks it: {@code bare}
 * (no Sumi), {@code lease} or {@code tx} ({@code @IdempotentHandler} in that mode, the transactional
 * one {@code @Transactional} on the ledger's DataSource). The handlers only record the call
 * ({@link ShareRecorder}).
 */
@SpringBootConfiguration(proxyBeanMethods = false)
@EnableAutoConfiguration
public class ShareBenchApp {

    @Bean
    ShareKafkaListenerContainerFactory<String, String> benchShareFactory(
            @Value("${spring.kafka.bootstrap-servers}") String brokers,
            @Value("${bench.consumers}") int consumers,
            @Value("${bench.max-poll-records}") int maxPollRecords) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, maxPollRecords);
        ShareKafkaListenerContainerFactory<String, String> factory =
                new ShareKafkaListenerContainerFactory<>(new DefaultShareConsumerFactory<>(config));
        factory.setConcurrency(consumers);
        return factory;
    }

    /** Looked up at start, not injected: a dependency would be started first, with its containers. */
    @Bean
    static ShareGate shareGate(ObjectProvider<KafkaListenerEndpointRegistry> registry) {
        return new ShareGate(registry::getObject);
    }

    @Bean
    @ConditionalOnProperty(name = "bench.listener", havingValue = "bare")
    Bare bare() {
        return new Bare();
    }

    @Bean
    @ConditionalOnProperty(name = "bench.listener", havingValue = "lease")
    Lease lease() {
        return new Lease();
    }

    @Bean
    @ConditionalOnProperty(name = "bench.listener", havingValue = "tx")
    Tx tx() {
        return new Tx();
    }

    /** Without Sumi: the container acknowledges each record (ShareAckMode.EXPLICIT, its default). */
    public static class Bare {
        @KafkaListener(
                id = "bench",
                groupId = "${bench.group}",
                topics = "#{'${bench.topics}'.split(',')}",
                containerFactory = "benchShareFactory")
        public void on(ConsumerRecord<String, String> record) {
            ShareRecorder.handled(record);
        }
    }

    public static class Lease {
        @KafkaListener(
                id = "bench",
                groupId = "${bench.group}",
                topics = "#{'${bench.topics}'.split(',')}",
                containerFactory = "benchShareFactory")
        @IdempotentHandler(consumer = "bench-share", mode = IdempotencyMode.LEASE)
        public void on(ConsumerRecord<String, String> record) {
            ShareRecorder.handled(record);
        }
    }

    public static class Tx {
        @KafkaListener(
                id = "bench",
                groupId = "${bench.group}",
                topics = "#{'${bench.topics}'.split(',')}",
                containerFactory = "benchShareFactory")
        @IdempotentHandler(consumer = "bench-share", mode = IdempotencyMode.TRANSACTIONAL)
        @Transactional
        public void on(ConsumerRecord<String, String> record) {
            ShareRecorder.handled(record);
        }
    }
}
