package io.sumi.benchmarks.outbox;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.sumi.benchmarks.BenchSql;
import io.sumi.outbox.Outbox;
import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxMessage;
import io.sumi.outbox.OutboxTable;
import io.sumi.outbox.kafka.KafkaOutboxPublisher;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import javax.sql.DataSource;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Sumi's outbox wired by hand exactly as docs/outbox.md's "without the starter" section does:
 * {@link OutboxTable}, {@link KafkaOutboxPublisher}, one {@link OutboxDispatcher}, an
 * {@link Outbox} whose after-commit callback wakes the dispatcher. The only addition is a
 * producer subclass that reports each acknowledgement to the {@link LagRecorder}; its
 * configuration is {@link KafkaOutboxPublisher#producerConfig} unchanged.
 */
final class SumiSystem implements OutboxSystem {

    static final String TOPIC = "bench.sumi";

    private final HikariDataSource dataSource;
    private final OutboxTable table;
    private final KafkaOutboxPublisher publisher;
    private final OutboxDispatcher dispatcher;
    private final Outbox outbox;
    private final TransactionTemplate tx;
    private final int batchSize;
    private final boolean ordered;
    private final int lingerMs;
    private final int pipelineDepth;

    SumiSystem(
            String jdbcUrl,
            String user,
            String bootstrapServers,
            LagRecorder recorder,
            int batchSize,
            boolean ordered,
            int poolSize,
            int lingerMs,
            int pipelineDepth)
            throws Exception {
        this.pipelineDepth = pipelineDepth;
        this.batchSize = batchSize;
        this.lingerMs = lingerMs;
        this.ordered = ordered;
        HikariConfig hikari = new HikariConfig();
        hikari.setJdbcUrl(jdbcUrl);
        hikari.setUsername(user);
        hikari.setMaximumPoolSize(poolSize);
        // Several systems live in one run and PostgreSQL's connections are shared: open on demand.
        hikari.setMinimumIdle(1);
        hikari.setPoolName("sumi-d" + pipelineDepth);
        this.dataSource = new HikariDataSource(hikari);
        createTable(dataSource);
        this.table = OutboxTable.of(dataSource);
        Map<String, Object> config = KafkaOutboxPublisher.producerConfig(
                Map.of(
                        "bootstrap.servers",
                        bootstrapServers,
                        "client.id",
                        "bench-sumi-outbox-d" + pipelineDepth,
                        "linger.ms",
                        lingerMs),
                KafkaOutboxPublisher.DEFAULT_SEND_TIMEOUT);
        this.publisher = KafkaOutboxPublisher.of(
                () -> new TimedProducer(config, recorder), KafkaOutboxPublisher.DEFAULT_SEND_TIMEOUT);
        OutboxDispatcher.Builder builder =
                OutboxDispatcher.builder(table, publisher).batchSize(batchSize).pipelineDepth(pipelineDepth);
        if (!ordered) {
            builder.orderedTopics(List.of());
        }
        this.dispatcher = builder.build();
        this.outbox = Outbox.builder(table).afterCommit(dispatcher::wakeUp).build();
        this.tx = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
    }

    /**
     * Creates the outbox table from sumi-migrations' {@code R__sumi_outbox.sql} of the database's
     * vendor, PostgreSQL or MariaDB (idempotent).
     */
    static void createTable(DataSource dataSource) throws Exception {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            if (BenchSql.isMariaDb(connection)) {
                for (String ddl : BenchSql.statements(BenchSql.migration("db/sumi/mariadb/R__sumi_outbox.sql"))) {
                    statement.execute(ddl);
                }
            } else {
                statement.execute(BenchSql.migration("db/sumi/postgresql/R__sumi_outbox.sql"));
            }
        }
    }

    @Override
    public String name() {
        return "Sumi depth " + pipelineDepth;
    }

    int pipelineDepth() {
        return pipelineDepth;
    }

    @Override
    public String settings() {
        return "batch-size " + batchSize + ", ordered topics "
                + (ordered ? "* (per-aggregate order, the default)" : "none")
                + ", min/max poll " + OutboxDispatcher.DEFAULT_MIN_POLL_INTERVAL.toMillis() + " ms/"
                + OutboxDispatcher.DEFAULT_MAX_POLL_INTERVAL.toSeconds() + " s (defaults), after-commit wake-up on,"
                + " 1 dispatcher, pipeline depth " + pipelineDepth
                + (pipelineDepth == 1
                        ? " (claim, send, mark one after the other)"
                        : " (" + pipelineDepth + " sender threads)")
                + ", Hikari pool " + dataSource.getMaximumPoolSize()
                + ", producer: idempotent, acks=all, linger.ms " + lingerMs;
    }

    @Override
    public void truncate() throws Exception {
        resetTable(dataSource);
    }

    /**
     * Empties the outbox table, then gives it 20,000 already-dispatched rows and fresh statistics:
     * the state every measured phase starts from.
     */
    static void resetTable(DataSource dataSource) throws Exception {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            statement.execute("TRUNCATE outbox");
            // A live outbox is never empty: it keeps dispatched rows for the retention period. An
            // ANALYZE of an empty table instead makes PostgreSQL plan the claim for no rows, and the
            // JDBC driver keeps that generic plan while the table grows (the trap docs/outbox.md
            // describes); in the paced phases that costs more than what is measured.
            boolean mariadb = BenchSql.isMariaDb(connection);
            String columns = "INSERT INTO outbox (aggregate_id, topic, payload, headers, created_at, available_at,"
                    + " attempts, dispatched_at, dispatch_outcome)";
            if (mariadb) {
                statement.execute(columns + " SELECT CONCAT('filler-', seq % 1000), 'bench.filler', '{}', '{}',"
                        + " UTC_TIMESTAMP(6) - INTERVAL 1 DAY, UTC_TIMESTAMP(6) - INTERVAL 1 DAY, 0,"
                        + " UTC_TIMESTAMP(6) - INTERVAL 1 DAY, 'SENT' FROM seq_1_to_20000");
            } else {
                statement.execute(columns + " SELECT 'filler-' || (g % 1000), 'bench.filler', '{}', '{}',"
                        + " now() - interval '1 day', now() - interval '1 day', 0, now() - interval '1 day', 'SENT'"
                        + " FROM generate_series(1, 20000) g");
            }
            analyze(statement, mariadb);
        }
    }

    /** Fresh planner statistics of the outbox table. */
    private static void analyze(Statement statement, boolean mariadb) throws SQLException {
        statement.execute(mariadb ? "ANALYZE TABLE outbox" : "ANALYZE outbox");
    }

    @Override
    public void loadBacklog(String phase, int rows, int aggregates) throws Exception {
        dispatcher.stop(Duration.ofSeconds(30));
        int chunk = 1000;
        for (int from = 0; from < rows; from += chunk) {
            List<OutboxMessage> messages = new ArrayList<>(chunk);
            for (int seq = from; seq < Math.min(rows, from + chunk); seq++) {
                String aggregate = Payloads.aggregate(seq, aggregates);
                messages.add(OutboxMessage.of(aggregate, TOPIC, Payloads.create(phase, seq, aggregate)));
            }
            tx.executeWithoutResult(status -> outbox.appendAll(messages));
        }
        // As OutboxBackfill does after a bulk load (docs/outbox.md): fresh planner statistics.
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement()) {
            analyze(statement, BenchSql.isMariaDb(connection));
        }
    }

    @Override
    public void startDrain() {
        dispatcher.start();
    }

    @Override
    public void startLive() {
        dispatcher.start();
    }

    @Override
    public void pause() {
        dispatcher.stop(Duration.ofSeconds(30));
    }

    @Override
    public long undispatched() throws Exception {
        return undispatchedIn(dataSource);
    }

    /** Rows of the outbox in {@code dataSource} not yet dispatched (parked ones included). */
    static long undispatchedIn(DataSource dataSource) throws SQLException {
        try (Connection connection = dataSource.getConnection();
                Statement statement = connection.createStatement();
                ResultSet rs = statement.executeQuery("SELECT count(*) FROM outbox WHERE dispatched_at IS NULL")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    @Override
    public void appendOne(String phase, long seq, String aggregateId) {
        tx.executeWithoutResult(status ->
                outbox.append(OutboxMessage.of(aggregateId, TOPIC, Payloads.create(phase, seq, aggregateId))));
    }

    @Override
    public void close() {
        dispatcher.close();
        publisher.close();
        dataSource.close();
    }

    /** The producer {@link KafkaOutboxPublisher#create} would build, reporting each acknowledgement. */
    static final class TimedProducer extends KafkaProducer<String, String> {

        private final LagRecorder recorder;

        TimedProducer(Map<String, Object> config, LagRecorder recorder) {
            super(config);
            this.recorder = recorder;
        }

        @Override
        public Future<RecordMetadata> send(ProducerRecord<String, String> record, Callback callback) {
            return super.send(record, (metadata, exception) -> {
                if (exception == null) {
                    recorder.acked(record.value());
                }
                if (callback != null) {
                    callback.onCompletion(metadata, exception);
                }
            });
        }
    }
}
