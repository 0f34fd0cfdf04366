package io.sumi.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.jdbc.DatabaseType;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.time.LocalDateTime;
import org.junit.jupiter.api.Test;

/** Round trips through H2, whose session time zone is set away from UTC so that a shift would show. */
class InstantBindingTests {

    private static final Instant INSTANT = Instant.parse("2026-03-29T01:30:00.123456Z");

    @Test
    void eachDatabaseGetsTheBindingOfSumisColumns() {
        assertThat(InstantBinding.of(DatabaseType.POSTGRESQL)).isEqualTo(InstantBinding.TIMESTAMP_WITH_TIME_ZONE);
        assertThat(InstantBinding.of(DatabaseType.H2)).isEqualTo(InstantBinding.TIMESTAMP_WITH_TIME_ZONE);
        assertThat(InstantBinding.of(DatabaseType.MARIADB)).isEqualTo(InstantBinding.UTC_DATETIME);
    }

    @Test
    void aTimestampWithTimeZoneColumnKeepsTheInstant() throws SQLException {
        try (Connection connection = connection("tstz")) {
            assertThat(roundTrip(
                            connection,
                            "TIMESTAMP(6) WITH TIME ZONE",
                            InstantBinding.TIMESTAMP_WITH_TIME_ZONE,
                            INSTANT))
                    .isEqualTo(INSTANT);
        }
    }

    @Test
    void aDatetimeColumnHoldsTheInstantAsUtcWallClockTime() throws SQLException {
        try (Connection connection = connection("utc")) {
            assertThat(roundTrip(connection, "TIMESTAMP(6)", InstantBinding.UTC_DATETIME, INSTANT))
                    .isEqualTo(INSTANT);
            try (Statement statement = connection.createStatement();
                    ResultSet rs = statement.executeQuery("SELECT t FROM times")) {
                rs.next();
                assertThat(rs.getObject(1, LocalDateTime.class))
                        .as("stored as UTC, not the session's zone")
                        .isEqualTo(LocalDateTime.parse("2026-03-29T01:30:00.123456"));
            }
        }
    }

    @Test
    void nullIsBoundAndReadAsSqlNull() throws SQLException {
        for (InstantBinding binding : InstantBinding.values()) {
            try (Connection connection = connection("null" + binding)) {
                assertThat(roundTrip(connection, "TIMESTAMP(6) WITH TIME ZONE", binding, null))
                        .as(binding.name())
                        .isNull();
            }
        }
    }

    private static Connection connection(String name) throws SQLException {
        Connection connection = DriverManager.getConnection("jdbc:h2:mem:instant-binding-" + name);
        try (Statement statement = connection.createStatement()) {
            statement.execute("SET TIME ZONE 'Europe/Berlin'");
        }
        return connection;
    }

    private static Instant roundTrip(Connection connection, String columnType, InstantBinding binding, Instant instant)
            throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE times (t " + columnType + ")");
        }
        try (PreparedStatement insert = connection.prepareStatement("INSERT INTO times (t) VALUES (?)")) {
            binding.set(insert, 1, instant);
            insert.executeUpdate();
        }
        try (Statement statement = connection.createStatement();
                ResultSet rs = statement.executeQuery("SELECT t FROM times")) {
            rs.next();
            return binding.get(rs, "t");
        }
    }
}
