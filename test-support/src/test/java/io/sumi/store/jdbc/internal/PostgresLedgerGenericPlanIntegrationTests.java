package io.sumi.store.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.jdbc.DatabaseType;
import io.sumi.store.ClaimRequest;
import io.sumi.testing.TestDatabase;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The batch claim and the read of the ids it did not claim on a ledger PostgreSQL never analyzed
 * (a new or truncated table), planned as the <em>generic</em> plan PostgreSQL caches for a
 * prepared statement after five executions: every scan of the ledger must be a probe of the
 * primary key on the full key. A scan of the consumer's key range (the plan the batch claim had
 * before, kept here as the negative control) costs O(rows of the consumer) per call until the
 * first {@code ANALYZE} (docs/benchmarks.md, "Cold tables").
 *
 * <p>Plans, not timings: the plan is what decides, and it does not depend on the machine's load.
 */
class PostgresLedgerGenericPlanIntegrationTests {

    /**
     * The batch lease claim before issue 12: the existing rows read in the same statement by a join
     * of the input with the ledger. Parameters: ids, fingerprints, consumer, token, lease micros,
     * consumer.
     */
    private static final String PREVIOUS_CLAIM_MANY_LEASE = """
            WITH input AS (SELECT * FROM unnest(?::varchar[], ?::varchar[]) AS i(message_id, fingerprint)),
            claimed AS (
                INSERT INTO processed_messages AS pm (consumer, message_id, status, claim_token, lease_until, attempts,
                                                      fingerprint, first_seen_at, processed_at)
                SELECT ?, i.message_id, 'IN_PROGRESS', ?, (statement_timestamp() + CAST(? AS BIGINT) * INTERVAL '1 microsecond'),
                       1, i.fingerprint, statement_timestamp(), NULL
                  FROM input i ORDER BY i.message_id
                ON CONFLICT (consumer, message_id) DO UPDATE
                   SET claim_token = EXCLUDED.claim_token, lease_until = EXCLUDED.lease_until, attempts = pm.attempts + 1
                 WHERE pm.status = 'IN_PROGRESS' AND pm.lease_until <= statement_timestamp()
                RETURNING pm.consumer, pm.message_id, pm.status)
            SELECT consumer, message_id, status FROM claimed
            UNION ALL
            SELECT t.consumer, t.message_id, t.status
              FROM input i JOIN processed_messages t ON t.consumer = ? AND t.message_id = i.message_id
             WHERE NOT EXISTS (SELECT 1 FROM claimed c WHERE c.message_id = i.message_id)
            """;

    private static final String MIGRATION = "db/sumi/postgresql/R__sumi_processed_messages.sql";

    private final String schema = "plan_" + UUID.randomUUID().toString().replace("-", "");
    private final LedgerDialect dialect = LedgerDialect.of(DatabaseType.POSTGRESQL, "processed_messages");
    private final LedgerDialect asynchronous = LedgerDialect.of(DatabaseType.POSTGRESQL, "processed_messages", true);
    private Connection connection;

    @BeforeEach
    void freshLedgerNeverAnalyzed() throws Exception {
        connection = TestDatabase.POSTGRESQL.dataSource().getConnection();
        try (Statement s = connection.createStatement()) {
            s.execute("CREATE SCHEMA " + schema);
            s.execute("SET search_path TO " + schema);
            s.execute(migration());
            // The plan is cached at the sixth execution: after five batches of 100, say. Autovacuum is off
            // for this table only, so that it stays without statistics while the test runs.
            s.execute("ALTER TABLE processed_messages SET (autovacuum_enabled = false)");
            s.execute("INSERT INTO processed_messages (consumer, message_id, status, claim_token, attempts,"
                    + " first_seen_at, processed_at) SELECT 'c', md5(g::text), 'COMPLETED', 1, 1, now(), now()"
                    + " FROM generate_series(1, 500) g");
            try (ResultSet rs =
                    s.executeQuery("SELECT reltuples FROM pg_class WHERE oid = 'processed_messages'::regclass")) {
                rs.next();
                assertThat(rs.getDouble(1)).as("never analyzed").isNegative();
            }
        }
    }

    @AfterEach
    void dropSchema() throws SQLException {
        try (Statement s = connection.createStatement()) {
            s.execute("DROP SCHEMA " + schema + " CASCADE");
            s.execute("RESET search_path");
        } finally {
            connection.close();
        }
    }

    @Test
    void theBatchClaimsNeverScanTheLedger() throws Exception {
        String lease = genericPlan(dialectSql("claimManyLease"), "'c', 1, 1000000, '{a,b}', '{NULL,NULL}'");
        String completed = genericPlan(dialectSql("claimManyCompleted"), "'c', 1, '{a,b}', '{NULL,NULL}'");

        assertThat(scansOfTheLedger(lease)).as(lease).isEmpty();
        assertThat(scansOfTheLedger(completed)).as(completed).isEmpty();
        assertThat(lease).contains("Conflict Arbiter Indexes: processed_messages_pk");
    }

    @Test
    void theAsynchronouslyCommittedBatchClaimNeverScansTheLedgerEither() throws Exception {
        String lease =
                genericPlan(dialectSql(asynchronous, "claimManyLease"), "'c', 1, 1000000, '{a,b}', '{NULL,NULL}'");

        assertThat(lease).contains("Conflict Arbiter Indexes: processed_messages_pk");
        assertThat(scansOfTheLedger(lease)).as(lease).isEmpty();
    }

