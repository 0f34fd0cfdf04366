package io.sumi.autoconfigure;

import java.time.Duration;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * CDC dispatch of the outbox from PostgreSQL's write-ahead log, under {@code sumi.outbox.cdc}
 * (used when {@code sumi-outbox-cdc} is on the class path; docs/outbox-cdc.md). Immutable.
 *
 * @param enabled whether the outbox is dispatched from the log (off by default: it needs
 *     {@code wal_level = logical} and a user with the REPLICATION attribute)
 * @param slotName the replication slot, one per application; also names the offsets in
 *     {@code sumi_outbox_cdc_offsets} and the advisory lock that lets one instance stream
 * @param publicationName the publication of the outbox's INSERTs, created at start if missing
 * @param schema the outbox table's schema; the connection's {@code current_schema()} when not set
 * @param url the JDBC URL the engine reads the log from; {@code spring.datasource.url} when not set
 * @param username the database user (REPLICATION); {@code spring.datasource.username} when not set
 * @param password its password; {@code spring.datasource.password} when not set
 * @param takeOverInterval how often the streaming instance checks the connection that holds the
 *     slot's lock, and the pause before an instance whose engine failed tries again (a waiting
 *     instance blocks on the lock and takes over as soon as the streaming one's session ends)
 * @param heartbeatInterval Debezium's heartbeat, whose action query keeps a quiet outbox's slot
 *     advancing: on a quiet outbox the slot retains about this much of the database's other WAL
 * @param offsetFlushInterval how often the engine commits its offsets and confirms the LSN
 * @param pollingInterval the polling dispatcher's interval (its minimum and maximum) while CDC is
 *     on: polling is the safety net for the rows CDC leaves (delayed, failed, written before the
 *     slot existed); the local wake-up after commit is off
 * @param pollingDelay how long a row must have been due before the polling dispatcher takes it
 *     while CDC is on: the log's path sends rows first, polling takes what it left (failed,
 *     delayed, written while no engine streamed) instead of racing it for every row
 * @param maxRetainedWal the retained WAL of the slot above which the health contributor reports
 *     DOWN (bytes; e.g. {@code 1GB})
 * @param engine further Debezium engine properties, set over Sumi's
 */
@ConfigurationProperties("sumi.outbox.cdc")
public record SumiOutboxCdcProperties(
        @DefaultValue("false") boolean enabled,
        @DefaultValue("sumi_outbox") String slotName,
        @DefaultValue("sumi_outbox") String publicationName,
        @Nullable String schema,
        @Nullable String url,
        @Nullable String username,
        @Nullable String password,
        @DefaultValue("2s") Duration takeOverInterval,
        @DefaultValue("60s") Duration heartbeatInterval,
        @DefaultValue("1s") Duration offsetFlushInterval,
        @DefaultValue("30s") Duration pollingInterval,
        @DefaultValue("10s") Duration pollingDelay,
        @DefaultValue("1GB") org.springframework.util.unit.DataSize maxRetainedWal,
        @DefaultValue Map<String, String> engine) {}
