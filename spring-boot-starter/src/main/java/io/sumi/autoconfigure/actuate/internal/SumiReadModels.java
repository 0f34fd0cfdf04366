package io.sumi.autoconfigure.actuate.internal;

import io.sumi.jdbc.DatabaseType;
import io.sumi.jdbc.internal.InstantBinding;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.core.convert.converter.Converter;
import org.springframework.data.convert.ReadingConverter;
import org.springframework.data.convert.WritingConverter;
import org.springframework.data.domain.Page;
import org.springframework.data.domain.Pageable;
import org.springframework.data.jdbc.core.JdbcAggregateTemplate;
import org.springframework.data.jdbc.core.convert.DataAccessStrategy;
import org.springframework.data.jdbc.core.convert.JdbcConverter;
import org.springframework.data.jdbc.core.convert.JdbcCustomConversions;
import org.springframework.data.jdbc.core.convert.QueryMappingConfiguration;
import org.springframework.data.jdbc.core.convert.RelationResolver;
import org.springframework.data.jdbc.core.dialect.DialectResolver;
import org.springframework.data.jdbc.core.dialect.JdbcDialect;
import org.springframework.data.jdbc.core.mapping.JdbcMappingContext;
import org.springframework.data.jdbc.repository.config.JdbcConfiguration;
import org.springframework.data.jdbc.repository.support.JdbcRepositoryFactory;
import org.springframework.data.relational.RelationalManagedTypes;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;

/**
 * The operator's read models of the ledger and the outbox: Spring Data JDBC aggregates
 * ({@link LedgerRow}, {@link OutboxRow}) with paging repositories ({@link LedgerRows},
 * {@link OutboxRows}), on a mapping context of their own.
 *
 * <p>Why a private mapping context: registering Spring Data JDBC repositories the usual way
 * ({@code @EnableJdbcRepositories}) would make Spring Boot's own repository auto-configuration
 * back off in an application that uses Spring Data JDBC itself, and would mix Sumi's entities with
 * the application's naming strategy and converters. Nothing here is a bean; the application's
 * Spring Data setup, if any, is untouched.
 *
 * <p>Table names come from the configuration through {@link SumiTableNames}. The two summaries
 * that need {@code GROUP BY} (counts per consumer and status, backlog per topic), which derived
 * queries cannot express, run as plain SQL on the table names that same mapping context renders.
 * None of this is on a message's path: the ledger's and the outbox's own SQL is unchanged.
 *
 * <p>Time: PostgreSQL and H2 store times with their zone; MariaDB's {@code DATETIME(6)} columns
 * hold UTC without one, so on MariaDB the read models convert them as UTC whatever the JVM's zone.
 *
 * <p>Thread-safe.
 */
public final class SumiReadModels {

    private final JdbcTemplate jdbc;
    private final InstantBinding instants;
    private final LedgerRows ledgerRows;
    private final OutboxRows outboxRows;
    private final String ledgerTable;
    private final String outboxTable;

    /**
     * @param ledgerTable the ledger's table name, validated
     * @param outboxTable the outbox's table name, validated
     */
    public SumiReadModels(DataSource dataSource, String ledgerTable, String outboxTable) {
        NamedParameterJdbcTemplate operations = new NamedParameterJdbcTemplate(dataSource);
        this.jdbc = operations.getJdbcTemplate();
        DatabaseType type = DatabaseType.of(dataSource);
        this.instants = InstantBinding.of(type);
        JdbcDialect dialect = DialectResolver.getDialect(jdbc);
        JdbcCustomConversions conversions =
                JdbcConfiguration.createCustomConversions(dialect, type == DatabaseType.MARIADB ? utc() : List.of());
        JdbcMappingContext context = JdbcConfiguration.createMappingContext(
                RelationalManagedTypes.from(LedgerRow.class, OutboxRow.class),
                conversions,
                new SumiTableNames(Map.of(LedgerRow.class, ledgerTable, OutboxRow.class, outboxTable)));
        context.setForceQuote(false);
        // The read models are flat rows: no aggregate has a relation to resolve.
        RelationResolver noRelations = (identifier, path) -> {
            throw new IllegalStateException("Sumi's read models have no relations, asked for " + path);
        };
        JdbcConverter converter =
                JdbcConfiguration.createConverter(context, operations, noRelations, conversions, dialect);
        DataAccessStrategy strategy = JdbcConfiguration.createDataAccessStrategy(
                operations, converter, QueryMappingConfiguration.EMPTY, dialect);
        JdbcRepositoryFactory repositories = new JdbcRepositoryFactory(new JdbcAggregateTemplate(converter, strategy));
        this.ledgerRows = repositories.getRepository(LedgerRows.class);
        this.outboxRows = repositories.getRepository(OutboxRows.class);
        this.ledgerTable = context.getRequiredPersistentEntity(LedgerRow.class)
                .getQualifiedTableName()
                .toSql(dialect.getIdentifierProcessing());
        this.outboxTable = context.getRequiredPersistentEntity(OutboxRow.class)
                .getQualifiedTableName()
                .toSql(dialect.getIdentifierProcessing());
    }

