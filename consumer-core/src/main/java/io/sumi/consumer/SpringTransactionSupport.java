package io.sumi.consumer;

import java.sql.SQLException;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.IllegalTransactionStateException;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@link TransactionSupport} on a Spring {@link PlatformTransactionManager} and the ledger's
 * {@link DataSource}.
 *
 * <p>"The ledger's DataSource takes part" is read from the transaction's resources without
 * touching the database: a {@link ConnectionHolder} is bound for the DataSource (as
 * {@code DataSourceTransactionManager}, {@code JpaTransactionManager} and
 * {@code JdbcTransactionManager} bind it; the lookup unwraps {@code InfrastructureProxy} keys) and
 * its connection is not in auto-commit. The auto-commit test matters: {@code DataSourceUtils}
 * binds a plain connection to <em>any</em> active transaction when JDBC code runs inside one of
 * another resource, and such a connection commits every statement on its own.
 */
final class SpringTransactionSupport implements TransactionSupport {

    private final TransactionTemplate template;
    private final DataSource ledgerDataSource;

    SpringTransactionSupport(PlatformTransactionManager transactionManager, DataSource ledgerDataSource) {
        this.template = new TransactionTemplate(transactionManager);
        // Transaction managers bind the target of a TransactionAwareDataSourceProxy, not the proxy.
        this.ledgerDataSource =
                ledgerDataSource instanceof TransactionAwareDataSourceProxy proxy && proxy.getTargetDataSource() != null
                        ? proxy.getTargetDataSource()
                        : ledgerDataSource;
    }

    @Override
    public boolean isTransactionActive() {
        return TransactionSynchronizationManager.isActualTransactionActive() && ledgerBound();
    }

    private boolean ledgerBound() {
        if (!(TransactionSynchronizationManager.getResource(ledgerDataSource) instanceof ConnectionHolder holder)) {
            return false;
        }
        try {
            return !holder.getConnection().getAutoCommit();
        } catch (SQLException | IllegalStateException ex) {
            return false; // no usable connection (IllegalStateException: the holder's was released)
        }
    }

    @Override
    public <T> T inTransaction(Callable<T> work) throws Exception {
        try {
            return template.execute(status -> {
                if (!ledgerBound()) {
                    throw notTakingPart();
                }
                try {
                    return work.call();
                } catch (RuntimeException | Error ex) {
                    throw ex;
                } catch (Exception ex) {
                    // TransactionTemplate rolls back on unchecked exceptions only; carry checked ones out.
                    throw new CheckedCarrier(ex);
                }
            });
        } catch (CheckedCarrier carrier) {
            throw carrier.checked;
        }
    }

    private IllegalTransactionStateException notTakingPart() {
        return new IllegalTransactionStateException(
                "Transactional mode needs a transaction that the ledger's DataSource takes part"
                        + " in, but the ledger's DataSource does not take part in the active transaction ("
                        + template.getTransactionManager()
                        + " manages another resource: another DataSource, Kafka, a custom manager): the ledger row would commit on its own."
                        + " Nothing was claimed. Run the handler in a transaction of a transaction manager for the ledger's DataSource, or"
                        + " use mode = LEASE (mode = AUTO picks a lease in this case).");
    }

    private static final class CheckedCarrier extends RuntimeException {

        private final Exception checked;

        CheckedCarrier(Exception checked) {
            super(null, checked, false, false);
            this.checked = checked;
        }

        @Override
        public synchronized @Nullable Throwable fillInStackTrace() {
            return this;
        }
    }
}
