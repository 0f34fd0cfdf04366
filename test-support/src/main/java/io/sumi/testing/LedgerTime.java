package io.sumi.testing;

import io.sumi.jdbc.DatabaseType;
import java.time.Duration;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Moves a ledger namespace through time in tests. The ledger takes every time it writes and every
 * lease decision from the database's clock, which tests cannot move; instead they age the rows:
 * shifting a namespace's stored times back by {@code d} is what moving the clock forward by
 * {@code d} was, for the rows that exist now (rows claimed later are written at the real "now").
 */
public final class LedgerTime {

    private LedgerTime() {}

    /**
     * Shifts {@code first_seen_at}, {@code lease_until} and {@code processed_at} of every row of
     * {@code consumer} in {@code processed_messages} back by {@code by}, as if that much time had passed.
     *
     * @return how many rows were aged
     */
    public static int age(DataSource dataSource, String consumer, Duration by) {
        return age(dataSource, "processed_messages", consumer, by);
    }

    /** Ages every row of {@code processed_messages}, whatever its namespace (for a database of the test's own). */
    public static int ageAll(DataSource dataSource, Duration by) {
        return age(dataSource, "processed_messages", null, by);
    }

    /**
     * {@link #age(DataSource, String, Duration)} on another ledger table (a plain identifier);
     * every row of it when {@code consumer} is {@code null}.
     */
    public static int age(DataSource dataSource, String table, @Nullable String consumer, Duration by) {
        long micros = Math.multiplyExact(by.getSeconds(), 1_000_000L) + by.getNano() / 1_000;
        String back = switch (DatabaseType.of(dataSource)) {
            case POSTGRESQL -> "%1$s - CAST(? AS BIGINT) * INTERVAL '1 microsecond'";
            case MARIADB -> "%1$s - INTERVAL ? MICROSECOND";
            case H2 -> "DATEADD(MICROSECOND, -CAST(? AS BIGINT), %1$s)";
        };
        String sql = "UPDATE " + table + " SET first_seen_at = " + back.formatted("first_seen_at") + ", lease_until = "
                + back.formatted("lease_until") + ", processed_at = " + back.formatted("processed_at");
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        if (consumer == null) {
            return jdbc.update(sql, micros, micros, micros);
        }
        return jdbc.update(sql + " WHERE consumer = ?", micros, micros, micros, consumer);
    }
}
