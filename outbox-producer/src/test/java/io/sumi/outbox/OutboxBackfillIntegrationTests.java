package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

import io.sumi.outbox.cli.OutboxBackfillCommand;
import io.sumi.testing.MutableClock;
import io.sumi.testing.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The backfill command, on H2 (its SQL is the same {@code INSERT} the outbox uses everywhere, and
 * the query is the user's).
 */
class OutboxBackfillIntegrationTests {

    static final String QUERY = """
            SELECT 'user-' || id AS aggregate_id, '{"mail":"welcome","user":' || id || '}' AS payload,
                   '{"campaign":"backfill"}' AS headers, '1' AS schema_version
              FROM outbox_test_users WHERE welcome_sent = FALSE ORDER BY id""";

    DataSource dataSource = OutboxTestDatabases.dataSource(TestDatabase.H2);
    JdbcTemplate jdbc = new JdbcTemplate(dataSource);
    MutableClock clock = MutableClock.at("2030-01-01T00:00:00Z");
    OutboxTable table = OutboxTable.builder(dataSource).clock(clock).build();
    ByteArrayOutputStream printed = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(printed, true, StandardCharsets.UTF_8);

    @BeforeEach
    void setUp() {
        jdbc.update("DELETE FROM outbox");
        jdbc.execute(
                "CREATE TABLE IF NOT EXISTS outbox_test_users (id INTEGER PRIMARY KEY, welcome_sent BOOLEAN NOT NULL)");
        jdbc.update("DELETE FROM outbox_test_users");
        for (int id = 1; id <= 30; id++) {
            jdbc.update("INSERT INTO outbox_test_users (id, welcome_sent) VALUES (?, ?)", id, id % 10 == 0);
        }
    }

    String printed() {
        return printed.toString(StandardCharsets.UTF_8);
    }

    int outboxRows() {
        return jdbc.queryForObject("SELECT COUNT(*) FROM outbox", Integer.class);
    }

    @Test
    void aDryRunPrintsWhatItWouldInsertAndWritesNothing() {
        OutboxBackfill.Report report = OutboxBackfill.builder(table, QUERY)
                .defaultTopic("mail.send")
                .printLimit(3)
                .build()
                .run(false, out);

        assertThat(report).isEqualTo(new OutboxBackfill.Report(27, 27, 0, false));
        assertThat(outboxRows()).isZero();
        assertThat(printed())
                .contains("Dry run (nothing is written; pass --execute to insert)")
                .contains(
                        "would insert: topic=mail.send aggregate=user-1 available_at=2030-01-01T00:00:00Z"
                                + " headers={\"campaign\":\"backfill\",\"schema-version\":\"1\"} payload={\"mail\":\"welcome\",\"user\":1}")
                .contains("... and 24 more")
                .contains("Would insert 27 of 27 rows; skipped 0")
                .contains("Run again with --execute");
    }

    @Test
    void executeInsertsTheRowsPacedByTheIntervalAndARerunInsertsNothingNew() {
        OutboxBackfill backfill = OutboxBackfill.builder(table, QUERY)
                .defaultTopic("mail.send")
                .interval(Duration.ofSeconds(2))
                .batchSize(10)
                .build();

        assertThat(backfill.run(true, out)).isEqualTo(new OutboxBackfill.Report(27, 27, 0, true));
        assertThat(outboxRows()).isEqualTo(27);
        List<Map<String, Object>> rows = jdbc.queryForList("SELECT aggregate_id, headers FROM outbox ORDER BY id");
        assertThat(rows.get(0)).containsEntry("AGGREGATE_ID", "user-1");
        OutboxRecord first = table.find(jdbc.queryForObject("SELECT MIN(id) FROM outbox", Long.class))
                .orElseThrow();
        OutboxRecord last = table.find(jdbc.queryForObject("SELECT MAX(id) FROM outbox", Long.class))
                .orElseThrow();
        assertThat(first.availableAt()).isEqualTo(clock.instant());
        assertThat(last.availableAt()).isEqualTo(clock.instant().plus(Duration.ofSeconds(2 * 26)));
        assertThat(last.headers())
                .containsEntry(OutboxHeaders.SCHEMA_VERSION, "1")
                .containsEntry("campaign", "backfill");
        assertThat(printed()).contains("Inserted 27 of 27 rows");

        assertThat(backfill.run(true, out)).isEqualTo(new OutboxBackfill.Report(27, 0, 27, true));
        assertThat(outboxRows()).isEqualTo(27);
        assertThat(OutboxBackfill.builder(table, QUERY)
                        .defaultTopic("mail.send")
                        .skipExisting(false)
                        .build()
                        .run(false, out)
                        .inserted())
                .isEqualTo(27);
    }

    @Test
    void aQueryWithoutTheRequiredColumnsIsRejectedClearly() {
        assertThatIllegalArgumentException()
                .isThrownBy(() -> OutboxBackfill.builder(table, "SELECT id FROM outbox_test_users")
                        .build()
                        .run(false, out))
                .withMessageContaining("must return the columns aggregate_id, payload and topic")
                .withMessageContaining("returned: id");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> OutboxBackfill.builder(table, QUERY).build().run(true, out))
                .withMessageContaining("--topic");
        assertThat(outboxRows()).isZero();
    }

    @Test
    void theCommandLineIsADryRunUnlessToldToExecute() {
        String url = "jdbc:h2:mem:" + OutboxTestDatabases.DATABASE_NAME + ";DB_CLOSE_DELAY=-1;MODE=PostgreSQL";
        ByteArrayOutputStream errors = new ByteArrayOutputStream();
        PrintStream err = new PrintStream(errors, true, StandardCharsets.UTF_8);
        String query =
                "SELECT 'user-' || id AS aggregate_id, 'mail.send' AS topic, '{}' AS payload FROM outbox_test_users";

        assertThat(OutboxBackfillCommand.run(new String[] {"--url", url, "--user", "sa", "--query", query}, out, err))
                .isZero();
        assertThat(outboxRows()).isZero();
        assertThat(printed()).contains("Would insert 30 of 30 rows");

        assertThat(OutboxBackfillCommand.run(
                        new String[] {"--url", url, "--user", "sa", "--query", query, "--execute", "--print", "0"},
                        out,
                        err))
                .isZero();
        assertThat(outboxRows()).isEqualTo(30);

        assertThat(OutboxBackfillCommand.run(
                        new String[] {"--url", url, "--query", query, "--execute", "--dry-run"}, out, err))
                .isEqualTo(2);
        assertThat(OutboxBackfillCommand.run(new String[] {"--query", query}, out, err))
                .isEqualTo(2);
        assertThat(OutboxBackfillCommand.run(
                        new String[] {"--url", url, "--query", query, "--interval", "soon"}, out, err))
                .isEqualTo(2);
        assertThat(errors.toString(StandardCharsets.UTF_8))
                .contains("--url is required")
                .contains("Invalid duration 'soon'");
        assertThat(OutboxBackfillCommand.run(new String[] {"--help"}, out, err)).isZero();
        assertThat(printed()).contains("Usage: java -cp <classpath> io.sumi.outbox.cli.OutboxBackfillCommand");
    }
}
