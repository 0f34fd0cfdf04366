package io.sumi.store.redis;

import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.testing.RedisClusterFixture;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The other JVM of {@link RedisSeparateJvmLedgerTests}: a ledger client of its own on the same
 * Redis, driven by its arguments, reporting on standard output.
 *
 * <ul>
 *   <li>{@code race <target> <consumer> <ids> <seed> <go-key>}: prints {@code READY}, waits until
 *       {@code go-key} exists, claims ids {@code 0..ids-1} in an order shuffled by {@code seed},
 *       prints {@code CLAIMED <id>} for each it claimed first and completes it, then {@code DONE};
 *   <li>{@code hold <target> <consumer> <id> <lease-ms>}: claims the id, prints
 *       {@code HELD <attempts>} and waits to be killed.
 * </ul>
 */
final class RedisLedgerJvm {

    private RedisLedgerJvm() {}

    public static void main(String[] args) throws Exception {
        LettuceConnectionFactory factory = factory(args[1]);
        RedisProcessedMessageStore store = RedisProcessedMessageStore.builder(factory)
                .prefix(TestRedis.PREFIX)
                .build();
        String consumer = args[2];
        switch (args[0]) {
            case "race" -> race(factory, store, consumer, Integer.parseInt(args[3]), Long.parseLong(args[4]), args[5]);
            case "hold" -> {
                ClaimResult result = store.claim(
                        consumer, new ClaimRequest(args[3], null), Duration.ofMillis(Long.parseLong(args[4])));
                System.out.println(
                        "HELD " + result.outcome() + " " + result.message().attempts());
                System.out.flush();
                Thread.sleep(Long.MAX_VALUE); // until kill -9
            }
            default -> throw new IllegalArgumentException("Unknown mode " + args[0]);
        }
        factory.destroy();
    }

    private static void race(
            LettuceConnectionFactory factory,
            RedisProcessedMessageStore store,
            String consumer,
            int ids,
            long seed,
            String goKey)
            throws InterruptedException {
        List<Integer> order = new ArrayList<>();
        for (int i = 0; i < ids; i++) {
            order.add(i);
        }
        Collections.shuffle(order, new Random(seed));
        System.out.println("READY");
        System.out.flush();
        byte[] go = goKey.getBytes(StandardCharsets.UTF_8);
        try (RedisConnection connection = factory.getConnection()) {
            while (!Boolean.TRUE.equals(connection.keyCommands().exists(go))) {
                Thread.sleep(1);
            }
        }
        for (int id : order) {
            ClaimResult result = store.claim(consumer, new ClaimRequest("m-" + id, null), Duration.ofMinutes(5));
            if (result.outcome() == ClaimOutcome.CLAIMED) {
                System.out.println("CLAIMED m-" + id);
                store.complete(result.message());
            }
        }
        System.out.println("DONE");
        System.out.flush();
    }

    /** A {@link RedisTarget}'s name: a factory of this JVM's own on 127.0.0.1:6379 or on the tests' cluster. */
    static LettuceConnectionFactory factory(String target) {
        LettuceConnectionFactory factory = RedisTarget.valueOf(target) == RedisTarget.CLUSTER
                ? new LettuceConnectionFactory(new RedisClusterConfiguration(RedisClusterFixture.addresses()))
                : new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", 6379));
        factory.afterPropertiesSet();
        factory.start();
        return factory;
    }
}
