package io.sumi.conformance.kafka;

import io.sumi.conformance.Scenario;
import java.util.Map;
import org.junit.jupiter.api.Order;
import org.springframework.test.annotation.DirtiesContext;

/**
 * The catalogue on {@code @KafkaListener} batch listeners. Shares the record kind's context and
 * closes it after, so that the poll-claim context (same listener ids) never runs beside it.
 */
@Order(11)
@DirtiesContext(classMode = DirtiesContext.ClassMode.AFTER_CLASS)
class KafkaBatchConformanceTests extends KafkaCatalogueTests {

    @Override
    public String id() {
        return "kafka-batch";
    }

    @Override
    String shape() {
        return "batch";
    }

    @Override
    public Map<Scenario, String> notApplicable() {
        return Map.of(
                Scenario.MANUAL_REJECT,
                KafkaCatalogueTests.NO_REJECT,
                Scenario.MANUAL_MULTIPLE,
                KafkaCatalogueTests.NO_MULTIPLE,
                Scenario.BAD_KEY_TRANSACTED_CONTAINER,
                "a Kafka container has no broker transaction that could undo a settlement (Kafka"
                        + " transactions are covered by the starter's KafkaTransactionsIntegrationTests)",
                Scenario.ASYNC_FAILED_FUTURE,
                NO_ASYNC_BATCH,
                Scenario.ASYNC_FAILED_FUTURE_CONTROL,
                "Spring Kafka acknowledges a batch whose future failed and never redelivers it"
                        + " (MessagingMessageListenerAdapter.asyncFailure: its async retry takes single records only;"
                        + " tried: one run, no redelivery), and @RetryableTopic takes no batch listener");
    }

    @Override
    public Map<Scenario, String> notWritten() {
        return Map.of();
    }
}
