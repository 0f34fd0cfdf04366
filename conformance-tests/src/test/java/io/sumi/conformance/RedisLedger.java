package io.sumi.conformance;

import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.redis.RedisProcessedMessageStore;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.ReturnType;

/**
 * The Redis ledger, read through a store of its own on the application's Redis (around {@link
 * RedisLedgerFaults}), and written, for a dead instance's claim, with the store's own row layout.
 */
public final class RedisLedger implements Ledger {

    /**
     * A claim as the store's claim script writes it (status, token, lease end, attempts, first
     * claim; the live and first-claim indexes), with its times from the server's clock.
     */
    private static final String HOLD = """
            local t = redis.call('TIME')
            local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            local lease = tonumber(ARGV[2])
            local lu = string.format('%.0f', now + lease)
            redis.call('HSET', KEYS[3], 's', 'I', 't', '424242', 'lu', lu, 'a', '1', 'fs', string.format('%.0f', now))
            redis.call('PEXPIRE', KEYS[3], lease + 86400000)
            redis.call('ZADD', KEYS[1], lu, ARGV[1])
            redis.call('ZADD', KEYS[2], now, ARGV[1])
            return 1
            """;

    private final RedisConnectionFactory redis;
    private final RedisProcessedMessageStore store;

    /** The ledger under {@code prefix} ({@code sumi.ledger.redis.prefix}) on {@code redis}. */
    public RedisLedger(RedisConnectionFactory redis, String prefix) {
        this.redis = RedisLedgerFaults.bypass(redis);
        this.store =
                RedisProcessedMessageStore.builder(this.redis).prefix(prefix).build();
    }

    /**
     * Read from the row's hash itself, not through the store, which refuses to look up a key it
     * would never write (one longer than 200 characters): the catalogue asks for those too.
     */
    @Override
    public @Nullable String status(String consumer, String key) {
        byte[] status;
        try (RedisConnection connection = redis.getConnection()) {
            status = connection.hashCommands().hGet(text(store.rowKey(consumer, key)), text("s"));
        }
        if (status == null) {
            return null;
        }
        String letter = new String(status, StandardCharsets.UTF_8);
        return switch (letter) {
            case "I" -> MessageStatus.IN_PROGRESS.name();
            case "C" -> MessageStatus.COMPLETED.name();
            case "R" -> MessageStatus.RECONCILE.name();
            default -> letter;
        };
    }

    @Override
    public List<Map<String, Object>> row(String consumer, String key) {
        if (status(consumer, key) == null) {
            return List.of();
        }
        Optional<ProcessedMessage> found = store.find(consumer, key);
        if (found.isEmpty()) {
            return List.of();
        }
        ProcessedMessage row = found.get();
        Map<String, Object> columns = new LinkedHashMap<>();
        columns.put("status", row.status());
        columns.put("attempts", row.attempts());
        columns.put("lease_until", String.valueOf(row.leaseUntil()));
        columns.put("first_seen_at", row.firstSeenAt());
        columns.put("processed_at", String.valueOf(row.processedAt()));
        columns.put("last_error", String.valueOf(row.lastError()));
        return List.of(columns);
    }

    @Override
    public void holdAsDeadInstance(String consumer, String key, Duration lease) {
        String row = store.rowKey(consumer, key);
        String slot = row.substring(0, row.length() - (":m:" + key).length());
        try (RedisConnection connection = redis.getConnection()) {
            connection
                    .scriptingCommands()
                    .eval(
                            text(HOLD),
                            ReturnType.INTEGER,
                            3,
                            text(slot + ":live"),
                            text(slot + ":seen"),
                            text(row),
                            text(key),
                            text(Long.toString(lease.toMillis())));
        }
    }

    private static byte[] text(String value) {
        return value.getBytes(StandardCharsets.UTF_8);
    }
}
