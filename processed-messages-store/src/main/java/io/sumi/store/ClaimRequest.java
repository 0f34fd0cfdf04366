package io.sumi.store;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One message to claim.
 *
 * @param messageId the idempotency key; at most {@link ProcessedMessageStore#maxKeyLength()} characters
 * @param fingerprint a hash of the payload (at most {@value #MAX_FINGERPRINT_LENGTH} characters),
 *     or {@code null} when the payload cannot be hashed
 */
public record ClaimRequest(String messageId, @Nullable String fingerprint) {

    /** The longest fingerprint the ledger stores (a hex SHA-256). */
    public static final int MAX_FINGERPRINT_LENGTH = 64;

    /**
     * @throws IllegalArgumentException if the fingerprint is longer than {@value #MAX_FINGERPRINT_LENGTH}
     */
    public ClaimRequest {
        Objects.requireNonNull(messageId, "messageId");
        if (fingerprint != null && fingerprint.length() > MAX_FINGERPRINT_LENGTH) {
            throw new IllegalArgumentException(
                    "A fingerprint is at most " + MAX_FINGERPRINT_LENGTH + " characters, was " + fingerprint.length());
        }
    }
}
