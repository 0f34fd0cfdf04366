package io.sumi.conformance.kafka;

import io.sumi.conformance.Scenario;
import java.util.Map;
import org.junit.jupiter.api.Order;

/** The catalogue on {@code @KafkaListener} record listeners. */
@Order(10)
class KafkaRecordConformanceTests extends KafkaCatalogueTests {

    @Override
    public String id() {
        return "kafka-record";
    }

    @Override
    String shape() {
        return "record";
    }

    @Override
    public Map<Scenario, String> notApplicable() {
        return Map.of(
                Scenario.MANUAL_REJECT,
                KafkaCatalogueTests.NO_REJECT,
                Scenario.MANUAL_MULTIPLE,
                KafkaCatalogueTests.NO_MULTIPLE,
                Scenario.BAD_KEYS_IN_BATCH,
                "a record listener has no batch (the keyless and invalid-key rows cover it)",
                Scenario.BAD_KEY_TRANSACTED_CONTAINER,
                "a Kafka container has no broker transaction that could undo a settlement (Kafka"
                        + " transactions are covered by the starter's KafkaTransactionsIntegrationTests)");
    }
}
