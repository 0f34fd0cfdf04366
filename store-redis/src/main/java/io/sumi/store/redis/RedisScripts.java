package io.sumi.store.redis;

import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.BaseRedisAsyncCommands;
import io.lettuce.core.cluster.SlotHash;
import io.lettuce.core.cluster.api.StatefulRedisClusterConnection;
import io.lettuce.core.cluster.api.async.RedisAdvancedClusterAsyncCommands;
import io.lettuce.core.cluster.models.partitions.RedisClusterNode;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.jspecify.annotations.Nullable;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.QueryTimeoutException;
import org.springframework.dao.TransientDataAccessResourceException;
import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.ReturnType;

/**
 * A store's Lua scripts and how they run: {@code EVALSHA}, {@code EVAL} when the server does not
 * know the script yet (a restart, a failover, a new node), then {@code WAIT} when the store waits
 * for replicas. Every key of one call is in one hash slot (the consumer's hash tag for the ledger,
 * the budget's for the spend store), so on a cluster the call runs on the slot's master. The
 * ledger's scripts ({@link #forLedger}) and the budgets' spend store's ({@link RedisSpendStore})
 * share this. Not API.
 */
final class RedisScripts {

    static final String CLAIM = "claim";
    static final String COMPLETE = "complete";
    static final String RELEASE = "release";
    static final String RELEASE_UNRUN = "release_unrun";
    static final String RENEW = "renew";
    static final String RECONCILE = "reconcile";
    static final String RESOLVE = "resolve";
    static final String STATS = "stats";

    /** Work on a connection. */
    @FunctionalInterface
    interface ConnectionWork<T> {
        @Nullable
        T run(RedisConnection connection);
    }

    /** A script's text and its SHA-1, what {@code EVALSHA} names it by. */
    private static final class Script {
        private final byte[] body;
        private final String sha1;

        Script(byte[] body, String sha1) {
            this.body = body;
            this.sha1 = sha1;
        }

        byte[] body() {
            return body;
        }

        String sha1() {
            return sha1;
        }
    }

    private final RedisConnectionFactory factory;
    private final int replicas;
    private final long replicaTimeoutMillis;
    /** What the scripts keep, for the message of an outage ("ledger", "budget spend store"). */
    private final String what;

    private final Map<String, Script> scripts = new ConcurrentHashMap<>();

    /**
     * @param what what the scripts keep, named in the message of an outage
     * @param common the script prepended to each of {@code names} (resource {@code <common>.lua})
     * @param names the scripts (resources {@code <name>.lua} beside this class)
     */
    RedisScripts(
            RedisConnectionFactory factory,
            int replicas,
            Duration replicaTimeout,
            String what,
            String common,
            List<String> names) {
        this.factory = factory;
        this.replicas = replicas;
        this.replicaTimeoutMillis = replicaTimeout.toMillis();
        this.what = what;
        String prelude = resource(common);
        for (String name : names) {
            byte[] body = (prelude + "\n" + resource(name)).getBytes(StandardCharsets.UTF_8);
            scripts.put(name, new Script(body, sha1(body)));
        }
    }

    /** The one check of both stores' {@code waitForReplicas(replicas, timeout)}. */
    static void checkWaitForReplicas(int replicas, Duration timeout) {
        if (replicas < 0) {
            throw new IllegalArgumentException("replicas must not be negative, was " + replicas);
        }
        if (timeout.toMillis() <= 0) {
            throw new IllegalArgumentException("the WAIT timeout must be at least 1 ms, was " + timeout);
        }
    }

    /** The ledger's scripts. */
    static RedisScripts forLedger(RedisConnectionFactory factory, int replicas, Duration replicaTimeout) {
        return new RedisScripts(
                factory,
                replicas,
                replicaTimeout,
                "ledger",
                "common",
                List.of(CLAIM, COMPLETE, RELEASE, RELEASE_UNRUN, RENEW, RECONCILE, RESOLVE, STATS));
    }

    /**
     * Runs {@code work}; what says the ledger is out of reach for now (a connection failure, a
     * timeout, a cluster that is failing over: {@code CLUSTERDOWN}, {@code TRYAGAIN}, {@code LOADING},
     * {@code READONLY}, {@code MASTERDOWN}, and a node connection that failed) is thrown as a
     * {@link TransientDataAccessResourceException}, which the executor treats as a ledger outage
     * (the message is held and tried again, its redelivery budget untouched).
     */
    <T> @Nullable T withConnection(ConnectionWork<T> work) {
        try {
            return RedisProcessedMessageStore.on(factory, work);
        } catch (RedisLedgerReplicationException | DataAccessResourceFailureException ex) {
            throw ex;
        } catch (RuntimeException ex) {
            if (!unavailable(ex)) {
                throw ex;
            }
            throw new TransientDataAccessResourceException(
                    "The Redis " + what + " is unavailable: " + ex.getMessage(), ex);
        }
    }

    private static final List<String> UNAVAILABLE =
            List.of("CLUSTERDOWN", "TRYAGAIN", "LOADING", "READONLY", "MASTERDOWN", "NOREPLICAS");

