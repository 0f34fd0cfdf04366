package io.sumi.conformance.kafka;

import io.sumi.conformance.Scenario;
import java.util.Map;
import org.junit.jupiter.api.Order;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.TestPropertySource;

/** The catalogue on the record listeners with the poll-level claim ({@code sumi.kafka.poll-claim=true}). */
@Order(12)
@TestPropertySource(properties = "sumi.kafka.poll-claim=true")
@DirtiesContext(classMode = DirtiesContext.ClassMode.AFTER_CLASS)
class KafkaPollClaimConformanceTests extends KafkaCatalogueTests {

    @Override
    public String id() {
        return "kafka-poll-claim";
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
                "a record listener has no batch (the keyless and invalid-key rows cover it; a poll with"
                        + " bad keys is the ordinary path, docs/kafka-poll-claim.md)",
                Scenario.BAD_KEY_TRANSACTED_CONTAINER,
                "the poll claim refuses containers with a transaction manager at start-up"
                        + " (PollClaimContainerCheck)");
    }
}
