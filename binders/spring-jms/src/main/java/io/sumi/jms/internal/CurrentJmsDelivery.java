package io.sumi.jms.internal;

import jakarta.jms.Message;
import org.jspecify.annotations.Nullable;

/**
 * The JMS message the listener container is delivering on this thread, set by Sumi's listener
 * wrapper, so an {@code @IdempotentHandler} method can read the message's properties whatever its
 * parameters are (a payload alone carries no key). Also records Sumi's refusal of the delivery
 * itself (by the guard of the listener method, before anything ran), which the wrapper may settle
 * on its own (hold and run again, dead-letter); a refusal from a guarded method the listener calls
 * comes after the listener's own work and is left to a rollback.
 */
public final class CurrentJmsDelivery {

    private static final ThreadLocal<@Nullable Message> MESSAGE = new ThreadLocal<>();
    private static final ThreadLocal<@Nullable Throwable> ENTRY_REFUSAL = new ThreadLocal<>();

    private CurrentJmsDelivery() {}

    public static void set(Message message) {
        MESSAGE.set(message);
        ENTRY_REFUSAL.remove();
    }

    public static void clear() {
        MESSAGE.remove();
        ENTRY_REFUSAL.remove();
    }

    /** Records that the listener method's guard refused the delivery before anything ran. */
    public static void refusedAtEntry(Throwable refusal) {
        ENTRY_REFUSAL.set(refusal);
    }

    /** Whether {@code refusal} is the listener method's guard's refusal of the delivery; forgets it. */
    public static boolean takeEntryRefusal(Throwable refusal) {
        Throwable recorded = ENTRY_REFUSAL.get();
        ENTRY_REFUSAL.remove();
        return recorded == refusal;
    }

    public static @Nullable Message message() {
        return MESSAGE.get();
    }
}
