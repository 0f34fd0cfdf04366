package io.sumi.autoconfigure.actuate;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.autoconfigure.actuate.internal.LedgerRow;
import io.sumi.autoconfigure.actuate.internal.OutboxRow;
import io.sumi.autoconfigure.actuate.internal.SumiReadModels;
import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxTable;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.core.io.ByteArrayResource;
import org.springframework.core.io.ClassPathResource;
import org.springframework.data.domain.Page;
import org.springframework.data.domain.PageRequest;
import org.springframework.data.domain.Sort;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The read models on every database, on tables with names of their own (the configured
 * {@code sumi.ledger.table-name} and {@code sumi.outbox.table-name} reach Spring Data JDBC through the
 * naming strategy): rows and times read back exactly as the store wrote them (MariaDB's UTC
 * columns included, whatever the JVM's zone), paging, counts and the backlog per topic.
 */
class SumiReadModelsIntegrationTests {

    static final Duration LEASE = Duration.ofMinutes(5);

    @ParameterizedTest
    @EnumSource(TestDatabase.class)
    void readModelsHonourConfiguredTableNamesAndReadTimesExactly(TestDatabase database) throws Exception {
        DataSource dataSource = database.dataSource("sumi_actuator_readmodels", 5);
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        createCopy(dataSource, database, "R__sumi_processed_messages.sql", "processed_messages", "ops_ledger");
        createCopy(dataSource, database, "R__sumi_outbox.sql", "outbox", "ops_outbox");
        jdbc.update("DELETE FROM ops_ledger");
        jdbc.update("DELETE FROM ops_outbox");
        // Rows in the default tables must not show: the read models read the configured ones.
        jdbc.update("DELETE FROM processed_messages");
        JdbcProcessedMessageStore store = JdbcProcessedMessageStore.builder(dataSource)
                .tableName("ops_ledger")
                .build();
        JdbcProcessedMessageStore.builder(dataSource).build().claim("elsewhere", new ClaimRequest("x", null), LEASE);

        ClaimResult live = store.claim("mailer", new ClaimRequest("live", null), LEASE);
        for (String id : List.of("h1", "h2", "h3")) {
            ClaimResult claim = store.claim("mailer", new ClaimRequest(id, null), LEASE);
            store.markForReconciliation(claim.message(), "uncertain " + id);
        }
        OutboxTable outboxTable =
                OutboxTable.builder(dataSource).tableName("ops_outbox").build();
        Outbox outbox = Outbox.builder(outboxTable).build();
        List<Long> ids = new TransactionTemplate(new DataSourceTransactionManager(dataSource))
                .execute(status -> List.of(
                        outbox.append("a", "orders", "{}"),
                        outbox.append("b", "orders", "{}"),
                        outbox.append("c", "mail", "{}")));
        // Parked as the dispatcher parks a row (the time itself does not matter here).
        jdbc.update(
                "UPDATE ops_outbox SET parked_at = available_at, attempts = 12 WHERE id IN (?, ?)",
                ids.get(0),
                ids.get(2));

        SumiReadModels readModels = new SumiReadModels(dataSource, "ops_ledger", "ops_outbox");

        assertThat(readModels.ledgerCounts()).isEqualTo(Map.of("mailer", Map.of("IN_PROGRESS", 1L, "RECONCILE", 3L)));
        assertThat(readModels.reconciliationCounts()).isEqualTo(Map.of("mailer", 3L));
        LedgerRow oldest = readModels.oldestLiveClaim("mailer", Instant.now()).orElseThrow();
        assertThat(oldest.id().messageId()).isEqualTo("live");
        // Times as the store reads them: same instants, so no zone shifted them.
        assertThat(oldest.firstSeenAt()).isEqualTo(live.message().firstSeenAt());
        assertThat(oldest.leaseUntil()).isEqualTo(live.message().leaseUntil());
        assertThat(readModels.oldestLiveClaim(
                        "mailer", live.message().leaseUntil().plusSeconds(1)))
                .isEmpty();

        Page<LedgerRow> first = readModels.ledgerRows(
                "RECONCILE", "mailer", PageRequest.of(0, 2, Sort.by("firstSeenAt", "id.messageId")));
        Page<LedgerRow> second = readModels.ledgerRows(
                "RECONCILE", "mailer", PageRequest.of(1, 2, Sort.by("firstSeenAt", "id.messageId")));
        assertThat(first.getTotalElements()).isEqualTo(3);
        assertThat(first.getContent()).hasSize(2);
        assertThat(second.getContent()).hasSize(1);
        assertThat(first.getContent().get(0).lastError()).startsWith("uncertain h");
        assertThat(readModels
                        .ledgerRows("RECONCILE", "nobody", PageRequest.of(0, 2))
                        .getTotalElements())
                .isZero();

        Page<OutboxRow> parked = readModels.parked(null, PageRequest.of(0, 10, Sort.by("id")));
        assertThat(parked.getContent()).extracting(OutboxRow::id).containsExactly(ids.get(0), ids.get(2));
        assertThat(parked.getContent().get(0).createdAt())
                .isEqualTo(outboxTable.find(ids.get(0)).orElseThrow().createdAt());
        assertThat(readModels.parked("mail", PageRequest.of(0, 10)).getContent())
                .extracting(OutboxRow::id)
                .containsExactly(ids.get(2));
        Map<String, SumiReadModels.TopicBacklog> backlog = readModels.outboxBacklog();
        assertThat(backlog.keySet()).containsExactly("mail", "orders");
        assertThat(backlog.get("orders").pending()).isEqualTo(1);
        assertThat(backlog.get("orders").parked()).isEqualTo(1);
        assertThat(backlog.get("orders").oldestDueAt())
                .isEqualTo(outboxTable.find(ids.get(1)).orElseThrow().availableAt());
        assertThat(backlog.get("mail").pending()).isZero();
        assertThat(backlog.get("mail").oldestDueAt()).isNull();
    }

    /** Sumi's script for {@code table}, run for a table of another name (its indexes renamed with it). */
    private static void createCopy(
            DataSource dataSource, TestDatabase database, String script, String table, String copy) throws Exception {
        String sql = new ClassPathResource(database.migrationLocation().substring("classpath:".length()) + "/" + script)
                .getContentAsString(StandardCharsets.UTF_8)
                .replace(table, copy);
        new ResourceDatabasePopulator(new ByteArrayResource(sql.getBytes(StandardCharsets.UTF_8))).execute(dataSource);
    }
}
