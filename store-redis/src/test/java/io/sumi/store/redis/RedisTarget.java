package io.sumi.store.redis;

import io.sumi.testing.RedisClusterFixture;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/** Where a test class parameterized over Redis runs its ledger: the standalone server or the tests' cluster. */
public enum RedisTarget {
    /** 127.0.0.1:6379 ({@link TestRedis#standalone()}). */
    STANDALONE,
    /** The tests' 3-master cluster with a replica per master ({@link RedisClusterFixture}). */
    CLUSTER;

    /** This target's connection factory; {@code cluster} is the test JVM's cluster. */
    public RedisConnectionFactory connectionFactory(RedisClusterFixture cluster) {
        return this == STANDALONE ? TestRedis.standalone() : cluster.connectionFactory();
    }
}
