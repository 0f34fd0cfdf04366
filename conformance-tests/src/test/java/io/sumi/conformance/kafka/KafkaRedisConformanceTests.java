package io.sumi.conformance.kafka;

import io.sumi.conformance.Ledger;
import io.sumi.conformance.RedisLedger;
import io.sumi.conformance.RedisLedgerFaults;
import io.sumi.conformance.Scenario;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Order;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.annotation.Import;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.TestPropertySource;

/**
 * The catalogue on the record listeners with the Redis ledger ({@code sumi.ledger.store=redis}) on
 * the standalone Redis (127.0.0.1:6379): the same listeners, the ledger-down faults on the store's
 * scripts ({@link RedisLedgerFaults}); the transactional rows do not apply.
 */
@Order(13)
@TestPropertySource(
        properties = {
            "sumi.ledger.store=redis",
            "sumi.ledger.redis.prefix=" + KafkaRedisConformanceTests.PREFIX,
            // The catalogue's rows expire soon after the run (the shared Redis keeps nothing else).
            "sumi.ledger.retention=1h",
            "spring.data.redis.host=127.0.0.1",
            "spring.data.redis.port=6379",
            "catalogue.transactional-listeners=false"
        })
@Import(RedisLedgerFaults.class)
@DirtiesContext(classMode = DirtiesContext.ClassMode.AFTER_CLASS)
class KafkaRedisConformanceTests extends KafkaCatalogueTests {

    static final String PREFIX = "sumi-catalogue:ledger";

    /** Why the transactional rows have no cell on a Redis ledger. */
    static final String NO_TRANSACTION = "the Redis ledger refuses transactional mode at start-up: a Redis write"
            + " cannot commit with the handler's database transaction (docs/redis-ledger.md)";

    @Autowired
    RedisConnectionFactory redis;

    @Override
    public String id() {
        return "kafka-record-redis";
    }

    @Override
    String shape() {
        return "record";
    }

    @Override
    public Ledger ledger() {
        return new RedisLedger(redis, PREFIX);
    }

    @Override
    public Map<Scenario, String> notApplicable() {
        return withoutTransactions(new KafkaRecordConformanceTests().notApplicable());
    }

    /** {@code kind}'s rows that do not apply, and the transactional ones. */
    static Map<Scenario, String> withoutTransactions(Map<Scenario, String> kind) {
        Map<Scenario, String> rows = new HashMap<>(kind);
        rows.put(Scenario.TRANSACTIONAL_JDBC, NO_TRANSACTION);
        rows.put(Scenario.TRANSACTIONAL_JDBC_CONTROL, NO_TRANSACTION + "; so has its control");
        rows.put(Scenario.LEDGER_DOWN_DURING_COMMIT, NO_TRANSACTION + ": no commit holds a ledger row");
        rows.putIfAbsent(Scenario.BAD_KEY_TRANSACTED_CONTAINER, NO_TRANSACTION);
        return Map.copyOf(rows);
    }
}
