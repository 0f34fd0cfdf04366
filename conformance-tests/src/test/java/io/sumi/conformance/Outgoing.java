package io.sumi.conformance;

import org.jspecify.annotations.Nullable;

/**
 * One message a scenario sends.
 *
 * @param payload unique per scenario run: the handler's scripts and effects are keyed by it
 * @param key the {@code idempotency-key} header, or {@code null} for none
 * @param lane which of two consumers should get it (a Kafka partition, a Rabbit batch queue);
 *     kinds whose broker spreads messages over idle consumers by themselves ignore it
 */
public record Outgoing(String payload, @Nullable String key, int lane) {

    public Outgoing(String payload, @Nullable String key) {
        this(payload, key, 0);
    }
}
