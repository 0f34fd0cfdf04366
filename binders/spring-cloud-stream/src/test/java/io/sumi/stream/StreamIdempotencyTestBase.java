package io.sumi.stream;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.testing.CountingStore;
import io.sumi.testing.TestDatabase;
import java.util.List;
import java.util.Map;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/**
 * What the Kafka and the Rabbit binder tests share: the local PostgreSQL ({@link TestDatabase}),
 * the beans they look at, the counters and effect rows they read, and the clean-up of the rows a
 * run left. Keys carry the subclass's per-run prefix, so rows of earlier runs (or of the other
 * binder's test) never collide.
 */
abstract class StreamIdempotencyTestBase {

    private final String run;

    @Autowired
    Effects effects;

    @Autowired
    CountingStore store;

    @Autowired
    MeterRegistry meters;

    @Autowired
    JdbcTemplate jdbc;

    StreamIdempotencyTestBase(String run) {
        this.run = run;
    }

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry registry) {
        TestDatabase.POSTGRESQL.registerDataSource(registry::add);
    }

    /** Deletes the effects and ledger rows of the run {@code run}. */
    static void deleteRows(JdbcTemplate database, String run) {
        database.update("DELETE FROM sumi_stream_effects WHERE message_id LIKE ?", run + "-%");
        database.update("DELETE FROM processed_messages WHERE message_id LIKE ?", run + "-%");
    }

    double count(String consumer, String outcome) {
        Counter counter = meters.find("sumi.messages")
                .tag("consumer", consumer)
                .tag("outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    List<Map<String, Object>> effectRows(String consumer) {
        return jdbc.queryForList(
                "SELECT message_id, COUNT(*) AS n FROM sumi_stream_effects WHERE consumer = ? AND message_id LIKE ?"
                        + " GROUP BY message_id",
                consumer,
                run + "-%");
    }
}
