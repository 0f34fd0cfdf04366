package io.sumi.consumer.model;

import io.sumi.store.redis.RedisTarget;
import io.sumi.testing.RedisClusterExtension;
import io.sumi.testing.RedisClusterFixture;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The executor model on the Redis ledger, on the standalone server (127.0.0.1:6379) and on the
 * tests' 3-master Redis Cluster ({@link RedisClusterFixture}): three instances' executors, front
 * caches and faults on one Redis, deliveries, batches, polls, concurrent duplicates, lease expiries,
 * crashes and ledger errors. Lease mode only: the Redis ledger refuses transactional mode.
 */
@ParameterizedClass(name = "{0}")
@EnumSource(RedisTarget.class)
@ExtendWith(RedisClusterExtension.class)
class RedisExecutorModelTests extends ExecutorModelProperties {

    private static RedisClusterFixture cluster;

    @BeforeAll
    static void cluster(RedisClusterFixture fixture) {
        cluster = fixture;
    }

    @Parameter
    RedisTarget target;

    /** 300 tries on the standalone server, 150 on the cluster (every call crosses a node of its own). */
    @Override
    ModelLedger ledger() {
        return target == RedisTarget.STANDALONE
                ? new RedisModelLedger("Redis standalone", target.connectionFactory(cluster), 300)
                : new RedisModelLedger("Redis Cluster", target.connectionFactory(cluster), 150);
    }

    @Override
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = Property.class, names = "LEASE_MODE")
    void modelHolds(Property property) {
        super.modelHolds(property);
    }
}
