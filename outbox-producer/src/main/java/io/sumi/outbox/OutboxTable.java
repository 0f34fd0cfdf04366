package io.sumi.outbox;

import io.sumi.jdbc.DatabaseType;
import io.sumi.jdbc.internal.SqlIdentifiers;
import io.sumi.outbox.internal.Jdbc;
import java.time.Clock;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessException;

/**
 * Where the outbox lives: a table on a {@link DataSource}, its database dialect, and the clock
 * every outbox component reads time from. The {@link Outbox}, {@link OutboxDispatcher},
 * {@link OutboxPruner} and {@link OutboxBackfill} of one outbox share one {@code OutboxTable}.
 *
 * <p>It is also the operator's view: {@link #stats()}, {@link #find}, {@link #parked} and
 * {@link #redrive} / {@link #redriveParked}, which give parked rows another round of attempts.
 * These run in the caller's Spring-managed transaction on the DataSource if there is one, else
 * each in its own.
 *
 * <p>Supported: PostgreSQL 13+, MariaDB 10.6+ ({@code SKIP LOCKED}), H2 2.x. Thread-safe.
 */
public final class OutboxTable {

    /** The default table name. */
    public static final String DEFAULT_TABLE_NAME = "outbox";

    private final DataSource dataSource;
    private final String tableName;
    private final DatabaseType databaseType;
    private final Clock clock;
    private final OutboxDialect dialect;

    private OutboxTable(Builder builder) {
        this.dataSource = builder.dataSource;
        this.tableName = builder.tableName;
        this.clock = builder.clock;
        this.databaseType = builder.databaseType != null ? builder.databaseType : detect(builder.dataSource);
        this.dialect = OutboxDialect.of(databaseType, tableName);
    }

    private static DatabaseType detect(DataSource dataSource) {
        try {
            return DatabaseType.of(dataSource);
        } catch (IllegalStateException ex) {
            throw new IllegalStateException(
                    "The Sumi outbox supports PostgreSQL, MariaDB 10.6+ and H2. " + ex.getMessage(), ex);
        }
    }

    /** Starts a builder for the outbox table on {@code dataSource}. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /** The outbox table {@value #DEFAULT_TABLE_NAME} on {@code dataSource}, with the system UTC clock. */
    public static OutboxTable of(DataSource dataSource) {
        return builder(dataSource).build();
    }

    /**
     * Validates a table name for the outbox.
     *
     * @throws IllegalArgumentException unless {@code name} is an SQL identifier, optionally
     *     qualified by a schema ({@code sumi.outbox})
     */
    public static String validateTableName(@Nullable String name) {
        return SqlIdentifiers.requireTableName(name, "outbox", DEFAULT_TABLE_NAME);
    }

    public DataSource dataSource() {
        return dataSource;
    }

    public String tableName() {
        return tableName;
    }

    public DatabaseType databaseType() {
        return databaseType;
    }

    public Clock clock() {
        return clock;
    }

    OutboxDialect dialect() {
        return dialect;
    }

    /**
     * Counts the backlog in one query.
     *
     * @throws DataAccessException if the database cannot be read
     */
    public OutboxStats stats() {
        return Jdbc.inCallerTransaction(dataSource, "stats", connection -> dialect.stats(connection, clock.instant()));
    }

    /** The row with this id, if it is still in the table. */
    public Optional<OutboxRecord> find(long id) {
        return Jdbc.inCallerTransaction(dataSource, "find", connection -> dialect.find(connection, id));
    }

    /**
     * The parked rows, oldest first.
     *
     * @param limit how many at most (positive)
     */
    public List<OutboxRecord> parked(int limit) {
        if (limit <= 0) {
            throw new IllegalArgumentException("limit must be positive, was " + limit);
        }
        return Jdbc.inCallerTransaction(dataSource, "parked", connection -> dialect.parked(connection, limit));
    }

    /**
     * Re-drives one parked row: it becomes pending again, due now, with its attempts reset (its
     * {@code last_error} is kept until the next send). A dispatcher picks it up on its next poll.
     *
     * @return whether the row was parked (and is now pending)
     */
    public boolean redrive(long id) {
        return Jdbc.inCallerTransaction(
                        dataSource,
                        "redrive",
                        connection -> dialect.redrive(connection, id, null, false, clock.instant()))
                > 0;
    }

    /**
     * Re-drives every parked row, or those of one topic.
     *
     * @param topic the topic, or {@code null} for all parked rows
     * @return how many rows were re-driven
     */
    public int redriveParked(@Nullable String topic) {
        return Jdbc.inCallerTransaction(
                dataSource, "redrive", connection -> dialect.redrive(connection, null, topic, true, clock.instant()));
    }

    /**
     * Builds an {@link OutboxTable}.
     */
    public static final class Builder {

        private final DataSource dataSource;
        private String tableName = DEFAULT_TABLE_NAME;
        private @Nullable DatabaseType databaseType;
        private Clock clock = Clock.systemUTC();

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        }

        /**
         * The table, {@value #DEFAULT_TABLE_NAME} by default.
         *
         * @throws IllegalArgumentException see {@link #validateTableName}
         */
        public Builder tableName(String tableName) {
            this.tableName = validateTableName(tableName);
            return this;
        }

        /** The database, detected from the DataSource's metadata (one connection) when not given. */
        public Builder databaseType(DatabaseType databaseType) {
            this.databaseType = Objects.requireNonNull(databaseType, "databaseType");
            return this;
        }

        /** Where every outbox component reads the time; the system UTC clock by default. */
        public Builder clock(Clock clock) {
            this.clock = Objects.requireNonNull(clock, "clock");
            return this;
        }

        /**
         * Builds the table, detecting the database type if it is not given.
         *
         * @throws IllegalStateException if the database type is not given and cannot be detected
         *     or is not supported
         */
        public OutboxTable build() {
            return new OutboxTable(this);
        }
    }
}
