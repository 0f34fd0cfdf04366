package io.sumi.kafka;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.IdempotentHandler;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.listener.BatchMessageListener;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.ContainerProperties.AckMode;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.kafka.transaction.KafkaTransactionManager;

/**
 * Which containers the poll-level claim refuses at start-up: those whose offsets are committed
 * where Sumi cannot write the poll's completions first (Kafka transactions, auto-commit). Every
 * AckMode commits through the consumer and is accepted. No broker is needed: the check runs
 * before the containers start.
 */
class PollClaimContainerCheckTests {

    static class GuardedListener implements MessageListener<String, String> {
        @Override
        @IdempotentHandler(consumer = "guarded")
        public void onMessage(ConsumerRecord<String, String> data) {}
    }

    static class PlainListener implements MessageListener<String, String> {
        @Override
        public void onMessage(ConsumerRecord<String, String> data) {}
    }

    static class GuardedBatchListener implements BatchMessageListener<String, String> {
        @Override
        @IdempotentHandler(consumer = "guarded-batch")
        public void onMessage(List<ConsumerRecord<String, String>> data) {}
    }

    static ConcurrentMessageListenerContainer<String, String> container(
            Object listener, boolean autoCommit, AckMode ackMode) {
        DefaultKafkaConsumerFactory<String, String> consumers = new DefaultKafkaConsumerFactory<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                "127.0.0.1:9",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
                autoCommit));
        ContainerProperties properties = new ContainerProperties("topic");
        properties.setMessageListener(listener);
        properties.setAckMode(ackMode);
        ConcurrentMessageListenerContainer<String, String> container =
                new ConcurrentMessageListenerContainer<>(consumers, properties);
        container.setBeanName("c-" + ackMode);
        return container;
    }

    @ParameterizedTest
    @EnumSource(AckMode.class)
    void everyAckModeCommitsThroughTheConsumerAndIsAccepted(AckMode ackMode) {
        assertThatCode(() -> PollClaimContainerCheck.check(container(new GuardedListener(), false, ackMode)))
                .doesNotThrowAnyException();
    }

    @Test
    void autoCommitIsRefusedWithWhatToDo() {
        assertThatThrownBy(() -> PollClaimContainerCheck.check(container(new GuardedListener(), true, AckMode.BATCH)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("enable.auto.commit is true")
                .hasMessageContaining("sumi.kafka.poll-claim=false")
                .hasMessageContaining("docs/kafka-poll-claim.md");
    }

    @Test
    void autoCommitSetOnTheContainerIsRefusedToo() {
        ConcurrentMessageListenerContainer<String, String> container =
                container(new GuardedListener(), false, AckMode.BATCH);
        container.getContainerProperties().getKafkaConsumerProperties().put("enable.auto.commit", "true");
        assertThatThrownBy(() -> PollClaimContainerCheck.check(container))
                .hasMessageContaining("enable.auto.commit is true");
    }

    @Test
    void kafkaTransactionsAreRefused() {
        DefaultKafkaProducerFactory<String, String> producers =
                new DefaultKafkaProducerFactory<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:9"));
        producers.setTransactionIdPrefix("tx-");
        ConcurrentMessageListenerContainer<String, String> container =
                container(new GuardedListener(), false, AckMode.BATCH);
        container.getContainerProperties().setKafkaAwareTransactionManager(new KafkaTransactionManager<>(producers));
        assertThatThrownBy(() -> PollClaimContainerCheck.check(container))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Kafka transactions")
                .hasMessageContaining("'c-BATCH'");
    }

    @Test
    void containersWithoutAnIdempotentRecordListenerAreLeftAlone() {
        assertThatCode(() -> PollClaimContainerCheck.check(container(new PlainListener(), true, AckMode.BATCH)))
                .doesNotThrowAnyException();
        // A batch listener claims its batch in one round trip already; the poll claim does not apply.
        assertThatCode(() -> PollClaimContainerCheck.check(container(new GuardedBatchListener(), true, AckMode.BATCH)))
                .doesNotThrowAnyException();
    }
}
