package io.sumi.testing;

import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.AbstractPlatformTransactionManager;
import org.springframework.transaction.support.DefaultTransactionStatus;

/**
 * A transaction manager of another resource: it binds no JDBC connection, as a Kafka-only manager
 * or the manager of another DataSource does not bind the ledger's. A transaction of it is "active"
 * for Spring, yet the ledger's DataSource takes no part in it.
 */
public final class ForeignTransactionManager extends AbstractPlatformTransactionManager {

    @Override
    protected Object doGetTransaction() {
        return new Object();
    }

    @Override
    protected void doBegin(Object transaction, TransactionDefinition definition) {}

    @Override
    protected void doCommit(DefaultTransactionStatus status) {}

    @Override
    protected void doRollback(DefaultTransactionStatus status) {}
}
