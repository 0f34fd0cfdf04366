package io.sumi.stream.internal;

import java.util.function.BooleanSupplier;
import org.jspecify.annotations.Nullable;

/**
 * Whether the listener container delivering on this thread still runs, for the binders that say
 * which container delivers (the Kafka binder's containers, through
 * {@link io.sumi.stream.SumiKafkaBinderContainerCustomizer}, which binds it on each consumer thread
 * before every poll). A container asked to stop answers {@code false} at once, while its consumer
 * thread still finishes the message in hand: that is when Sumi ends its holds and leaves an
 * interrupted message unsettled ({@link io.sumi.consumer.exception.ListenerStoppingException}).
 */
public final class DeliveringContainer {

    private static final ThreadLocal<@Nullable BooleanSupplier> RUNNING = new ThreadLocal<>();

    private DeliveringContainer() {}

    /** This thread delivers for a container whose state {@code running} tells. */
    public static void bind(BooleanSupplier running) {
        RUNNING.set(running);
    }

    /** This thread no longer delivers for a container (its consumer ends). */
    public static void clear() {
        RUNNING.remove();
    }

    /** Whether a container was bound to this thread: the binder tells its stop. */
    static boolean known() {
        return RUNNING.get() != null;
    }

    /** Whether the container delivering on this thread was asked to stop; {@code false} when none is known. */
    static boolean stopping() {
        BooleanSupplier running = RUNNING.get();
        return running != null && !running.getAsBoolean();
    }
}
