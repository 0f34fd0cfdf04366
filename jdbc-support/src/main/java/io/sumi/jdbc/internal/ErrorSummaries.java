package io.sumi.jdbc.internal;

/**
 * Error texts stored in the ledger's and the outbox's {@code last_error} column: the one rule both
 * use, so that the statement that records a failure never fails because of the failure's text.
 * Not API.
 *
 * <p>The text comes from exceptions, and so from anywhere: a broker's reply, a provider's error
 * body, a payload quoted in a message. What the columns cannot hold (see the migrations):
 * <ul>
 *   <li>a NUL character: PostgreSQL refuses {@code \u0000} in every text column ("invalid byte
 *   sequence for encoding UTF8: 0x00");</li>
 *   <li>a character outside the Basic Multilingual Plane (emoji, some CJK): a MariaDB column in
 *   {@code utf8mb3} (the old {@code utf8}, still found in tables created before Sumi's migration
 *   set {@code utf8mb4}) refuses 4-byte characters in strict mode ("Incorrect string value");</li>
 *   <li>a lone surrogate (a cut that split a pair, or a broken string): not a character at all,
 *   so not valid in any encoding;</li>
 *   <li>more than {@value #MAX_LENGTH} characters: the columns are {@code VARCHAR(1000)}.</li>
 * </ul>
 * {@link #sanitize} replaces each of the first three with U+FFFD (a BMP character every Unicode
 * charset holds) and then cuts the text to {@value #MAX_LENGTH} characters; after the
 * replacements every code point is one {@code char}, so the cut is {@value #MAX_LENGTH} characters
 * on every database (PostgreSQL and MariaDB count code points, H2 counts {@code char}s). A column
 * in a charset that holds less still (a user's latin1 table) can refuse the result: callers then
 * store no text at all rather than lose the statement.
 */
public final class ErrorSummaries {

    /**
     * The longest error text stored: the columns are {@code VARCHAR(1000)} (see the migrations), and
     * a longer text would fail the very statement that records the failure.
     */
    public static final int MAX_LENGTH = 1000;

    /** What stands in for a character the columns cannot hold. */
    public static final char REPLACEMENT = '\uFFFD';

    private ErrorSummaries() {}

    /** {@code text}, cut to its first {@value #MAX_LENGTH} characters. Prefer {@link #sanitize}. */
    public static String truncate(String text) {
        return text.length() <= MAX_LENGTH ? text : text.substring(0, MAX_LENGTH);
    }

    /**
     * {@code text} as every {@code last_error} column can hold it: NUL characters, characters
     * outside the Basic Multilingual Plane and lone surrogates replaced by {@link #REPLACEMENT}
     * (a surrogate pair by one), then cut to {@value #MAX_LENGTH} characters. A text that needs no
     * change is returned as it is (no copy).
     */
    public static String sanitize(String text) {
        int length = text.length();
        int clean = 0;
        while (clean < length && clean < MAX_LENGTH && storable(text.charAt(clean))) {
            clean++;
        }
        if (clean == length) {
            return text;
        }
        if (clean == MAX_LENGTH) {
            return text.substring(0, MAX_LENGTH);
        }
        StringBuilder out = new StringBuilder(Math.min(length, MAX_LENGTH)).append(text, 0, clean);
        for (int i = clean; i < length && out.length() < MAX_LENGTH; i++) {
            char c = text.charAt(i);
            if (storable(c)) {
                out.append(c);
            } else {
                out.append(REPLACEMENT);
                if (Character.isHighSurrogate(c) && i + 1 < length && Character.isLowSurrogate(text.charAt(i + 1))) {
                    // One character (a pair), one replacement.
                    i++;
                }
            }
        }
        return out.toString();
    }

    /**
     * Whether the database refused the statement that failed with {@code failure} for what the
     * statement holds, so that another statement (the same one without its error text, or one row
     * at a time) may succeed: it refused the statement itself (a data error such as a charset
     * the column cannot hold, a constraint of the user's), rather than the connection breaking or
     * other transactions' locks getting in the way ({@link TransientSqlErrors}), which no other text
     * would change.
     */
    public static boolean isRefusal(Throwable failure) {
        return !TransientSqlErrors.isConnectionFailure(failure) && !TransientSqlErrors.isTransient(failure);
    }

    /** Whether {@code c}, on its own, is a whole character every {@code last_error} column holds. */
    private static boolean storable(char c) {
        return c != '\u0000' && !Character.isSurrogate(c);
    }
}
