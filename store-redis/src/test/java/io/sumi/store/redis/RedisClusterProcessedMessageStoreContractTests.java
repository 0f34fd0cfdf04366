package io.sumi.store.redis;

import io.sumi.testing.RedisClusterExtension;
import io.sumi.testing.RedisClusterFixture;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/** The store contract on a 3-master Redis Cluster with a replica per master ({@link RedisClusterFixture}). */
@ExtendWith(RedisClusterExtension.class)
class RedisClusterProcessedMessageStoreContractTests extends RedisProcessedMessageStoreContractTests {

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