    /**
     * {@code synchronous_commit} is off inside the claim's transaction (the CTE was evaluated) and
     * back to the connection's own setting once it ends: no later statement on a pooled connection
     * commits asynchronously. Negative control: the synchronous dialect's claim leaves it on.
     */
    @Test
    void theAsynchronousClaimTurnsSynchronousCommitOffForItsOwnTransactionOnly() throws Exception {
        connection.setAutoCommit(false);
        try {
            assertThat(claimTwo(dialect, "s1", "s2")).isEqualTo(2);
            assertThat(synchronousCommit())
                    .as("synchronous dialect, inside its transaction")
                    .isEqualTo("on");
            connection.commit();

            assertThat(claimTwo(asynchronous, "a1", "a2")).isEqualTo(2);
            assertThat(synchronousCommit()).as("inside the claim's transaction").isEqualTo("off");
            connection.commit();
            assertThat(synchronousCommit()).as("after it").isEqualTo("on");
        } finally {
            connection.setAutoCommit(true);
        }
        assertThat(claimTwo(asynchronous, "a3", "a4"))
                .as("auto-commit, as the store runs it")
                .isEqualTo(2);
        assertThat(synchronousCommit()).isEqualTo("on");
        try (Statement s = connection.createStatement();
                ResultSet rs = s.executeQuery(
                        "SELECT count(*) FROM processed_messages WHERE status = 'IN_PROGRESS' AND claim_token = 7")) {
            rs.next();
            assertThat(rs.getInt(1)).isEqualTo(6);
        }
    }

    private int claimTwo(LedgerDialect claiming, String first, String second) throws SQLException {
        return claiming.claim(
                        connection,
                        "c",
                        List.of(new ClaimRequest(first, null), new ClaimRequest(second, null)),
                        7L,
                        Duration.ofSeconds(30))
                .size();
    }

    private String synchronousCommit() throws SQLException {
        try (Statement s = connection.createStatement();
                ResultSet rs = s.executeQuery("SHOW synchronous_commit")) {
            rs.next();
            return rs.getString(1);
        }
    }

    @Test
    void theReadOfTheIdsNotClaimedProbesThePrimaryKeyPerId() throws Exception {
        String find = genericPlan(dialectSql("findMany"), "'{a,b}', 'c'");

        assertThat(scansOfTheLedger(find))
                .as(find)
                .singleElement()
                .satisfies(scan -> assertThat(scan)
                        .contains("Index Scan using processed_messages_pk")
                        .contains("message_id)::text = (i.message_id)::text"));
        assertThat(scansOfTheLedger(find))
                .allSatisfy(scan -> assertThat(isKeyProbe(scan)).as(scan).isTrue());
    }

    @Test
    void negativeControlThePreviousBatchClaimScannedTheConsumersKeyRange() throws Exception {
        String previous = genericPlan(PREVIOUS_CLAIM_MANY_LEASE, "'{a,b}', '{NULL,NULL}', 'c', 1, 1000000, 'c'");

        assertThat(scansOfTheLedger(previous))
                .as(previous)
                .isNotEmpty()
                .anySatisfy(scan -> assertThat(isKeyProbe(scan)).as(scan).isFalse());
    }

    /** The generic plan of {@code sql} (its {@code ?} numbered), executed with {@code arguments}. */
    private String genericPlan(String sql, String arguments) throws SQLException {
        StringBuilder numbered = new StringBuilder();
        int parameter = 0;
        for (char c : sql.toCharArray()) {
            if (c == '?') {
                numbered.append('$').append(++parameter);
            } else {
                numbered.append(c);
            }
        }
        String name = "q_" + schema;
        StringBuilder plan = new StringBuilder();
        try (Statement s = connection.createStatement()) {
            s.execute("SET plan_cache_mode = force_generic_plan");
            s.execute("PREPARE " + name + " AS " + numbered);
            try (ResultSet rs = s.executeQuery("EXPLAIN EXECUTE " + name + "(" + arguments + ")")) {
                while (rs.next()) {
                    plan.append(rs.getString(1)).append('\n');
                }
            } finally {
                s.execute("DEALLOCATE " + name);
                s.execute("RESET plan_cache_mode");
            }
        }
        return plan.toString();
    }

    /** Each node of the plan that reads the ledger table, with its detail lines (conditions, filters). */
    private static List<String> scansOfTheLedger(String plan) {
        List<String> scans = new ArrayList<>();
        StringBuilder current = null;
        for (String line : plan.split("\n")) {
            boolean node = line.contains("->") || !line.startsWith(" ");
            if (node) {
                if (current != null) {
                    scans.add(current.toString());
                    current = null;
                }
                if (line.contains("Scan") && line.contains(" on processed_messages")) {
                    current = new StringBuilder(line.trim());
                }
            } else if (current != null) {
                current.append('\n').append(line.trim());
            }
        }
        if (current != null) {
            scans.add(current.toString());
        }
        return scans;
    }

    /** A lookup of single keys: the primary key, its condition on both the consumer and the message id. */
    private static boolean isKeyProbe(String scan) {
        return scan.contains("Index Scan using processed_messages_pk")
                && scan.lines()
                        .anyMatch(
                                l -> l.startsWith("Index Cond:") && l.contains("message_id") && l.contains("consumer"));
    }

    private String dialectSql(String field) throws ReflectiveOperationException {
        return dialectSql(dialect, field);
    }

    private static String dialectSql(LedgerDialect of, String field) throws ReflectiveOperationException {
        Field f = of.getClass().getDeclaredField(field);
        f.setAccessible(true);
        return (String) f.get(of);
    }

    private static String migration() throws IOException {
        try (InputStream in = Objects.requireNonNull(
                PostgresLedgerGenericPlanIntegrationTests.class.getClassLoader().getResourceAsStream(MIGRATION))) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