    private static List<Object> utc() {
        return List.of(new UtcTimestampToInstant(), new UtcLocalDateTimeToInstant(), new InstantToUtcLocalDateTime());
    }

    public LedgerRows ledgerRows() {
        return ledgerRows;
    }

    public OutboxRows outboxRows() {
        return outboxRows;
    }

    /** Rows per consumer and status, consumers in name order (one scan of the ledger). */
    public Map<String, Map<String, Long>> ledgerCounts() {
        Map<String, Map<String, Long>> counts = new TreeMap<>();
        jdbc.query("SELECT consumer, status, COUNT(*) AS n FROM " + ledgerTable + " GROUP BY consumer, status", rs -> {
            counts.computeIfAbsent(rs.getString("consumer"), c -> new TreeMap<>())
                    .put(rs.getString("status"), rs.getLong("n"));
        });
        return counts;
    }

    /** Rows held for reconciliation per consumer (only consumers that have some). */
    public Map<String, Long> reconciliationCounts() {
        Map<String, Long> counts = new TreeMap<>();
        jdbc.query(
                "SELECT consumer, COUNT(*) AS n FROM " + ledgerTable + " WHERE status = 'RECONCILE' GROUP BY consumer",
                rs -> {
                    counts.put(rs.getString("consumer"), rs.getLong("n"));
                });
        return counts;
    }

    /** The oldest claim of {@code consumer} whose lease has not ended at {@code now}. */
    public Optional<LedgerRow> oldestLiveClaim(String consumer, Instant now) {
        return ledgerRows.findFirstByIdConsumerAndStatusAndLeaseUntilAfterOrderByFirstSeenAtAsc(
                consumer, "IN_PROGRESS", now);
    }

    /** Ledger rows of one status, of one consumer or all. */
    public Page<LedgerRow> ledgerRows(String status, @Nullable String consumer, Pageable pageable) {
        return consumer == null
                ? ledgerRows.findByStatus(status, pageable)
                : ledgerRows.findByIdConsumerAndStatus(consumer, status, pageable);
    }

    /** Parked outbox rows, of one topic or all. */
    public Page<OutboxRow> parked(@Nullable String topic, Pageable pageable) {
        return topic == null
                ? outboxRows.findByDispatchedAtIsNullAndParkedAtIsNotNull(pageable)
                : outboxRows.findByTopicAndDispatchedAtIsNullAndParkedAtIsNotNull(topic, pageable);
    }

    /** The backlog of one topic. */
    public record TopicBacklog(
            long pending, long parked, @Nullable Instant oldestDueAt) {}

    /** The outbox's backlog per topic (topics with undispatched rows only), in topic order. */
    public Map<String, TopicBacklog> outboxBacklog() {
        Map<String, TopicBacklog> topics = new LinkedHashMap<>();
        jdbc.query(
                "SELECT topic, COUNT(*) AS undispatched, COUNT(parked_at) AS parked,"
                        + " MIN(CASE WHEN parked_at IS NULL THEN available_at END) AS oldest_due FROM " + outboxTable
                        + " WHERE dispatched_at IS NULL GROUP BY topic ORDER BY topic",
                rs -> {
                    long parked = rs.getLong("parked");
                    topics.put(
                            rs.getString("topic"),
                            new TopicBacklog(
                                    rs.getLong("undispatched") - parked, parked, instants.get(rs, "oldest_due")));
                });
        return topics;
    }

    @ReadingConverter
    private static final class UtcTimestampToInstant implements Converter<Timestamp, Instant> {
        @Override
        public Instant convert(Timestamp source) {
            return source.toLocalDateTime().toInstant(ZoneOffset.UTC);
        }
    }

    @ReadingConverter
    private static final class UtcLocalDateTimeToInstant implements Converter<LocalDateTime, Instant> {
        @Override
        public Instant convert(LocalDateTime source) {
            return source.toInstant(ZoneOffset.UTC);
        }
    }

    @WritingConverter
    private static final class InstantToUtcLocalDateTime implements Converter<Instant, LocalDateTime> {
        @Override
        public LocalDateTime convert(Instant source) {
            return LocalDateTime.ofInstant(source, ZoneOffset.UTC);
        }
    }
}
