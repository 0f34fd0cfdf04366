package io.sumi.store.redis;

import io.sumi.budget.SpendStore;
import io.sumi.budget.SpendStoreContract;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The budgets' spend-store contract ({@link SpendStoreContract}) on the standalone Redis
 * (127.0.0.1:6379); the cluster's subclass overrides {@link #redis()}.
 */
class RedisSpendStoreContractTests extends SpendStoreContract {

    static final String PREFIX = "sumi-test:budget";

    private static LettuceConnectionFactory nothingListening;

    /** The Redis the suite runs on. */
    RedisConnectionFactory redis() {
        return TestRedis.standalone();
    }

    @Override
    protected SpendStore newStore() {
        return RedisSpendStore.builder(redis()).prefix(PREFIX).build();
    }

    @Override
    protected SpendStore unreachableStore() {
        return RedisSpendStore.builder(nothingListening()).prefix(PREFIX).build();
    }

    @Override
    protected void deleteSpend(String budgetPrefix) {
        deleteKeys(redis(), PREFIX + ":{" + budgetPrefix + "*");
    }

    static void deleteKeys(RedisConnectionFactory factory, String pattern) {
        try (RedisConnection connection = factory.getConnection()) {
            Set<byte[]> keys = connection.keyCommands().keys(TestRedis.text(pattern));
            if (keys != null) {
                keys.forEach(key -> connection.keyCommands().del(key));
            }
        }
    }

    /** A connection factory on a loopback port nothing listens on: every connection is refused. */
    static synchronized RedisConnectionFactory nothingListening() {
        if (nothingListening == null) {
            int port;
            try (ServerSocket socket = new ServerSocket(0)) {
                port = socket.getLocalPort();
            } catch (IOException ex) {
                throw new UncheckedIOException(ex);
            }
            LettuceConnectionFactory factory = new LettuceConnectionFactory(
                    new RedisStandaloneConfiguration("127.0.0.1", port),
                    LettuceClientConfiguration.builder()
                            .commandTimeout(Duration.ofSeconds(2))
                            .build());
            factory.afterPropertiesSet();
            nothingListening = factory;
        }
        return nothingListening;
    }

    @AfterAll
    static synchronized void closeNothingListening() {
        if (nothingListening != null) {
            nothingListening.destroy();
            nothingListening = null;
        }
    }
}
