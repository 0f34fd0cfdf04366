package io.sumi.conformance.rabbit;

import io.sumi.conformance.Scenario;
import java.util.Map;
import org.junit.jupiter.api.Order;
import org.springframework.test.annotation.DirtiesContext;

/** The catalogue on {@code @RabbitListener} consumer-batch listeners ({@code consumerBatchEnabled}). */
@Order(21)
@DirtiesContext(classMode = DirtiesContext.ClassMode.AFTER_CLASS)
class RabbitBatchConformanceTests extends RabbitCatalogueTests {

    @Override
    public String id() {
        return "rabbit-batch";
    }

    @Override
    String shape() {
        return "batch";
    }

    @Override
    public Map<Scenario, String> notApplicable() {
        return Map.of(Scenario.ASYNC_FAILED_FUTURE, NO_ASYNC_BATCH);
    }

    @Override
    public Map<Scenario, String> notWritten() {
        return Map.of();
    }
}
