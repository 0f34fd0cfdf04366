package io.sumi.store.redis;

import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.ProcessedMessageStoreContract;
import java.time.Clock;
import java.time.Duration;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

/** The store contract on a 3-master Redis Cluster with a replica per master ({@link RedisClusterFixture}). */
@ExtendWith(RedisClusterExtension.class)
class RedisClusterProcessedMessageStoreContractTests extends ProcessedMessageStoreContract {

    private static RedisClusterFixture cluster;

    @BeforeAll
    static void cluster(RedisClusterFixture fixture) {
        cluster = fixture;
    }

    @Override
    protected ProcessedMessageStore newStore(Clock clock) {
        return RedisProcessedMessageStore.builder(cluster.connectionFactory())
                .prefix(TestRedis.PREFIX)
                .build();
    }

    @Override
    protected void age(String consumer, Duration duration) {
        TestRedis.age(cluster.connectionFactory(), TestRedis.PREFIX, consumer, duration);
    }

    @Override
    protected void deleteRows(String consumer) {
        TestRedis.deleteRows(cluster.connectionFactory(), TestRedis.PREFIX, consumer);
    }
}