    private static boolean unavailable(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof QueryTimeoutException
                    || cause instanceof io.lettuce.core.RedisConnectionException
                    || cause instanceof io.lettuce.core.RedisCommandTimeoutException
                    || cause instanceof java.io.IOException) {
                return true;
            }
            String message = cause.getMessage();
            if (message != null && UNAVAILABLE.stream().anyMatch(message::startsWith)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Runs one script; {@code keys} are all in one slot.
     *
     * @throws RedisLedgerReplicationException if the store waits for replicas and fewer acknowledged
     */
    Object run(String name, List<byte[]> keys, List<byte[]> args) {
        Script script = Objects.requireNonNull(scripts.get(name), name);
        byte[][] keysAndArgs = new byte[keys.size() + args.size()][];
        for (int i = 0; i < keys.size(); i++) {
            keysAndArgs[i] = keys.get(i);
        }
        for (int i = 0; i < args.size(); i++) {
            keysAndArgs[keys.size() + i] = args.get(i);
        }
        Object result = withConnection(connection -> {
            if (replicas > 0 && connection instanceof RedisClusterConnection cluster) {
                return onSlotMaster(cluster, script, keys, keysAndArgs);
            }
            Object reply = eval(connection, script, keys.size(), keysAndArgs);
            if (replicas > 0) {
                checkReplicas(waitForReplicas(connection));
            }
            return reply;
        });
        return Objects.requireNonNull(result, "script reply");
    }

    private static @Nullable Object eval(RedisConnection connection, Script script, int keys, byte[][] keysAndArgs) {
        try {
            return connection.scriptingCommands().evalSha(script.sha1(), ReturnType.MULTI, keys, keysAndArgs);
        } catch (RuntimeException ex) {
            if (!noScript(ex)) {
                throw ex;
            }
            return connection.scriptingCommands().eval(script.body(), ReturnType.MULTI, keys, keysAndArgs);
        }
    }

    /**
     * {@code WAIT} counts the writes of the connection it is sent on, so on a cluster the script and
     * the {@code WAIT} go on the one connection to the slot's master (Lettuce's node connection).
     */
    // unchecked: Spring Data's Lettuce cluster connection is one of byte[] keys and values. deprecation:
    // getStatefulConnection() is how Spring Data's async commands lead to the node connections in Lettuce 6.8.
    @SuppressWarnings({"unchecked", "deprecation"})
    private @Nullable Object onSlotMaster(
            RedisClusterConnection cluster, Script script, List<byte[]> keys, byte[][] keysAndArgs) {
        Object nativeConnection = cluster.getNativeConnection();
        if (nativeConnection instanceof RedisAdvancedClusterAsyncCommands<?, ?> commands) {
            nativeConnection = commands.getStatefulConnection();
        }
        if (!(nativeConnection instanceof StatefulRedisClusterConnection<?, ?> lettuce)) {
            throw new IllegalStateException("Waiting for replicas on a Redis Cluster needs Lettuce, the connection is "
                    + nativeConnection.getClass().getName());
        }
        int slot = SlotHash.getSlot(keys.get(0));
        RedisClusterNode master = lettuce.getPartitions().getMasterBySlot(slot);
        if (master == null) {
            throw new IllegalStateException("No master serves hash slot " + slot + " of the Redis ledger");
        }
        StatefulRedisConnection<byte[], byte[]> node =
                ((StatefulRedisClusterConnection<byte[], byte[]>) lettuce).getConnection(master.getNodeId());
        byte[][] keyArray = keys.toArray(new byte[0][]);
        byte[][] argArray = new byte[keysAndArgs.length - keyArray.length][];
        System.arraycopy(keysAndArgs, keyArray.length, argArray, 0, argArray.length);
        Object reply;
        try {
            reply = node.sync().evalsha(script.sha1(), ScriptOutputType.MULTI, keyArray, argArray);
        } catch (RuntimeException ex) {
            if (!noScript(ex)) {
                throw ex;
            }
            reply = node.sync().eval(script.body(), ScriptOutputType.MULTI, keyArray, argArray);
        }
        checkReplicas(node.sync().waitForReplication(replicas, replicaTimeoutMillis));
        return reply;
    }

    /** {@code WAIT} on the connection that ran the script (Lettuce's shared connection, or a dedicated one). */
    private long waitForReplicas(RedisConnection connection) {
        Object nativeConnection = connection.getNativeConnection();
        if (!(nativeConnection instanceof BaseRedisAsyncCommands<?, ?> lettuce)) {
            throw new IllegalStateException("Waiting for replicas needs Lettuce, the connection is "
                    + nativeConnection.getClass().getName());
        }
        try {
            return lettuce.waitForReplication(replicas, replicaTimeoutMillis)
                    .get(replicaTimeoutMillis + 10_000, TimeUnit.MILLISECONDS);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new RedisLedgerReplicationException("Interrupted while waiting for the ledger's replicas");
        } catch (ExecutionException | TimeoutException ex) {
            throw new RedisLedgerReplicationException("WAIT for the ledger's replicas failed: " + ex);
        }
    }

    private void checkReplicas(long acknowledged) {
        if (acknowledged < replicas) {
            throw new RedisLedgerReplicationException("The Redis ledger's write reached " + acknowledged
                    + " replica(s) within " + replicaTimeoutMillis + " ms, fewer than the " + replicas
                    + " it waits for: it is on the master and may be lost if the master fails now");
        }
    }

    private static boolean noScript(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause.getMessage() != null && cause.getMessage().contains("NOSCRIPT")) {
                return true;
            }
        }
        return false;
    }

    private static String resource(String name) {
        try (InputStream in = RedisScripts.class.getResourceAsStream(name + ".lua")) {
            if (in == null) {
                throw new IllegalStateException("Missing Redis script " + name + ".lua");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private static String sha1(byte[] body) {
        try {
            return HexFormat.of()
                    .formatHex(java.security.MessageDigest.getInstance("SHA-1").digest(body));
        } catch (java.security.NoSuchAlgorithmException ex) {
            throw new IllegalStateException("SHA-1 is required of every JVM", ex);
        }
    }
}
