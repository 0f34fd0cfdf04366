package io.sumi.kafka;

import io.sumi.consumer.binder.IdempotentHandlerInterceptorSupport.Settlement;
import java.util.Objects;
import java.util.OptionalInt;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

/**
 * A share-group record (KIP-932) being delivered to its listener on this thread, with how the end
 * of its {@code @IdempotentHandler} call is passed on: the hook through which
 * {@code sumi-binder-spring-kafka-share} (Spring Kafka 4.1) hands its records to
 * {@link IdempotentHandlerInterceptor}, which guards the listener method with this record and
 * settles through this settlement instead of the consumer-group paths (error handler, seeks,
 * deferred acknowledgements), none of which a share container has. Applications use only
 * {@link #deliveryCount()}.
 *
 * @since 0.1.0
 */
public final class ShareDelivery {

    private static final ThreadLocal<@Nullable ShareDelivery> CURRENT = new ThreadLocal<>();

    private final ConsumerRecord<?, ?> record;
    private final Settlement settlement;

    private ShareDelivery(ConsumerRecord<?, ?> record, Settlement settlement) {
        this.record = record;
        this.settlement = settlement;
    }

    /** Work run with a delivery on the thread. */
    @FunctionalInterface
    public interface Work {
        void run() throws Exception;
    }

    /**
     * Runs {@code work} (the container's listener) with {@code record} as this thread's share
     * delivery, settled through {@code settlement}; nested calls are refused.
     *
     * @throws IllegalStateException if a share delivery is already running on this thread
     */
    public static void run(ConsumerRecord<?, ?> record, Settlement settlement, Work work) throws Exception {
        Objects.requireNonNull(record, "record");
        Objects.requireNonNull(settlement, "settlement");
        if (CURRENT.get() != null) {
            throw new IllegalStateException("A share delivery is already running on this thread");
        }
        CURRENT.set(new ShareDelivery(record, settlement));
        try {
            work.run();
        } finally {
            CURRENT.remove();
        }
    }

    /**
     * How many times the broker has delivered the share-group record whose handler runs on this
     * thread, this delivery included ({@link ConsumerRecord#deliveryCount()}: 1 the first time);
     * empty outside a share-group delivery. A handler that takes the payload rather than the record
     * reads it here. Not {@link io.sumi.consumer.IdempotencyContext#attempt()}, which counts the
     * key's runs in the ledger: a record held while another consumer runs its key comes back
     * uncounted, and a lock that lapses counts a delivery but no attempt.
     *
     * @since 0.1.0
     */
    public static OptionalInt deliveryCount() {
        ShareDelivery delivery = CURRENT.get();
        if (delivery == null) {
            return OptionalInt.empty();
        }
        return delivery.record
                .deliveryCount()
                .map(count -> OptionalInt.of(count))
                .orElseGet(OptionalInt::empty);
    }

    /** The share delivery running on this thread, or {@code null}. */
    static @Nullable ShareDelivery current() {
        return CURRENT.get();
    }

    ConsumerRecord<?, ?> record() {
        return record;
    }

    Settlement settlement() {
        return settlement;
    }
}
