package io.sumi.store.redis;

import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.ProcessedMessageStoreContract;
import java.time.Clock;
import java.time.Duration;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/** The store contract on the standalone Redis (127.0.0.1:6379); the cluster's subclass overrides {@link #redis()}. */
class RedisProcessedMessageStoreContractTests extends ProcessedMessageStoreContract {

    /** The Redis the suite runs on. */
    RedisConnectionFactory redis() {
        return TestRedis.standalone();
    }

    @Override
    protected ProcessedMessageStore newStore(Clock clock) {
        // The Redis store has no clock of its own: every time is the server's.
        return RedisProcessedMessageStore.builder(redis())
                .prefix(TestRedis.PREFIX)
                .build();
    }

    @Override
    protected void age(String consumer, Duration duration) {
        TestRedis.age(redis(), TestRedis.PREFIX, consumer, duration);
    }

    @Override
    protected void deleteRows(String consumer) {
        TestRedis.deleteRows(redis(), TestRedis.PREFIX, consumer);
    }
}
