package io.sumi.store.redis;

import io.sumi.testing.RedisClusterExtension;
import io.sumi.testing.RedisClusterFixture;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/** The budgets' spend-store contract on the 3-master Redis Cluster of the tests ({@link RedisClusterFixture}). */
@ExtendWith(RedisClusterExtension.class)
class RedisClusterSpendStoreContractTests extends RedisSpendStoreContractTests {

    private static RedisClusterFixture cluster;

    @BeforeAll
    static void cluster(RedisClusterFixture fixture) {
        cluster = fixture;
    }

    @Override
    RedisConnectionFactory redis() {
        return cluster.connectionFactory();
    }
}
