package io.sumi.consumer;

import java.util.concurrent.Callable;
import javax.sql.DataSource;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.ResourceTransactionManager;

/**
 * How the executor sees and opens transactions on the ledger's database, for
 * {@link IdempotencyMode#TRANSACTIONAL} and {@link IdempotencyMode#AUTO}.
 *
 * <p>The participation rule: a transactional-mode ledger row is only ever written in a
 * transaction <em>that the ledger's DataSource takes part in</em> (its connection is bound to the
 * transaction and not in auto-commit). A transaction of another resource (a Kafka-only manager,
 * the manager of another DataSource, a custom manager) does not count: a row written there would
 * commit on its own, before the handler's outcome is known, and a failed handler's redelivery
 * would be skipped as a duplicate.
 */
public interface TransactionSupport {

    /**
     * Whether a transaction that the ledger's DataSource takes part in is active on this thread:
     * what makes {@code AUTO} mean {@code TRANSACTIONAL}, and what makes a transactional batch
     * "joined". A transaction of another resource answers {@code false}.
     */
    boolean isTransactionActive();

    /**
     * Runs {@code work} in a transaction that the ledger's DataSource takes part in: the active one
     * if there is one, else a new one. <em>Any</em> exception, checked or not, rolls the
     * transaction back (or marks a joined one rollback-only) and propagates unchanged: a failed
     * handler's ledger row must never commit.
     *
     * @throws org.springframework.transaction.IllegalTransactionStateException before {@code work}
     *     runs, if the transaction it would run in does not hold the ledger's connection
     */
    <T> T inTransaction(Callable<T> work) throws Exception;

    /** No transactions: {@code AUTO} always means lease mode; {@code TRANSACTIONAL} fails clearly. */
    static TransactionSupport none() {
        return new TransactionSupport() {
            @Override
            public boolean isTransactionActive() {
                return false;
            }

            @Override
            public <T> T inTransaction(Callable<T> work) {
                throw new IllegalStateException(
                        "Transactional mode needs a transaction manager on the ledger's DataSource;"
                                + " none is configured (use TransactionSupport.of(transactionManager, ledgerDataSource), or lease mode)");
            }
        };
    }

    /**
     * Spring-managed transactions through {@code transactionManager} (propagation REQUIRED) on
     * the ledger's {@code ledgerDataSource} (the DataSource the store was built on; a
     * {@code TransactionAwareDataSourceProxy} is looked through).
     *
     * @since 0.1.0
     */
    static TransactionSupport of(PlatformTransactionManager transactionManager, DataSource ledgerDataSource) {
        return new SpringTransactionSupport(transactionManager, ledgerDataSource);
    }

    /**
     * Spring-managed transactions through a transaction manager of the ledger's DataSource (a
     * {@code DataSourceTransactionManager} or another {@link ResourceTransactionManager} whose
     * resource is that DataSource).
     *
     * @throws IllegalArgumentException if the manager's resource is not a DataSource: then name the
     *     ledger's DataSource with {@link #of(PlatformTransactionManager, DataSource)}
     */
    static TransactionSupport of(PlatformTransactionManager transactionManager) {
        if (transactionManager instanceof ResourceTransactionManager resource
                && resource.getResourceFactory() instanceof DataSource dataSource) {
            return of(transactionManager, dataSource);
        }
        throw new IllegalArgumentException(
                "Cannot tell which DataSource " + transactionManager.getClass().getName()
                        + " manages; use TransactionSupport.of(transactionManager, ledgerDataSource) with the ledger's DataSource");
    }
}
