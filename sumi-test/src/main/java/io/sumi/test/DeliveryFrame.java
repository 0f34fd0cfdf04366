package io.sumi.test;

import org.jspecify.annotations.Nullable;

/**
 * The delivery a listener thread is running, opened by whoever hands the message to the listener
 * (the kit's Kafka record interceptor, the kit's Stream sender) and marked by the
 * {@link RecordingExecutor} when Sumi guards it: at its end the opener knows whether the user's
 * code ran unguarded, and under which consumer and key to record the delivery.
 */
final class DeliveryFrame {

    private static final ThreadLocal<@Nullable DeliveryFrame> CURRENT = new ThreadLocal<>();

    private final String listener;
    private final String key;
    private final @Nullable String topic;
    private volatile @Nullable String guardedConsumer;
    private volatile @Nullable String guardedKey;

    private DeliveryFrame(String listener, String key, @Nullable String topic) {
        this.listener = listener;
        this.key = key;
        this.topic = topic;
    }

    /** Opens a frame on this thread (replacing any left over). */
    public static DeliveryFrame open(String listener, String key, @Nullable String topic) {
        DeliveryFrame frame = new DeliveryFrame(listener, key, topic);
        CURRENT.set(frame);
        return frame;
    }

    public static @Nullable DeliveryFrame current() {
        return CURRENT.get();
    }

    public static void close() {
        CURRENT.remove();
    }

    void guardedBy(String consumer, @Nullable String key) {
        this.guardedConsumer = consumer;
        if (key != null) {
            this.guardedKey = key;
        }
    }

    public String listener() {
        return listener;
    }

    public @Nullable String topic() {
        return topic;
    }

    /** Whether Sumi's executor ran for this delivery. */
    public boolean guarded() {
        return guardedConsumer != null;
    }

    /** The ledger namespace if guarded, else the listener's name. */
    public String consumer() {
        String consumer = guardedConsumer;
        return consumer != null ? consumer : listener;
    }

    /** The key Sumi resolved if guarded, else the key the opener read from the message's headers. */
    public String key() {
        String resolved = guardedKey;
        return resolved != null ? resolved : key;
    }

    /**
     * Records the end of the delivery in {@code log}: acknowledged or not, and for a listener Sumi
     * did not guard, that the user's code ran (or failed).
     */
    public void finish(DeliveryLog log, boolean acknowledged) {
        if (!guarded()) {
            if (acknowledged) {
                log.handlerRan(listener, key);
            }
            log.outcome(listener, key, acknowledged ? DeliveryOutcome.PROCESSED : DeliveryOutcome.FAILED);
        }
        log.delivered(consumer(), key(), topic, acknowledged);
    }
}
