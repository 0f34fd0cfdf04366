package io.sumi.autoconfigure;

import io.sumi.store.ProcessedMessageStore;
import java.sql.SQLException;
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
    }
}
