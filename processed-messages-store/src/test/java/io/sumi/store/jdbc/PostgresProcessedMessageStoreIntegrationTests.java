package io.sumi.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.testing.TestDatabase;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DelegatingDataSource;

class PostgresProcessedMessageStoreIntegrationTests extends ProcessedMessageStoreContractTests {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }

    /**
     * A ledger analyzed while empty and not since (a new ledger before autovacuum's first ANALYZE, or
     * a server with autovacuum off) must not make a record listener's complete, release or renew
     * read the consumer's other claims: their generic plans must go through the whole primary key.
     * The plans are read with {@code EXPLAIN} under {@code plan_cache_mode = force_generic_plan}
     * (what PostgreSQL uses after a prepared statement's fifth run) over 5,000 live claims.
     */
    @Test
    void singleRecordStatementsUseThePrimaryKeyOnATableAnalyzedWhileEmpty() {
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        String table =
                "cold_ledger_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        jdbc.execute("CREATE TABLE " + table + " (LIKE processed_messages INCLUDING ALL)");
        try {
            jdbc.execute("ANALYZE " + table);
            jdbc.update("INSERT INTO " + table + " (consumer, message_id, status, claim_token, lease_until, attempts,"
                    + " first_seen_at) SELECT 'cold', 'live-' || g, 'IN_PROGRESS', g,"
                    + " statement_timestamp() + INTERVAL '1 hour', 1, statement_timestamp()"
                    + " FROM generate_series(1, 5000) g");

            List<String> statements = new CopyOnWriteArrayList<>();
            JdbcProcessedMessageStore coldStore = JdbcProcessedMessageStore.builder(recording(dataSource, statements))
                    .tableName(table)
                    .build();
            ClaimResult claim = coldStore.claim("cold", new ClaimRequest("new", "fp"), LEASE);
            long token = claim.message().claimToken();
            statements.clear();
            coldStore.renewAll("cold", token, List.of("new"), LEASE);
            coldStore.releaseAll("cold", token, List.of("new"), "boom");
            coldStore.completeAll("cold", token, List.of("new"));
            List<String> recorded = new ArrayList<>(statements);
            assertThat(recorded).hasSize(3);

            for (String sql : recorded) {
                assertThat(genericPlan(jdbc, sql))
                        .as("generic plan of %s", sql)
                        .contains("Index Scan using " + table + "_pkey")
                        .doesNotContain("Bitmap")
                        .doesNotContain("Seq Scan");
            }
            // Negative control: the array form these statements used before scans the table's live
            // claims instead of looking the key up, so the check above can fail.
            String arrayForm = recorded.get(2).replace("message_id = ?", "message_id = ANY(?::varchar[])");
            assertThat(genericPlan(jdbc, arrayForm))
                    .doesNotContain("Index Scan using " + table + "_pkey")
                    .containsAnyOf("Bitmap", "Seq Scan");
        } finally {
            jdbc.execute("DROP TABLE " + table);
        }
    }

    /** The plan PostgreSQL caches for {@code sql} once it plans generically, as text. */
    private static String genericPlan(JdbcTemplate jdbc, String sql) {
        StringBuilder numbered = new StringBuilder();
        int parameter = 0;
        for (char c : sql.toCharArray()) {
            numbered.append(c == '?' ? "$" + ++parameter : String.valueOf(c));
        }
        List<String> arguments = new ArrayList<>();
        for (int i = 0; i < parameter; i++) {
            arguments.add("NULL");
        }
        String name = "plan_" + UUID.randomUUID().toString().replace("-", "");
        return jdbc.execute((Connection connection) -> {
            try (var statement = connection.createStatement()) {
                statement.execute("SET plan_cache_mode = force_generic_plan");
                statement.execute("PREPARE " + name + " AS " + numbered);
                StringBuilder plan = new StringBuilder();
                try (var rows =
                        statement.executeQuery("EXPLAIN EXECUTE " + name + "(" + String.join(", ", arguments) + ")")) {
                    while (rows.next()) {
                        plan.append(rows.getString(1)).append('\n');
                    }
                }
                statement.execute("DEALLOCATE " + name);
                statement.execute("RESET plan_cache_mode");
                return plan.toString();
            }
        });
    }

    /** {@code dataSource}, recording the text of every statement prepared on its connections. */
    private static DataSource recording(DataSource dataSource, List<String> statements) {
        return new DelegatingDataSource(dataSource) {
            @Override
            public Connection getConnection() throws java.sql.SQLException {
                Connection connection = super.getConnection();
                return (Connection) Proxy.newProxyInstance(
                        Connection.class.getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                            if (method.getName().equals("prepareStatement")) {
                                statements.add((String) args[0]);
                            }
                            try {
                                return method.invoke(connection, args);
                            } catch (java.lang.reflect.InvocationTargetException ex) {
                                throw ex.getCause();
                            }
                        });
            }
        };
    }
}
