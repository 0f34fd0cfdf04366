package io.sumi.jdbc.internal;

import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * Table names are formatted into SQL (a bind parameter cannot name a table), so only plain,
 * optionally schema-qualified identifiers pass: nothing a user writes reaches SQL unchecked. Not API.
 */
public final class SqlIdentifiers {

    /** Letters, digits and underscores, not starting with a digit, at most 63 characters per part (PostgreSQL's limit). */
    private static final Pattern TABLE_NAME =
            Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}(\\.[A-Za-z_][A-Za-z0-9_]{0,62})?");

    private SqlIdentifiers() {}

    /**
     * Returns {@code name} if it is a table name that is safe to format into SQL.
     *
     * @param what whose table, for the message ("ledger", "outbox")
     * @param example a valid unqualified name, for the message ("processed_messages")
     * @throws IllegalArgumentException unless {@code name} is an SQL identifier, optionally
     *     qualified by a schema ({@code myschema.outbox})
     */
    public static String requireTableName(@Nullable String name, String what, String example) {
        if (name == null || !TABLE_NAME.matcher(name).matches()) {
            throw new IllegalArgumentException(
                    "Invalid " + what + " table name '" + name + "': expected an SQL identifier such as "
                            + example + " or myschema." + example
                            + " (letters, digits and underscores, not starting with a digit, at most 63 characters per part)");
        }
        return name;
    }
}
