package io.sumi.kafka.share;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Locale;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.jspecify.annotations.Nullable;

/**
 * The share listeners' counters ({@code sumi.kafka.share.acknowledgements} by listener, type and
 * delivery, {@code sumi.kafka.share.held.released}); none without a registry.
 */
final class ShareMetrics {

    static final ShareMetrics NONE = new ShareMetrics(null);

    private final @Nullable MeterRegistry registry;

    ShareMetrics(@Nullable MeterRegistry registry) {
        this.registry = registry;
    }

    void acknowledged(String listenerId, AcknowledgeType type, int deliveries) {
        if (registry == null) {
            return;
        }
        Counter.builder("sumi.kafka.share.acknowledgements")
                .description("Share-group records Sumi settled, by acknowledgement type and delivery")
                .tag("listener", listenerId)
                .tag("type", type.name().toLowerCase(Locale.ROOT))
                .tag("delivery", deliveryBucket(deliveries))
                .register(registry)
                .increment();
    }

    void heldPastBound(String listenerId) {
        if (registry == null) {
            return;
        }
        Counter.builder("sumi.kafka.share.held.released")
                .description("Share-group records held for a busy key, a reconciliation or a ledger outage past"
                        + " the busy policy's bound, then released (a counted delivery)")
                .tag("listener", listenerId)
                .register(registry)
                .increment();
    }

    /** {@code 1}, {@code 2}, {@code 3+}; {@code unknown} when the broker gave no count. */
    static String deliveryBucket(int deliveries) {
        if (deliveries <= 0) {
            return "unknown";
        }
        return deliveries >= 3 ? "3+" : Integer.toString(deliveries);
    }
}
