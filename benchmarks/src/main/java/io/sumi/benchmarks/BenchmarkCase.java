package io.sumi.benchmarks;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import javax.sql.DataSource;

/**
 * One measured case: its tables (in a schema of its own), and an operation that takes new, unique
 * ids and returns how many it took.
 */
abstract class BenchmarkCase {

    /** What a case stands for in the report and in the target checks. */
    enum Role {
        /** The physical limit every figure is divided by: raw INSERT ... ON CONFLICT DO NOTHING, autocommit. */
        RAW,
        /** Other raw JDBC figures that help read the rest (never a target). */
        REFERENCE,
        /** Sumi's store or executor. */
        SUMI,
        /** Apache Camel JdbcMessageIdRepository. */
        CAMEL,
        /** Spring Integration JdbcMetadataStore. */
        SPRING_INTEGRATION
    }

    /** The operation, bound to one pool. */
    // close() throws Exception: an operation closes whatever it opened (pools, threads); the
    // harness lets any failure, interruption included, end the run.
    @SuppressWarnings("try")
    interface Operation extends AutoCloseable {

        /** Takes new ids; returns how many. Throws if any of them was not taken as new. */
        int run() throws Exception;

        /** Extra figures to print under the table (e.g. where a batch spends its time), or null. */
        default String details(long measuredOps) {
            return null;
        }

        @Override
        default void close() throws Exception {}
    }

    final String id;
    final String label;
    final Role role;

    BenchmarkCase(String id, String label, Role role) {
        this.id = id;
        this.label = label;
        this.role = role;
    }

    /** The case's own schema. */
    String schema() {
        return "bench_" + id.replace('-', '_');
    }

    /** Creates the case's tables in {@link #schema()} (which exists and is empty). */
    abstract void createTables(Connection connection) throws SQLException;

    /** The tables to truncate between cases, schema-qualified. */
    abstract List<String> tables();

    /** A query returning how many ids the tables hold as taken, to check against the count of the run. */
    abstract String countQuery();

    /** Opens the operation on {@code dataSource}. */
    abstract Operation open(DataSource dataSource, Ids ids) throws Exception;

    @Override
    public String toString() {
        return id;
    }
}
