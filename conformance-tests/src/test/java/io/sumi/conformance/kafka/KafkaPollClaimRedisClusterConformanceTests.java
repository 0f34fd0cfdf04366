package io.sumi.conformance.kafka;

import io.sumi.conformance.Ledger;
import io.sumi.conformance.RedisLedger;
import io.sumi.conformance.RedisLedgerFaults;
import io.sumi.conformance.Scenario;
import io.sumi.testing.RedisClusterExtension;
import io.sumi.testing.RedisClusterFixture;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.annotation.Import;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.context.TestPropertySource;

/**
 * The catalogue on the record listeners with the poll-level claim ({@code sumi.kafka.poll-claim=true})
 * and the Redis ledger on the tests' 3-master Redis Cluster ({@link RedisClusterFixture}, started
 * before the context): a poll's batch claim is one script per hash slot, the ledger-down faults hit
 * the scripts on whichever master owns the slot. The transactional rows do not apply, as on the
 * standalone Redis ({@link KafkaRedisConformanceTests}).
 */
@Order(14)
@ExtendWith(RedisClusterExtension.class)
@TestPropertySource(
        properties = {
            "sumi.kafka.poll-claim=true",
            "sumi.ledger.store=redis",
            "sumi.ledger.redis.prefix=" + KafkaRedisConformanceTests.PREFIX,
            // The catalogue's rows expire soon after the run (the shared Redis keeps nothing else).
            "sumi.ledger.retention=1h",
            // Lettuce follows the cluster's topology as docs/redis-ledger.md tells users to.
            "spring.data.redis.lettuce.cluster.refresh.adaptive=true",
            "spring.data.redis.lettuce.cluster.refresh.period=1s",
            "catalogue.transactional-listeners=false"
        })
@Import(RedisLedgerFaults.class)
@DirtiesContext(classMode = DirtiesContext.ClassMode.AFTER_CLASS)
class KafkaPollClaimRedisClusterConformanceTests extends KafkaCatalogueTests {

    /** Started before the context (test instances are per method: the context loads after this). */
    @BeforeAll
    static void cluster(RedisClusterFixture cluster) {
        cluster.awaitHealthy();
    }

    @DynamicPropertySource
    static void clusterNodes(DynamicPropertyRegistry registry) {
        registry.add("spring.data.redis.cluster.nodes", () -> String.join(",", RedisClusterFixture.addresses()));
    }

    @Autowired
    RedisConnectionFactory redis;

    @Override
    public String id() {
        return "kafka-poll-claim-redis-cluster";
    }

    @Override
    String shape() {
        return "record";
    }

    @Override
    public Ledger ledger() {
        return new RedisLedger(redis, KafkaRedisConformanceTests.PREFIX);
    }

    @Override
    public Map<Scenario, String> notApplicable() {
        return KafkaRedisConformanceTests.withoutTransactions(new KafkaPollClaimConformanceTests().notApplicable());
    }
}
