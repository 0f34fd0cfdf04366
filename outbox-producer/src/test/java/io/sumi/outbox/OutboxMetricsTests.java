package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.testing.TestDatabase;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * The gauges are bound once per registry: the starter binds them, and Spring Boot binds every
 * {@code MeterBinder} bean too; Micrometer ignores a second registration of a gauge with a WARN
 * ("This Gauge has been already registered"), seen on every start-up with Prometheus.
 */
class OutboxMetricsTests {

    @Test
    void bindingTwiceToOneRegistryRegistersEachGaugeOnceWithoutAWarning() {
        Logger micrometer = (Logger) LoggerFactory.getLogger("io.micrometer");
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        micrometer.addAppender(logged);
        try {
            OutboxMetrics metrics =
                    new OutboxMetrics(OutboxTable.builder(OutboxTestDatabases.dataSource(TestDatabase.H2))
                            .build());
            SimpleMeterRegistry registry = new SimpleMeterRegistry();

            metrics.bindTo(registry);
            metrics.bindTo(registry);

            assertThat(registry.find("outbox.parked").gauges()).hasSize(1);
            assertThat(registry.find("outbox.pending.total").gauges()).hasSize(1);
            assertThat(logged.list)
                    .filteredOn(event -> event.getLevel().isGreaterOrEqual(Level.WARN))
                    .extracting(ILoggingEvent::getFormattedMessage)
                    .isEmpty();

            // Another registry still gets them.
            SimpleMeterRegistry other = new SimpleMeterRegistry();
            metrics.bindTo(other);
            assertThat(other.find("outbox.oldest.pending.age").gauges()).hasSize(1);
        } finally {
            micrometer.detachAppender(logged);
        }
    }
}
