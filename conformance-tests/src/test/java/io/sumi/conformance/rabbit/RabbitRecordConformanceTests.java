package io.sumi.conformance.rabbit;

import io.sumi.conformance.Scenario;
import java.util.Map;
import org.junit.jupiter.api.Order;

/** The catalogue on {@code @RabbitListener} record listeners. */
@Order(20)
class RabbitRecordConformanceTests extends RabbitCatalogueTests {

    @Override
    public String id() {
        return "rabbit-record";
    }

    @Override
    String shape() {
        return "record";
    }

    @Override
    public Map<Scenario, String> notApplicable() {
        return Map.of(
                Scenario.BAD_KEYS_IN_BATCH,
                "a record listener has no batch (the keyless and invalid-key rows cover it)");
    }
}
