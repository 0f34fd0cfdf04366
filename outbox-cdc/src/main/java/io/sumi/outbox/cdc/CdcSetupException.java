package io.sumi.outbox.cdc;

/**
 * A start-up check of the outbox CDC path failed ({@code wal_level} is not {@code logical}, the
 * user lacks the {@code REPLICATION} attribute or may not create the publication, the publication
 * does not fit): the message says what to change.
 */
public final class CdcSetupException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    CdcSetupException(String message) {
        super(message);
    }

    CdcSetupException(String message, Throwable cause) {
        super(message, cause);
    }
}
