package io.sumi.consumer;

import io.sumi.consumer.exception.FingerprintMismatchException;

/**
 * What to do when a message arrives with a key the ledger knows but a different payload
 * fingerprint: a producer reused a key for another message.
 */
public enum FingerprintMismatchPolicy {

    /** Use the configured default ({@code sumi.consumer.fingerprint-mismatch}, {@link #WARN} unless set). */
    DEFAULT,

    /** Count it ({@code sumi.fingerprint.mismatches}), log a warning, and treat the message as the key says. */
    WARN,

    /**
     * Count it, log it, and fail the message with a {@link FingerprintMismatchException}, which is
     * not retryable: the error handler sends it to the dead-letter destination.
     */
    REJECT
}
