package io.sumi.jdbc.internal;

/**
 * Error texts stored in the ledger's and the outbox's {@code last_error} column. Not API.
 */
public final class ErrorSummaries {

    /**
     * The longest error text stored: the columns are {@code VARCHAR(1000)} (see the migrations), and
     * a longer text would fail the very statement that records the failure.
     */
    public static final int MAX_LENGTH = 1000;

    private ErrorSummaries() {}

    /** {@code text}, cut to its first {@value #MAX_LENGTH} characters. */
    public static String truncate(String text) {
        return text.length() <= MAX_LENGTH ? text : text.substring(0, MAX_LENGTH);
    }
}
