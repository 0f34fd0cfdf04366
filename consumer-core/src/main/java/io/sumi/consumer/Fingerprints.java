package io.sumi.consumer;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import org.jspecify.annotations.Nullable;

/**
 * Payload fingerprints: a hex SHA-256 of the payload's bytes. The ledger stores the fingerprint,
 * never the payload.
 */
public final class Fingerprints {

    private Fingerprints() {}

    /**
     * The fingerprint of a payload given as {@code byte[]}, {@link ByteBuffer} or
     * {@link CharSequence} (UTF-8); {@code null} for other types, whose bytes are not known here
     * (binders fingerprint the raw record value instead, before conversion).
     */
    public static @Nullable String of(@Nullable Object payload) {
        if (payload instanceof byte[] bytes) {
            return sha256(bytes);
        }
        if (payload instanceof CharSequence text) {
            return sha256(text.toString().getBytes(StandardCharsets.UTF_8));
        }
        if (payload instanceof ByteBuffer buffer) {
            ByteBuffer copy = buffer.asReadOnlyBuffer();
            byte[] bytes = new byte[copy.remaining()];
            copy.get(bytes);
            return sha256(bytes);
        }
        return null;
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException ex) {
            throw new IllegalStateException("SHA-256 is required of every JVM", ex);
        }
    }
}
