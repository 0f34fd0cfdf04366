package io.sumi.stream.internal;

import java.util.ArrayDeque;
import java.util.Deque;
import org.jspecify.annotations.Nullable;
import org.springframework.messaging.Message;

/**
 * The messages being delivered to input bindings on this thread, innermost last, as the binder
 * delivered them: their headers carry the idempotency key, which a function that takes only a
 * payload never sees.
 *
 * <p>A frame lives from the input channel's {@code preSend} to its {@code afterSendCompletion}:
 * the whole of the function call and of the sending of its output, which Spring Cloud Stream
 * does on the same thread (input bindings are direct channels). Frames nest when a function sends
 * to another input binding. Each frame also holds the key to put on the messages sent while it is
 * open, once an idempotent function has run for it.
 */
public final class InboundMessages {

    private static final ThreadLocal<@Nullable Deque<Frame>> FRAMES = new ThreadLocal<>();

    private InboundMessages() {}

    /** One delivery to an input binding. */
    public static final class Frame {

        private final Message<?> message;
        private volatile @Nullable String outputKey;

        Frame(Message<?> message) {
            this.message = message;
        }

        /** The message as the binder delivered it. */
        public Message<?> message() {
            return message;
        }

        /** The key of the idempotent function that ran for this message, for its output; or {@code null}. */
        public @Nullable String outputKey() {
            return outputKey;
        }

        public void outputKey(@Nullable String key) {
            this.outputKey = key;
        }
    }

    /** Opens a frame for {@code message}; every {@code push} must be followed by one {@link #pop}. */
    public static void push(Message<?> message) {
        Deque<Frame> frames = FRAMES.get();
        if (frames == null) {
            frames = new ArrayDeque<>(2);
            FRAMES.set(frames);
        }
        frames.push(new Frame(message));
    }

    /** Closes the innermost frame. */
    public static void pop() {
        Deque<Frame> frames = FRAMES.get();
        if (frames == null) {
            return;
        }
        frames.poll();
        if (frames.isEmpty()) {
            FRAMES.remove();
        }
    }

    /** The innermost open frame, or {@code null} outside a delivery. */
    public static @Nullable Frame current() {
        Deque<Frame> frames = FRAMES.get();
        return frames == null ? null : frames.peek();
    }
}
