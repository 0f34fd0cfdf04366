package io.sumi.kafka.share.conformance;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.budget.BudgetRegistry;
import io.sumi.conformance.BudgetWindow;
import io.sumi.conformance.LedgerFaults;
import io.sumi.conformance.Role;
import io.sumi.conformance.Work;
import io.sumi.kafka.share.ShareGroups;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.ShareKafkaListenerContainerFactory;
import org.springframework.kafka.core.DefaultShareConsumerFactory;
import org.springframework.kafka.core.KafkaAdmin;
import org.springframework.kafka.core.KafkaTemplate;

/**
 * The share-group application of the catalogue, wired as docs/kafka-share-groups.md says: Spring
 * Boot, the starter and this module, share container factories of the application's with its
 * dead-letter recoverer ({@link DeadLetterTopicRecoverer}), two consumers a container (one for the
 * containers the stop and budget scenarios drive), each acquiring one record a poll.
 */
@SpringBootConfiguration(proxyBeanMethods = false)
@EnableAutoConfiguration
@Import(LedgerFaults.class)
public class ShareCatalogueApp {

    @Bean
    Work work(JdbcTemplate jdbc) {
        return new Work(jdbc);
    }

    @Bean
    ShareListeners shareListeners(Work work) {
        return new ShareListeners(work);
    }

    @Bean
    PlainShareListeners plainShareListeners(Work work) {
        return new PlainShareListeners(work);
    }

    @Bean
    SimpleMeterRegistry meters() {
        return new SimpleMeterRegistry();
    }

    @Bean
    BudgetWindow budgetWindow() {
        return new BudgetWindow();
    }

    /** The budget-bound listener's budget, on the window's clock (the starter's registry backs off). */
    @Bean
    BudgetRegistry budgetRegistry(BudgetWindow window, SimpleMeterRegistry meters) {
        return window.registry(meters, ShareCatalogueKafka.listenerId(Role.BUDGET));
    }

    @Bean
    DeadLetterTopicRecoverer deadLetterTopicRecoverer(KafkaTemplate<String, String> template) {
        return new DeadLetterTopicRecoverer(template);
    }

    @Bean
    ShareKafkaListenerContainerFactory<String, String> shareFactory(
            @Value("${spring.kafka.bootstrap-servers}") String brokers, DeadLetterTopicRecoverer recoverer) {
        return factory(brokers, recoverer, 2);
    }

    @Bean
    ShareKafkaListenerContainerFactory<String, String> shareSingleFactory(
            @Value("${spring.kafka.bootstrap-servers}") String brokers, DeadLetterTopicRecoverer recoverer) {
        return factory(brokers, recoverer, 1);
    }

    /** Every role's share group reads from its first record. */
    @Bean
    SmartLifecycle shareGroupsFromEarliest(KafkaAdmin kafkaAdmin) {
        return ShareGroups.fromEarliest(
                kafkaAdmin,
                Arrays.stream(Role.values())
                        .map(ShareCatalogueKafka::listenerId)
                        .toList());
    }

    private static ShareKafkaListenerContainerFactory<String, String> factory(
            String brokers, DeadLetterTopicRecoverer recoverer, int consumers) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, brokers);
        config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        // One record a poll: a consumer whose handler a scenario holds has acquired nothing else,
        // so the other copy of its key goes to the other consumer.
        config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 1);
        config.put("share.acquire.mode", "record_limit");
        ShareKafkaListenerContainerFactory<String, String> factory =
                new ShareKafkaListenerContainerFactory<>(new DefaultShareConsumerFactory<>(config));
        factory.setConcurrency(consumers);
        factory.setShareConsumerRecordRecoverer(recoverer);
        return factory;
    }
}
