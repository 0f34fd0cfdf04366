package io.sumi.store.redis;

import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.ProcessedMessageStoreContract;
import java.time.Clock;
import java.time.Duration;

/** The store contract on the standalone Redis (127.0.0.1:6379). */
class RedisProcessedMessageStoreContractTests extends ProcessedMessageStoreContract {

    @Override
    protected ProcessedMessageStore newStore(Clock clock) {
        // The Redis store has no clock of its own: every time is the server's.
        return RedisProcessedMessageStore.builder(TestRedis.standalone())
                .prefix(TestRedis.PREFIX)
                .build();
    }

    @Override
    protected void age(String consumer, Duration duration) {
        TestRedis.age(TestRedis.standalone(), TestRedis.PREFIX, consumer, duration);
    }

    @Override
    protected void deleteRows(String consumer) {
        TestRedis.deleteRows(TestRedis.standalone(), TestRedis.PREFIX, consumer);
    }
}
