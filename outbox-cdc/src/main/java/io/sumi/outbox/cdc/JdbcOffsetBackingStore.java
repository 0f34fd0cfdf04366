package io.sumi.outbox.cdc;

import java.nio.ByteBuffer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.WorkerConfig;
import org.apache.kafka.connect.storage.MemoryOffsetBackingStore;
import org.jspecify.annotations.Nullable;

/**
 * The Debezium engine's offsets in the application's database (table
 * {@value #TABLE}, one row per offset key and store), not in a local file: a pod has no durable
 * disk, and whichever instance takes the slot over next reads the offsets where the last one left
 * them. Debezium instantiates the store by class name; its {@link DataSource} and store name come
 * from a {@linkplain #register registration} named by the engine property {@value #REGISTRATION}.
 *
 * <p>The engine writes offsets only after the change consumer marked the records processed, that
 * is after the broker acknowledged them (see {@link OutboxCdc}); a write that fails fails that
 * commit, and the next commit writes the offsets again. A commit writes only the offsets that
 * changed since the last write (at idle, none: no statement), and a single changed offset in one
 * autocommitted statement.
 */
public final class JdbcOffsetBackingStore extends MemoryOffsetBackingStore {

    /** The table. */
    public static final String TABLE = "sumi_outbox_cdc_offsets";

    /** The engine property naming the registration of the store's data source. */
    static final String REGISTRATION = "offset.storage.sumi.registration";

    static final String SQL_STATEMENT_CREATE_TABLE = """
            CREATE TABLE IF NOT EXISTS sumi_outbox_cdc_offsets (
                store_name   VARCHAR(200)             NOT NULL,
                offset_key   BYTEA                    NOT NULL,
                offset_value BYTEA,
                updated_at   TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT CURRENT_TIMESTAMP,
                CONSTRAINT sumi_outbox_cdc_offsets_pk PRIMARY KEY (store_name, offset_key)
            )
            """;

    private static final String SQL_QUERY_LOAD = """
            SELECT offset_key, offset_value FROM sumi_outbox_cdc_offsets WHERE store_name = ?
            """;

    /** Parameters: store name, key, value. */
    private static final String SQL_STATEMENT_UPSERT = """
            INSERT INTO sumi_outbox_cdc_offsets (store_name, offset_key, offset_value, updated_at)
            VALUES (?, ?, ?, CURRENT_TIMESTAMP)
            ON CONFLICT (store_name, offset_key) DO UPDATE
               SET offset_value = EXCLUDED.offset_value, updated_at = EXCLUDED.updated_at
            """;

    private static final Map<String, Registration> REGISTRATIONS = new ConcurrentHashMap<>();

    /** What a store needs: where to write, and under which name (the replication slot's). */
    record Registration(DataSource dataSource, String storeName) {}

    private @Nullable Registration registration;

    /** What the table holds for this store, as last read or written: {@link #save} writes only what differs. */
    private final Map<ByteBuffer, @Nullable ByteBuffer> saved = new HashMap<>();

    /** Makes {@code registration} known under {@code key} for the stores the engine creates. */
    static void register(String key, Registration registration) {
        REGISTRATIONS.put(key, registration);
    }

    static void unregister(String key) {
        REGISTRATIONS.remove(key);
    }

    /** Creates the table if it does not exist. */
    static void createTable(Connection connection) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(SQL_STATEMENT_CREATE_TABLE)) {
            statement.execute();
        }
    }

    @Override
    public void configure(WorkerConfig config) {
        super.configure(config);
        Object key = config.originals().get(REGISTRATION);
        Registration found = key == null ? null : REGISTRATIONS.get(key.toString());
        if (found == null) {
            throw new ConnectException("JdbcOffsetBackingStore needs the engine property " + REGISTRATION
                    + " naming a registration (it is set by OutboxCdc); got " + key);
        }
        this.registration = found;
    }

    @Override
    public synchronized void start() {
        super.start();
        Registration store = registration();
        try (Connection connection = store.dataSource().getConnection();
                PreparedStatement statement = connection.prepareStatement(SQL_QUERY_LOAD)) {
            statement.setString(1, store.storeName());
            try (ResultSet rs = statement.executeQuery()) {
                while (rs.next()) {
                    byte[] value = rs.getBytes(2);
                    ByteBuffer key = ByteBuffer.wrap(rs.getBytes(1));
                    ByteBuffer stored = value == null ? null : ByteBuffer.wrap(value);
                    data.put(key, stored);
                    saved.put(key, stored);
                }
            }
        } catch (SQLException ex) {
            throw new ConnectException("Could not read the CDC offsets from " + TABLE, ex);
        }
    }

    @Override
    protected void save() {
        // Runs on the store's single executor thread (MemoryOffsetBackingStore.set), after start():
        // saved is touched nowhere else.
        Map<ByteBuffer, @Nullable ByteBuffer> changed = new HashMap<>();
        data.forEach((key, value) -> {
            if (!saved.containsKey(key) || !Objects.equals(saved.get(key), value)) {
                changed.put(key, value);
            }
        });
        if (changed.isEmpty()) {
            return; // nothing moved since the last write: no statement at idle
        }
        Registration store = registration();
        try (Connection connection = store.dataSource().getConnection()) {
            if (changed.size() == 1) {
                // The usual case (one connector, one key): one statement in autocommit.
                try (PreparedStatement statement = connection.prepareStatement(SQL_STATEMENT_UPSERT)) {
                    Map.Entry<ByteBuffer, @Nullable ByteBuffer> entry =
                            changed.entrySet().iterator().next();
                    bind(statement, store, entry.getKey(), entry.getValue());
                    statement.executeUpdate();
                }
            } else {
                saveInOneTransaction(connection, store, changed);
            }
        } catch (SQLException ex) {
            throw new ConnectException("Could not write the CDC offsets to " + TABLE, ex);
        }
        saved.putAll(changed);
    }

    private static void saveInOneTransaction(
            Connection connection, Registration store, Map<ByteBuffer, @Nullable ByteBuffer> changed)
            throws SQLException {
        boolean autoCommit = connection.getAutoCommit();
        connection.setAutoCommit(false);
        try (PreparedStatement statement = connection.prepareStatement(SQL_STATEMENT_UPSERT)) {
            for (Map.Entry<ByteBuffer, @Nullable ByteBuffer> entry : changed.entrySet()) {
                bind(statement, store, entry.getKey(), entry.getValue());
                statement.addBatch();
            }
            statement.executeBatch();
            connection.commit();
        } catch (SQLException ex) {
            connection.rollback();
            throw ex;
        } finally {
            connection.setAutoCommit(autoCommit);
        }
    }

    private static void bind(
            PreparedStatement statement, Registration store, ByteBuffer key, @Nullable ByteBuffer value)
            throws SQLException {
        statement.setString(1, store.storeName());
        statement.setBytes(2, bytes(key));
        statement.setBytes(3, value == null ? null : bytes(value));
    }

    @Override
    public Set<Map<String, Object>> connectorPartitions(String connectorName) {
        return Set.of();
    }

    private Registration registration() {
        return Objects.requireNonNull(registration, "JdbcOffsetBackingStore used before configure");
    }

    private static byte[] bytes(ByteBuffer buffer) {
        ByteBuffer copy = buffer.duplicate();
        byte[] bytes = new byte[copy.remaining()];
        copy.get(bytes);
        return bytes;
    }
}
