package io.sumi.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.testing.ScratchDatabase;
import io.sumi.testing.TestDatabase;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Upgrading a MariaDB outbox created with the PAD SPACE collation {@code utf8mb4_bin} (where
 * aggregates {@code 'A'} and {@code 'A '} were one, and topic {@code 't '} was {@code 't'}):
 * Sumi's migration changes {@code aggregate_id} and {@code topic} to {@code utf8mb4_nopad_bin} in
 * place, keeping every row exactly. Runs in a database of its own next to the test database,
 * created and dropped by the test.
 */
class MariaDbOutboxMigrationIntegrationTests {

    /** The outbox as Sumi's migration created it before those columns were NO PAD. */
    static final String LEGACY_TABLE = """
            CREATE TABLE outbox (
                id               BIGINT        NOT NULL AUTO_INCREMENT,
                aggregate_id     VARCHAR(200)  NOT NULL,
                topic            VARCHAR(255)  NOT NULL,
                payload          LONGTEXT      NOT NULL,
                headers          TEXT          NOT NULL,
                created_at       DATETIME(6)   NOT NULL,
                available_at     DATETIME(6)   NOT NULL,
                dispatched_at    DATETIME(6),
                attempts         INT           NOT NULL DEFAULT 0,
                last_error       VARCHAR(1000),
                claim_token      BIGINT,
                lease_until      DATETIME(6),
                parked_at        DATETIME(6),
                dispatch_outcome VARCHAR(16),
                PRIMARY KEY (id)
            ) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin""";

    ScratchDatabase scratch;
    DataSource dataSource;

    @BeforeEach
    void legacyOutbox() {
        scratch = ScratchDatabase.create(TestDatabase.MARIADB, "_outbox_upgrade");
        dataSource = scratch.dataSource();
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        jdbc.execute(LEGACY_TABLE);
        jdbc.execute("CREATE INDEX outbox_aggregate_idx ON outbox (topic, aggregate_id, dispatched_at)");
        for (String aggregate : List.of("A", "A ", "注文-42-é", "🎉".repeat(200))) {
            jdbc.update(
                    "INSERT INTO outbox (aggregate_id, topic, payload, headers, created_at, available_at)"
                            + " VALUES (?, ?, '{}', '{}', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))",
                    aggregate,
                    aggregate.equals("A ") ? "t " : "t");
        }
    }

    @AfterEach
    void dropDatabase() {
        scratch.close();
    }

    @Test
    void theMigrationMakesAggregateAndTopicNoPadAndKeepsEveryRow() {
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        List<Map<String, Object>> before =
                jdbc.queryForList("SELECT id, aggregate_id, topic, payload FROM outbox ORDER BY id");

        // As in an application whose outbox predates this version: the changed repeatable script runs again.
        scratch.migrateAsAnUpgrade();

        assertThat(scratch.collations("outbox", "aggregate_id", "topic"))
                .containsExactly("utf8mb4_nopad_bin", "utf8mb4_nopad_bin");
        assertThat(jdbc.queryForList("SELECT id, aggregate_id, topic, payload FROM outbox ORDER BY id"))
                .hasSize(4)
                .containsExactlyElementsOf(before);
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM outbox WHERE aggregate_id = 'A'", Integer.class))
                .as("'A ' is an aggregate of its own now")
                .isOne();
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM outbox WHERE topic = 't'", Integer.class))
                .isEqualTo(3);
    }
}
