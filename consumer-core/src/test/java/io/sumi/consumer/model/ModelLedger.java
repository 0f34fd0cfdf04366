package io.sumi.consumer.model;

import io.sumi.jdbc.DatabaseType;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.sql.Timestamp;
import java.time.Clock;
import java.time.Instant;
import javax.sql.DataSource;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The ledger a model run ({@link ExecutorModel}) plays against: the JDBC ledger on one of the test
 * databases ({@link #of(TestDatabase)}), or another store (store-redis's tests give the Redis
 * ledger). Besides the stores it hands the instances, it does what the model does behind their
 * backs: ending every live lease at once, and removing a run's rows.
 */
interface ModelLedger {

    /** The ledger's name in failure messages. */
    String name();

    /**
     * An instance's store. {@code clock} is that instance's clock (one instance's may run ahead of
     * the others'); a store that takes every time from its server ignores it.
     */
    ProcessedMessageStore store(Clock clock);

    /** The model's own view of the ledger (reads and the prune step). */
    ProcessedMessageStore reader();

    /**
     * The database of the listeners' transactions (the model's outer transactions) and of the
     * transactional mode's effect rows: the ledger's own for the JDBC ledger.
     */
    DataSource dataSource();

    /**
     * Whether the ledger's writes join {@link #dataSource()}'s transactions: only then can a
     * transactional-mode property run on it.
     */
    boolean transactional();

    /** Every IN_PROGRESS row of {@code consumer} gets a lease that ended long ago. */
    void expireLeases(String consumer);

    /** Removes every row of {@code consumer}. */
    void delete(String consumer);

    /** The random samples per property on this ledger when {@link ExecutorModelProperties#TRIES} is not set. */
    int defaultTries();

    /** The JDBC ledger on {@code database}. */
    static ModelLedger of(TestDatabase database) {
        return new Jdbc(database);
    }

    /** The JDBC ledger on a test database: lease expiry is an UPDATE, never the JVM's clock. */
    final class Jdbc implements ModelLedger {

        private static final Timestamp LONG_AGO = Timestamp.from(Instant.parse("2000-01-01T00:00:00Z"));

        private final TestDatabase database;
        private final DataSource dataSource;
        private final DatabaseType databaseType;
        private final JdbcTemplate jdbc;
        private final ProcessedMessageStore reader;

        private Jdbc(TestDatabase database) {
            this.database = database;
            this.dataSource = database.dataSource();
            this.databaseType = DatabaseType.of(dataSource);
            this.jdbc = new JdbcTemplate(dataSource);
            this.reader = store(Clock.systemUTC());
        }

        @Override
        public String name() {
            return database.toString();
        }

        @Override
        public ProcessedMessageStore store(Clock clock) {
            return JdbcProcessedMessageStore.builder(dataSource)
                    .databaseType(databaseType)
                    .clock(clock)
                    .build();
        }

        @Override
        public ProcessedMessageStore reader() {
            return reader;
        }

        @Override
        public DataSource dataSource() {
            return dataSource;
        }

        @Override
        public boolean transactional() {
            return true;
        }

        @Override
        public void expireLeases(String consumer) {
            jdbc.update(
                    "UPDATE processed_messages SET lease_until = ? WHERE consumer = ? AND status = 'IN_PROGRESS'",
                    LONG_AGO,
                    consumer);
        }

        @Override
        public void delete(String consumer) {
            jdbc.update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
        }

        /** H2 is the fast suite and gets the most; PostgreSQL and MariaDB fewer. */
        @Override
        public int defaultTries() {
            return database == TestDatabase.H2 ? 500 : 75;
        }
    }
}
