package io.sumi.outbox.cdc;

import io.debezium.embedded.Connect;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.RecordChangeEvent;
import io.debezium.engine.format.ChangeEventFormat;
import io.debezium.engine.spi.OffsetCommitPolicy;
import io.sumi.outbox.OutboxDispatcher;
import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Objects;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.kafka.connect.source.SourceRecord;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Dispatches the outbox from PostgreSQL's write-ahead log: the Debezium embedded engine streams
 * the INSERTs of the outbox table from a logical replication slot ({@code pgoutput}, a
 * publication {@code WITH (publish = 'insert')}), and each batch of new ids goes through
 * {@link OutboxDispatcher#dispatchAmong}: claimed, sent through the dispatcher's publisher (same
 * headers, same key as polling), marked dispatched. Rows the claim does not take (delayed, leased
 * by the polling loop, behind an earlier undispatched row of their aggregate, failed sends) are
 * left to the polling dispatcher, which keeps running with a long interval as the safety net.
 *
 * <h2>One reader per slot</h2>
 * Every instance runs an {@code OutboxCdc}; one streams. Before it starts the engine an instance
 * takes a PostgreSQL session advisory lock named after the slot on a connection of its own and
 * holds it while it streams; the others wait for it in {@code pg_advisory_lock} on their own lock
 * connection, each wait bounded by {@code lock_timeout} ({@value #LOCK_WAIT_SECONDS} s, then it
 * waits again). A waiting instance costs the database one idle backend and one statement a
 * minute, not a try every take-over interval. When the streaming instance dies its session ends,
 * the lock goes to a waiting instance at once and it takes over (from the offsets in the
 * database). The slot itself admits one streaming connection at a time, so the lock only spares the
 * others the engine's failing attempts.
 *
 * <h2>Offsets and acknowledgements</h2>
 * A batch is marked processed only after {@code dispatchAmong} returned (every claimed row
 * acknowledged by the broker and marked, or failed and scheduled for a retry by polling); only
 * then may the engine commit its offsets ({@link JdbcOffsetBackingStore}, in the application's
 * database) and confirm the LSN to the slot. After a crash the engine re-reads the log from the
 * last committed offsets; the rows it finds again are already marked dispatched and are not
 * claimed again. So the CDC path adds no double send of its own: a row is sent twice only in the
 * cases the polling dispatcher states (a stall longer than {@code lease - sendTimeout}, a crash
 * between the broker's acknowledgement and the mark, an acknowledgement that came too late).
 *
 * <p>Thread-safe. {@link #start()} checks the database (wal_level, REPLICATION, publication) and
 * fails with a {@link CdcSetupException} saying what to change.
 */
public final class OutboxCdc implements AutoCloseable {

    /** Default replication slot (and offsets store) name. */
    public static final String DEFAULT_SLOT_NAME = "sumi_outbox";

    /** Default publication name. */
    public static final String DEFAULT_PUBLICATION_NAME = "sumi_outbox";

    /** Default wait between two tries of a waiting instance to take the slot over. */
    public static final Duration DEFAULT_TAKE_OVER_INTERVAL = Duration.ofSeconds(2);

    /**
     * Default interval of Debezium's heartbeat (and its action query): on a quiet outbox the slot
     * retains at most about this much of the database's other WAL, at two statements a beat.
     */
    public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(60);

    /** Default interval between two offset commits of the engine. */
    public static final Duration DEFAULT_OFFSET_FLUSH_INTERVAL = Duration.ofSeconds(1);

    private static final Logger log = LoggerFactory.getLogger(OutboxCdc.class);

    /**
     * How long one {@code pg_advisory_lock} of a waiting instance waits ({@code lock_timeout})
     * before it asks again: bounds how long a wait can outlive a broken connection that no error
     * reported.
     */
    static final int LOCK_WAIT_SECONDS = 60;

    /** {@code application_name} of this class's own connections (the lock's), followed by the slot. */
    static final String APPLICATION_NAME_PREFIX = "sumi-outbox-cdc ";

    /** SQLSTATE of a lock wait that ran out of {@code lock_timeout}. */
    private static final String LOCK_NOT_AVAILABLE = "55P03";

    /** The advisory lock's first key: "SUMI"; the second is the slot name's hash. */
    private static final int LOCK_CLASS = 0x53554D49;

    /** jdbc:postgresql://host[:port][,more hosts]/database[?parameters]: the first host is streamed from. */
    private static final Pattern JDBC_URL =
            Pattern.compile("jdbc:postgresql://([^:/,?]+)(?::(\\d+))?(?:,[^/]*)?/([^?]+)(?:\\?.*)?");

    private static final Pattern NAME = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

    private final OutboxDispatcher dispatcher;
    private final String jdbcUrl;
    private final Properties connectionProperties;
    private final String host;
    private final String port;
    private final String database;
    private final String slotName;
    private final String publicationName;
    private final @Nullable String configuredSchema;
    private final Duration takeOverInterval;
    private final Duration heartbeatInterval;
    private final Duration offsetFlushInterval;
    private final Properties extraEngineProperties;
    private final OutboxChangeConsumer consumer;
    private final String registrationKey = UUID.randomUUID().toString();
    private final CountDownLatch stopSignal = new CountDownLatch(1);

    private final Object lifecycle = new Object();
    private final Object streamingMonitor = new Object();
    private @Nullable Thread supervisor;
    private volatile boolean streaming;
    private volatile boolean holdsLock;
    private volatile @Nullable Throwable lastFailure;
    private volatile long streamingSinceNanos;
    /** The statement that waits in {@code pg_advisory_lock}, while it waits: {@link #stop} cancels it. */
    private volatile @Nullable Statement waitingStatement;

    private OutboxCdc(Builder builder) {
        this.dispatcher = builder.dispatcher;
        this.jdbcUrl = builder.jdbcUrl;
        this.connectionProperties = new Properties();
        if (builder.user != null) {
            connectionProperties.setProperty("user", builder.user);
        }
        if (builder.password != null) {
            connectionProperties.setProperty("password", builder.password);
        }
        // What pg_stat_activity shows for the lock connection (a waiting instance's wait included).
        connectionProperties.setProperty("ApplicationName", APPLICATION_NAME_PREFIX + builder.slotName);
        java.util.regex.Matcher url = JDBC_URL.matcher(jdbcUrl);
        if (!url.matches()) {
            throw new IllegalArgumentException(
                    "The outbox CDC path needs a jdbc:postgresql://host[:port]/database URL, got " + jdbcUrl);
        }
        this.host = url.group(1);
        this.port = url.group(2) == null ? "5432" : url.group(2);
        this.database = url.group(3);
        this.slotName = builder.slotName;
        this.publicationName = builder.publicationName;
        this.configuredSchema = builder.schema;
        this.takeOverInterval = builder.takeOverInterval;
        this.heartbeatInterval = builder.heartbeatInterval;
        this.offsetFlushInterval = builder.offsetFlushInterval;
        this.extraEngineProperties = builder.engineProperties;
        this.consumer =
                new OutboxChangeConsumer(dispatcher, dispatcher.table().tableName(), builder.markBeforeDispatch);
    }

    /** Starts a builder for the CDC path of {@code dispatcher}'s table, read from the database at {@code jdbcUrl}. */
    public static Builder builder(OutboxDispatcher dispatcher, String jdbcUrl) {
        return new Builder(dispatcher, jdbcUrl);
    }

    /**
     * Checks and prepares the database (wal_level, REPLICATION, the offsets and heartbeat tables,
     * the publication), then starts the supervisor thread, which waits for the slot's lock and
     * streams. Idempotent.
     *
     * @throws CdcSetupException if the database does not allow the CDC path (the message says why)
     * @throws IllegalStateException if the database cannot be reached
     */
    public void start() {
        synchronized (lifecycle) {
            if (supervisor != null) {
                return;
            }
            String schema;
            try (Connection connection = connect()) {
                schema = schema(connection);
                CdcSetup.prepare(connection, schema, dispatcher.table().tableName(), publicationName);
            } catch (SQLException ex) {
                throw new IllegalStateException("Could not prepare the outbox CDC path: " + ex.getMessage(), ex);
            }
            JdbcOffsetBackingStore.register(
                    registrationKey,
                    new JdbcOffsetBackingStore.Registration(dispatcher.table().dataSource(), slotName));
            Thread thread = new Thread(() -> supervise(schema), "sumi-outbox-cdc-" + slotName);
            thread.setDaemon(true);
            supervisor = thread;
            thread.start();
            log.info(
                    "Outbox CDC started for {}.{} (slot {}, publication {}); it streams once it holds the slot's lock",
                    schema,
                    dispatcher.table().tableName(),
                    slotName,
                    publicationName);
        }
    }

    /**
     * Stops streaming (the engine commits what it processed) and releases the slot's lock.
     * Idempotent; a stopped {@code OutboxCdc} does not start again (build a new one).
     */
    public void stop(Duration timeout) {
        Thread thread;
        synchronized (lifecycle) {
            thread = supervisor;
            stopSignal.countDown();
        }
        if (thread != null) {
            // A wait in pg_advisory_lock does not see the stop signal: cancel it, again until the
            // supervisor ends, since a cancel that reaches the server before the wait began is lost.
            long deadline = System.nanoTime() + timeout.toNanos();
            try {
                while (thread.isAlive() && System.nanoTime() < deadline) {
                    cancelWait();
                    thread.join(100);
                }
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
            if (thread.isAlive()) {
                thread.interrupt();
            }
        }
        JdbcOffsetBackingStore.unregister(registrationKey);
    }

    @Override
    public void close() {
        stop(Duration.ofSeconds(30));
    }

    private void cancelWait() {
        Statement waiting = waitingStatement;
        if (waiting != null) {
            try {
                waiting.cancel();
            } catch (SQLException ex) {
                log.debug("Cancelling the wait for the lock of slot {} failed", slotName, ex);
            }
        }
    }

    /** Whether this instance holds the slot's lock and its engine runs. */
    public boolean isStreaming() {
        return streaming;
    }

    /**
     * Waits until this instance streams, at most {@code timeout}.
     *
     * @return whether it streams
     */
    public boolean awaitStreaming(Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        synchronized (streamingMonitor) {
            while (!streaming) {
                long left = end - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(streamingMonitor, left);
            }
            return true;
        }
    }

    /** Whether this instance holds the slot's lock (streaming or about to). */
    public boolean holdsLock() {
        return holdsLock;
    }

    /** The replication slot's name. */
    public String slotName() {
        return slotName;
    }

    /** Outbox rows this instance read from the log. */
    public long rowsSeen() {
        return consumer.rowsSeen();
    }

    /** Outbox rows this instance sent from the log. */
    public long rowsSent() {
        return consumer.rowsSent();
    }

    /** The last failure of the engine or of the lock's connection, if any. */
    public @Nullable Throwable lastFailure() {
        return lastFailure;
    }

    /** {@link System#nanoTime()} when this instance last started streaming; 0 if never. */
    long streamingSinceNanos() {
        return streamingSinceNanos;
    }

    /** Parameters: slot name. */
    private static final String SQL_QUERY_SLOT = """
            SELECT active,
                   COALESCE(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), 0) AS retained,
                   COALESCE(pg_wal_lsn_diff(pg_current_wal_lsn(), confirmed_flush_lsn), 0) AS lag
              FROM pg_replication_slots WHERE slot_name = ?
            """;

    /**
     * The slot's state, read from the database (one query on the outbox's data source): whether
     * some instance streams it, and how much WAL it retains.
     */
    public SlotStatus slotStatus() {
        try (Connection connection = dispatcher.table().dataSource().getConnection();
                PreparedStatement statement = connection.prepareStatement(SQL_QUERY_SLOT)) {
            statement.setString(1, slotName);
            try (ResultSet rs = statement.executeQuery()) {
                if (!rs.next()) {
                    return SlotStatus.MISSING;
                }
                return new SlotStatus(true, rs.getBoolean("active"), rs.getLong("retained"), rs.getLong("lag"));
            }
        } catch (SQLException ex) {
            throw new IllegalStateException("Could not read the state of replication slot " + slotName, ex);
        }
    }

    // ---------------------------------------------------------------- supervisor

    private void supervise(String schema) {
        while (!stopped()) {
            try (Connection lock = connect()) {
                if (!waitForLock(lock)) {
                    return;
                }
                holdsLock = true;
                log.info("Outbox CDC: this instance holds the lock of slot {} and starts streaming", slotName);
                stream(lock, schema);
            } catch (SQLException | RuntimeException ex) {
                lastFailure = ex;
                log.warn("Outbox CDC on slot {} stopped; trying again in {}", slotName, takeOverInterval, ex);
            } finally {
                holdsLock = false;
                streaming = false;
            }
            pause(takeOverInterval);
        }
    }

    private boolean waitForLock(Connection lock) throws SQLException {
        if (advisoryLock(lock, "SELECT pg_try_advisory_lock(?, ?)", false)) {
            return true;
        }
        log.info("Outbox CDC: slot {} is streamed by another instance; this one waits to take over", slotName);
        try (Statement statement = lock.createStatement()) {
            statement.execute("SET lock_timeout = '" + LOCK_WAIT_SECONDS + "s'");
        }
        while (!stopped()) {
            try {
                if (advisoryLock(lock, "SELECT pg_advisory_lock(?, ?) IS NOT NULL", true)) {
                    return !stopped();
                }
            } catch (SQLException ex) {
                if (stopped()) {
                    return false;
                }
                if (!LOCK_NOT_AVAILABLE.equals(ex.getSQLState())) {
                    throw ex;
                }
                // lock_timeout ran out: the holder still streams; wait again.
            }
        }
        return false;
    }

    /**
     * Runs {@code query} (an advisory-lock function on the slot's key) and returns its boolean; a
     * {@code cancellable} one is where {@link #stop} can cancel it.
     */
    private boolean advisoryLock(Connection lock, String query, boolean cancellable) throws SQLException {
        try (PreparedStatement statement = lock.prepareStatement(query)) {
            statement.setInt(1, LOCK_CLASS);
            statement.setInt(2, slotName.hashCode());
            if (cancellable) {
                waitingStatement = statement;
                if (stopped()) {
                    return false;
                }
            }
            try (ResultSet rs = statement.executeQuery()) {
                return rs.next() && rs.getBoolean(1);
            }
        } finally {
            if (cancellable) {
                waitingStatement = null;
            }
        }
    }

    /** Runs the engine until it ends, the lock's connection is lost, or {@link #stop}. */
    private void stream(Connection lock, String schema) throws SQLException {
        CountDownLatch ended = new CountDownLatch(1);
        Throwable[] failure = new Throwable[1];
        DebeziumEngine<RecordChangeEvent<SourceRecord>> engine = DebeziumEngine.create(
                        ChangeEventFormat.of(Connect.class))
                .using(engineProperties(schema))
                .using(OffsetCommitPolicy.periodic(engineProperties(schema)))
                .using(new DebeziumEngine.ConnectorCallback() {
                    @Override
                    public void taskStarted() {
                        streamingSinceNanos = System.nanoTime();
                        synchronized (streamingMonitor) {
                            streaming = true;
                            streamingMonitor.notifyAll();
                        }
                    }

                    @Override
                    public void taskStopped() {
                        streaming = false;
                    }
                })
                .using((success, message, error) -> {
                    if (!success) {
                        failure[0] = error != null ? error : new IllegalStateException(message);
                    }
                    ended.countDown();
                })
                .notifying(consumer)
                .build();
        Thread runner = new Thread(engine, "sumi-outbox-cdc-engine-" + slotName);
        runner.setDaemon(true);
        runner.start();
        try {
            while (true) {
                if (awaitQuietly(ended, takeOverInterval)) {
                    if (failure[0] != null) {
                        throw new IllegalStateException("The Debezium engine failed: " + failure[0], failure[0]);
                    }
                    return;
                }
                if (stopped()) {
                    return;
                }
                if (!lock.isValid(Math.max(1, (int) takeOverInterval.toSeconds()))) {
                    throw new IllegalStateException(
                            "Lost the connection that holds the lock of slot " + slotName + "; stopping the engine");
                }
            }
        } finally {
            streaming = false;
            try {
                engine.close();
            } catch (IOException ex) {
                log.warn("Closing the Debezium engine of slot {} failed", slotName, ex);
            }
            awaitQuietly(ended, Duration.ofSeconds(30));
        }
    }

    Properties engineProperties(String schema) {
        Properties props = new Properties();
        props.setProperty("name", "sumi-outbox-cdc-" + slotName);
        props.setProperty("connector.class", "io.debezium.connector.postgresql.PostgresConnector");
        props.setProperty("offset.storage", JdbcOffsetBackingStore.class.getName());
        props.setProperty(JdbcOffsetBackingStore.REGISTRATION, registrationKey);
        props.setProperty("offset.flush.interval.ms", Long.toString(offsetFlushInterval.toMillis()));
        props.setProperty("offset.flush.timeout.ms", "10000");
        props.setProperty("database.hostname", host);
        props.setProperty("database.port", port);
        props.setProperty("database.dbname", database);
        props.setProperty("database.user", connectionProperties.getProperty("user", ""));
        props.setProperty("database.password", connectionProperties.getProperty("password", ""));
        props.setProperty("topic.prefix", "sumi_outbox_cdc");
        props.setProperty("plugin.name", "pgoutput");
        props.setProperty("slot.name", slotName);
        props.setProperty("slot.drop.on.stop", "false");
        props.setProperty("slot.retry.delay.ms", Long.toString(takeOverInterval.toMillis()));
        props.setProperty("slot.max.retries", "30");
        props.setProperty("publication.name", publicationName);
        props.setProperty("publication.autocreate.mode", "disabled");
        props.setProperty(
                "table.include.list",
                Pattern.quote(schema + "." + dispatcher.table().tableName()) + ","
                        + Pattern.quote(schema + "." + CdcSetup.HEARTBEAT_TABLE));
        // Rows committed before the slot existed are the polling dispatcher's.
        props.setProperty("snapshot.mode", "no_data");
        props.setProperty("tombstones.on.delete", "false");
        props.setProperty("heartbeat.interval.ms", Long.toString(heartbeatInterval.toMillis()));
        props.setProperty("heartbeat.action.query", CdcSetup.heartbeatQuery(slotName));
        props.setProperty("errors.max.retries", "0");
        // Debezium's default, 500 ms, is waited out when a batch is not full: most of the lag.
        props.setProperty("poll.interval.ms", "20");
        props.putAll(extraEngineProperties);
        return props;
    }

    private Connection connect() throws SQLException {
        return DriverManager.getConnection(jdbcUrl, connectionProperties);
    }

    private String schema(Connection connection) throws SQLException {
        if (configuredSchema != null) {
            return configuredSchema;
        }
        try (Statement statement = connection.createStatement();
                ResultSet rs = statement.executeQuery("SELECT current_schema()")) {
            rs.next();
            return Objects.requireNonNull(rs.getString(1), "current_schema()");
        }
    }

    private boolean stopped() {
        return stopSignal.getCount() == 0;
    }

    /** Waits {@code duration} or until stopped; returns whether stopped. */
    private boolean pause(Duration duration) {
        return awaitQuietly(stopSignal, duration);
    }

    private static boolean awaitQuietly(CountDownLatch latch, Duration duration) {
        try {
            return latch.await(duration.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            return true;
        }
    }

    /** Builds an {@link OutboxCdc}. */
    public static final class Builder {

        private final OutboxDispatcher dispatcher;
        private final String jdbcUrl;
        private @Nullable String user;
        private @Nullable String password;
        private String slotName = DEFAULT_SLOT_NAME;
        private String publicationName = DEFAULT_PUBLICATION_NAME;
        private @Nullable String schema;
        private Duration takeOverInterval = DEFAULT_TAKE_OVER_INTERVAL;
        private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
        private Duration offsetFlushInterval = DEFAULT_OFFSET_FLUSH_INTERVAL;
        private final Properties engineProperties = new Properties();
        private boolean markBeforeDispatch;

        private Builder(OutboxDispatcher dispatcher, String jdbcUrl) {
            this.dispatcher = Objects.requireNonNull(dispatcher, "dispatcher");
            this.jdbcUrl = Objects.requireNonNull(jdbcUrl, "jdbcUrl");
        }

        /** The database user: it needs the REPLICATION attribute. */
        public Builder user(@Nullable String user) {
            this.user = user;
            return this;
        }

        public Builder password(@Nullable String password) {
            this.password = password;
            return this;
        }

        /** The replication slot, one per application (lower case letters, digits, underscores). */
        public Builder slotName(String slotName) {
            this.slotName = name("slot", slotName);
            return this;
        }

        /** The publication of the outbox's INSERTs; created at start if it does not exist. */
        public Builder publicationName(String publicationName) {
            this.publicationName = name("publication", publicationName);
            return this;
        }

        /** The outbox table's schema; the connection's {@code current_schema()} by default. */
        public Builder schema(@Nullable String schema) {
            this.schema = schema == null ? null : name("schema", schema);
            return this;
        }

        /**
         * How often the streaming instance checks the connection that holds the slot's lock, and
         * the pause before an instance whose engine or lock connection failed tries again. A
         * waiting instance does not poll: it takes over as soon as the streaming one's session
         * ends (then the engine's start).
         */
        public Builder takeOverInterval(Duration interval) {
            this.takeOverInterval = positive("take-over interval", interval);
            return this;
        }

        /** Debezium's heartbeat, whose action query keeps a quiet outbox's slot advancing. */
        public Builder heartbeatInterval(Duration interval) {
            this.heartbeatInterval = positive("heartbeat interval", interval);
            return this;
        }

        /**
         * How often the engine commits its offsets (and confirms the LSN to the slot). Longer
         * means more of the log re-read after a crash (those rows are already marked: they are
         * not sent again) and WAL retained a little longer.
         */
        public Builder offsetFlushInterval(Duration interval) {
            Objects.requireNonNull(interval, "offset flush interval");
            if (interval.isNegative()) {
                throw new IllegalArgumentException("The offset flush interval must not be negative, was " + interval);
            }
            this.offsetFlushInterval = interval;
            return this;
        }

        /** A Debezium engine property set over Sumi's (for what Sumi does not expose). */
        public Builder engineProperty(String name, String value) {
            engineProperties.setProperty(name, value);
            return this;
        }

        /**
         * Marks each batch processed before dispatching it: the wrong order, which lets the slot
         * confirm rows the broker never acknowledged. Package-private, for the negative control
         * test that shows the CDC tests catch it.
         */
        Builder markBeforeDispatch() {
            this.markBeforeDispatch = true;
            return this;
        }

        private static String name(String what, String value) {
            if (!NAME.matcher(value).matches()) {
                throw new IllegalArgumentException("The outbox CDC " + what
                        + " name must be lower case letters, digits and underscores" + " (at most 63), was " + value);
            }
            return value;
        }

        private static Duration positive(String what, Duration value) {
            Objects.requireNonNull(value, what);
            if (value.isNegative() || value.isZero()) {
                throw new IllegalArgumentException("The outbox CDC " + what + " must be positive, was " + value);
            }
            return value;
        }

        public OutboxCdc build() {
            return new OutboxCdc(this);
        }
    }
}
