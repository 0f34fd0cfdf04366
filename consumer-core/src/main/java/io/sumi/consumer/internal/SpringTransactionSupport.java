package io.sumi.consumer.internal;

import io.sumi.consumer.TransactionSupport;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * {@link TransactionSupport} on a Spring {@link PlatformTransactionManager}.
 */
public final class SpringTransactionSupport implements TransactionSupport {

    private final TransactionTemplate template;

    public SpringTransactionSupport(PlatformTransactionManager transactionManager) {
        this.template = new TransactionTemplate(transactionManager);
    }

    @Override
    public boolean isTransactionActive() {
        return TransactionSynchronizationManager.isActualTransactionActive();
    }

    @Override
    public <T> T inTransaction(Callable<T> work) throws Exception {
        try {
            return template.execute(status -> {
                try {
                    return work.call();
                }
                catch (RuntimeException | Error ex) {
                    throw ex;
                }
                catch (Exception ex) {
                    // TransactionTemplate rolls back on unchecked exceptions only; carry checked ones out.
                    throw new CheckedCarrier(ex);
                }
            });
        }
        catch (CheckedCarrier carrier) {
            throw carrier.checked;
        }
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
