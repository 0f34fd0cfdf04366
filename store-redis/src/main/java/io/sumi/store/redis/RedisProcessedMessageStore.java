package io.sumi.store.redis;

import io.sumi.jdbc.internal.ClaimTokens;
import io.sumi.jdbc.internal.ErrorSummaries;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.ConsumerLedgerStats;
import io.sumi.store.LedgerKeyRules;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import io.sumi.store.StoredReply;
import io.sumi.store.StoredReplyCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.jspecify.annotations.Nullable;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * The ledger on Redis or Valkey (standalone, with replicas, or Redis Cluster), for lease-mode
 * consumers: the same claims, take-overs, renewals, completions and releases as the JDBC ledger,
 * each one Lua script (one round trip, atomic on the server), fenced on the claim token.
 *
 * <p>Layout: one hash per message at <code>&lt;prefix&gt;:&#123;&lt;consumer&gt;&#125;:m:&lt;message id&gt;</code> (fields
 * {@code s} status, {@code t} claim token, {@code lu} lease end, {@code a} attempts, {@code fp}
 * fingerprint, {@code e} last error, {@code fs} first claim, {@code pa} completion, {@code r} the
 * reply, times in epoch milliseconds), and per consumer an index of its live claims and of its rows
 * held for reconciliation (for {@link #consumerStats}), all under the hash tag
 * <code>&#123;&lt;consumer&gt;&#125;</code>:
 * on a cluster, every key of one consumer is in one hash slot, so a batch of any size is one script
 * on one master, and consumers spread over the masters. In the key the consumer's {@code %},
 * <code>&#123;</code> and <code>&#125;</code> are percent-encoded, so no two keys collide. The set
 * {@code <prefix>:consumers} names the consumers for the gauges.
 *
 * <p>Time: every lease decision and every time written is the Redis server's clock ({@code TIME}
 * inside the script), never the JVM's; on a cluster each master's clock decides for its slots.
 *
 * <p>Retention: no pruning job. A completed row expires {@link Builder#retention retention} after
 * its completion ({@code PEXPIRE}); a claim's row expires {@code retention} after its lease ends
 * (a released or abandoned claim, as the JDBC pruning deletes it), renewals and take-overs push that
 * back; a row held for reconciliation never expires. {@link #deleteCompletedBefore} deletes
 * nothing.
 *
 * <p>Durability is Redis's: with {@code appendonly no} a restart forgets every row, so messages
 * completed before it run again. See {@code docs/redis-ledger.md} for what AOF, replicas and
 * {@link Builder#waitForReplicas WAIT} give.
 *
 * <p>Transactional mode is not available: a Redis write cannot commit or roll back with the
 * handler's database transaction, so {@link #claimAllCompleted} and {@link #storeReply} are refused
 * with an {@link IllegalStateException}.
 *
 * <p>Keys follow {@link LedgerKeyRules}, as on the JDBC ledger. Error texts are stored as the JDBC
 * ledger stores them (cleaned, at most 1,000 characters). Replies are kept in the
 * {@link StoredReplyCodec} format, at most {@link Builder#maxReplySize} bytes ({@link StoredReply#size()}).
 *
 * <p>Thread-safe. Create one with {@link #builder(RedisConnectionFactory)}.
 *
 * @since 0.1.0
 */
public final class RedisProcessedMessageStore implements ProcessedMessageStore {

    /** The default key prefix. */
    public static final String DEFAULT_PREFIX = "sumi:ledger";

    /** The default retention of completed rows. */
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(14);

    /** The largest reply kept by default, and at most: 16 MiB, as on the JDBC ledger. */
    public static final int MAX_REPLY_SIZE = 16 * 1024 * 1024;

    private static final byte[] NONE = {'0'};

    private final RedisScripts scripts;
    private final String prefix;
    private final long retentionMillis;
    private final int maxReplySize;
    private final ClaimTokens tokens = new ClaimTokens();
    private final Set<String> registered = ConcurrentHashMap.newKeySet();

    private RedisProcessedMessageStore(Builder builder) {
        this.prefix = builder.prefix;
        this.retentionMillis = builder.retention.toMillis();
        this.maxReplySize = builder.maxReplySize;
        this.scripts = RedisScripts.forLedger(builder.connectionFactory, builder.replicas, builder.replicaTimeout);
    }

    /** Starts a builder for a store on {@code connectionFactory} (standalone, sentinel or cluster). */
    public static Builder builder(RedisConnectionFactory connectionFactory) {
        return new Builder(connectionFactory);
    }

    /**
     * Validates a key prefix.
     *
     * @throws IllegalArgumentException if {@code prefix} is empty, or holds a brace or whitespace
     *     (a brace would move the hash tag off the consumer)
     */
    public static String validatePrefix(String prefix) {
        if (prefix.isEmpty() || !prefix.chars().allMatch(c -> c > ' ' && c < 127 && c != '{' && c != '}')) {
            throw new IllegalArgumentException("Invalid Redis ledger key prefix '" + prefix
                    + "': printable ASCII without spaces and without '{' or '}' (the consumer is the hash tag)");
        }
        return prefix;
    }

    /** The key of one message's row (what {@code redis-cli} needs to look at one). */
    public String rowKey(String consumer, String messageId) {
        return slotPrefix(consumer) + ":m:" + messageId;
    }

    // ---------------------------------------------------------------- lease mode

    @Override
    public List<ClaimResult> claimAll(String consumer, List<ClaimRequest> requests, Duration lease) {
        long leaseMillis = positiveMillis(lease);
        validate("consumer", consumer);
        if (requests.isEmpty()) {
            return List.of();
        }
        Map<String, ClaimRequest> distinct = new TreeMap<>();
        for (ClaimRequest request : requests) {
            validate("message id", request.messageId());
            distinct.putIfAbsent(request.messageId(), request);
        }
        register(consumer);
        long token = tokens.next();
        List<byte[]> keys = indexKeys(consumer);
        List<byte[]> args = new ArrayList<>();
        args.add(text(Long.toString(token)));
        args.add(text(Long.toString(leaseMillis)));
        args.add(text(Long.toString(retentionMillis)));
        for (ClaimRequest request : distinct.values()) {
            keys.add(text(rowKey(consumer, request.messageId())));
            args.add(text(request.messageId()));
            args.add(optional(request.fingerprint()));
        }
        List<?> rows = (List<?>) scripts.run(RedisScripts.CLAIM, keys, args);
        Map<String, ProcessedMessage> byId = new HashMap<>();
        int i = 0;
        for (String id : distinct.keySet()) {
            byId.put(id, row(consumer, id, (List<?>) rows.get(i++)).orElseThrow());
        }
        List<ClaimResult> results = new ArrayList<>(requests.size());
        for (ClaimRequest request : requests) {
            results.add(ClaimResult.of(Objects.requireNonNull(byId.get(request.messageId())), token));
        }
        return results;
    }

    @Override
    public int completeAll(String consumer, long claimToken, Collection<String> messageIds) {
        return complete(consumer, claimToken, messageIds, null);
    }

    @Override
    public boolean complete(ProcessedMessage claim, @Nullable StoredReply reply) {
        if (reply != null && reply.size() > maxReplySize) {
            throw new IllegalArgumentException("The reply of message '" + claim.messageId() + "' of consumer '"
                    + claim.consumer() + "' is " + reply.size() + " bytes; the Redis ledger keeps at most "
                    + maxReplySize + " (sumi.consumer.reply.max-size)");
        }
        return complete(claim.consumer(), claim.claimToken(), List.of(claim.messageId()), reply) == 1;
    }

    private int complete(String consumer, long claimToken, Collection<String> messageIds, @Nullable StoredReply reply) {
        if (messageIds.isEmpty()) {
            return 0;
        }
        byte[] replyArg = NONE;
        if (reply != null) {
            byte[] encoded = StoredReplyCodec.encode(reply);
            replyArg = new byte[encoded.length + 1];
            replyArg[0] = '1';
            System.arraycopy(encoded, 0, replyArg, 1, encoded.length);
        }
        return rowsScript(
                RedisScripts.COMPLETE,
                consumer,
                messageIds,
                text(Long.toString(claimToken)),
                text(Long.toString(retentionMillis)),
                replyArg);
    }

    @Override
    public int releaseAll(String consumer, long claimToken, Collection<String> messageIds, @Nullable String error) {
        return rowsScript(
                RedisScripts.RELEASE,
                consumer,
                messageIds,
                text(Long.toString(claimToken)),
                text(Long.toString(retentionMillis)),
                optional(error == null ? null : ErrorSummaries.sanitize(error)));
    }

    /**
     * One script: a row the claim inserted is deleted, a row it took over gets its attempt count
     * back, its lease ends now, and it carries a new token nobody holds (a retry matches nothing).
     */
    @Override
    public int releaseUnrun(String consumer, long claimToken, Collection<String> messageIds) {
        return rowsScript(
                RedisScripts.RELEASE_UNRUN,
                consumer,
                messageIds,
                text(Long.toString(claimToken)),
                text(Long.toString(tokens.next())),
                text(Long.toString(retentionMillis)));
    }

    @Override
    public int renewAll(String consumer, long claimToken, Collection<String> messageIds, Duration lease) {
        long leaseMillis = positiveMillis(lease);
        return rowsScript(
                RedisScripts.RENEW,
                consumer,
                messageIds,
                text(Long.toString(claimToken)),
                text(Long.toString(leaseMillis)),
                text(Long.toString(retentionMillis)));
    }

    @Override
    public boolean markForReconciliation(ProcessedMessage claim, @Nullable String reason) {
        String consumer = validate("consumer", claim.consumer());
        validate("message id", claim.messageId());
        List<byte[]> keys = heldAndRowKeys(consumer, claim.messageId());
        List<byte[]> args = List.of(
                text(Long.toString(claim.claimToken())),
                optional(reason == null ? null : ErrorSummaries.sanitize(reason)),
                text(claim.messageId()));
        return count(scripts.run(RedisScripts.RECONCILE, keys, args)) == 1;
    }

    @Override
    public boolean completeReconciled(String consumer, String messageId) {
        return resolve(consumer, messageId, "complete");
    }

    @Override
    public boolean releaseReconciled(String consumer, String messageId) {
        return resolve(consumer, messageId, "delete");
    }

    private boolean resolve(String consumer, String messageId, String how) {
        validate("consumer", consumer);
        validate("message id", messageId);
        List<byte[]> keys = heldAndRowKeys(consumer, messageId);
        List<byte[]> args = List.of(text(how), text(Long.toString(retentionMillis)), text(messageId));
        return count(scripts.run(RedisScripts.RESOLVE, keys, args)) == 1;
    }

    // ---------------------------------------------------------------- transactional mode: refused

    /**
     * Refused: a Redis write cannot commit with the handler's transaction.
     *
     * @throws IllegalStateException always
     */
    @Override
    public List<ClaimResult> claimAllCompleted(String consumer, List<ClaimRequest> requests) {
        throw transactionalModeRefused("claimCompleted");
    }

    /**
     * Refused, as {@link #claimAllCompleted} is.
     *
     * @throws IllegalStateException always
     */
    @Override
    public boolean storeReply(ProcessedMessage claim, StoredReply reply) {
        throw transactionalModeRefused("storeReply");
    }

    private static IllegalStateException transactionalModeRefused(String method) {
        return new IllegalStateException(method + " is transactional mode, which the Redis ledger does not offer:"
                + " a Redis write cannot commit or roll back with the handler's database transaction."
                + " Use lease mode (@IdempotentHandler(mode = LEASE), or AUTO), or the JDBC ledger");
    }

    // ---------------------------------------------------------------- reads

    @Override
    public Optional<ProcessedMessage> find(String consumer, String messageId) {
        validate("consumer", consumer);
        validate("message id", messageId);
        List<byte[]> values = scripts.withConnection(
                connection -> connection.hashCommands().hMGet(text(rowKey(consumer, messageId)), fieldNames()));
        return row(consumer, messageId, values == null ? List.of() : values);
    }

    @Override
    public Optional<StoredReply> findReply(String consumer, String messageId) {
        validate("consumer", consumer);
        validate("message id", messageId);
        List<byte[]> values = scripts.withConnection(
                connection -> connection.hashCommands().hMGet(text(rowKey(consumer, messageId)), text("s"), text("r")));
        if (values == null || values.size() < 2 || values.get(0) == null || values.get(1) == null) {
            return Optional.empty();
        }
        if (!"C".equals(new String(values.get(0), StandardCharsets.UTF_8))) {
            return Optional.empty();
        }
        return Optional.of(StoredReplyCodec.decode(values.get(1)));
    }

    /** Deletes nothing: rows expire by themselves ({@link Builder#retention}). */
    @Override
    public int deleteCompletedBefore(Instant cutoff, int limit) {
        if (limit <= 0) {
            throw new IllegalArgumentException("limit must be positive, was " + limit);
        }
        return 0;
    }

    /** One script per consumer named in {@code <prefix>:consumers}; consumers with nothing to report are absent. */
    @Override
    public Map<String, ConsumerLedgerStats> consumerStats() {
        Set<byte[]> members =
                scripts.withConnection(connection -> connection.setCommands().sMembers(text(prefix + ":consumers")));
        Map<String, ConsumerLedgerStats> stats = new HashMap<>();
        if (members == null) {
            return Map.of();
        }
        for (byte[] member : members) {
            String consumer = new String(member, StandardCharsets.UTF_8);
            List<byte[]> keys = indexKeys(consumer);
            keys.add(text(slotPrefix(consumer) + ":held"));
            List<?> reply = (List<?>) scripts.run(RedisScripts.STATS, keys, List.of());
            long held = ((Number) reply.get(2)).longValue();
            Duration age = Duration.ZERO;
            if (reply.get(0) != null) {
                age = Duration.ofMillis(number(reply.get(1)) - number(reply.get(0)));
            }
            if (held > 0 || reply.get(0) != null) {
                stats.put(consumer, new ConsumerLedgerStats(consumer, age, held));
            }
        }
        return Map.copyOf(stats);
    }

    // ---------------------------------------------------------------- plumbing

    private int rowsScript(
            String script, String consumer, Collection<String> messageIds, byte[] arg1, byte[] arg2, byte[] arg3) {
        validate("consumer", consumer);
        if (messageIds.isEmpty()) {
            return 0;
        }
        List<byte[]> keys = indexKeys(consumer);
        List<byte[]> args = new ArrayList<>(List.of(arg1, arg2, arg3));
        for (String id : new LinkedHashSet<>(messageIds)) {
            validate("message id", id);
            keys.add(text(rowKey(consumer, id)));
            args.add(text(id));
        }
        return count(scripts.run(script, keys, args));
    }

    /** Names the consumer in {@code <prefix>:consumers} once per store (another slot: its own command). */
    private void register(String consumer) {
        if (registered.add(consumer)) {
            try {
                scripts.withConnection(
                        connection -> connection.setCommands().sAdd(text(prefix + ":consumers"), text(consumer)));
            } catch (RuntimeException ex) {
                registered.remove(consumer);
                throw ex;
            }
        }
    }

    private String slotPrefix(String consumer) {
        return hashTagged(prefix, consumer);
    }

    /**
     * {@code <prefix>:{<name>}}: {@code name} as the hash tag, its {@code %} and braces
     * percent-encoded so that no two names share a key and the tag stays the whole name. The
     * ledger's keys per consumer, the spend store's per budget.
     */
    static String hashTagged(String prefix, String name) {
        StringBuilder key = new StringBuilder(prefix.length() + name.length() + 4)
                .append(prefix)
                .append(":{");
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            switch (c) {
                case '%' -> key.append("%25");
                case '{' -> key.append("%7B");
                case '}' -> key.append("%7D");
                default -> key.append(c);
            }
        }
        return key.append('}').toString();
    }

    private List<byte[]> indexKeys(String consumer) {
        String slot = slotPrefix(consumer);
        List<byte[]> keys = new ArrayList<>();
        keys.add(text(slot + ":live"));
        keys.add(text(slot + ":seen"));
        return keys;
    }

    /** The index keys, the held set and one row: the keys of the reconciliation scripts. */
    private List<byte[]> heldAndRowKeys(String consumer, String messageId) {
        List<byte[]> keys = indexKeys(consumer);
        keys.add(text(slotPrefix(consumer) + ":held"));
        keys.add(text(rowKey(consumer, messageId)));
        return keys;
    }

    private String validate(String what, @Nullable String value) {
        return LedgerKeyRules.requireValidKey(what, value, maxKeyLength());
    }

    private static long positiveMillis(Duration lease) {
        Objects.requireNonNull(lease, "lease");
        if (lease.isNegative() || lease.isZero()) {
            throw new IllegalArgumentException("lease must be positive, was " + lease);
        }
        return Math.max(1, lease.toMillis());
    }

    private static byte[][] fieldNames() {
        return new byte[][] {text("s"), text("t"), text("lu"), text("a"), text("fp"), text("e"), text("fs"), text("pa")
        };
    }

    /** A row from the fields {@code s t lu a fp e fs pa}, empty if it has no status (no such key). */
    private static Optional<ProcessedMessage> row(String consumer, String messageId, List<?> values) {
        if (values.isEmpty() || values.get(0) == null) {
            return Optional.empty();
        }
        MessageStatus status = switch (string(values.get(0))) {
            case "I" -> MessageStatus.IN_PROGRESS;
            case "C" -> MessageStatus.COMPLETED;
            case "R" -> MessageStatus.RECONCILE;
            default ->
                throw new IllegalStateException("The Redis ledger row " + messageId + " of consumer '" + consumer
                        + "' has an unknown status '" + string(values.get(0)) + "'");
        };
        return Optional.of(new ProcessedMessage(
                consumer,
                messageId,
                status,
                Long.parseLong(string(values.get(1))),
                instant(values.get(2)),
                Integer.parseInt(string(values.get(3))),
                values.get(4) == null ? null : string(values.get(4)),
                values.get(5) == null ? null : string(values.get(5)),
                Objects.requireNonNull(instant(values.get(6)), "first claim"),
                instant(values.get(7))));
    }

    /** The count a script returns, as the one element of its reply (every script replies with an array). */
    private static int count(Object reply) {
        return (int) number(((List<?>) reply).get(0));
    }

    private static @Nullable Instant instant(@Nullable Object value) {
        return value == null ? null : Instant.ofEpochMilli(number(value));
    }

    private static long number(Object value) {
        return value instanceof Number number ? number.longValue() : Long.parseLong(string(value));
    }

    private static String string(Object value) {
        return value instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : value.toString();
    }

    private static byte[] text(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] optional(@Nullable String text) {
        return text == null ? NONE : text("1" + text);
    }

    /** Package-private for the tests: runs {@code work} on a connection of the store's factory. */
    <T> @Nullable T withConnection(RedisScripts.ConnectionWork<T> work) {
        return scripts.withConnection(work);
    }

    /**
     * Builds a {@link RedisProcessedMessageStore}.
     */
    public static final class Builder {

        private final RedisConnectionFactory connectionFactory;
        private String prefix = DEFAULT_PREFIX;
        private Duration retention = DEFAULT_RETENTION;
        private int maxReplySize = MAX_REPLY_SIZE;
        private int replicas;
        private Duration replicaTimeout = Duration.ofSeconds(1);

        private Builder(RedisConnectionFactory connectionFactory) {
            this.connectionFactory = Objects.requireNonNull(connectionFactory, "connectionFactory");
        }

        /** The prefix of every key ({@link #validatePrefix}). Default {@value #DEFAULT_PREFIX}. */
        public Builder prefix(String prefix) {
            this.prefix = validatePrefix(prefix);
            return this;
        }

        /**
         * How long a completed row is kept (its key expires then), and how long a claim's row
         * outlives its lease. Default 14 days, as the JDBC ledger's pruning.
         */
        public Builder retention(Duration retention) {
            if (retention.toMillis() <= 0) {
                throw new IllegalArgumentException("retention must be at least 1 ms, was " + retention);
            }
            this.retention = retention;
            return this;
        }

        /**
         * The largest reply kept ({@link StoredReply#size()}, the rule {@code sumi.consumer.reply.max-size}
         * applies); a larger one is refused with an {@link IllegalArgumentException}. At most and by
         * default {@value #MAX_REPLY_SIZE} bytes.
         */
        public Builder maxReplySize(int maxReplySize) {
            if (maxReplySize <= 0 || maxReplySize > MAX_REPLY_SIZE) {
                throw new IllegalArgumentException(
                        "maxReplySize must be more than 0 and at most " + MAX_REPLY_SIZE + ", was " + maxReplySize);
            }
            this.maxReplySize = maxReplySize;
            return this;
        }

        /**
         * After every write, {@code WAIT} until {@code replicas} replicas of the written key's master
         * acknowledged it, for at most {@code timeout}; a write that fewer acknowledged fails with
         * {@link RedisLedgerReplicationException} (it happened on the master, and may be lost if the
         * master fails before its replicas have it). Default 0: no {@code WAIT}.
         */
        public Builder waitForReplicas(int replicas, Duration timeout) {
            RedisScripts.checkWaitForReplicas(replicas, timeout);
            this.replicas = replicas;
            this.replicaTimeout = timeout;
            return this;
        }

        public RedisProcessedMessageStore build() {
            return new RedisProcessedMessageStore(this);
        }
    }

    /** For {@link RedisScripts}: runs work on a connection, closing it after. */
    static <T> @Nullable T on(RedisConnectionFactory factory, RedisScripts.ConnectionWork<T> work) {
        try (RedisConnection connection = factory.getConnection()) {
            return work.run(connection);
        }
    }
}
