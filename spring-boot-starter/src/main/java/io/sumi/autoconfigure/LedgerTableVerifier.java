package io.sumi.autoconfigure;

import io.sumi.jdbc.DatabaseType;
import io.sumi.store.ProcessedMessageStore;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.BadSqlGrammarException;

/**
 * Reads the starter's ledger once at start-up, so that a {@code sumi.ledger.table-name} naming no
 * table (or a schema without Sumi's migrations) stops the application with a message that says
 * what to do, instead of failing every message later (retried, then dead-lettered or, with Spring
 * Kafka's default error handler, logged and skipped).
 *
 * <p>It runs once every singleton exists: after Flyway (or any other initializer) has migrated, and
 * before any listener container starts. Only a missing table or column fails start-up; a database
 * that cannot be reached right now is logged and left to the message path, which retries.
 *
 * <p>On MariaDB it also checks that {@code sumi.consumer.reply.max-size} fits in the server's
 * {@code max_allowed_packet}: a completing statement carrying a reply larger than the packet fails
 * every time, so the handler would run again once per lease for ever.
 */
final class LedgerTableVerifier implements SmartInitializingSingleton {

    private static final Logger log = LoggerFactory.getLogger(LedgerTableVerifier.class);

    private final ListableBeanFactory beanFactory;
    private final String ledgerBeanName;

    /**
     * @param ledgerBeanName the starter's ledger bean; an application's own store is not checked
     *     (its table is not {@code sumi.ledger.table-name})
     */
    LedgerTableVerifier(ListableBeanFactory beanFactory, String ledgerBeanName) {
        this.beanFactory = beanFactory;
        this.ledgerBeanName = ledgerBeanName;
    }

    @Override
    public void afterSingletonsInstantiated() {
        if (!beanFactory.containsBean(ledgerBeanName)) {
            return;
        }
        ProcessedMessageStore ledger = beanFactory.getBean(ledgerBeanName, ProcessedMessageStore.class);
        String tableName = beanFactory.getBean(SumiProperties.class).ledger().tableName();
        try {
            ledger.find("sumi-start-up-check", "-");
        } catch (BadSqlGrammarException ex) {
            SQLException sqlException = ex.getSQLException();
            String reason = sqlException != null ? sqlException.getMessage() : ex.getMessage();
            throw new IllegalStateException(
                    "Sumi's ledger table '" + tableName + "' does not exist or lacks Sumi's columns"
                            + " in the application's DataSource ("
                            + reason + "). Apply Sumi's migrations"
                            + " (io.sumi:sumi-migrations; with Flyway add classpath:db/sumi/{vendor} to spring.flyway.locations),"
                            + " or set sumi.ledger.table-name to the table created from them.",
                    ex);
        } catch (DataAccessException ex) {
            log.warn("Could not check Sumi's ledger table '{}' at start-up: {}", tableName, ex.getMessage());
            return;
        }
        try {
            ledger.findReply("sumi-start-up-check", "-");
        } catch (BadSqlGrammarException ex) {
            // Only handlers with storeReply need the column (docs/replies.md): they would fail per message.
            log.warn(
                    "Sumi's ledger table '{}' has no reply column (added by Sumi's migrations since 0.1.0): handlers with"
                            + " @IdempotentHandler(storeReply = true) will fail until the migrations run again",
                    tableName);
        } catch (DataAccessException | UnsupportedOperationException ex) {
            log.debug("Could not check the reply column of Sumi's ledger table '{}': {}", tableName, ex.getMessage());
        }
        checkMaxAllowedPacket();
    }

    /**
     * What a completing statement needs besides the reply: its other parameters and SQL text. The
     * reply itself counts twice: the driver's text protocol escapes a binary parameter, which can
     * double it.
     */
    static final long PACKET_MARGIN_BYTES = 64 * 1024;

    /** The largest reply a server with {@code maxAllowedPacket} can take in a completing statement. */
    static long largestReplyFor(long maxAllowedPacket) {
        return Math.max(0, (maxAllowedPacket - PACKET_MARGIN_BYTES) / 2);
    }

    private void checkMaxAllowedPacket() {
        DataSource dataSource = beanFactory.getBeanProvider(DataSource.class).getIfUnique();
        if (dataSource == null) {
            return;
        }
        SumiProperties properties = beanFactory.getBean(SumiProperties.class);
        long maxReply = properties.consumer().maxReplyBytes();
        long packet;
        try {
            if (DatabaseType.of(dataSource) != DatabaseType.MARIADB) {
                return;
            }
            try (Connection connection = dataSource.getConnection();
                    Statement statement = connection.createStatement();
                    ResultSet rows = statement.executeQuery("SELECT @@max_allowed_packet")) {
                if (!rows.next()) {
                    return;
                }
                packet = rows.getLong(1);
            }
        } catch (SQLException | RuntimeException ex) {
            log.warn("Could not read MariaDB's max_allowed_packet at start-up: {}", ex.getMessage());
            return;
        }
        if (maxReply > largestReplyFor(packet)) {
            throw new IllegalStateException("sumi.consumer.reply.max-size is "
                    + properties.consumer().reply().maxSize()
                    + " (" + maxReply + " bytes), but the MariaDB server's max_allowed_packet is " + packet
                    + " bytes: a completing statement carrying a reply near that size would fail every time and"
                    + " its handler would run again once per lease. A reply needs up to twice its size in the"
                    + " packet (the driver escapes binary data) plus " + PACKET_MARGIN_BYTES + " bytes: set"
                    + " sumi.consumer.reply.max-size to at most " + largestReplyFor(packet) + " bytes, or raise"
                    + " max_allowed_packet on the server to at least " + (2 * maxReply + PACKET_MARGIN_BYTES)
                    + " bytes.");
        }
    }
}
