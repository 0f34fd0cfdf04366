package io.sumi.consumer;

import io.sumi.consumer.internal.SpringTransactionSupport;
import java.util.concurrent.Callable;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * How the executor sees and opens transactions on the ledger's database, for
 * {@link IdempotencyMode#TRANSACTIONAL} and {@link IdempotencyMode#AUTO}.
 */
public interface TransactionSupport {

    /** Whether a transaction is active on this thread. */
    boolean isTransactionActive();

    /**
     * Runs {@code work} in a transaction: the active one if there is one, else a new one.
     * <em>Any</em> exception, checked or not, rolls the transaction back (or marks a joined one
     * rollback-only) and propagates unchanged: a failed handler's ledger row must never commit.
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
                throw new IllegalStateException("Transactional mode needs a transaction manager on the ledger's DataSource;"
                        + " none is configured (use TransactionSupport.of(transactionManager), or lease mode)");
            }
        };
    }

    /** Spring-managed transactions through {@code transactionManager} (propagation REQUIRED). */
    static TransactionSupport of(PlatformTransactionManager transactionManager) {
        return new SpringTransactionSupport(transactionManager);
    }
}
