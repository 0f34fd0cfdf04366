package io.sumi.jdbc.internal;

/**
 * Fills the named slots of an SQL text block. Vendor SQL is written as text-block constants that
 * read as the statement that runs; a slot {@code ${name}} stands where a bind parameter cannot:
 * the table name (checked by {@link SqlIdentifiers} before any dialect is made), a list of
 * {@code ?} placeholders, or a fragment of Sumi's own SQL. Never a value from a message. Not API.
 */
public final class SqlTemplate {

    private SqlTemplate() {}

    /**
     * Replaces every {@code ${name}} of each given name by its value; slots not named stay for a
     * later call (a statement filled with its table once, and with its placeholders per call).
     * The result is stripped of the text block's leading and trailing white space.
     *
     * @param namesAndValues name, value, name, value, ...
     * @throws IllegalArgumentException if a name has no slot in {@code template} (a typo would
     *     otherwise leave the slot in the SQL) or the arguments do not pair up
     */
    public static String fill(String template, String... namesAndValues) {
        if (namesAndValues.length % 2 != 0) {
            throw new IllegalArgumentException("Names and values must pair up: " + namesAndValues.length + " given");
        }
        String sql = template;
        for (int i = 0; i < namesAndValues.length; i += 2) {
            String slot = "${" + namesAndValues[i] + "}";
            if (!sql.contains(slot)) {
                throw new IllegalArgumentException("No slot " + slot + " in: " + template);
            }
            sql = sql.replace(slot, namesAndValues[i + 1]);
        }
        return sql.strip();
    }
}
