package io.sumi.test.outbox;

import io.sumi.outbox.OutboxTable;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.transaction.PlatformTransactionManager;

/**
 * Contract 1 of the outbox, for an application's own code: <em>a business transaction that rolls
 * back after {@code append} leaves no outbox row</em>. Extend it in a {@code @SpringBootTest} of
 * the application and implement {@link #appendToOutbox()} with the service method that writes
 * business rows and appends:
 *
 * <pre>{@code
 * @SpringBootTest
 * class OrderOutboxRollbackTests extends OutboxRollbackContractTests {
 *     @Autowired OrderService orders;
 *
 *     @Override
 *     protected void appendToOutbox() {
 *         orders.placeOrder(Order.sample());
 *     }
 * }
 * }</pre>
 *
 * The kit runs the method in a transaction of the application's transaction manager (the
 * method's own {@code @Transactional} joins it) and rolls that back after the method returned.
 * Each call must append new rows (use fresh business ids).
 */
public abstract class OutboxRollbackContractTests {

    @Autowired
    private OutboxTable outbox;

    @Autowired
    private PlatformTransactionManager transactions;

    /** Calls the application's code that appends to the outbox (in its business transaction). */
    protected abstract void appendToOutbox() throws Exception;

    /** The transaction manager of the business transaction; the application's only one by default. */
    protected PlatformTransactionManager transactionManager() {
        return transactions;
    }

    @Test
    void aBusinessTransactionThatRollsBackAfterAppendLeavesNoOutboxRow() {
        OutboxContracts.rollbackLeavesNoOutboxRow(outbox, transactionManager(), this::appendToOutbox);
    }

    /** The control: committed, the same call leaves its rows (so the rollback test can fail). */
    @Test
    void theSameCallAppendsARowWhenItsTransactionCommits() {
        OutboxContracts.commitAppendsARow(outbox, this::appendToOutbox);
    }
}
