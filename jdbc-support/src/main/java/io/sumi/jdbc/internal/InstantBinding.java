package io.sumi.jdbc.internal;

import io.sumi.jdbc.DatabaseType;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import org.jspecify.annotations.Nullable;

/**
 * How an {@link Instant} is bound to, and read from, a timestamp column of each database, always in
 * UTC, so that neither the JVM's nor the session's time zone shifts it. Not API.
 */
public enum InstantBinding {

    /**
     * {@code TIMESTAMP WITH TIME ZONE} (PostgreSQL {@code timestamptz}, H2), bound and read as an
     * {@link OffsetDateTime} in UTC.
     */
    TIMESTAMP_WITH_TIME_ZONE {
        @Override
        public void set(PreparedStatement statement, int index, @Nullable Instant instant) throws SQLException {
            statement.setObject(
                    index,
                    instant == null ? null : OffsetDateTime.ofInstant(instant, ZoneOffset.UTC),
                    Types.TIMESTAMP_WITH_TIMEZONE);
        }

        @Override
        public @Nullable Instant get(ResultSet resultSet, String column) throws SQLException {
            OffsetDateTime value = resultSet.getObject(column, OffsetDateTime.class);
            return value == null ? null : value.toInstant();
        }
    },

    /**
     * MariaDB {@code DATETIME(6)} holding UTC (Sumi's migrations; the database's clock is
     * {@code UTC_TIMESTAMP(6)}), bound and read as a {@link LocalDateTime} in UTC: the driver would
     * convert an {@link OffsetDateTime} to the session's time zone.
     */
    UTC_DATETIME {
        @Override
        public void set(PreparedStatement statement, int index, @Nullable Instant instant) throws SQLException {
            statement.setObject(index, instant == null ? null : LocalDateTime.ofInstant(instant, ZoneOffset.UTC));
        }

        @Override
        public @Nullable Instant get(ResultSet resultSet, String column) throws SQLException {
            LocalDateTime value = resultSet.getObject(column, LocalDateTime.class);
            return value == null ? null : value.toInstant(ZoneOffset.UTC);
        }
    };

    /** The binding of Sumi's timestamp columns on {@code type}. */
    public static InstantBinding of(DatabaseType type) {
        return switch (type) {
            case POSTGRESQL, H2 -> TIMESTAMP_WITH_TIME_ZONE;
            case MARIADB -> UTC_DATETIME;
        };
    }

    /** Binds {@code instant} (or SQL {@code NULL}) to parameter {@code index}. */
    public abstract void set(PreparedStatement statement, int index, @Nullable Instant instant) throws SQLException;

    /** Reads an instant written by {@link #set}; {@code null} for SQL {@code NULL}. */
    public abstract @Nullable Instant get(ResultSet resultSet, String column) throws SQLException;
}
