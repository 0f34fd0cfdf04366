package io.sumi.stream;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.springframework.messaging.Message;

/** What the test functions did, for the tests to check. */
final class Effects {

    private final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
    private final Map<String, List<Message<?>>> received = new ConcurrentHashMap<>();

    /** Records one effect named {@code name} (a function and a key). */
    void effect(String name) {
        counts.computeIfAbsent(name, n -> new AtomicInteger()).incrementAndGet();
    }

    int count(String name) {
        AtomicInteger count = counts.get(name);
        return count == null ? 0 : count.get();
    }

    /** Records a message seen on {@code destination}. */
    void receive(String destination, Message<?> message) {
        received.computeIfAbsent(destination, d -> Collections.synchronizedList(new ArrayList<>()))
                .add(message);
    }

    List<Message<?>> received(String destination) {
        List<Message<?>> messages = received.get(destination);
        return messages == null ? List.of() : List.copyOf(messages);
    }

    /** A header as text: byte arrays decoded as UTF-8. */
    static @Nullable String header(Message<?> message, String name) {
        Object value = message.getHeaders().get(name);
        if (value instanceof byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }
        return value == null ? null : value.toString();
    }

    static String payload(Message<?> message) {
        Object payload = message.getPayload();
        return payload instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : String.valueOf(payload);
    }
}
