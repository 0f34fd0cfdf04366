package io.sumi.consumer.model;

import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.redis.RedisProcessedMessageStore;
import io.sumi.store.redis.TestRedis;
import java.time.Clock;
import javax.sql.DataSource;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * The Redis ledger under the executor model: every instance's store on one Redis (standalone or a
 * cluster). Its times are the server's, so an instance's skewed clock changes nothing; it joins no
 * database transaction, so only lease-mode properties run on it. The model's listener transactions
 * run on an H2 database of their own, which the ledger never sees.
 */
final class RedisModelLedger implements ModelLedger {

    private static final DataSource TRANSACTIONS =
            new DriverManagerDataSource("jdbc:h2:mem:sumi_model_redis;DB_CLOSE_DELAY=-1", "sa", "");

    private final String name;
    private final RedisConnectionFactory redis;
    private final int defaultTries;
    private final ProcessedMessageStore reader;

    RedisModelLedger(String name, RedisConnectionFactory redis, int defaultTries) {
        this.name = name;
        this.redis = redis;
        this.defaultTries = defaultTries;
        this.reader = store(Clock.systemUTC());
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public ProcessedMessageStore store(Clock clock) {
        return RedisProcessedMessageStore.builder(redis)
                .prefix(TestRedis.PREFIX)
                .build();
    }

    @Override
    public ProcessedMessageStore reader() {
        return reader;
    }

    @Override
    public DataSource dataSource() {
        return TRANSACTIONS;
    }

    @Override
    public boolean transactional() {
        return false;
    }

    @Override
    public void expireLeases(String consumer) {
        TestRedis.expireLeases(redis, TestRedis.PREFIX, consumer);
    }

    @Override
    public void delete(String consumer) {
        TestRedis.deleteRows(redis, TestRedis.PREFIX, consumer);
    }

    @Override
    public int defaultTries() {
        return defaultTries;
    }
}
