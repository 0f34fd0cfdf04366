package io.sumi.store;

import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * The keys every Sumi ledger accepts, whatever it stores them in: a consumer name or message id is
 * 1 to {@code maxLength} UTF-16 characters of well-formed Unicode without NUL (U+0000). Anything
 * else is refused with an {@link IllegalArgumentException} before it reaches the store, never
 * altered: PostgreSQL rejects NUL, drivers turn an unpaired surrogate into {@code ?} and UTF-8
 * cannot encode one at all, so two keys would become one. Keys are compared exactly
 * ({@code "k"} and {@code "k "} are two keys).
 *
 * <p>One rule for the JDBC and the Redis ledger, so that a key one of them takes the other takes too
 * and a fleet can move between them.
 *
 * @since 0.1.0
 */
public final class LedgerKeyRules {

    private LedgerKeyRules() {}

    /**
     * Checks one key.
     *
     * @param what what the key is, for the message ({@code "consumer"}, {@code "message id"})
     * @param value the key
     * @param maxLength the longest key the store takes ({@link ProcessedMessageStore#maxKeyLength()})
     * @return {@code value}
     * @throws IllegalArgumentException if the key is null, empty, longer than {@code maxLength}, or
     *     holds a NUL character or an unpaired surrogate
     */
    public static String requireValidKey(String what, @Nullable String value, int maxLength) {
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("The " + what + " must not be empty");
        }
        if (value.length() > maxLength) {
            throw new IllegalArgumentException("The " + what + " is " + value.length()
                    + " characters long; the ledger takes at most " + maxLength
                    + " (it is rejected, not truncated, so that two long keys never collide)");
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c == '\u0000') {
                throw new IllegalArgumentException("The " + what + " contains a NUL character (U+0000) at position " + i
                        + "; the ledger cannot store it (PostgreSQL refuses NUL in text). It is rejected, not retried:"
                        + " encode such keys (e.g. Base64 or hex) before they reach the ledger");
            }
            if (Character.isHighSurrogate(c)
                    && i + 1 < value.length()
                    && Character.isLowSurrogate(value.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException("The " + what + " contains an unpaired UTF-16 surrogate (U+"
                        + Integer.toHexString(c).toUpperCase(Locale.ROOT) + ") at position " + i
                        + "; it is not valid Unicode, and the database drivers would store it as '?', so two different keys"
                        + " could become one. It is rejected, not retried: encode binary keys (e.g. Base64 or hex)");
            }
        }
        return value;
    }
}
