package io.sumi.rabbit.internal;

import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.Message;

/**
 * The message (or consumer batch) the listener container is delivering on this thread, set by
 * Sumi's container advice, so an {@code @IdempotentHandler} method can read the message's headers
 * whatever its parameters are (a payload alone carries no key). Also carries the Sumi verdict the
 * inner advice takes away from the application's advices (a retry interceptor must never see a
 * busy key or a missing key: it would dead-letter them after its attempts).
 */
public final class CurrentDelivery {

    private static final ThreadLocal<@Nullable Object> DATA = new ThreadLocal<>();
    private static final ThreadLocal<@Nullable RuntimeException> VERDICT = new ThreadLocal<>();
    private static final ThreadLocal<@Nullable List<Message>> SKIPPED = new ThreadLocal<>();
    private static final ThreadLocal<@Nullable Throwable> ENTRY_REFUSAL = new ThreadLocal<>();
    private static final ThreadLocal<@Nullable SettlingChannel> SETTLING = new ThreadLocal<>();

    private CurrentDelivery() {}

    public static void set(Object messageOrBatch) {
        DATA.set(messageOrBatch);
        VERDICT.remove();
        SKIPPED.remove();
        ENTRY_REFUSAL.remove();
    }

    public static void clear() {
        SETTLING.remove();
        DATA.remove();
        VERDICT.remove();
        SKIPPED.remove();
        ENTRY_REFUSAL.remove();
    }

    /** Records the channel that holds back a MANUAL listener's settlements of this delivery. */
    public static void settling(SettlingChannel channel) {
        SETTLING.set(channel);
    }

    /**
     * Whether the MANUAL listener nacked or rejected {@code message} (with or without requeue):
     * then it is not done, and Sumi releases its claim instead of completing it.
     */
    public static boolean negative(Message message) {
        SettlingChannel channel = SETTLING.get();
        return channel != null
                && channel.negative(message.getMessageProperties().getDeliveryTag());
    }

    /**
     * Records that the listener method's guard refused the delivery before the listener's own code
     * ran for it: only such a refusal may be held and run again in place (a refusal from a guarded
     * method the listener calls comes after the listener's own work, which a redelivery redoes).
     */
    public static void refusedAtEntry(Throwable refusal) {
        ENTRY_REFUSAL.set(refusal);
    }

    /** Whether {@code refusal} (or the refusal it wraps) is the guard's refusal of the delivery; forgets it. */
    public static boolean takeEntryRefusal(Throwable refusal) {
        Throwable recorded = ENTRY_REFUSAL.get();
        ENTRY_REFUSAL.remove();
        return recorded != null && (recorded == refusal || recorded == refusal.getCause());
    }

    /**
     * Records the messages of the delivery that Sumi skipped as duplicates: the listener never saw
     * them, so with MANUAL acknowledgement the outer advice acknowledges them.
     */
    public static void skipped(List<Message> messages) {
        SKIPPED.set(messages);
    }

    public static List<Message> takeSkipped() {
        List<Message> skipped = SKIPPED.get();
        SKIPPED.remove();
        return skipped == null ? List.of() : skipped;
    }

    public static @Nullable Message message() {
        return DATA.get() instanceof Message message ? message : null;
    }

    @SuppressWarnings("unchecked")
    public static @Nullable List<Message> batch() {
        return DATA.get() instanceof List<?> list ? (List<Message>) list : null;
    }

    /** Records what Sumi decided for the delivery; the outer advice acts on it. */
    public static void verdict(RuntimeException verdict) {
        VERDICT.set(verdict);
    }

    public static @Nullable RuntimeException takeVerdict() {
        RuntimeException verdict = VERDICT.get();
        VERDICT.remove();
        return verdict;
    }
}
