package io.sumi.conformance;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.core.JdbcTemplate;

/** The JDBC ledger's table, read and written with SQL around the scenarios' faults. */
final class JdbcLedger implements Ledger {

    private final JdbcTemplate jdbc;

    JdbcLedger(DataSource dataSource) {
        this.jdbc = new JdbcTemplate(LedgerFaults.bypass(dataSource));
    }

    @Override
    public @Nullable String status(String consumer, String key) {
        List<String> status = jdbc.queryForList(
                "SELECT status FROM processed_messages WHERE consumer = ? AND message_id = ?",
                String.class,
                consumer,
                key);
        return status.isEmpty() ? null : status.get(0);
    }

    @Override
    public List<Map<String, Object>> row(String consumer, String key) {
        return jdbc.queryForList(
                "SELECT status, attempts, lease_until, first_seen_at, processed_at, last_error FROM processed_messages"
                        + " WHERE consumer = ? AND message_id = ?",
                consumer,
                key);
    }

    @Override
    public void holdAsDeadInstance(String consumer, String key, Duration lease) {
        jdbc.update(
                "INSERT INTO processed_messages (consumer, message_id, status, claim_token, lease_until, attempts,"
                        + " first_seen_at) VALUES (?, ?, 'IN_PROGRESS', 424242, statement_timestamp() + ? * INTERVAL"
                        + " '1 millisecond', 1, statement_timestamp())",
                consumer,
                key,
                lease.toMillis());
    }
}
