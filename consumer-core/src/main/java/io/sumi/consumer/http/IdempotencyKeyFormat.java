package io.sumi.consumer.http;

import io.sumi.consumer.IdempotencyContext;
import java.util.Objects;

/**
 * Turns the current message's {@link IdempotencyContext} into the idempotency key a provider sees.
 * A handler that makes two different calls to one provider needs two keys (the provider would
 * replay the first call's response for the second): give each client its own step suffix.
 */
@FunctionalInterface
public interface IdempotencyKeyFormat {

    /** The key to send for the message of {@code context}. */
    String format(IdempotencyContext context);

    /** The message key as it is (the outbox id). */
    static IdempotencyKeyFormat plain() {
        return IdempotencyContext::key;
    }

    /**
     * The message key followed by {@code ":" + step}, e.g. {@code 7f3c…:charge} and {@code 7f3c…:refund}.
     *
     * @throws IllegalArgumentException if {@code step} is blank
     */
    static IdempotencyKeyFormat suffixed(String step) {
        Objects.requireNonNull(step, "step");
        if (step.isBlank()) {
            throw new IllegalArgumentException("The step suffix of an idempotency key must not be blank");
        }
        return context -> context.key() + ":" + step;
    }
}
