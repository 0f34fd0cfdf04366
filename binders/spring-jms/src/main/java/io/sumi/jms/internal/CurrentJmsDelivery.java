package io.sumi.jms.internal;

import jakarta.jms.Message;
import org.jspecify.annotations.Nullable;

/**
 * The JMS message the listener container is delivering on this thread, set by Sumi's listener
 * wrapper, so an {@code @IdempotentHandler} method can read the message's properties whatever its
 * parameters are (a payload alone carries no key).
 */
public final class CurrentJmsDelivery {

    private static final ThreadLocal<@Nullable Message> MESSAGE = new ThreadLocal<>();

    private CurrentJmsDelivery() {}

    public static void set(Message message) {
        MESSAGE.set(message);
    }

    public static void clear() {
        MESSAGE.remove();
    }

    public static @Nullable Message message() {
        return MESSAGE.get();
    }
}
