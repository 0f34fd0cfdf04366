package io.sumi.kafka;

import io.sumi.consumer.FingerprintMismatchPolicy;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.IdempotencyMode;
import java.time.Duration;
import java.util.List;

/**
 * What an {@link io.sumi.consumer.IdempotentHandler} attribute left at its default means
 * ({@code sumi.consumer.*} in the starter).
 *
 * @param mode the mode of handlers whose annotation says {@code AUTO} (itself {@code AUTO} unless configured)
 * @param lease the lease of handlers that set none
 * @param fingerprintPolicy the policy of handlers that say {@code DEFAULT}
 * @param keyHeaders the headers tried for the key, in order
 */
public record HandlerDefaults(IdempotencyMode mode, Duration lease, FingerprintMismatchPolicy fingerprintPolicy,
        List<String> keyHeaders) {

    public HandlerDefaults {
        if (fingerprintPolicy == FingerprintMismatchPolicy.DEFAULT) {
            fingerprintPolicy = FingerprintMismatchPolicy.WARN;
        }
        keyHeaders = List.copyOf(keyHeaders);
    }

    /** The library defaults: {@code AUTO}, a 5 minute lease, {@code WARN}, headers {@code outbox-id} then {@code idempotency-key}. */
    public static HandlerDefaults standard() {
        return new HandlerDefaults(IdempotencyMode.AUTO, HandlerDefinition.DEFAULT_LEASE, FingerprintMismatchPolicy.WARN,
                HandlerDefinition.DEFAULT_KEY_HEADERS);
    }
}
