package io.sumi.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

/**
 * The Redis the tests use: the machine's server on 127.0.0.1:6379 ({@code .ci/run} starts it), and
 * the test-side view of the ledger's keys (ageing rows, deleting them behind the store's back).
 * Without a server the tests fail (they never skip), saying how to start one. Public for the
 * executor model's Redis ledger ({@code io.sumi.consumer.model.RedisModelLedger}).
 */
public final class TestRedis {

    public static final String PREFIX = "sumi-test:ledger";

    private static LettuceConnectionFactory standalone;

    private TestRedis() {}

    /** The shared connection factory of the standalone server. */
    public static synchronized RedisConnectionFactory standalone() {
        if (standalone == null) {
            LettuceConnectionFactory factory =
                    new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", 6379));
            factory.afterPropertiesSet();
            factory.start();
            try (RedisConnection connection = factory.getConnection()) {
                connection.ping();
            } catch (RuntimeException ex) {
                factory.destroy();
                throw new IllegalStateException(
                        "No Redis on 127.0.0.1:6379; start one (.ci/run does): redis-server"
                                + " --daemonize yes --bind 127.0.0.1 --port 6379 --save \"\" --appendonly no",
                        ex);
            }
            standalone = factory;
        }
        return standalone;
    }

    /** Moves every stored time of {@code consumer}'s rows and indexes back by {@code by}. */
    static void age(RedisConnectionFactory factory, String prefix, String consumer, Duration by) {
        List<byte[]> rows = rowKeys(factory, prefix, consumer);
        List<byte[]> keys = new ArrayList<>();
        keys.add(text(slot(prefix, consumer) + ":live"));
        keys.add(text(slot(prefix, consumer) + ":seen"));
        keys.addAll(rows);
        keys.add(text(Long.toString(by.toMillis())));
        String script = """
                local by = tonumber(ARGV[1])
                for i = 3, #KEYS do
                  for _, f in ipairs({'lu', 'fs', 'pa'}) do
                    local v = redis.call('HGET', KEYS[i], f)
                    if v then redis.call('HSET', KEYS[i], f, string.format('%.0f', tonumber(v) - by)) end
                  end
                end
                for z = 1, 2 do
                  for _, id in ipairs(redis.call('ZRANGE', KEYS[z], 0, -1)) do
                    redis.call('ZINCRBY', KEYS[z], -by, id)
                  end
                end
                return #KEYS - 2
                """;
        try (RedisConnection connection = factory.getConnection()) {
            connection
                    .scriptingCommands()
                    .eval(text(script), ReturnType.INTEGER, keys.size() - 1, keys.toArray(new byte[0][]));
        }
    }

    /**
     * Ends every live lease of {@code consumer}'s claims, as the lease of a holder that died long ago
     * ends: an IN_PROGRESS row's lease end (and its entry in the live-claim index) moves to the
     * first millisecond of the epoch. Completed rows are left as they are.
     */
    public static void expireLeases(RedisConnectionFactory factory, String prefix, String consumer) {
        List<byte[]> keys = new ArrayList<>();
        keys.add(text(slot(prefix, consumer) + ":live"));
        keys.addAll(rowKeys(factory, prefix, consumer));
        String script = """
                for i = 2, #KEYS do
                  if redis.call('HGET', KEYS[i], 's') == 'I' then redis.call('HSET', KEYS[i], 'lu', '1') end
                end
                for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
                  redis.call('ZADD', KEYS[1], 1, id)
                end
                return #KEYS - 1
                """;
        try (RedisConnection connection = factory.getConnection()) {
            connection
                    .scriptingCommands()
                    .eval(text(script), ReturnType.INTEGER, keys.size(), keys.toArray(new byte[0][]));
        }
    }

    /** Deletes every key of {@code consumer} (rows and indexes) and its name in the consumer set. */
    public static void deleteRows(RedisConnectionFactory factory, String prefix, String consumer) {
        delete(factory, prefix, List.of(consumer), consumerKey -> rowKeys(factory, prefix, consumerKey));
    }

    /**
     * {@link #deleteRows(RedisConnectionFactory, String, String)} for consumers whose message ids the
     * test knows: the row keys are named by {@code store} ({@link RedisProcessedMessageStore#rowKey}),
     * not found by a {@code KEYS} scan of every master per consumer, which a test of one consumer per
     * hash slot (16,384) cannot afford.
     */
    static void deleteRows(
            RedisConnectionFactory factory,
            String prefix,
            RedisProcessedMessageStore store,
            Collection<String> consumers,
            Collection<String> messageIds) {
        delete(
                factory,
                prefix,
                consumers,
                consumer -> messageIds.stream()
                        .map(id -> text(store.rowKey(consumer, id)))
                        .collect(Collectors.toCollection(ArrayList::new)));
    }

    private static void delete(
            RedisConnectionFactory factory,
            String prefix,
            Collection<String> consumers,
            Function<String, List<byte[]>> rowKeys) {
        try (RedisConnection connection = factory.getConnection()) {
            for (String consumer : consumers) {
                List<byte[]> keys = rowKeys.apply(consumer);
                for (String index : List.of(":live", ":seen", ":held")) {
                    keys.add(text(slot(prefix, consumer) + index));
                }
                for (byte[] key : keys) {
                    connection.keyCommands().del(key);
                }
                connection.setCommands().sRem(text(prefix + ":consumers"), text(consumer));
            }
        }
    }

    /** Every row key of {@code consumer} (all masters of a cluster). */
    static List<byte[]> rowKeys(RedisConnectionFactory factory, String prefix, String consumer) {
        String pattern = glob(slot(prefix, consumer) + ":m:") + "*";
        try (RedisConnection connection = factory.getConnection()) {
            Set<byte[]> found = connection.keyCommands().keys(text(pattern));
            return found == null ? new ArrayList<>() : new ArrayList<>(found);
        }
    }

    static long pttl(RedisConnectionFactory factory, String key) {
        try (RedisConnection connection = factory.getConnection()) {
            Long ttl = connection.keyCommands().pTtl(text(key));
            assertThat(ttl).isNotNull();
            return ttl;
        }
    }

    /** The consumer's part of a key, as the store writes it ({@code %}, braces percent-encoded). */
    static String slot(String prefix, String consumer) {
        return prefix + ":{" + consumer.replace("%", "%25").replace("{", "%7B").replace("}", "%7D") + "}";
    }

    private static String glob(String text) {
        return text.replaceAll("([*?\\[\\]\\\\])", "\\\\$1");
    }

    static byte[] text(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
