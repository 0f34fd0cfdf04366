package io.sumi.kafka.share;

import java.util.Map;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * The in-process Kafka broker (KRaft, Kafka 4.2) with share groups on that the conformance
 * catalogue and the soak share, started on first use (their topics are added by each). The
 * delivery limit is the broker's default, 5, set here so that the tests count against the same
 * figure; the lock (30 s), the member session (45 s) and the heartbeat (5 s) stay at their
 * defaults, and a group may lower its own ({@code share.record.lock.duration.ms}, {@code
 * share.session.timeout.ms}, {@code share.heartbeat.interval.ms}) down to 1 s (0.5 s). Not the broker of {@code
 * ShareGroupIdempotentHandlerIntegrationTests}, whose limit of 2 (a broker setting, not a group's
 * in Kafka 4.2) would archive the catalogue's third deliveries.
 */
public final class ShareTestBroker {

    /** {@code group.share.delivery.count.limit}. */
    public static final int DELIVERY_LIMIT = 5;

    private static EmbeddedKafkaKraftBroker broker;

    private ShareTestBroker() {}

    /** The broker, started on first use; stopped when the JVM ends. */
    public static synchronized EmbeddedKafkaKraftBroker broker() {
        if (broker == null) {
            EmbeddedKafkaKraftBroker started = new EmbeddedKafkaKraftBroker(1, 1);
            started.brokerProperties(Map.of(
                    "share.coordinator.state.topic.replication.factor", "1",
                    "share.coordinator.state.topic.min.isr", "1",
                    "group.share.delivery.count.limit", Integer.toString(DELIVERY_LIMIT),
                    "group.share.min.record.lock.duration.ms", "1000",
                    "group.share.min.session.timeout.ms", "1000",
                    "group.share.min.heartbeat.interval.ms", "500"));
            started.afterPropertiesSet();
            Runtime.getRuntime().addShutdownHook(new Thread(started::destroy, "share-test-broker-stop"));
            broker = started;
        }
        return broker;
    }
}
