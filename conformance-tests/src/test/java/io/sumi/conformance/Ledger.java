package io.sumi.conformance;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;

/**
 * Reads the ledger, and writes into it what a crashed instance would have left: the JDBC ledger
 * ({@link #jdbc}) or the Redis one ({@link RedisLedger}). The catalogue's reads go around the
 * scenarios' faults.
 */
public interface Ledger {

    /** The row's status ({@code IN_PROGRESS}, {@code COMPLETED}), or {@code null} when there is no row. */
    @Nullable
    String status(String consumer, String key);

    /** What the row holds, for failure messages. */
    List<Map<String, Object>> row(String consumer, String key);

    /**
     * An IN_PROGRESS row with a lease live for {@code lease} (on the ledger's clock), as an
     * instance that claimed the key and died leaves it.
     */
    void holdAsDeadInstance(String consumer, String key, Duration lease);

    /** The JDBC ledger in {@code dataSource}. */
    static Ledger jdbc(DataSource dataSource) {
        return new JdbcLedger(dataSource);
    }
}
